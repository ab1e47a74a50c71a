"""Listing a table's files on an object store with a realistic request latency: our FileIndex
through the metadata table and by listing storage (plain server, no Hudi jar), against Hudi's
own metadata-table-backed listing (Hudi server).

    python benchmarks/file_listing.py [--sizes 1k,10k] [--latency-ms 20] [--repeat 3] [--direct]

For each size (files) it writes, through Hudi with the metadata table on, a COW
table on MinIO with that many base files, ten per partition: one bulk insert whose
input has ten Spark partitions each holding rows of every table partition (sorted
within each, so one writer is open at a time), then two small upserts so the
metadata table has log blocks too. With ``--direct`` the table is made as ``scale.py`` makes its own (files
written directly in Hudi's layout beside one Hudi bulk insert, then Hudi's upserts build the metadata table) on
local disk, then copied to MinIO: minutes at 100k files, where Hudi writes some 14 files a second to MinIO on
two cores. Both servers reach MinIO through
:class:`latency_proxy.LatencyProxy`, which adds ``--latency-ms`` to every request
(none while the table is written). Then it times, interleaved after a warm-up:

- ours, metadata table: ``FileIndex(...).list_files_at()``;
- ours, storage: the same with ``use_metadata=False`` (a LIST per partition);
- Hudi: ``spark.read.format("hudi").load(path).inputFiles()`` (Hudi's file index,
  metadata table on, as readers have it by default).

All three must name the same base files; it prints the medians and the ratios per size.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pyarrow.fs as pafs
from hudi_connect_stack.endpoints import MinioEndpoint
from hudi_connect_stack.minio import create_bucket, start_minio
from latency_proxy import LatencyProxy
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from side_by_side import hudi_and_plain_sessions, interleaved, sizes

from hudi_connect.table.hudi_table import HudiTable
from hudi_connect.table_spec import FileIndex

SCHEMA = "id long, name string, part string, ts long"
FILES_PER_PARTITION = 10


def write_table(hudi: SparkSession, path: str, files: int) -> None:
    partitions = max(1, files // FILES_PER_PARTITION)
    table = HudiTable.create(hudi, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="part",
                             table_type="COPY_ON_WRITE", metadata_table=True,
                             options={"hoodie.bulkinsert.sort.mode": "PARTITION_SORT",
                                      "hoodie.index.bloom.num_entries": "100",  # small files: tiny bloom filters
                                      "hoodie.parquet.small.file.limit": "0", "hoodie.clean.automatic": "false"})
    rows = partitions * FILES_PER_PARTITION * 2
    data = (hudi.range(rows, numPartitions=FILES_PER_PARTITION)
            .select("id", F.concat(F.lit("n"), F.col("id").cast("string")).alias("name"),
                    F.format_string("p%05d", F.col("id") % partitions).alias("part"),
                    F.lit(1).cast("long").alias("ts")))
    table.bulk_insert(data)
    for commit in range(2):
        table.upsert(data.where(F.col("id") % 97 == commit).withColumn("ts", F.lit(commit + 2).cast("long")))


def write_table_directly(hudi: SparkSession, endpoint: MinioEndpoint, bucket: str, key: str, files: int) -> None:
    """The table as ``scale.py`` makes it, on local disk, then copied to ``s3a://bucket/key`` (no latency)."""
    from scale import build_table  # its direct writes: one-row base files in Hudi's layout

    local = Path(tempfile.mkdtemp(prefix="hudi-connect-bench-direct-"))
    try:
        build_table(hudi, str(local / "table"), files, FILES_PER_PARTITION, commits=2)
        s3 = pafs.S3FileSystem(access_key=endpoint.access_key, secret_key=endpoint.secret_key,
                               endpoint_override=endpoint.endpoint_url.split("://", 1)[1], scheme="http",
                               region=endpoint.region)
        pafs.copy_files(str(local / "table"), f"{bucket}/{key}", source_filesystem=pafs.LocalFileSystem(),
                        destination_filesystem=s3, use_threads=True)
    finally:
        shutil.rmtree(local, ignore_errors=True)


def base_files(index: FileIndex) -> frozenset[str]:
    return frozenset(s.base_file.name for snapshot in index.list_files_at() for s in snapshot.file_slices
                     if s.base_file is not None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=sizes, default=sizes("1k,10k"), help="base files, comma-separated")
    parser.add_argument("--latency-ms", type=float, default=20.0, help="added to every request to MinIO")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--direct", action="store_true", help="make each table as scale.py does, then copy it")
    args = parser.parse_args()
    minio_dir = Path(tempfile.mkdtemp(prefix="hudi-connect-bench-minio-"))
    minio = start_minio(minio_dir)
    endpoint = minio.endpoint  # type: ignore[attr-defined]
    host, port = endpoint.endpoint_url.split("://", 1)[1].split(":")
    proxy = LatencyProxy(host, int(port))
    proxy.start()
    summary = []
    try:
        create_bucket(endpoint, "bench")
        proxied = replace(endpoint, endpoint_url=f"http://127.0.0.1:{proxy.port}")
        with hudi_and_plain_sessions(proxied) as (hudi, plain, _):
            for files in args.sizes:
                path = f"s3a://bench/listing_{files}"
                proxy.delay = 0.0
                begin = time.perf_counter()
                if args.direct:
                    write_table_directly(hudi, endpoint, "bench", f"listing_{files}", files)
                else:
                    write_table(hudi, path, files)
                print(f"\n{files} files: wrote the table in {time.perf_counter() - begin:.0f}s", flush=True)
                proxy.delay = args.latency_ms / 1000
                requests: dict[str, int] = {}  # the requests to MinIO of each side's last run

                def counted(label: str, action: Callable[[], frozenset[str]],
                            seen: dict[str, int] = requests) -> Callable[[], frozenset[str]]:
                    def run() -> frozenset[str]:
                        before = proxy.requests
                        found = action()
                        seen[label] = proxy.requests - before
                        return found
                    return run

                medians = interleaved({
                    "metadata": counted("metadata", lambda p=path: base_files(FileIndex(plain, p))),
                    "storage": counted("storage", lambda p=path: base_files(FileIndex(plain, p, use_metadata=False))),
                    "hudi": counted("hudi", lambda p=path: frozenset(
                        name.rsplit("/", 1)[1] for name in hudi.read.format("hudi").load(p).inputFiles())),
                }, args.repeat)
                print(f"  requests to MinIO in one run: {requests}")
                listed = medians["hudi"][1]
                for label, (_, found) in medians.items():
                    assert found == listed, f"{label} lists other files than Hudi: {len(found)} vs {len(listed)}"
                index = FileIndex(plain, path)
                base_files(index)
                assert index.counts.source == "metadata", "the metadata table was not used"
                metadata, storage, hudi_time = (medians[k][0] for k in ("metadata", "storage", "hudi"))
                print(f"  base files listed: {len(listed)} (the same on all three)")
                print(f"  ours, metadata table: {metadata:6.2f}s; ours, storage: {storage:6.2f}s; "
                      f"Hudi: {hudi_time:6.2f}s")
                summary.append((files, len(listed), metadata, storage, hudi_time))
    finally:
        proxy.stop()
        minio.stop()
        shutil.rmtree(minio_dir, ignore_errors=True)
    print(f"\nlatency {args.latency_ms:.0f} ms per request")
    print("files    listed   metadata s  storage s  Hudi s   metadata/storage (<=0.2)  metadata/Hudi (<=1.0)")
    for files, listed_count, metadata, storage, hudi_time in summary:
        print(f"{files:<8} {listed_count:<8} {metadata:9.2f}  {storage:9.2f}  {hudi_time:6.2f}   "
              f"{metadata / storage:24.2f}  {metadata / hudi_time:21.2f}")
        print(f"RESULT file_listing files={files} latency_ms={args.latency_ms:.0f} metadata_s={metadata:.2f} "
              f"storage_s={storage:.2f} hudi_s={hudi_time:.2f} metadata_over_storage={metadata / storage:.2f} "
              f"metadata_over_hudi={metadata / hudi_time:.2f}")


if __name__ == "__main__":
    main()
