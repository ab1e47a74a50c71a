"""What each read sends the server: Connect calls (plans executed, plans analysed) and the Spark jobs and tasks
they run, for a first and a repeated read of the same table, counted, not timed.

    python benchmarks/jobs_per_read.py [--rows 100k]

A Hudi server writes a MOR table (no metadata table), a MOR table with one, and a COW table with CDC
(DATA_BEFORE_AFTER); a plain server with Spark's UI on reads them. Jobs and tasks come from the plain server's
status API (``/api/v1/applications/<id>/jobs``), calls from the client's own requests. Each operation builds its
reader anew (``TableReader(spark, path)``, ``ChangeQuery(spark, path)``), as a notebook cell or a service
request does: the session's first read of the table, then a second and a third.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from footprint import counting, jobs, last_job
from hudi_connect_stack.process import free_port
from hudi_connect_stack.spark_connect import start_spark_connect
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from side_by_side import SCHEMA, generated_rows, sizes

from hudi_connect.cdc import ChangeQuery
from hudi_connect.client.server import connect
from hudi_connect.reader import TableReader
from hudi_connect.reverse import ReverseStream
from hudi_connect.reverse.sinks import FileSink
from hudi_connect.table.hudi_table import HudiTable
from hudi_connect.table_spec import FileIndex


def write_tables(hudi: SparkSession, root: Path, rows: int) -> dict[str, tuple[str, Any]]:
    """(path, the first change's instant) of each table."""
    tables = {}
    for name, table_type, metadata in (("mor", "MERGE_ON_READ", False), ("mor_mdt", "MERGE_ON_READ", True)):
        path = str(root / name)
        table = HudiTable.create(hudi, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="category",
                                 table_type=table_type, metadata_table=metadata,
                                 options={"hoodie.compact.inline.max.delta.commits": "1000"})
        base = generated_rows(hudi, rows)
        table.bulk_insert(base)
        table.upsert(base.where(F.rand(7) < 0.2).withColumn("ts", F.lit(2).cast("long")))
        tables[name] = (path, None)
    path = str(root / "cow_cdc")
    table = HudiTable.create(hudi, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="category",
                             table_type="COPY_ON_WRITE", cdc="DATA_BEFORE_AFTER", metadata_table=False,
                             options={"hoodie.clean.automatic": "false"})
    base = generated_rows(hudi, rows)
    first = table.bulk_insert(base)
    for commit in range(3):
        table.upsert(base.where(F.rand(100 + commit) < 0.05).withColumn("ts", F.lit(commit + 2).cast("long")))
    tables["cow_cdc"] = (path, first)
    return tables


def operations(plain: SparkSession, tables: dict[str, tuple[str, Any]],
               sink_root: Path) -> dict[str, Callable[[], Any]]:
    mor, mor_mdt, (cow, first) = tables["mor"][0], tables["mor_mdt"][0], tables["cow_cdc"]
    stream = ReverseStream(plain, cow, "bench", [FileSink(str(sink_root / "sink"), spark=plain)])
    return {
        "snapshot (MOR, storage listing)": lambda: TableReader(plain, mor).snapshot().count(),
        "snapshot (MOR, metadata table)": lambda: TableReader(plain, mor_mdt).snapshot().count(),
        "change query (COW, DATA_BEFORE_AFTER)": lambda: ChangeQuery(plain, cow).changes(first).count(),
        "file listing (FileIndex, metadata table)":
            lambda: sum(1 for _ in FileIndex(plain, mor_mdt).list_files_at()),
        "reverse-stream batch (nothing new after the first)": lambda: stream.run_once(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=lambda text: sizes(text)[0], default=100_000)
    args = parser.parse_args()
    run_dir = Path(tempfile.mkdtemp(prefix="hudi-connect-bench-"))
    run_dir.chmod(0o755)
    ui_port = free_port()
    hudi_server = start_spark_connect(run_dir, "hudi")
    plain_server = start_spark_connect(run_dir, "plain", extra_confs={"spark.ui.enabled": "true",
                                                                       "spark.ui.port": str(ui_port)})
    try:
        hudi, plain = connect(hudi_server.endpoint.url), connect(plain_server.endpoint.url)  # type: ignore[attr-defined]
        tables = write_tables(hudi, run_dir, args.rows)
        print("| operation | read | plans executed | plans analysed | Spark jobs | tasks |")
        print("|---|---|---|---|---|---|")
        for name, operation in operations(plain, tables, run_dir).items():
            for read in ("first", "second", "third"):
                before = last_job(ui_port)
                with counting(plain) as sent:
                    operation()
                time.sleep(1)  # the status API learns of a job's end from Spark's listener bus, a moment later
                ran = [job for job in jobs(ui_port) if job["jobId"] > before]
                print(f"| {name} | {read} | {sent.executed} | {sent.analysed} | {len(ran)} | "
                      f"{sum(job['numTasks'] for job in ran)} |", flush=True)
    finally:
        plain_server.stop()
        hudi_server.stop()
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
