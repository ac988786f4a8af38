module shale.test/jepsen/checker

// Go 1.19 is Debian 12's golang-go (scripts/install-deps.sh); porcupine
// v1.3.1 needs go 1.16 and no other module.
go 1.19

require github.com/anishathalye/porcupine v1.3.1
