"""Snapshot read of a MOR table: hudi-connect's plan on a plain Spark Connect server
(no Hudi jar) against Hudi's own snapshot read on the Hudi server, same files.

    python benchmarks/snapshot_read.py [--sizes 250k,1m] [--updated 0.2] [--repeat 3] [--log-format avro|parquet]

For each size it writes a MOR table through Hudi (inserts, then one upsert of
``--updated`` of the rows, which lands in log files; inline compaction off), then
times each reader materialising every row and column (a hash aggregate over all
columns; interleaved medians after a warm-up), and prints the ratios per size.
"""

from __future__ import annotations

import shutil
import time

from pyspark.sql import functions as F
from side_by_side import (
    SCHEMA,
    fingerprint,
    generated_rows,
    hudi_and_plain_sessions,
    interleaved,
    log_format_options,
    sizes,
    snapshot_arguments,
)

from hudi_connect.reader import TableReader
from hudi_connect.table.hudi_table import HudiTable


def main() -> None:
    parser = snapshot_arguments(__doc__)
    parser.add_argument("--sizes", type=sizes, default=sizes("250k,1m"), help="rows, comma-separated (250k,1m,4m)")
    args = parser.parse_args()
    summary = []
    with hudi_and_plain_sessions() as (hudi, plain, run_dir):
        for rows in args.sizes:
            path = str(run_dir / f"mor_table_{rows}")
            table = HudiTable.create(hudi, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="category",
                                     table_type="MERGE_ON_READ", metadata_table=False,
                                     options={"hoodie.compact.inline.max.delta.commits": "1000",
                                              **log_format_options(args.log_format)})
            base = generated_rows(hudi, rows)
            begin = time.perf_counter()
            table.bulk_insert(base)
            updates = base.where(F.rand(7) < args.updated).withColumn("amount", F.col("amount") + 1).withColumn(
                "ts", F.lit(2).cast("long"))
            table.upsert(updates)
            print(f"\nwrote {rows} rows, ~{args.updated:.0%} updated into log files ({args.log_format} blocks), "
                  f"in {time.perf_counter() - begin:.0f}s", flush=True)
            reader = TableReader(plain, path)
            plan = reader.plan()
            print(f"  file slices {len(plan.slices or ())}, base files {plan.base_files}, log files {plan.log_files}")
            medians = interleaved({
                "hudi": lambda p=path: fingerprint(hudi.read.format("hudi").load(p)),
                "ours": lambda r=reader: fingerprint(r.snapshot()),
            }, args.repeat, args.warmups)
            (hudi_time, hudi_result), (ours_time, ours_result) = medians["hudi"], medians["ours"]
            assert ours_result == hudi_result, "the two readers disagree"
            print(f"  Hudi's snapshot read (Hudi server): {hudi_time:7.2f}s; hudi-connect's (plain server): "
                  f"{ours_time:7.2f}s; ratio {ours_time / hudi_time:.2f}", flush=True)
            summary.append((rows, hudi_time, ours_time))
            shutil.rmtree(path, ignore_errors=True)
    print("\nrows      Hudi s  ours s  ratio  target")
    for rows, hudi_time, ours_time in summary:
        print(f"{rows:<9} {hudi_time:6.2f}  {ours_time:6.2f}  {ours_time / hudi_time:5.2f}  at most 0.8")
        print(f"RESULT snapshot_read log_format={args.log_format} rows={rows} hudi_s={hudi_time:.2f} "
              f"ours_s={ours_time:.2f} ratio={ours_time / hudi_time:.2f}")


if __name__ == "__main__":
    main()
