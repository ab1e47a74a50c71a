"""The floor of a snapshot read: hudi-connect's on a plain server against Spark's own Parquet scan of the same
base files on the same server, the fastest any reader on this engine could go (issue #56).

    python benchmarks/snapshot_floor.py [--sizes 1m,4m] [--updated 0.2] [--repeat 3] [--storage local|minio]
                                        [--log-format avro|parquet]

For each size it writes two tables through Hudi (bulk insert, then one upsert of ``--updated`` of the rows):

- **COW**: the upsert rewrites the base files it touches. Ours, ``TableReader.snapshot()``, against
  ``spark.read.parquet`` of the latest slices' base files: the same rows, the same answer (checked). Target:
  at most 1.1x.
- **MOR**: the upsert lands in log files. Ours (base files merged with their logs) against two floors: the
  floor a user would accept, Spark's Parquet scan of the same rows after a compaction (a copy of the table,
  compacted by Hudi: the same answer, checked), target at most 2.0x (issue #71); and the plain scan of the
  base files alone, a lower floor that skips the merge and so answers differently, reported with the bytes
  each side reads.

``--storage minio`` writes the tables to a MinIO server of the run (the compacted copy by server-side copies);
``--log-format parquet`` has the upsert write Parquet data blocks instead of Hudi's default Avro.

Both readers materialise every row and column (one aggregate of a hash over all columns); interleaved medians
after a warm-up; the plans' jobs and tasks as `footprint.py` counts them.
"""

from __future__ import annotations

import shutil
import time

from hudi_connect_stack.endpoints import MinioEndpoint
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from side_by_side import (
    BUCKET,
    SCHEMA,
    copy_table,
    fingerprint,
    generated_rows,
    hudi_and_plain_sessions,
    interleaved,
    log_format_options,
    minio_if,
    sizes,
    snapshot_arguments,
)

from hudi_connect.reader import TableReader
from hudi_connect.table.hudi_table import HudiTable


def write_table(hudi: SparkSession, path: str, rows: int, table_type: str, updated: float,
                log_format: str = "avro") -> None:
    table = HudiTable.create(hudi, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="category",
                             table_type=table_type, metadata_table=False,
                             options={"hoodie.compact.inline.max.delta.commits": "1000",
                                      "hoodie.clean.automatic": "false", **log_format_options(log_format)})
    base = generated_rows(hudi, rows)
    table.bulk_insert(base)
    table.upsert(base.where(F.rand(7) < updated).withColumn("amount", F.col("amount") + 1)
                 .withColumn("ts", F.lit(2).cast("long")))


def compacted_base_files(hudi: SparkSession, plain: SparkSession, path: str, copy: str,
                         minio: MinioEndpoint | None = None) -> list[str]:
    """The base files of a copy of the MOR table at ``path`` after Hudi compacted it: the same rows, in
    Parquet alone."""
    copy_table(minio, path, copy)
    compaction = HudiTable.open(hudi, copy).compaction
    compaction.schedule()
    compaction.run()
    slices = TableReader(plain, copy).plan().slices or ()
    assert all(not s.log_files for s in slices), "the compaction left log files"
    return ["/".join(part for part in (copy, s.partition, s.base_file.name) if part)
            for s in slices if s.base_file is not None]


def main() -> None:
    parser = snapshot_arguments(__doc__)
    parser.add_argument("--sizes", type=sizes, default=sizes("1m,4m"), help="rows, comma-separated (1m,4m)")
    parser.add_argument("--tables", type=lambda text: text.split(","), default=["COPY_ON_WRITE", "MERGE_ON_READ"],
                        help="table types, comma-separated (COPY_ON_WRITE,MERGE_ON_READ)")
    parser.add_argument("--storage", choices=("local", "minio"), default="local")
    args = parser.parse_args()
    summary = []
    with minio_if(args.storage == "minio") as minio, hudi_and_plain_sessions(minio) as (hudi, plain, run_dir):
        root = f"s3a://{BUCKET}" if minio is not None else str(run_dir)
        for rows in args.sizes:
            for table_type in args.tables:
                path = f"{root}/{table_type.lower()}_{rows}"
                begin = time.perf_counter()
                write_table(hudi, path, rows, table_type, args.updated, args.log_format)
                reader = TableReader(plain, path)
                plan = reader.plan()
                slices = plan.slices or ()
                base_files = ["/".join(part for part in (path, s.partition, s.base_file.name) if part)
                              for s in slices if s.base_file is not None]
                base_bytes = sum(s.base_file.size for s in slices if s.base_file is not None)
                log_bytes = sum(log.size for s in slices for log in s.log_files)
                print(f"\n{table_type} {rows} rows written in {time.perf_counter() - begin:.0f}s: "
                      f"{len(base_files)} base files ({base_bytes / 1e6:.1f} MB), {plan.log_files} log files "
                      f"({log_bytes / 1e6:.1f} MB)", flush=True)
                readers = {
                    "floor": lambda files=base_files: fingerprint(plain.read.parquet(*files)),
                    "ours": lambda r=reader: fingerprint(r.snapshot()),
                }
                compacted = f"{path}_compacted"
                if table_type == "MERGE_ON_READ":
                    compacted_files = compacted_base_files(hudi, plain, path, compacted, minio)
                    readers["compacted floor"] = lambda files=compacted_files: fingerprint(plain.read.parquet(*files))
                medians = interleaved(readers, args.repeat, args.warmups)
                (floor_time, floor_result), (ours_time, ours_result) = medians["floor"], medians["ours"]
                if table_type == "COPY_ON_WRITE":
                    assert ours_result == floor_result, "ours and the Parquet scan of the base files disagree"
                ratio = ours_time / floor_time
                print(f"  Spark's Parquet scan of the base files: {floor_time:6.2f}s ({base_bytes / 1e6:.1f} MB); "
                      f"ours: {ours_time:6.2f}s ({(base_bytes + log_bytes) / 1e6:.1f} MB); ratio {ratio:.2f}",
                      flush=True)
                compacted_time = None
                if "compacted floor" in medians:
                    compacted_time, compacted_result = medians["compacted floor"]
                    assert ours_result == compacted_result, "ours and the scan of the compacted table disagree"
                    print(f"  Spark's Parquet scan after a compaction: {compacted_time:6.2f}s; "
                          f"ours ÷ it: {ours_time / compacted_time:.2f} (target at most 2.0)", flush=True)
                summary.append((table_type, rows, floor_time, ours_time, base_bytes, log_bytes, compacted_time))
                if minio is None:  # MinIO's tables go with its directory at the end of the run
                    shutil.rmtree(path, ignore_errors=True)
                    shutil.rmtree(compacted, ignore_errors=True)
    print("\ntable  rows      floor s  ours s  ratio  target     floor MB  ours MB  compacted s  ours ÷ compacted")
    for table_type, rows, floor_time, ours_time, base_bytes, log_bytes, compacted_time in summary:
        kind = "COW" if table_type == "COPY_ON_WRITE" else "MOR"
        target = "at most 1.1" if kind == "COW" else "reported"
        after = (f"  {compacted_time:11.2f}  {ours_time / compacted_time:.2f} (at most 2.0)"
                 if compacted_time is not None else "")
        print(f"{kind:<6} {rows:<9} {floor_time:7.2f}  {ours_time:6.2f}  {ours_time / floor_time:5.2f}  {target:<10} "
              f"{base_bytes / 1e6:8.1f}  {(base_bytes + log_bytes) / 1e6:7.1f}{after}")
        extra = f" compacted_s={compacted_time:.2f}" if compacted_time is not None else ""
        print(f"RESULT snapshot_floor storage={args.storage} log_format={args.log_format} table={kind} rows={rows} "
              f"floor_s={floor_time:.2f} ours_s={ours_time:.2f} "
              f"ratio={ours_time / floor_time:.2f}{extra}")


if __name__ == "__main__":
    main()
