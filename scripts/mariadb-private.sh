#!/bin/bash
# A private MariaDB server from Debian's mariadb-server package, for tools
# that compare Shale with MariaDB (scripts/mariadb-reference.sh, bench/run).
# No systemd, no grant tables, no binlog; its own datadir; loopback only.
#
#   scripts/mariadb-private.sh install
#       Installs mariadb-server with apt-get if mariadbd is missing (needs
#       root); a temporary policy-rc.d keeps the package from starting the
#       system service. No-op when it is installed.
#   scripts/mariadb-private.sh serve DIR PORT [MARIADBD-OPTION ...]
#       Creates DIR/data with mariadb-install-db on first use, then execs
#       mariadbd in the foreground on 127.0.0.1:PORT (socket, pid file and
#       error log DIR/mariadbd.{sock,pid,log}). The caller runs it in the
#       background, owns the process, waits for the port and stops it with
#       SIGTERM. Extra options go after the defaults, so they win
#       (e.g. --innodb-buffer-pool-size=1G).
set -euo pipefail

mariadbd_path() { command -v mariadbd || echo /usr/sbin/mariadbd; }

install() {
  if command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ]; then return 0; fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "mariadb-server is not installed; run as root to install it" >&2
    exit 1
  fi
  echo "installing mariadb-server from Debian ..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  local policy=/usr/sbin/policy-rc.d created_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod +x "$policy"
    created_policy=1
  fi
  apt-get install -y -qq --no-install-recommends mariadb-server >/dev/null
  if [ "$created_policy" = 1 ]; then rm -f "$policy"; fi
}

serve() {
  if [ "$#" -lt 2 ]; then echo "usage: $0 serve DIR PORT [OPTION ...]" >&2; exit 2; fi
  local dir="$1" port="$2"; shift 2
  install
  mkdir -p "$dir"
  local datadir="$dir/data"
  if [ -f "$dir/mariadbd.pid" ] && kill -0 "$(cat "$dir/mariadbd.pid")" 2>/dev/null; then
    echo "a mariadbd is already running on $dir (pid $(cat "$dir/mariadbd.pid")); stop it first" >&2
    exit 1
  fi
  local user_args=()
  if [ "$(id -u)" -eq 0 ]; then user_args=(--user=root); fi
  if [ ! -d "$datadir/mysql" ]; then
    rm -rf "$datadir"
    mariadb-install-db --no-defaults "${user_args[@]}" --datadir="$datadir" \
      --auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1 \
      || { cat "$dir/install.log" >&2; exit 1; }
  fi
  exec "$(mariadbd_path)" --no-defaults "${user_args[@]}" --datadir="$datadir" \
    --socket="$dir/mariadbd.sock" --pid-file="$dir/mariadbd.pid" --port="$port" \
    --bind-address=127.0.0.1 --skip-grant-tables --skip-log-bin \
    --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
    --log-error="$dir/mariadbd.log" "$@"
}

case "${1:-}" in
  install) install ;;
  serve) shift; serve "$@" ;;
  *) echo "usage: $0 install | serve DIR PORT [MARIADBD-OPTION ...]" >&2; exit 2 ;;
esac
