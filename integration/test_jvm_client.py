"""A client that is not Python: Spark's JVM Connect client, from a small Java program, against the stack.

The program (``jvm_client/HudiChanges.java``) is compiled with ``javac`` against
``spark-connect-client-jvm`` from Maven Central, connects with the server's
token header in its ``sc://`` URL, reads a table that ``HudiTable`` wrote, and
queries its changes through Hudi's SQL (``hudi_table_changes``). Both must
equal ours: the jar-free snapshot read and change query on the plain server.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path

from hudi_connect_stack.endpoints import TOKEN_HEADER
from hudi_connect_stack.testing.cdc_history import SCHEMA, event_multiset, events, write_history
from pyspark.sql import SparkSession

from hudi_connect.cdc import ChangeQuery
from hudi_connect.reader import TableReader
from hudi_connect.table.hudi_table import HudiTable
from hudi_connect_stack import provision

PROGRAM = Path(__file__).with_name("jvm_client") / "HudiChanges.java"


def _compile(tmp_path: Path) -> str:
    """The program compiled against the JVM client; returns the class path that runs it."""
    classpath = os.pathsep.join(str(jar) for jar in provision.jvm_client_classpath())
    classes = tmp_path / "classes"
    compiled = subprocess.run([provision.require_tool("javac"), "-d", str(classes), "-cp", classpath, str(PROGRAM)],
                              capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr[-3000:]
    return os.pathsep.join([str(classes), classpath])


def _run_java_client(classpath: str, url: str, table_path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        # Arrow (the client's result format) reads buffers' addresses: Java 17 must open java.nio to it
        [provision.require_tool("java"), "--add-opens=java.base/java.nio=ALL-UNNAMED", "-cp", classpath,
         "HudiChanges", url, table_path],
        capture_output=True, text=True, timeout=300,
    )


def _output(result: subprocess.CompletedProcess[str]) -> tuple[list[dict], list[dict]]:
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line.split("\t", 1) for line in result.stdout.splitlines() if "\t" in line]
    return ([json.loads(body) for kind, body in lines if kind == "ROW"],
            [json.loads(body) for kind, body in lines if kind == "CHANGE"])


def test_the_jvm_client_reads_what_hudi_table_wrote_and_its_changes_equal_ours(
    spark: SparkSession, plain_spark: SparkSession, hudi_server_url: str, local_base_path: str, tmp_path: Path
) -> None:
    assert f";{TOKEN_HEADER}=" in hudi_server_url  # the Java client passes the token as a gRPC header too
    table = HudiTable.create(spark, local_base_path, SCHEMA, record_key="id", ordering_field="ts",
                             partition_by="part", table_type="MERGE_ON_READ", cdc="DATA_BEFORE_AFTER",
                             metadata_table=False,
                             options={"hoodie.clean.automatic": "false", "hoodie.parquet.small.file.limit": "0"})
    write_history(spark, table)

    classpath = _compile(tmp_path)
    rows, changes = _output(_run_java_client(classpath, hudi_server_url, local_base_path))

    ours = TableReader(plain_spark, local_base_path).snapshot().select("id", "v", "ts", "part").collect()
    assert Counter((r["id"], r["v"], r["ts"], r["part"]) for r in rows) == Counter(tuple(r) for r in ours)
    assert len(rows) > 5
    theirs = event_multiset((c["op"], c["ts_ms"], c["before"], c["after"]) for c in changes)
    assert theirs == events(ChangeQuery(plain_spark, local_base_path).changes("earliest"))
    assert sum(theirs.values()) > 20

    without_token = hudi_server_url.split(";", 1)[0]  # the same server, no token header: refused
    refused = _run_java_client(classpath, without_token, local_base_path)
    assert refused.returncode != 0 and "ROW\t" not in refused.stdout
