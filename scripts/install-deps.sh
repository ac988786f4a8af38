#!/usr/bin/env bash
# Installs every build, test and client dependency of Shale from Debian 12
# packages. Idempotent: when everything is present it only checks and exits.
# Usage: scripts/install-deps.sh            (run as root, or with sudo on PATH)
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build ccache pkg-config git
  # libraries (see ARCHITECTURE.md, Dependencies)
  libboost-dev
  libprotobuf-dev protobuf-compiler
  libgrpc++-dev protobuf-compiler-grpc
  librocksdb-dev
  llvm-15-dev
  zlib1g-dev libfmt-dev libssl-dev
  # bench/micro/page_compression_bench.cc: zstd against zlib for pages
  libzstd-dev
  # REGEXP / REGEXP_* (src/common/regex_pattern.*): PCRE2, as MariaDB
  libpcre2-dev
  # shaled's allocator (src/shaled/allocator.cc)
  libjemalloc-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # clients used by the tests; Go for tests/clients/go, python3-venv for the
  # virtualenv below
  mariadb-client sysbench python3 python3-pymysql python3-venv golang-go
  # the fuzzers (tests/fuzz, libFuzzer): clang and its runtime
  clang libclang-rt-14-dev
  # tests/e2e/test_information_schema.py: a real ORM (SQLAlchemy 1.4)
  python3-sqlalchemy
  # bench/run: the plot of its results (docs/benchmarks/results.png)
  python3-matplotlib
  # bench/profile: perf (default) and strace (--syscalls)
  linux-perf strace
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -ne 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python clients Debian 12 does not package, from PyPI into a repo-local
# virtualenv (.venv, gitignored) that also sees Debian's packages (PyMySQL):
# tests/e2e/test_connector_python.py runs its client with .venv/bin/python.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PIP_PACKAGES=(mysql-connector-python==9.1.0)
venv_ok() {
  [ -x "$VENV/bin/python" ] && "$VENV/bin/python" - "${PIP_PACKAGES[@]}" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
for spec in sys.argv[1:]:
    name, want = spec.split("==")
    if version(name) != want:
        sys.exit(1)
PY
}
if ! venv_ok; then
  echo "install-deps: installing ${PIP_PACKAGES[*]} into $VENV" >&2
  [ -x "$VENV/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${PIP_PACKAGES[@]}"
  venv_ok
fi
