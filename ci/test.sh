#!/usr/bin/env bash
# Everything CI checks: set-up, lint, types and layer contracts, then the tests (unit
# tests and the integration suite on the real stack). Extra arguments go to pytest.
# Usage: ci/test.sh [--full] [pytest args]
#   --full  also the tests marked `full` (the whole conformance matrix); without it,
#           CI's representative slice of them.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${HUDI_CONNECT_CACHE:-$HOME/.cache/hudi-connect}"
VENV="$CACHE/venv"
start=$(date +%s)
selection=(-m "not full")
if [ "${1:-}" = "--full" ]; then
  shift
  selection=()
fi
bash ci/setup.sh
echo "[hudi-connect test] set-up took $(( $(date +%s) - start ))s"
"$VENV/bin/ruff" check hudi_connect tests integration benchmarks
"$VENV/bin/mypy" hudi_connect
"$VENV/bin/lint-imports"  # the layers of ARCHITECTURE.md
set +e
"$VENV/bin/python" -m pytest --durations=25 "${selection[@]}" "$@"
status=$?
set -e
echo "[hudi-connect test] total $(( $(date +%s) - start ))s"
if [ "$status" -eq 5 ]; then
  echo "[hudi-connect test] pytest collected no tests: that is a failure" >&2
  exit 1
fi
exit "$status"
