"""Snapshot read of a MOR table: hudi-connect's plan on a plain Spark Connect server
(no Hudi jar) against Hudi's own snapshot read on the Hudi server, same files.

    python benchmarks/snapshot_read.py [--rows 1000000] [--updated 0.2] [--repeat 3]

Writes a MOR table through Hudi (inserts, then one upsert of ``--updated`` of the
rows, which lands in log files; inline compaction off), then times each reader
materialising every row and column (a hash aggregate over all columns), and
prints the medians and the ratio ours / Hudi's.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from hudi_connect.reader import TableReader
from hudi_connect.server import connect
from hudi_connect.stack.spark_connect import start_spark_connect
from hudi_connect.table import HudiTable


def fingerprint(df: DataFrame) -> int:
    """Materialise every row and column; the same number from both readers if they agree."""
    columns = [c for c in df.columns if c != "_hoodie_file_name"]
    row = df.select(F.count(F.lit(1)).alias("n"), F.sum(F.xxhash64(*columns)).alias("h")).collect()[0]
    return hash((row.n, row.h))


def timed(action: Callable[[], int], repeat: int) -> tuple[float, int]:
    results, times = set(), []
    for _ in range(repeat):
        begin = time.perf_counter()
        results.add(action())
        times.append(time.perf_counter() - begin)
    assert len(results) == 1, "a reader gave different answers on repeated runs"
    return statistics.median(times), results.pop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--updated", type=float, default=0.2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    run_dir = Path(tempfile.mkdtemp(prefix="hudi-connect-bench-"))
    run_dir.chmod(0o755)
    hudi_server = start_spark_connect(run_dir, "hudi")
    plain_server = start_spark_connect(run_dir, "plain")
    try:
        hudi = connect(hudi_server.endpoint.url)  # type: ignore[attr-defined]
        plain = connect(plain_server.endpoint.url)  # type: ignore[attr-defined]
        path = str(run_dir / "mor_table")
        schema = "id long, name string, amount double, category string, ts long"
        table = HudiTable.create(hudi, path, schema, record_key="id", ordering_field="ts", partition_by="category",
                                 table_type="MERGE_ON_READ", metadata_table=False,
                                 options={"hoodie.compact.inline.max.delta.commits": "1000"})
        base = hudi.range(args.rows).select(
            F.col("id"), F.concat(F.lit("name-"), F.col("id").cast("string")).alias("name"),
            (F.col("id") * 1.5).alias("amount"), (F.col("id") % 4).cast("string").alias("category"),
            F.lit(1).cast("long").alias("ts"))
        begin = time.perf_counter()
        table.bulk_insert(base)
        updates = base.where(F.rand(7) < args.updated).withColumn("amount", F.col("amount") + 1).withColumn(
            "ts", F.lit(2).cast("long"))
        table.upsert(updates)
        print(f"wrote {args.rows} rows, ~{args.updated:.0%} updated into log files, "
              f"in {time.perf_counter() - begin:.0f}s")
        reader = TableReader(plain, path)
        plan = reader.plan()
        print(f"file slices {len(plan.slices)}, base files {plan.base_files}, log files {plan.log_files}")

        hudi_time, hudi_result = timed(lambda: fingerprint(table.snapshot(with_meta_columns=True)), args.repeat)
        ours_time, ours_result = timed(lambda: fingerprint(reader.snapshot()), args.repeat)
        assert ours_result == hudi_result, "the two readers disagree"
        print(f"Hudi's snapshot read (Hudi server):            {hudi_time:7.2f}s")
        print(f"hudi-connect's plan (plain server, no Hudi):   {ours_time:7.2f}s")
        print(f"ratio ours / Hudi's: {ours_time / hudi_time:.2f} (target: at most 1.0)")
    finally:
        plain_server.stop()
        hudi_server.stop()
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
