"""Reads without Hudi's jars: on the plain Spark Connect server (no Hudi jar, and no
hudi_connect in the server's Python), snapshot, time travel and incremental reads
equal hudi-rs on every fixture table, and equal Hudi's own reads on the Hudi
server for tables written through Hudi, failed writes included.

Written-table history: a COW or MOR table gets inserts of keys 0..29, an upsert of the
even keys, a delete of keys 1..4, an upsert whose writer "crashes" before
completing (its log files stay, its instant is left inflight), and one more
upsert, which rolls the failed one back.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hudi import HudiReadOptions, HudiTableBuilder
from hudi_connect_stack.endpoints import MinioEndpoint
from hudi_connect_stack.testing.compare import arrow_multiset, row_multiset
from hudi_connect_stack.testing.fixture_tables import fixture_names, unzip_fixture, upload_table
from pyspark.sql import DataFrame, SparkSession

from hudi_connect.cdc import ChangeQuery
from hudi_connect.client.server import connect
from hudi_connect.core.errors import UnsupportedOperationError
from hudi_connect.core.format.log.format import LogBlockType, read_log_blocks
from hudi_connect.core.format.table_schema import META_COLUMNS
from hudi_connect.reader import TableReader, table_reader
from hudi_connect.table.hudi_table import HudiTable
from hudi_connect.table_spec import col

FIXTURES = [n for n in fixture_names() if n != "cow_v6_empty"]


def multiset(df: DataFrame, columns: list[str]) -> Counter[tuple[Any, ...]]:
    return row_multiset((r.asDict(recursive=True) for r in df.select(*columns).collect()), columns)


def test_the_plain_server_python_lacks_hudi_connect(plain_server_url: str) -> None:
    def probe(batches):  # type: ignore[no-untyped-def]
        import importlib.util

        import pandas as pd

        for _ in batches:
            yield pd.DataFrame({"found": [importlib.util.find_spec("hudi_connect") is not None]})

    # A fresh session has no artifact, so this checks the server's own Python.
    fresh = connect(plain_server_url)
    assert fresh.range(1).mapInPandas(probe, "found boolean").collect()[0].found is False


def test_plain_server_workers_import_only_the_worker_layers(plain_spark: SparkSession, tmp_path: Path) -> None:
    # Reads, a change query and a listing run first, so the reused workers have imported what they need.
    base = str(unzip_fixture("mor_avro_v6_trips_8i1u", tmp_path))
    assert TableReader(plain_spark, base).snapshot().count() == 8  # hudi-rs's count
    assert ChangeQuery(plain_spark, base).changes("earliest").count() == 9  # 8 inserts, 1 update
    assert TableReader(plain_spark, base).list_files()

    def probe(batches):  # type: ignore[no-untyped-def]
        import importlib.util
        import sys

        import pandas as pd

        for _ in batches:
            loaded = sorted(m for m in sys.modules if m == "hudi_connect" or m.startswith("hudi_connect."))
            spec = importlib.util.find_spec("hudi_connect")
            client = [m for m in ("hudi_connect.reader", "hudi_connect.client", "hudi_connect.cdc")
                      if importlib.util.find_spec(m) is not None]
            yield pd.DataFrame({"origin": [spec.origin if spec else ""], "loaded": [",".join(loaded)],
                                "client": [",".join(client)]})

    rows = plain_spark.range(0, 8, 1, 8).mapInPandas(probe, "origin string, loaded string, client string").collect()
    worker_layers = "hudi_connect.core"  # the zipped folder (format, executor, errors)
    for row in rows:
        assert ".zip" in row.origin and "hudi_connect-" in row.origin, row.origin
        assert row.client == ""
        loaded = [m for m in row.loaded.split(",") if m]
        assert all(m == "hudi_connect" or m.startswith(worker_layers) for m in loaded), loaded
    assert any("hudi_connect.core.executor.slices" in row.loaded for row in rows), "no worker ran a read"


@pytest.mark.parametrize("name", [n for n in FIXTURES if "no_metafields" not in n])
def test_fixture_incremental_reads_on_the_plain_server_equal_hudis(
    spark: SparkSession, plain_spark: SparkSession, tmp_path: Path, name: str
) -> None:
    base = unzip_fixture(name, tmp_path)
    reader = TableReader(plain_spark, str(base))
    table = HudiTable.open(spark, str(base))
    commits = list(table.timeline().write_commits())
    middle = commits[len(commits) // 2]
    columns = [c for c in table.hudi.snapshot(with_meta_columns=True).columns if c != "_hoodie_file_name"]
    for begin, end in (("earliest", middle), (commits[0], middle), (middle, commits[-1]), (commits[0], None)):
        assert multiset(reader.incremental(begin, end), columns) == multiset(
            table.hudi.incremental(begin, end, with_meta_columns=True), columns), f"({begin}, {end}]"


def test_incremental_read_without_meta_fields_is_refused(plain_spark: SparkSession, tmp_path: Path) -> None:
    base = unzip_fixture("cow_v8_simplekeygen_hivestyle_no_metafields", tmp_path)
    with pytest.raises(UnsupportedOperationError, match="without meta fields"):
        TableReader(plain_spark, str(base)).incremental("earliest")


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_reads_on_the_plain_server_equal_hudi_rs(plain_spark: SparkSession, tmp_path: Path, name: str) -> None:
    base = unzip_fixture(name, tmp_path)
    reader = TableReader(plain_spark, str(base))
    rs_table = HudiTableBuilder.from_base_uri(str(base)).build()
    commits = list(reader.view.timeline().write_commits())
    for instant in [None, commits[0], commits[len(commits) // 2]]:
        ours = reader.as_of(instant) if instant else reader.snapshot()
        options = HudiReadOptions().with_as_of_timestamp(instant.requested_time) if instant else HudiReadOptions()
        theirs = pa.Table.from_batches(rs_table.read(options))
        columns = [c for c in ours.columns if c in theirs.column_names and c != "_hoodie_file_name"]
        assert multiset(ours, columns) == arrow_multiset(theirs, columns), f"as of {instant}"


def test_fixture_on_minio_reads_through_executor_s3_access(
    plain_spark: SparkSession, tmp_path: Path, minio_endpoint: MinioEndpoint, s3_bucket: str
) -> None:
    base = unzip_fixture("mor_avro_v9_txns_simple_nometa", tmp_path)
    reader = TableReader(plain_spark, upload_table(base, minio_endpoint, s3_bucket, f"fixtures/{tmp_path.name}"))
    rs_table = HudiTableBuilder.from_base_uri(str(base)).build()
    columns = [c for c in reader.snapshot().columns if c != "_hoodie_file_name"]
    assert multiset(reader.snapshot(), columns) == arrow_multiset(pa.Table.from_batches(rs_table.read()), columns)
    # before compaction, updates and deletes sit in log files: those are read through pyarrow's S3
    before_compaction = list(reader.view.timeline().write_commits())[5].requested_time
    assert reader.plan(before_compaction).log_files > 0
    theirs = pa.Table.from_batches(rs_table.read(HudiReadOptions().with_as_of_timestamp(before_compaction)))
    assert multiset(reader.as_of(before_compaction), columns) == arrow_multiset(theirs, columns)


SCHEMA = "id int, v string, ts long, part string"


def data_block_types(base_path: str) -> set[LogBlockType]:
    """The types of the data blocks in a table's log files."""
    return {block.block_type for log in Path(base_path).rglob(".*.log.*") if ".hoodie" not in log.parts
            for block in read_log_blocks(log.read_bytes())
            if block.block_type in (LogBlockType.AVRO_DATA, LogBlockType.PARQUET_DATA)}


# MOR: our default log data blocks (Parquet), and Hudi's (Avro) as a user's option sets them (--full)
@pytest.mark.parametrize(("table_type", "log_format"), [
    ("COPY_ON_WRITE", None), ("MERGE_ON_READ", None), pytest.param("MERGE_ON_READ", "avro", marks=pytest.mark.full)])
def test_written_table_with_a_failed_write_equals_hudis_reads(
    spark: SparkSession, plain_spark: SparkSession, local_base_path: str, table_type: str, log_format: str | None
) -> None:
    table = HudiTable.create(spark, local_base_path, SCHEMA, record_key="id", ordering_field="ts",
                             partition_by="part", table_type=table_type, metadata_table=False,
                             # no cleaning, no inline compaction: every write stays as it was written
                             options={"hoodie.clean.automatic": "false",
                                      "hoodie.compact.inline.max.delta.commits": "100",
                                      **({"hoodie.logfile.data.block.format": log_format} if log_format else {})})
    rows = lambda data: spark.createDataFrame(data, SCHEMA)  # noqa: E731
    first = table.insert(rows([(k, f"v{k}", 1, f"p{k % 3}") for k in range(30)]))
    second = table.upsert(rows([(k, f"u{k}", 2, f"p{k % 3}") for k in range(0, 30, 2)]))
    third = table.delete(spark.createDataFrame([(k,) for k in range(1, 5)], "id int"))
    # A writer that crashed after writing its log files but before completing its
    # deltacommit leaves exactly this on storage: the files, and the instant only
    # requested and inflight. Make one by removing a real commit's completed file.
    crashed = table.upsert(rows([(k, "failed", 9, f"p{k % 3}") for k in range(30)]))
    Path(local_base_path, ".hoodie", "timeline",
         f"{crashed.requested_time}_{crashed.completion_time}.{crashed.action.value}").unlink()
    assert len(table.timeline().pending()) >= 1, "the failed write stays on the timeline as pending"
    reader = TableReader(plain_spark, local_base_path)
    columns = [c for c in table.hudi.snapshot(with_meta_columns=True).columns if c != "_hoodie_file_name"]
    assert multiset(reader.snapshot(), columns) == multiset(table.hudi.snapshot(with_meta_columns=True), columns)
    for instant in (first, second, third):
        assert multiset(reader.as_of(instant), columns) == multiset(
            table.hudi.as_of(instant, with_meta_columns=True), columns), f"as of {instant.requested_time}"
    for begin, end in ((first, second), (first, third), (second, third)):
        assert multiset(reader.incremental(begin, end), columns) == multiset(
            table.hudi.incremental(begin, end, with_meta_columns=True), columns)
    assert not [r for r in reader.snapshot().collect() if r.v == "failed"]
    if table_type == "MERGE_ON_READ":
        logged = {"avro": LogBlockType.AVRO_DATA, None: LogBlockType.PARQUET_DATA}[log_format]
        assert data_block_types(local_base_path) == {logged}
    # one more successful write after the failure
    table.upsert(rows([(7, "last", 3, "p1")]))
    assert multiset(reader.snapshot(), columns) == multiset(table.hudi.snapshot(with_meta_columns=True), columns)
    assert META_COLUMNS[0] in columns


@pytest.mark.parametrize("name", ["mor_avro_v9_txns_simple_meta",  # CI's slice; the others under --full
                                  pytest.param("cow_v9_txns_simple_overwrite", marks=pytest.mark.full),
                                  pytest.param("mor_avro_v6_trips_8i3d", marks=pytest.mark.full)])
def test_reads_whose_slices_the_executors_make_equal_the_clients(
    plain_server_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Past MAX_PLANNED_SLICES the executors make a read's file slices from the listing, and the plan names no
    file: every kind of read then equals the read the client planned (here past a bound of 0 slices)."""
    base = str(unzip_fixture(name, tmp_path))
    session = connect(plain_server_url)
    try:
        session.conf.set("spark.sql.shuffle.partitions", "3")  # the tasks the file groups spread over
        planned = TableReader(session, base)
        commits = list(planned.view.timeline().write_commits())
        middle = commits[len(commits) // 2]
        reads = {
            "snapshot": lambda r: r.snapshot(),
            "as of": lambda r: r.as_of(middle),
            "read optimized": lambda r: r.read_optimized(),
            "incremental": lambda r: r.incremental(commits[0]),
            "incremental from the start": lambda r: r.incremental("earliest", middle),
        }
        if "txns" in name:  # partition and column statistics pruning (the metadata table's, or Parquet footers)
            times = sorted(r.txn_ts for r in planned.snapshot().select("txn_ts").collect())
            reads["pruned"] = lambda r: r.snapshot([col("region") == "us", col("txn_ts") > times[len(times) // 2]])
        columns = planned.snapshot().columns
        expected = {what: multiset(read(planned), columns) for what, read in reads.items()}
        assert expected["snapshot"] and expected["incremental from the start"]
        monkeypatch.setattr(table_reader, "MAX_PLANNED_SLICES", 0)
        on_executors = TableReader(session, base)
        assert on_executors.plan().slices is None
        with pytest.raises(UnsupportedOperationError, match="made on the executors"):
            _ = on_executors.plan().base_files
        for what, read in reads.items():
            assert multiset(read(on_executors), columns) == expected[what], what
    finally:
        session.stop()
