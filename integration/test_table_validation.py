"""Every validation error of HudiTable, with its message, on the real Hudi server.

Table history: created with id int key, ts ordering, part partition, then one batch of rows 1..3. The tests
that only read it, or whose write is refused before anything is written, share one such table (``table``); the
tests whose writes reach Hudi get one each (``fresh_table``).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_connect.core.errors import (
    InvalidInstantError,
    NotAHudiTableError,
    SchemaMismatchError,
    ServerMisconfiguredError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
    WriteFailedError,
)
from hudi_connect.table.hudi_table import HudiTable

SCHEMA = "id int, v string, ts long, part string"


def _rows(spark: SparkSession, rows: list[tuple[int | None, str, int, str]]) -> DataFrame:
    return spark.createDataFrame(rows, SCHEMA)


def _written(spark: SparkSession, path: str) -> HudiTable:
    table = HudiTable.create(spark, path, SCHEMA, record_key="id", ordering_field="ts",
                             partition_by="part", table_type="COPY_ON_WRITE", metadata_table=False)
    table.upsert(_rows(spark, [(1, "a", 1, "p1"), (2, "b", 1, "p2"), (3, "c", 1, "p1")]))
    return table


@pytest.fixture(scope="module")
def table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> HudiTable:
    folder = tmp_path_factory.mktemp("validation")
    os.chmod(folder, 0o755)
    return _written(spark, str(folder / "table"))


@pytest.fixture
def fresh_table(spark: SparkSession, local_base_path: str) -> HudiTable:
    return _written(spark, local_base_path)


def test_missing_path_is_table_not_found(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError, match="does not exist"):
        HudiTable.open(spark, str(tmp_path / "nothing-here"))


def test_plain_directory_is_not_a_hudi_table(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("a,b\n")
    tmp_path.chmod(0o755)
    with pytest.raises(NotAHudiTableError, match=r"is not a Hudi table: it has no \.hoodie/hoodie\.properties"):
        HudiTable.open(spark, str(tmp_path))


def test_create_twice_is_refused(spark: SparkSession, table: HudiTable) -> None:
    with pytest.raises(TableExistsError, match="already exists"):
        HudiTable.create(spark, table.base_path, SCHEMA, record_key="id")


def test_create_with_a_key_column_the_schema_lacks(spark: SparkSession, local_base_path: str) -> None:
    with pytest.raises(SchemaMismatchError, match=r"lacks the column\(s\) uuid"):
        HudiTable.create(spark, local_base_path, SCHEMA, record_key="uuid")


def test_missing_ordering_column_in_data(spark: SparkSession, table: HudiTable) -> None:
    with pytest.raises(SchemaMismatchError, match=r"the DataFrame to upsert lacks the column\(s\) ts"):
        table.upsert(spark.createDataFrame([(4, "d", "p1")], "id int, v string, part string"))


def test_null_record_key(spark: SparkSession, table: HudiTable) -> None:
    with pytest.raises(SchemaMismatchError, match=r"record key \(id\) is null"):
        table.upsert(_rows(spark, [(None, "x", 2, "p1")]))


def test_incompatible_type(spark: SparkSession, table: HudiTable) -> None:
    bad = spark.createDataFrame([(4, 5, 2, "p1")], "id int, v int, ts long, part string")
    with pytest.raises(SchemaMismatchError, match="v: table has string, data has int"):
        table.upsert(bad)


def test_compaction_of_a_cow_table(table: HudiTable) -> None:
    with pytest.raises(UnsupportedOperationError, match="compaction needs a MERGE_ON_READ table"):
        table.compaction.schedule()


def test_hudi_cdc_query_without_cdc(table: HudiTable) -> None:
    with pytest.raises(UnsupportedOperationError, match="not created with CDC enabled"):
        table.hudi.cdc("earliest")


# the table's own reads (jar-free) and Hudi's refuse the same requests with the same errors
READS = pytest.mark.parametrize("reads", [lambda t: t, lambda t: t.hudi], ids=["ours", "hudi"])


@READS
def test_time_travel_before_the_first_commit_and_malformed_instants(table: HudiTable, reads: Any) -> None:
    with pytest.raises(InvalidInstantError, match="its first commit is"):
        reads(table).as_of("20000101000000000")
    with pytest.raises(InvalidInstantError, match="is not an instant time"):
        reads(table).as_of("yesterday")
    with pytest.raises(InvalidInstantError, match="not on the table's active timeline"):
        table.timeline().find("20000101000000000")


@READS
def test_incremental_range_that_ends_before_it_begins(table: HudiTable, reads: Any) -> None:
    last = table.timeline().write_commits().last()
    assert last is not None and last.completion_time is not None
    with pytest.raises(InvalidInstantError, match="ends before it begins"):
        reads(table).incremental(last, "20000101000000000")


def test_a_plain_server_opens_and_reads_a_table_and_refuses_writes_by_name(
    spark: SparkSession, plain_spark: SparkSession, table: HudiTable, caplog: pytest.LogCaptureFixture
) -> None:
    """One table object on any server: reads, changes, history and files where Hudi's jars are not; writes,
    services and Hudi's own reads refused, naming what the server lacks; what it planned and refused logged."""
    caplog.set_level(logging.INFO, logger="hudi_connect")
    on_plain = HudiTable.open(plain_spark, table.base_path)
    assert sorted(map(tuple, on_plain.snapshot().collect())) == sorted(map(tuple, table.hudi.snapshot().collect()))
    assert "_hoodie_commit_time" not in on_plain.snapshot().columns  # meta columns off unless asked
    assert "_hoodie_commit_time" in on_plain.snapshot(with_meta_columns=True).columns
    assert on_plain.changes("earliest").count() == on_plain.snapshot().count() > 0  # inserts only so far
    assert on_plain.history() and on_plain.files.list_files_at()
    for refused in (lambda: on_plain.upsert(on_plain.snapshot()), lambda: on_plain.cluster(),
                    lambda: on_plain.hudi.snapshot()):
        with pytest.raises(ServerMisconfiguredError, match=r"need Hudi on the server: .*HoodieSparkSessionExtension"):
            refused()
    logged = [r.getMessage() for r in caplog.records]
    assert any(m.startswith(f"snapshot read of {table.base_path}: no predicate") and "file slices" in m
               for m in logged), logged
    assert any("ServerMisconfiguredError" in m for m in logged), logged


def test_writes_and_services_report_progress(spark: SparkSession, fresh_table: HudiTable) -> None:
    heard: list[str] = []
    table = HudiTable.open(spark, fresh_table.base_path, progress=heard.append)
    instant = table.upsert(spark.createDataFrame([(1, "again", 9, "p1")], SCHEMA))
    table.clean()
    assert any(m.startswith("upsert into") and m.endswith(f"committed as commit {instant.requested_time}")
               for m in heard), heard
    assert any("call run_clean" in m for m in heard), heard


def test_data_that_fails_to_compute_is_not_written(spark: SparkSession, fresh_table: HudiTable) -> None:
    table = fresh_table
    before = sorted(map(tuple, table.hudi.snapshot().collect()))
    exploding = _rows(spark, [(1, "new", 5, "p1"), (9, "boom", 5, "p2")]).withColumn(
        "v", F.when(F.col("id") == 9, F.raise_error(F.lit("injected failure"))).otherwise(F.col("v"))
    )
    with pytest.raises(WriteFailedError, match=r"not committed.*injected failure"):
        table.upsert(exploding)
    assert sorted(map(tuple, table.hudi.snapshot().collect())) == before


def test_a_write_failing_inside_hudi_leaves_the_previous_state_readable(
    spark: SparkSession, fresh_table: HudiTable
) -> None:
    table = fresh_table
    before = sorted(map(tuple, table.hudi.snapshot().collect()))
    commits_before = table.timeline().write_commits()
    # An unknown Parquet codec fails on the executors, after Hudi has begun the instant.
    with pytest.raises(WriteFailedError, match="did not commit; readers see the table's previous state") as caught:
        table.upsert(_rows(spark, [(1, "new", 5, "p1"), (4, "d", 5, "p2")]),
                     options={"hoodie.parquet.compression.codec": "no-such-codec"})
    assert sorted(map(tuple, table.hudi.snapshot().collect())) == before
    assert table.timeline().write_commits() == commits_before
    pending = [i.requested_time for i in table.timeline().pending() if i.writes_data]
    assert pending and f"It left pending writes ({', '.join(pending)}); table.recover()" in str(caught.value)
    # the next write rolls the failed attempt back and commits normally
    table.upsert(_rows(spark, [(1, "after", 6, "p1")]))
    assert {r.id: r.v for r in table.hudi.snapshot().collect()} == {1: "after", 2: "b", 3: "c"}
