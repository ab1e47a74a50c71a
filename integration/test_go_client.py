"""A client in Go: a program on ``spark-connect-go`` (``go_client/main.go``) against the stack, beside the JVM one.

It reads an env file as ``hudi-connect stack up`` writes it (the same rendering), creates a Hudi table through
the Hudi server with Spark SQL (``CREATE TABLE ... USING hudi``, ``INSERT``, ``UPDATE``, ``DELETE``,
``MERGE INTO``), and reads it back: a snapshot and an incremental query (``hudi_table_changes`` after the first
commit completed). Both must equal ours: the jar-free reads of the same table on the plain server.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections import Counter
from pathlib import Path

from hudi_connect_stack.standalone import render_env_file
from pyspark.sql import SparkSession

from hudi_connect.reader import TableReader
from hudi_connect_stack import provision

PROGRAM = Path(__file__).with_name("go_client")


def _run(binary: Path, env_file: Path, name: str, path: str) -> dict[str, list[list]]:
    result = subprocess.run([str(binary), str(env_file), name, path], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    lines: dict[str, list[list]] = {"COMMIT": [], "ROW": [], "INCR": []}
    for kind, body in (line.split("\t", 1) for line in result.stdout.splitlines() if "\t" in line):
        lines[kind].append(json.loads(body))
    return lines


def test_a_go_program_writes_a_table_by_sql_and_its_reads_equal_ours(
    plain_spark: SparkSession, hudi_server_url: str, local_base_path: str, tmp_path: Path
) -> None:
    binary = provision.go_program(PROGRAM)
    env_file = tmp_path / "stack.env"
    env_file.write_text(render_env_file({"HUDI_CONNECT_SPARK_URL": hudi_server_url}))
    out = _run(binary, env_file, f"go_orders_{uuid.uuid4().hex[:8]}", local_base_path)

    assert len(out["COMMIT"]) == 4  # insert, update, delete, merge
    reader = TableReader(plain_spark, local_base_path)
    ours = Counter(tuple(r) for r in reader.snapshot().select("id", "v", "ts", "part").collect())
    assert Counter(tuple(r) for r in out["ROW"]) == ours == Counter(
        {(1, "a", 10, "p0"): 1, (2, "b2", 20, "p1"): 1, (4, "d2", 30, "p1"): 1, (5, "e", 30, "p0"): 1})

    first_completed = out["COMMIT"][0][1]
    ours_after = reader.incremental(first_completed).select("id", "v", "ts", "part").collect()
    assert Counter(tuple(r) for r in out["INCR"]) == Counter(tuple(r) for r in ours_after)
    assert {r[0] for r in out["INCR"]} == {2, 4, 5}  # the first commit's untouched row is left out

    env_file.write_text(render_env_file({"HUDI_CONNECT_SPARK_URL": hudi_server_url.split(";", 1)[0]}))
    refused = subprocess.run([str(binary), str(env_file), "go_refused", str(tmp_path / "refused")],
                             capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and "ROW\t" not in refused.stdout  # no token header: the server refuses
