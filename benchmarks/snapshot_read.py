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
import time

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from side_by_side import SCHEMA, generated_rows, hudi_and_plain_sessions, timed

from hudi_connect.reader import TableReader
from hudi_connect.table.hudi_table import HudiTable


def fingerprint(df: DataFrame) -> int:
    """Materialise every row and column; the same number from both readers if they agree."""
    columns = [c for c in df.columns if c != "_hoodie_file_name"]
    row = df.select(F.count(F.lit(1)).alias("n"), F.sum(F.xxhash64(*columns)).alias("h")).collect()[0]
    return hash((row.n, row.h))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--updated", type=float, default=0.2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with hudi_and_plain_sessions() as (hudi, plain, run_dir):
        path = str(run_dir / "mor_table")
        table = HudiTable.create(hudi, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="category",
                                 table_type="MERGE_ON_READ", metadata_table=False,
                                 options={"hoodie.compact.inline.max.delta.commits": "1000"})
        base = generated_rows(hudi, args.rows)
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


if __name__ == "__main__":
    main()
