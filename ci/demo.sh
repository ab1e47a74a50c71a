#!/usr/bin/env bash
# The main job on the embedded default: a local Spark Connect server with Hudi
# on the local file system, running the demo (a small MOR table written,
# updated and deleted, then printed with its timeline).
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${HUDI_CONNECT_CACHE:-$HOME/.cache/hudi-connect}"
bash ci/setup.sh jars interceptor server-python
exec "$CACHE/venv/bin/hudi-connect" demo "$@"
