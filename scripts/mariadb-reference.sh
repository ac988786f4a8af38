#!/bin/bash
# Regenerates the expected results of tests/sql/*.test from MariaDB, so the
# answers checked in are MySQL's and not Shale's.
#
#   scripts/mariadb-reference.sh [FILE.test ...]     (default: tests/sql/*.test)
#
# Installs Debian's mariadb-server if it is missing (apt-get, needs root),
# starts a private mariadbd on a free loopback port with its own datadir
# under $SHALE_MARIADB_DIR (default /tmp/shale-mariadb-ref), no grant tables
# and no systemd (both via scripts/mariadb-private.sh, shared with bench/run), runs tests/sql/slt.py --complete on the files, and stops
# the server. Review the diff before committing: a changed answer is either
# a test mistake or a real MySQL behaviour Shale must match.
#
# Environment: SHALE_MARIADB_KEEP=1 leaves the server running and prints its
# port (stop it with: kill $(cat $SHALE_MARIADB_DIR/mariadbd.pid)).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${SHALE_MARIADB_DIR:-/tmp/shale-mariadb-ref}"
python=/usr/bin/python3

if [ "$#" -eq 0 ]; then
  set -- "$repo"/tests/sql/*.test
fi

"$repo/scripts/mariadb-private.sh" install
mariadbd=$(command -v mariadbd || echo /usr/sbin/mariadbd)

port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log="$dir/mariadbd.log"

"$repo/scripts/mariadb-private.sh" serve "$dir" "$port" --innodb-buffer-pool-size=64M &
server=$!

stop() {
  if [ "${SHALE_MARIADB_KEEP:-0}" = 1 ]; then
    echo "reference mariadbd left running on port $port (pid $server)" >&2
    return
  fi
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
}
trap stop EXIT

for _ in $(seq 1 200); do
  if "$python" -c "import pymysql; pymysql.connect(host='127.0.0.1', port=$port, user='root').close()" 2>/dev/null; then
    break
  fi
  if ! kill -0 "$server" 2>/dev/null; then
    echo "mariadbd exited; log:" >&2; tail -n 30 "$log" >&2; exit 1
  fi
  sleep 0.1
done

echo "MariaDB $("$mariadbd" --version | awk '{print $3}') on port $port" >&2
"$python" "$repo/tests/sql/slt.py" --complete --host 127.0.0.1 --port "$port" --user root "$@"
