"""The Table Spec API on the plain server (no Hudi jar): FileIndex listings through the
metadata table against storage listings, pruned reads, the record index, and the
client's memory while listing a table of 20,000 file slices.

Oracles: the storage listing (the same HUDI-2285 rules applied to what is on
disk), unpruned reads filtered by Spark, and where records really are
(``_hoodie_partition_path`` / ``_hoodie_file_name`` of a snapshot).
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hudi_connect_stack.endpoints import MinioEndpoint
from hudi_connect_stack.testing.fixture_tables import unzip_fixture, upload_table
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.connect.client import ChannelBuilder

from hudi_connect import forget_table
from hudi_connect.client import server
from hudi_connect.core.errors import MetadataTableError
from hudi_connect.core.executor import file_access
from hudi_connect.core.format.expressions import Expression
from hudi_connect.core.format.timeline import Instant
from hudi_connect.reader import TableReader
from hudi_connect.table.hudi_table import HudiTable
from hudi_connect.table_spec import FileIndex, RecordIndex, col, to_spark

METADATA_FIXTURES = ["cow_v9_txns_simple_meta", "mor_avro_v9_txns_simple_meta", "cow_v9_txns_simple_overwrite"]
SCHEMA = "id int, v string, ts long, part string"
META_OPTIONS = {
    "hoodie.metadata.enable": "true",
    "hoodie.metadata.index.column.stats.enable": "true",
    "hoodie.metadata.record.index.enable": "true",
    "hoodie.clean.automatic": "false",
    "hoodie.compact.inline.max.delta.commits": "100",
    "hoodie.parquet.small.file.limit": "0",
}


def slices_of(index: FileIndex, instant: Instant | str | None = None,
              predicates: list[Expression] | None = None) -> set[tuple[Any, ...]]:
    return {
        (s.partition, s.file_id, s.base_file.name if s.base_file else None, tuple(f.name for f in s.log_files))
        for snapshot in index.list_files_at(instant, predicates or [])
        for s in snapshot.file_slices
    }


def assert_listings_agree(spark: SparkSession, base: str, expect_metadata: bool = True) -> None:
    through_metadata = FileIndex(spark, base)
    from_storage = FileIndex(spark, base, use_metadata=False)
    commits = list(from_storage.view.timeline().write_commits())
    for instant in [None, *commits]:
        listed = slices_of(through_metadata, instant)
        assert listed == slices_of(from_storage, instant), f"{base} at {instant}"
        assert listed or instant is not None
        assert through_metadata.counts.source == ("metadata" if expect_metadata else "storage")
        assert from_storage.counts.source == "storage"


@pytest.mark.parametrize("name", METADATA_FIXTURES)
def test_fixture_listing_through_the_metadata_table_equals_storage(
    plain_spark: SparkSession, tmp_path: Path, name: str
) -> None:
    assert_listings_agree(plain_spark, str(unzip_fixture(name, tmp_path)))


def test_metadata_table_on_minio_reads_through_executor_s3_access(
    plain_spark: SparkSession, tmp_path: Path, minio_endpoint: MinioEndpoint, s3_bucket: str
) -> None:
    base = unzip_fixture("cow_v9_txns_simple_meta", tmp_path)
    path = upload_table(base, minio_endpoint, s3_bucket, f"fixtures/{tmp_path.name}")
    assert_listings_agree(plain_spark, path)
    tagged = RecordIndex(plain_spark, path).tag(["TXN-001", "TXN-404"])
    assert tagged["TXN-001"] is not None and tagged["TXN-404"] is None


def write_table(spark: SparkSession, base: str, table_type: str) -> tuple[HudiTable, list[Instant]]:
    table = HudiTable.create(spark, base, SCHEMA, record_key="id", ordering_field="ts", partition_by="part",
                             table_type=table_type, metadata_table=True, options=META_OPTIONS)
    rows = lambda data: spark.createDataFrame(data, SCHEMA)  # noqa: E731
    commits = [table.insert(rows([(k, f"v{k}", k, f"p{k % 4}") for k in range(40)]))]
    commits.append(table.upsert(rows([(k, f"u{k}", 100 + k, f"p{k % 4}") for k in range(0, 40, 3)])))
    commits.append(table.insert(rows([(k, f"n{k}", 200 + k, f"p{k % 4}") for k in range(40, 60)])))
    commits.append(table.delete(spark.createDataFrame([(k,) for k in range(1, 6)], "id int")))
    return table, commits


def crash_a_write(spark: SparkSession, table: HudiTable, base: str) -> Instant:
    """A write whose data instant never completed, while its metadata deltacommit did: what a
    writer crashing between the two leaves (HUDI-2285)."""
    crashed = table.upsert(spark.createDataFrame([(k, "failed", 999, f"p{k % 4}") for k in range(60)], SCHEMA))
    Path(base, ".hoodie", "timeline",
         f"{crashed.requested_time}_{crashed.completion_time}.{crashed.action.value}").unlink()
    metadata_timeline = Path(base, ".hoodie", "metadata", ".hoodie", "timeline")
    assert list(metadata_timeline.glob(f"{crashed.requested_time}_*.deltacommit")), "metadata has the write"
    return crashed


# CI: MOR (its listing has log files too); COW under --full
@pytest.mark.parametrize("table_type", [pytest.param("COPY_ON_WRITE", marks=pytest.mark.full), "MERGE_ON_READ"])
def test_written_table_listing_and_record_index_with_a_failed_write(
    spark: SparkSession, plain_spark: SparkSession, local_base_path: str, table_type: str
) -> None:
    table, commits = write_table(spark, local_base_path, table_type)
    crash_a_write(spark, table, local_base_path)
    assert_listings_agree(plain_spark, local_base_path)
    reader = TableReader(plain_spark, local_base_path)
    assert reader.snapshot().where("v = 'failed'").count() == 0
    assert rows_of(reader.read_optimized()) == rows_of(table.hudi.read_optimized())
    assert rows_of(reader.snapshot()) == rows_of(table.hudi.snapshot())

    # slices between two commits: exactly the file groups those commits wrote
    index = FileIndex(plain_spark, local_base_path)
    between = [s for snap in index.list_files_between(commits[0], commits[2]) for s in snap.file_slices]
    written = {(w.partition_path, w.file_id) for c in commits[1:3]
               for w in index.view.commit_metadata([c])[c].write_stats}
    assert {(s.partition, s.file_id) for s in between} == written

    # the record index against where each record is
    snapshot = reader.snapshot().select("id", "_hoodie_partition_path", "_hoodie_file_name").collect()
    where = {str(r.id): (r._hoodie_partition_path, r._hoodie_file_name.split("_", 1)[0]) for r in snapshot}
    tagged = RecordIndex(plain_spark, local_base_path).tag([*where, "1", "2", "404"])
    assert {k: (v.partition, v.file_id) for k, v in tagged.items() if v} == where
    assert tagged["1"] is None and tagged["404"] is None  # deleted, never written


@pytest.mark.full  # CI's pruned listings through the metadata table: the tests above
def test_a_pruned_listing_through_the_metadata_table_reads_a_partition_deleted_later(
    spark: SparkSession, plain_spark: SparkSession, local_base_path: str
) -> None:
    """Pruned listings through the metadata table, which look partitions up by key, around a delete_partition:
    a time travel before it still reads the partition's files, the latest listing no longer does, as from
    storage and as Hudi reads."""
    table = HudiTable.create(spark, local_base_path, SCHEMA, record_key="id", ordering_field="ts",
                             partition_by="part", table_type="COPY_ON_WRITE", options=META_OPTIONS)
    first = table.insert(spark.createDataFrame([(k, f"v{k}", 1, f"p{k % 3}") for k in range(12)], SCHEMA))
    second = table.upsert(spark.createDataFrame([(k, f"u{k}", 2, f"p{k % 3}") for k in range(0, 12, 2)], SCHEMA))
    deleted = table.delete_partitions(["part=p1"])
    through_metadata = FileIndex(plain_spark, local_base_path)
    from_storage = FileIndex(plain_spark, local_base_path, use_metadata=False)
    cases: list[list[Expression]] = [[col("part") == "p1"], [col("part").isin("p0", "p1")], [col("ts") > 1]]
    for instant in (first, second, deleted):
        for predicates in cases:
            listed = slices_of(through_metadata, instant, predicates)
            assert listed == slices_of(from_storage, instant, predicates), (instant, predicates)
            assert through_metadata.counts.source == "metadata"
    assert slices_of(through_metadata, second, [col("part") == "p1"])  # before the deletion: there
    assert not slices_of(through_metadata, None, [col("part") == "p1"])  # after it: gone
    reader = TableReader(plain_spark, local_base_path)
    for instant in (first, second):
        assert rows_of(reader.as_of(instant, [col("part") == "p1"])) == rows_of(
            table.hudi.as_of(instant).where("part = 'p1'")) != Counter()


def test_metadata_table_behind_falls_back_to_storage(
    spark: SparkSession, plain_spark: SparkSession, local_base_path: str
) -> None:
    _, commits = write_table(spark, local_base_path, "COPY_ON_WRITE")
    latest = commits[-1]
    # the metadata table lost its last deltacommit: it no longer knows the latest data commit
    for path in Path(local_base_path, ".hoodie", "metadata", ".hoodie", "timeline").glob(
            f"{latest.requested_time}_*.deltacommit"):
        path.unlink()
    assert_listings_agree(plain_spark, local_base_path, expect_metadata=False)
    # the record index has no such fallback: it would still place key 1, which the latest commit deleted
    with pytest.raises(MetadataTableError, match=f"has not caught up .* reflect {latest.requested_time}"):
        RecordIndex(plain_spark, local_base_path).tag(["1", "7"])


def rows_of(df: DataFrame) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r) for r in df.select("id", "v", "ts", "part").collect())


# CI: pruned through the metadata table's statistics; storage listings' pruning (the same rule) under --full
@pytest.mark.parametrize("metadata_table", [True, pytest.param(False, marks=pytest.mark.full)])
def test_pruned_reads_equal_filtered_reads_and_read_fewer_files(
    spark: SparkSession, plain_spark: SparkSession, local_base_path: str, metadata_table: bool
) -> None:
    table = HudiTable.create(spark, local_base_path, SCHEMA, record_key="id", ordering_field="ts",
                             partition_by="part", table_type="COPY_ON_WRITE", metadata_table=metadata_table,
                             options=META_OPTIONS if metadata_table else {"hoodie.parquet.small.file.limit": "0"})
    for batch in range(4):  # four inserts: each partition gets one file per batch, with disjoint ts ranges
        keys = range(batch * 100, batch * 100 + 100)
        table.insert(spark.createDataFrame([(k, f"v{k}", k, f"p{k % 4}") for k in keys], SCHEMA))
    reader = TableReader(plain_spark, local_base_path)
    everything = reader.plan()
    cases: list[list[Expression]] = [
        [col("part") == "p1"],
        [col("ts") >= 250],
        [col("part").isin("p0", "p3"), col("ts") < 120],
        [(col("ts") < 50) | (col("ts") > 390)],
        [~(col("part") == "p2") & (col("v") == "v333")],
    ]
    for predicates in cases:
        pruned = reader.plan(predicates=predicates)
        assert pruned.base_files < everything.base_files, predicates
        expected = rows_of(reader.snapshot().where(to_spark(predicates[0]) if len(predicates) == 1 else
                                                   to_spark(predicates[0]) & to_spark(predicates[1])))
        assert rows_of(reader.snapshot(predicates)) == expected and expected, predicates
    assert reader.index.counts.source == ("metadata" if metadata_table else "storage")


def test_fixture_record_index_and_pruning(plain_spark: SparkSession, tmp_path: Path) -> None:
    base = str(unzip_fixture("mor_avro_v9_txns_simple_meta", tmp_path))
    reader = TableReader(plain_spark, base)
    snapshot = reader.snapshot().select("txn_id", "_hoodie_partition_path", "_hoodie_file_name").collect()
    where = {r.txn_id: (r._hoodie_partition_path, r._hoodie_file_name.split("_", 1)[0]) for r in snapshot}
    tagged = RecordIndex(plain_spark, base).tag([*where, "TXN-404"])
    assert {k: (v.partition, v.file_id) for k, v in tagged.items() if v} == where and tagged["TXN-404"] is None
    predicate = [col("region") == "eu"]
    assert rows_of_txn(reader.snapshot(predicate)) == rows_of_txn(reader.snapshot().where("region = 'eu'"))
    assert reader.plan(predicates=predicate).base_files < reader.plan().base_files


def rows_of_txn(df: DataFrame) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r) for r in df.select("txn_id", "amount", "region").collect())


@pytest.mark.parametrize("name", METADATA_FIXTURES)
def test_fixture_storage_listing_in_the_timeline_task_equals_the_streamed_listing(
    plain_spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    base = str(unzip_fixture(name, tmp_path))
    batched = FileIndex(plain_spark, base, use_metadata=False)
    commits = list(batched.view.timeline().write_commits())
    expected = {instant: slices_of(batched, instant) for instant in [None, *commits]}
    assert batched.state().files is not None and expected[None]
    # above the cap, the listing is a plan of its own, streamed partition by partition
    monkeypatch.setattr(file_access, "MAX_BATCHED_FILES", 0)
    forget_table(plain_spark, base)  # else the session plans on the listing it kept
    streamed = FileIndex(plain_spark, base, use_metadata=False)
    assert streamed.state().files is None
    assert {instant: slices_of(streamed, instant) for instant in [None, *commits]} == expected


# The probe's own high-water mark, VmHWM: ru_maxrss would carry over the RSS of the (large)
# pytest process that spawned it, since Linux keeps it across exec.
MEMORY_PROBE = """
import json, sys
from hudi_connect.client.server import connect
from hudi_connect.table_spec import FileIndex
def high_water_kb():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
spark = connect(sys.argv[1])
index = FileIndex(spark, sys.argv[2], use_metadata=False)
index.definition()
baseline = high_water_kb()
slices = sum(len(s.file_slices) for s in index.list_files_at())
peak = high_water_kb()
print(json.dumps({"slices": slices, "baseline_kb": baseline, "peak_kb": peak}))
"""


def test_listing_20000_file_slices_keeps_client_memory_bounded(
    spark: SparkSession, plain_server_url: str, local_base_path: str
) -> None:
    table = HudiTable.create(spark, local_base_path, SCHEMA, record_key="id", ordering_field="ts",
                             partition_by="part", table_type="COPY_ON_WRITE", metadata_table=False)
    commit = table.insert(spark.createDataFrame([(0, "v", 0, "p0")], SCHEMA))
    # 20,000 more file groups in 200 partitions, named as Hudi names base files of that commit
    # (listing never opens them)
    for p in range(200):
        directory = Path(local_base_path, f"part=q{p:03d}")
        directory.mkdir()
        for _ in range(100):
            Path(directory, f"{uuid.uuid4()}-0_0-1-1_{commit.requested_time}.parquet").write_bytes(b"")
    probe = subprocess.run([sys.executable, "-c", MEMORY_PROBE, plain_server_url, local_base_path],
                           capture_output=True, text=True, timeout=600, check=False)
    assert probe.returncode == 0, probe.stderr[-3000:]
    result = json.loads(probe.stdout.strip().splitlines()[-1])
    print(f"listing memory: {result}")
    assert result["slices"] == 20_001
    assert result["peak_kb"] < 300 * 1024, f"client peak RSS {result['peak_kb'] / 1024:.0f} MB"


MESSAGE_BOUND = 8 * 1024 * 1024
"""The largest message a read may need from its server, as README's "Bounds" states it: a result row is one
file's content (a commit's metadata) or a batch of small rows, never a whole timeline or listing."""


def test_no_message_a_read_receives_grows_with_the_timeline(
    spark: SparkSession, plain_server_url: str, local_base_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = HudiTable.create(spark, local_base_path, SCHEMA, record_key="id", ordering_field="ts",
                             partition_by="part", table_type="MERGE_ON_READ")  # the metadata table's files only
    padding = "x" * (3 * 1024 * 1024)  # extra commit metadata ("_" keys): each commit file about 3 MB
    commits = [table.upsert(spark.createDataFrame([(k, f"v{k}.{n}", n, f"p{k % 2}") for k in range(n, n + 20)],
                                                  SCHEMA), options={"_padding": padding}) for n in range(3)]
    model = {k: f"v{k}.{n}" for n in range(3) for k in range(n, n + 20)}
    assert sum(p.stat().st_size for p in Path(local_base_path, ".hoodie", "timeline").glob("*")) > MESSAGE_BOUND
    # a session whose client refuses any message over the bound (pyspark's channel sets the limit itself,
    # before any option given to it, and gRPC takes the first)
    monkeypatch.setattr(ChannelBuilder, "MAX_MESSAGE_LENGTH", MESSAGE_BOUND)
    bounded = server.connect(plain_server_url)
    try:
        # the bound bites: the three commit files in one cell pass it
        commit_files = bounded.read.format("binaryFile").load(f"{local_base_path}/.hoodie/timeline/*.deltacommit")
        with pytest.raises(Exception, match=r"RESOURCE_EXHAUSTED|larger than max"):
            commit_files.agg(F.collect_list("content")).collect()
        reader = TableReader(bounded, local_base_path)
        assert {r.id: r.v for r in reader.snapshot().collect()} == model
        assert reader.as_of(commits[0]).count() == 20
        assert reader.incremental(commits[0], commits[2]).count() == 21  # (begin, end]: keys 1-21
        assert slices_of(FileIndex(bounded, local_base_path)) == slices_of(FileIndex(spark, local_base_path))
    finally:
        bounded.stop()
