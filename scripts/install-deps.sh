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
  libgtest-dev libgmock-dev libbenchmark-dev
  # clients used by the tests
  mariadb-client sysbench python3 python3-pymysql
  # tests/e2e/test_information_schema.py: a real ORM (SQLAlchemy 1.4)
  python3-sqlalchemy
  # bench/run: the plot of its results (docs/benchmarks/results.png)
  python3-matplotlib
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
