"""The snapshot read and the change query on every storage: hudi-connect's plan on a plain server against
Hudi's own on the Hudi server, on MinIO (S3), fake-gcs-server (GCS), Azurite (Azure, through WASB) and HDFS.

    python benchmarks/storages.py [--sizes 50k,200k,500k] [--storages minio,gcs,azure,hdfs]
                                  [--queries snapshot,changes] [--repeat 3] [--warmups 3]

For each storage and size it writes, through Hudi, a MOR table (a bulk insert, then an upsert of 20% of the
rows into log files) and a COW table with CDC (DATA_BEFORE_AFTER: a bulk insert, then three commits each
updating or deleting 5% of the rows). It times each side materialising the snapshot of the MOR table and the
change events of the COW table's three commits (interleaved medians after ``--warmups`` untimed runs of each;
both sides must agree) and prints the ratio ours / Hudi's per storage and size (target: at most 1.0 on each
storage), and beside it each storage's ratio against MinIO's. Four Spark servers run: Hudi and plain on MinIO,
and the ``*-storages`` pair on the others.
Three warm-ups by default (``side_by_side.add_warmups`` says why).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from cdc_query import materialise
from hudi_connect_stack.azurite import create_container, start_azurite
from hudi_connect_stack.endpoints import StorageEndpoints
from hudi_connect_stack.fake_gcs import create_bucket as create_gcs_bucket
from hudi_connect_stack.fake_gcs import start_fake_gcs
from hudi_connect_stack.hdfs import start_hdfs
from hudi_connect_stack.minio import create_bucket, start_minio
from hudi_connect_stack.process import RunningService
from hudi_connect_stack.spark_connect import start_spark_connect
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from side_by_side import SCHEMA, add_warmups, generated_rows, hudi_cdc, interleaved, sizes
from snapshot_read import fingerprint

from hudi_connect.cdc import ChangeQuery
from hudi_connect.client.server import connect
from hudi_connect.reader import TableReader
from hudi_connect.table.hudi_table import HudiTable

BUCKET = "bench"


@contextmanager
def stack(run_dir: Path) -> Iterator[dict[str, tuple[SparkSession, SparkSession, str]]]:
    """(Hudi session, plain session, root URI) by storage."""
    with ExitStack() as started:
        def start(service: RunningService) -> RunningService:
            started.callback(service.stop)
            return service

        minio = start(start_minio(run_dir)).endpoint
        create_bucket(minio, BUCKET)  # type: ignore[arg-type]
        storages = StorageEndpoints(start(start_fake_gcs(run_dir)).endpoint,  # type: ignore[arg-type]
                                    start(start_azurite(run_dir)).endpoint,  # type: ignore[arg-type]
                                    start(start_hdfs(run_dir)).endpoint)  # type: ignore[arg-type]
        create_gcs_bucket(storages.gcs, BUCKET)
        create_container(storages.azure, BUCKET)
        servers = {flavor: start(start_spark_connect(run_dir, flavor, minio=minio,  # type: ignore[arg-type]
                                                     storages=storages if "storages" in flavor else None))
                   for flavor in ("hudi", "plain", "hudi-storages", "plain-storages")}
        sessions = {flavor: connect(server.endpoint.url) for flavor, server in servers.items()}  # type: ignore[union-attr]
        yield {
            "minio": (sessions["hudi"], sessions["plain"], f"s3a://{BUCKET}"),
            "gcs": (sessions["hudi-storages"], sessions["plain-storages"], f"gs://{BUCKET}"),
            "azure": (sessions["hudi-storages"], sessions["plain-storages"], f"wasb://{BUCKET}@storageemulator"),
            "hdfs": (sessions["hudi-storages"], sessions["plain-storages"],
                     f"{storages.hdfs.namenode_uri}/{BUCKET}"),
        }


def snapshot_times(hudi: SparkSession, plain: SparkSession, path: str, rows: int, repeat: int,
                   warmups: int) -> tuple[float, float]:
    table = HudiTable.create(hudi, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="category",
                             table_type="MERGE_ON_READ", metadata_table=False,
                             options={"hoodie.compact.inline.max.delta.commits": "1000"})
    base = generated_rows(hudi, rows)
    table.bulk_insert(base)
    table.upsert(base.where(F.rand(7) < 0.2).withColumn("amount", F.col("amount") + 1)
                 .withColumn("ts", F.lit(2).cast("long")))
    reader = TableReader(plain, path)
    medians = interleaved({"hudi": lambda: fingerprint(hudi.read.format("hudi").load(path)),
                           "ours": lambda: fingerprint(reader.snapshot())}, repeat, warmups)
    assert medians["hudi"][1] == medians["ours"][1], f"{path}: the snapshots disagree"
    return medians["hudi"][0], medians["ours"][0]


def change_query_times(hudi: SparkSession, plain: SparkSession, path: str, rows: int,
                       repeat: int, warmups: int) -> tuple[float, float]:
    table = HudiTable.create(hudi, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="category",
                             table_type="COPY_ON_WRITE", cdc="DATA_BEFORE_AFTER", metadata_table=False,
                             options={"hoodie.clean.automatic": "false"})
    base = generated_rows(hudi, rows)
    table.bulk_insert(base)
    for commit in range(3):
        changed = base.where(F.rand(100 + commit) < 0.05)
        if commit == 2:
            table.delete(changed.select("id", "category"))
        else:
            table.upsert(changed.withColumn("amount", F.col("amount") + commit + 1)
                         .withColumn("ts", F.lit(commit + 2).cast("long")))
    first = table.timeline().write_commits().instants[1]  # the bulk insert (after create's); changes follow
    query = ChangeQuery(plain, path)
    medians = interleaved({"hudi": lambda: materialise(hudi_cdc(hudi, path, str(first.completion_time))),
                           "ours": lambda: materialise(query.changes(first))}, repeat, warmups)
    assert medians["hudi"][1] == medians["ours"][1], f"{path}: the change events disagree"
    return medians["hudi"][0], medians["ours"][0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=sizes, default=sizes("50k,200k,500k"))
    parser.add_argument("--storages", default="minio,gcs,azure,hdfs")
    parser.add_argument("--queries", default="snapshot,changes", help="which of snapshot,changes to time")
    parser.add_argument("--repeat", type=int, default=3)
    add_warmups(parser)
    args = parser.parse_args()
    chosen = args.storages.split(",")
    queries = {"snapshot": snapshot_times, "changes": change_query_times}
    measured = [(query, queries[query]) for query in args.queries.split(",")]
    ratios: dict[tuple[str, str, int], tuple[float, float]] = {}
    run_dir = Path(tempfile.mkdtemp(prefix="hudi-connect-bench-"))
    run_dir.chmod(0o755)
    try:
        with stack(run_dir) as sessions:
            for rows in args.sizes:
                for storage in chosen:
                    hudi, plain, root = sessions[storage]
                    for query, measure in measured:
                        hudi_s, ours_s = measure(hudi, plain, f"{root}/{query}_{rows}", rows, args.repeat,
                                                 args.warmups)
                        ratios[(query, storage, rows)] = (hudi_s, ours_s)
                        print(f"RESULT storages query={query} storage={storage} rows={rows} hudi_s={hudi_s:.2f} "
                              f"ours_s={ours_s:.2f} ratio={ours_s / hudi_s:.2f}", flush=True)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    print("\nquery     storage  rows      Hudi s  ours s  ratio (target at most 1.0)  vs MinIO's ratio")
    for (query, storage, rows), (hudi_s, ours_s) in ratios.items():
        minio = ratios.get((query, "minio", rows))
        against = f"{(ours_s / hudi_s) / (minio[1] / minio[0]):5.2f}" if minio else "    -"
        print(f"{query:<9} {storage:<8} {rows:<9} {hudi_s:6.2f}  {ours_s:6.2f}  {ours_s / hudi_s:<26.2f}  {against}")


if __name__ == "__main__":
    main()
