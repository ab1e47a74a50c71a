#!/usr/bin/env bash
# Set up the Spark 4 leg: a client environment of the line (pyspark-client, numpy 2, the test tools) with
# hudi-connect installed, and the plain server of the line (PyPI's pyspark sdist, about 450 MB, with its
# workers' Python and the Kafka and PostgreSQL jars). Needs ci/setup.sh first: the Spark 3.5 environment writes
# the tables the leg reads. Idempotent; cached in $HUDI_CONNECT_CACHE (~/.cache/hudi-connect).
# Usage: ci/setup-spark4.sh LINE   (4.0, 4.1, 4.2 or 4.3)
set -euo pipefail
cd "$(dirname "$0")/.."
LINE="${1:?usage: ci/setup-spark4.sh 4.0|4.1|4.2|4.3}"
TAG="spark${LINE//./}"
CACHE="${HUDI_CONNECT_CACHE:-$HOME/.cache/hudi-connect}"
VENV="$CACHE/venv-$TAG"
PYTHON="${HUDI_CONNECT_PYTHON:-$(command -v python3.11 || command -v python3)}"
[ -f "ci/constraints-$TAG.txt" ] || { echo "no ci/constraints-$TAG.txt: Spark lines are 4.0 to 4.3" >&2; exit 1; }
if [ ! -x "$VENV/bin/python" ]; then
  echo "[hudi-connect setup] creating the Spark $LINE client environment in $VENV" >&2
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi
"$VENV/bin/pip" install -q --progress-bar off -c "ci/constraints-$TAG.txt" -e ./hudi_connect_stack -e ".[$TAG,test]"
"$VENV/bin/python" -m hudi_connect_stack.provision jars interceptor postgres "spark-$LINE"
