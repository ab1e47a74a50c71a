#!/usr/bin/env bash
# Everything CI checks: set-up, lint, types and layer contracts, then the tests in two legs.
#   1. Spark 3.5 (the line Hudi's writes run on): the unit tests and the integration suite on the real stack.
#   2. Spark 4.1, jar-free: with a Spark 4 client (pyspark-client, numpy 2), the tests marked `spark4` on a
#      plain Spark 4.1 server, reading tables the 3.5 Hudi server writes in the same run; among them the
#      install test's Spark 4 end, which runs the unit tests beside the newest numpy, pandas and pyarrow.
# Extra arguments go to pytest: to leg 1, or to leg 2 with --spark4.
# Usage: ci/test.sh [--full | --spark4] [pytest args]
#   --full    also the tests marked `full` (the whole conformance matrix, every kill point, both install ends)
#             and the Spark 4 leg on Spark 4.0 too; without it, CI's representative slice of them.
#   --spark4  the Spark 4 leg alone (after the set-up it needs).
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${HUDI_CONNECT_CACHE:-$HOME/.cache/hudi-connect}"
VENV="$CACHE/venv"
start=$(date +%s)
selection=(-m "not full and not spark4")
spark4_lines=(4.1)
legs=(spark35 spark4)
leg2_args=()
case "${1:-}" in
  --full) shift; selection=(-m "not spark4"); spark4_lines=(4.1 4.0) ;;
  --spark4) shift; legs=(spark4); leg2_args=("$@") ;;
esac
bash ci/setup.sh
for line in "${spark4_lines[@]}"; do bash ci/setup-spark4.sh "$line"; done
echo "[hudi-connect test] set-up took $(( $(date +%s) - start ))s"
"$VENV/bin/ruff" check hudi_connect tests integration benchmarks
"$VENV/bin/mypy" hudi_connect
"$VENV/bin/lint-imports"  # the layers of ARCHITECTURE.md

status=0
run_pytest() {  # python, then pytest arguments; a run that collects nothing is a failure too
  local code=0
  "$@" || code=$?
  if [ "$code" -eq 5 ]; then
    echo "[hudi-connect test] pytest collected no tests: that is a failure" >&2
    code=1
  fi
  [ "$code" -eq 0 ] || status=1
}
if [[ " ${legs[*]} " == *" spark35 "* ]]; then
  echo "[hudi-connect test] leg 1: Spark 3.5"
  run_pytest "$VENV/bin/python" -m pytest --durations=25 "${selection[@]}" "$@"
fi
for line in "${spark4_lines[@]}"; do
  leg_start=$(date +%s)
  echo "[hudi-connect test] leg 2: Spark $line, jar-free"
  run_pytest "$CACHE/venv-spark${line//./}/bin/python" -m pytest --durations=10 --hudi-connect-spark4-line "$line" \
    integration/test_spark4.py \
    "integration/test_install_ranges.py::test_installs_beside_the_users_libraries_and_works_with_them[spark4-newest]" \
    "${leg2_args[@]}"
  echo "[hudi-connect test] leg 2 (Spark $line) took $(( $(date +%s) - leg_start ))s"
done
echo "[hudi-connect test] total $(( $(date +%s) - start ))s"
exit "$status"
