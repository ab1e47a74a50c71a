"""``FileIndex.list_files_at``: through the metadata table against listing storage, on MinIO.

    python benchmarks/file_listing.py [--partitions 1000] [--files-per-partition 10] [--repeat 3]

Writes (through Hudi, metadata table on) a COW table on MinIO with about
``partitions x files-per-partition`` base files: one bulk insert whose input
has ``files-per-partition`` Spark partitions each holding rows of every table
partition (sorted within each, so one writer is open at a time), then two small
upserts so the metadata table has log blocks too. Then, on the plain server (no
Hudi jar), it times listing every file slice both ways, checks that both give
the same slices, and prints the medians and their ratio.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from side_by_side import hudi_and_plain_sessions, timed

from hudi_connect.spec import FileIndex
from hudi_connect.stack.minio import create_bucket, start_minio
from hudi_connect.table.hudi_table import HudiTable

SCHEMA = "id long, name string, part string, ts long"


def write_table(hudi: SparkSession, path: str, args: argparse.Namespace) -> None:
    table = HudiTable.create(hudi, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="part",
                             table_type="COPY_ON_WRITE", metadata_table=True,
                             options={"hoodie.bulkinsert.sort.mode": "PARTITION_SORT",
                                      "hoodie.index.bloom.num_entries": "100",  # small files: tiny bloom filters
                                      "hoodie.parquet.small.file.limit": "0", "hoodie.clean.automatic": "false"})
    rows = args.partitions * args.files_per_partition * 2
    data = (hudi.range(rows, numPartitions=args.files_per_partition)
            .select("id", F.concat(F.lit("n"), F.col("id").cast("string")).alias("name"),
                    F.format_string("p%04d", F.col("id") % args.partitions).alias("part"),
                    F.lit(1).cast("long").alias("ts")))
    table.bulk_insert(data)
    for commit in range(2):
        table.upsert(data.where(F.col("id") % 97 == commit).withColumn("ts", F.lit(commit + 2).cast("long")))


def slices(index: FileIndex) -> frozenset[tuple[str, str, str | None]]:
    return frozenset((s.partition, s.file_id, s.base_file.name if s.base_file else None)
                     for snapshot in index.list_files_at() for s in snapshot.file_slices)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--files-per-partition", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    minio_dir = Path(tempfile.mkdtemp(prefix="hudi-connect-bench-minio-"))
    minio = start_minio(minio_dir)
    try:
        create_bucket(minio.endpoint, "bench")  # type: ignore[arg-type]
        with hudi_and_plain_sessions(minio.endpoint) as (hudi, plain, _):  # type: ignore[arg-type]
            path = "s3a://bench/listing"
            begin = time.perf_counter()
            write_table(hudi, path, args)
            print(f"wrote the table in {time.perf_counter() - begin:.0f}s")
            through_metadata, from_storage = FileIndex(plain, path), FileIndex(plain, path, use_metadata=False)
            slices(through_metadata), slices(from_storage)  # warm up: artifact shipped, workers started
            metadata_time, listed = timed(lambda: slices(through_metadata), args.repeat)
            storage_time, expected = timed(lambda: slices(from_storage), args.repeat)
            assert listed == expected, "the two listings differ"
            assert through_metadata.counts.source == "metadata"
            print(f"  file slices listed: {len(listed)} in {through_metadata.counts.partitions} partitions")
            print(f"  through the metadata table: {metadata_time:6.2f}s")
            print(f"  listing storage (MinIO):    {storage_time:6.2f}s")
            print(f"  ratio metadata / storage: {metadata_time / storage_time:.2f} (target: at most 0.2)")
    finally:
        minio.stop()
        shutil.rmtree(minio_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
