#!/usr/bin/env bash
# Set up a fresh machine for hudi-connect: the Python environment with the
# project installed, then the stack's components (jars from Maven Central,
# the Connect token interceptor, MinIO and fake-gcs-server built from Go, Azurite from npm, PostgreSQL from apt).
# Idempotent; everything is cached in $HUDI_CONNECT_CACHE (~/.cache/hudi-connect).
# Usage: ci/setup.sh [component ...]   (default: all of jars interceptor server-python minio postgres storage-servers)
#        ci/setup.sh --python-only      (the Python environment alone: ci/test.sh provisions beside its lint)
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${HUDI_CONNECT_CACHE:-$HOME/.cache/hudi-connect}"
VENV="$CACHE/venv"

say() { printf '[hudi-connect setup] %s\n' "$*" >&2; }
need() {
  command -v "$1" >/dev/null 2>&1 || { say "missing '$1': $2"; exit 1; }
}

need java "install a Java 17 JDK (Debian: apt-get install openjdk-17-jdk-headless)"
need mvn "install Maven (Debian: apt-get install maven)"
if [ $# -eq 0 ]; then  # every component: the storage servers too (the demo asks for the Spark servers only)
  need go "install Go 1.24 or newer (https://go.dev/doc/install): it builds MinIO and fake-gcs-server"
  need npm "install Node.js 20 or newer with npm (Debian: apt-get install nodejs npm): it installs Azurite"
  node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  [ "$node_major" -ge 20 ] || { say "Node.js 20 or newer installs Azurite; node is $(node -v 2>/dev/null || echo missing)"; exit 1; }
fi
PYTHON="${HUDI_CONNECT_PYTHON:-$(command -v python3.11 || command -v python3 || true)}"
[ -n "$PYTHON" ] || { say "missing Python 3.11"; exit 1; }
"$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
  || { say "Python 3.11 is required, $PYTHON is $("$PYTHON" -V 2>&1)"; exit 1; }

mkdir -p "$CACHE"
if [ ! -x "$VENV/bin/python" ]; then
  say "creating the Python environment in $VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi
say "installing hudi-connect and its test dependencies into $VENV"
"$VENV/bin/pip" install -q --progress-bar off -c ci/constraints-spark35.txt -e ./hudi_connect_stack -e ".[dev]"  # the ranges, pinned
[ "${1:-}" = --python-only ] && exit 0
"$VENV/bin/python" -m hudi_connect_stack.provision "$@"
