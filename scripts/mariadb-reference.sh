#!/bin/bash
# Regenerates the expected results of tests/sql/*.test from MariaDB, so the
# answers checked in are MySQL's and not Shale's.
#
#   scripts/mariadb-reference.sh [FILE.test ...]     (default: tests/sql/*.test)
#
# Installs Debian's mariadb-server if it is missing (apt-get, needs root),
# starts a private mariadbd on a free loopback port with its own datadir
# under $SHALE_MARIADB_DIR (default /tmp/shale-mariadb-ref), no grant tables
# and no systemd, runs tests/sql/slt.py --complete on the files, and stops
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

if ! command -v mariadbd >/dev/null && [ ! -x /usr/sbin/mariadbd ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "mariadb-server is not installed; run this script as root to install it" >&2
    exit 1
  fi
  echo "installing mariadb-server from Debian ..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # policy-rc.d keeps the package from starting the system service.
  policy=/usr/sbin/policy-rc.d
  created_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod +x "$policy"
    created_policy=1
  fi
  apt-get install -y -qq --no-install-recommends mariadb-server >/dev/null
  if [ "$created_policy" = 1 ]; then rm -f "$policy"; fi
fi
mariadbd=$(command -v mariadbd || echo /usr/sbin/mariadbd)

port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$dir"
datadir="$dir/data"
socket="$dir/mariadbd.sock"
pidfile="$dir/mariadbd.pid"
log="$dir/mariadbd.log"

if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  echo "a reference mariadbd is already running (pid $(cat "$pidfile")); stop it first" >&2
  exit 1
fi

user_args=()
if [ "$(id -u)" -eq 0 ]; then user_args=(--user=root); fi

if [ ! -d "$datadir/mysql" ]; then
  rm -rf "$datadir"
  mariadb-install-db --no-defaults "${user_args[@]}" --datadir="$datadir" \
    --auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1 \
    || { cat "$dir/install.log" >&2; exit 1; }
fi

"$mariadbd" --no-defaults "${user_args[@]}" --datadir="$datadir" --socket="$socket" \
  --pid-file="$pidfile" --port="$port" --bind-address=127.0.0.1 --skip-grant-tables \
  --skip-log-bin --innodb-buffer-pool-size=64M \
  --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci --log-error="$log" &
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
