"""A Python 3.13 client, as users of newer Pythons run hudi-connect: Debian 13's ``python3`` in an image built with
``mmdebstrap`` (``testcontainers/client-trixie``), the library installed there from this checkout into a venv
with Spark 4.3's client (the Spark 3.5 client needs numpy < 2, which has no 3.13 build).

In that container: the unit tests, and the jar-free suite (``integration/test_spark4.py``, all but the reverse
stream, whose Kafka and PostgreSQL the image does not carry) against a plain Spark 4.3 server the suite starts
there, whose workers are that 3.13; and, against a Spark 4.3 server on this machine whose workers are this
Python (3.11), the error a user meets, which names both versions.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest
from hudi_connect_stack.backend import LocalBackend
from hudi_connect_stack.endpoints import SparkConnectEndpoint, SparkFlavor
from hudi_connect_stack.engine import ensure_engine, stop_started_engine
from hudi_connect_stack.images import ensure_client_image
from hudi_connect_stack.shared import SharedServices
from hudi_connect_stack.testing.fixture_tables import fixtures_dir
from hudi_connect_stack.testing.reference_tables import REFERENCE_TABLES, write_all
from hudi_connect_stack.versions import SPARK4_LINES
from pyspark.sql import SparkSession

from hudi_connect_stack import provision

pytestmark = pytest.mark.full

REPO = Path(__file__).resolve().parent.parent
EXTRA_CAS = Path("/usr/local/share/ca-certificates")  # a proxy's own CA, which pip and Maven must trust too

SCRIPT = r"""
set -euo pipefail
update-ca-certificates >/dev/null 2>&1 || true
[ -x /cache/venv/bin/python ] || python3 -m venv /cache/venv
/cache/venv/bin/pip install -q --progress-bar off -c ci/constraints-spark43.txt -e ./hudi_connect_stack \
  -e ".[spark43,test]"
echo "CLIENT PYTHON $(/cache/venv/bin/python -c 'import sys; print(sys.version.split()[0])')"
summary() { grep -E "^[0-9]+ (passed|failed)" | tail -n 1; }  # pytest's last line of counts
echo "UNIT"; /cache/venv/bin/python -m pytest -q -p no:cacheprovider tests | summary
echo "JAR-FREE"; /cache/venv/bin/python -m pytest -q -p no:cacheprovider --hudi-connect-spark4-line 4.3 \
  integration/test_spark4.py -k "not reverse_stream" | summary
/cache/venv/bin/python - "$MISMATCH_URL" "$MISMATCH_TABLE" <<'EOF'
import sys
from hudi_connect import connect
from hudi_connect.core.errors import ServerMisconfiguredError
from hudi_connect.reader import TableReader

spark = connect(sys.argv[1])
try:
    TableReader(spark, sys.argv[2]).snapshot().collect()
    print("MISMATCH none")
except ServerMisconfiguredError as error:
    print("MISMATCH", str(error).replace("\n", " "))
EOF
"""


def _source_copy(target: Path) -> Path:
    """The checkout's files as git knows them (an editable install writes into its source)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def test_a_python_313_client_passes_the_unit_and_jar_free_suites_and_a_mismatch_names_both_pythons(
    spark: SparkSession, shared_services: SharedServices, tmp_path: Path
) -> None:
    import docker

    flavor = cast(SparkFlavor, SPARK4_LINES["4.3"].flavor)
    host_server = shared_services.get(f"spark-connect-{flavor}", SparkConnectEndpoint,
                                      lambda run_dir: LocalBackend().spark_connect(run_dir, flavor, None))
    reference = Path(f"/tmp/hudi-connect-reference-{os.getpid()}")  # where the host's server reads it too
    write_all(reference, spark)
    source = _source_copy(tmp_path / "src")
    cache = provision.cache_dir() / "client-trixie"  # the container's venv and Spark 4.3 server, kept
    cache.mkdir(parents=True, exist_ok=True)
    volumes = {str(source): {"bind": "/src", "mode": "rw"}, str(cache): {"bind": "/cache", "mode": "rw"},
               str(fixtures_dir()): {"bind": "/fixtures", "mode": "ro"},
               str(reference): {"bind": str(reference), "mode": "ro"}}
    if EXTRA_CAS.is_dir():
        volumes[str(EXTRA_CAS)] = {"bind": str(EXTRA_CAS), "mode": "ro"}
    ensure_engine(tmp_path)
    client = docker.from_env(timeout=600)
    try:
        container = client.containers.run(
            ensure_client_image(client), ["bash", "-c", SCRIPT], detach=True, network_mode="host",
            working_dir="/src", volumes=volumes,
            environment={"HUDI_CONNECT_CACHE": "/cache", "HUDI_CONNECT_FIXTURES": "/fixtures",
                         "HUDI_CONNECT_REFERENCE_TABLES": str(reference), "MISMATCH_URL": host_server.url,
                         "MISMATCH_TABLE": str(reference / REFERENCE_TABLES[0].name)})
        try:
            status = container.wait(timeout=3600)
            output = container.logs().decode(errors="replace")
        finally:
            container.remove(force=True)
    finally:
        client.close()
        stop_started_engine(tmp_path)
        shutil.rmtree(reference, ignore_errors=True)
    print(output[-6000:])
    assert status["StatusCode"] == 0, output[-6000:]
    assert re.search(r"^CLIENT PYTHON 3\.13\.", output, re.M), output[-3000:]
    unit = re.search(r"UNIT\n(.*)", output)
    jar_free = re.search(r"JAR-FREE\n(.*)", output)
    assert unit and re.fullmatch(r"\d{3,} passed.*", unit.group(1)) and "failed" not in unit.group(1), output
    assert jar_free and re.fullmatch(r"\d+ passed, \d+ deselected.*", jar_free.group(1)), output
    workers = f"{sys.version_info.major}.{sys.version_info.minor}"
    mismatch = next(line for line in output.splitlines() if line.startswith("MISMATCH"))
    assert "3.13" in mismatch and workers in mismatch, mismatch
