module shale.test/clients/prepared_client

// Go 1.19 is Debian 12's golang-go (scripts/install-deps.sh); the driver is
// pinned to v1.7.1, which builds with it and needs no other module.
go 1.19

require github.com/go-sql-driver/mysql v1.7.1
