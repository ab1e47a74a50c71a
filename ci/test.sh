#!/usr/bin/env bash
# Everything CI checks: set-up, lint and types, then every test (unit tests and
# the integration suite on the real stack). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${HUDI_CONNECT_CACHE:-$HOME/.cache/hudi-connect}"
VENV="$CACHE/venv"
start=$(date +%s)
bash ci/setup.sh
echo "[hudi-connect test] set-up took $(( $(date +%s) - start ))s"
"$VENV/bin/ruff" check hudi_connect tests integration benchmarks
"$VENV/bin/mypy" hudi_connect
"$VENV/bin/lint-imports"  # the layers of ARCHITECTURE.md
set +e
"$VENV/bin/python" -m pytest "$@"
status=$?
set -e
echo "[hudi-connect test] total $(( $(date +%s) - start ))s"
if [ "$status" -eq 5 ]; then
  echo "[hudi-connect test] pytest collected no tests: that is a failure" >&2
  exit 1
fi
exit "$status"
