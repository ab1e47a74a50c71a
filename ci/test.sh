#!/usr/bin/env bash
# Everything CI checks: set-up, lint, types and layer contracts, then the tests in three legs.
#   1. Spark 3.5 (the line Hudi's writes run on): the unit tests and the integration suite on the real stack,
#      as local processes.
#   2. Spark 4.1, jar-free: with a Spark 4 client (pyspark-client, numpy 2), the tests marked `spark4` on a
#      plain Spark 4.1 server, reading tables the 3.5 Hudi server writes in the same run; among them the
#      install test's Spark 4 end, which runs the unit tests beside the newest numpy, pandas and pyarrow.
#   3. Containers: the same stack as containers (`--hudi-connect-backend docker`) from images built here
#      (podman's Docker API when no Docker engine answers), running a slice of the end-to-end suite: the
#      smoke tests, CDC against Hudi's, the COW/MOR model, the reverse streamer, and the JVM client.
# Extra arguments go to pytest: to leg 1, to leg 2 with --spark4, to leg 3 with --containers.
# Usage: ci/test.sh [--full | --spark4 | --containers] [pytest args]
#   --full        also the tests marked `full` (the whole conformance matrix, every kill point, both install
#                 ends), the Spark 4 leg on Spark 4.0 too, and those suites whole in containers; without it,
#                 CI's representative slice of each.
#   --spark4      the Spark 4 leg alone (after the set-up it needs).
#   --containers  the container leg alone.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${HUDI_CONNECT_CACHE:-$HOME/.cache/hudi-connect}"
VENV="$CACHE/venv"
start=$(date +%s)
# the JVM client test runs in the container leg (against the containerised stack); --full runs it in both
selection=(-m "not full and not spark4" --ignore=integration/test_jvm_client.py)
spark4_lines=(4.1)
legs=(spark35 spark4 containers)
leg2_args=()
leg3_args=()
# the container leg's slice; --full runs these files whole
containers=(
  integration/test_smoke_hudi.py integration/test_smoke_kafka.py integration/test_smoke_postgres.py
  "integration/test_cdc.py::test_change_stream_equals_hudis_cdc_query[COPY_ON_WRITE-DATA_BEFORE_AFTER]"
  "integration/test_cdc.py::test_change_stream_equals_hudis_cdc_query[MERGE_ON_READ-OP_KEY_ONLY]"
  "integration/test_table_model.py::test_random_operation_sequences_match_the_model[minio-MERGE_ON_READ]"
  "integration/test_reverse_stream.py::test_random_histories_reach_every_sink_exactly[COPY_ON_WRITE-11]"
  integration/test_jvm_client.py integration/test_stack_cli.py
)
case "${1:-}" in
  --full) shift; selection=(-m "not spark4"); spark4_lines=(4.1 4.0)
    containers=(integration/test_smoke_hudi.py integration/test_smoke_kafka.py integration/test_smoke_postgres.py
                integration/test_cdc.py integration/test_table_model.py integration/test_reverse_stream.py
                integration/test_jvm_client.py integration/test_stack_cli.py) ;;
  --spark4) shift; legs=(spark4); leg2_args=("$@") ;;
  --containers) shift; legs=(containers); spark4_lines=(); leg3_args=("$@") ;;
esac
bash ci/setup.sh
if [[ " ${legs[*]} " == *" spark4 "* ]]; then
  for line in "${spark4_lines[@]}"; do bash ci/setup-spark4.sh "$line"; done
fi
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
  [[ " ${legs[*]} " == *" spark4 "* ]] || break
  leg_start=$(date +%s)
  echo "[hudi-connect test] leg 2: Spark $line, jar-free"
  run_pytest "$CACHE/venv-spark${line//./}/bin/python" -m pytest --durations=10 --hudi-connect-spark4-line "$line" \
    integration/test_spark4.py \
    "integration/test_install_ranges.py::test_installs_beside_the_users_libraries_and_works_with_them[spark4-newest]" \
    "${leg2_args[@]}"
  echo "[hudi-connect test] leg 2 (Spark $line) took $(( $(date +%s) - leg_start ))s"
done
if [[ " ${legs[*]} " == *" containers "* ]]; then
  leg_start=$(date +%s)
  echo "[hudi-connect test] leg 3: containers"
  # podman, runc and mmdebstrap (apt) and podman's settings, unless a Docker engine answers; a failure here
  # fails this leg only. The images are built by the first test that needs one.
  if "$VENV/bin/python" -m hudi_connect.stack.provision podman; then
    # the stack's own images even where a registry answers: the public Spark image has no pyarrow for the
    # jar-free reads, and its Python is not the client's
    HUDI_CONNECT_IMAGES=built run_pytest "$VENV/bin/python" -m pytest --durations=10 --hudi-connect-backend docker \
      -m "not spark4" "${containers[@]}" "${leg3_args[@]}"
  else
    status=1
  fi
  echo "[hudi-connect test] leg 3 (containers) took $(( $(date +%s) - leg_start ))s"
fi
echo "[hudi-connect test] total $(( $(date +%s) - start ))s"
exit "$status"
