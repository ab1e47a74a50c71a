#!/usr/bin/env bash
# The main job on the embedded default: two local Spark Connect servers on the
# local file system, one with Hudi's jars and one without, running the demo (a
# small MOR table written, updated and deleted through HudiTable; then, without
# Hudi's jars, its snapshot, the changes of each commit, its file slices and a
# reverse stream to JSON files).
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${HUDI_CONNECT_CACHE:-$HOME/.cache/hudi-connect}"
bash ci/setup.sh jars interceptor server-python
exec "$CACHE/venv/bin/hudi-connect" demo "$@"
