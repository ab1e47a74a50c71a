"""The silent wrong answers of issue #57's audit, each held to Hudi 1.2's own read of the same table.

Each test is a fixed scenario of the differential tester (:mod:`integration.differential`), run through its
runner (every request ours against Hudi's, equal or refused by name), plus what the audit found, asserted
so that the test cannot pass on an empty answer:

- a partition filtered with a literal of another type (a date with a string, an int with a string, a string
  with an int): Spark casts and matches, and pruning used to compare Python values and drop every partition;
- a naive timestamp from a client outside UTC: pyspark sends it as local time; pruning read it as UTC;
- MOR, event-time ordering: a natural delete followed by a late record, which Hudi merges into the base
  record (it comes back), before and after a compaction; a late soft delete, which loses to a newer record;
- a timestamp key generator's partition column, which Hudi's Spark reader returns as a string;
- a read whose slices the executors make, collected after a write and a clean: refused by name;
- a string partition's '' (which Hudi writes as ``__HIVE_DEFAULT_PARTITION__`` too): kept by ``= ''`` and
  ``!= 'x'``. Hudi's own read is no oracle there (it shows '' as NULL yet matches it with ``= ''``); the
  oracle is the records written.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from hudi_connect import col, connect, library_errors
from hudi_connect.cdc import ChangeQuery
from hudi_connect.core.errors import ConcurrentTableChangeError
from hudi_connect.reader import TableReader, table_reader
from hudi_connect.table.hudi_table import HudiTable
from integration.differential.runner import client_zone, run_scenario, write_step
from integration.differential.scenario import Record, Request, Scenario, Service, Shape, Write, ours


def shape(**changes: Any) -> Shape:
    base: dict[str, Any] = dict(table_type="COPY_ON_WRITE", version=9, partition_type="string", hive_style=False,
                                url_encode=False, ordering_type="int", merge="event_time", index="SIMPLE",
                                metadata=False, column_stats=False)
    return Shape(**(base | changes))


def run(spark: SparkSession, plain: SparkSession, path: str, scenario: Scenario) -> None:
    """Every request of the scenario equal to Hudi's read, or where Hudi's incremental or CDC query is unlike its
    own time travel, to that (none refused, none without an oracle)."""
    outcome = run_scenario(spark, plain, path, scenario)
    assert not outcome.differences, "\n".join(outcome.differences)
    held = sum(n for kind, n in outcome.compared.items() if kind == "equal" or kind.endswith("which ours equals"))
    assert held == sum(len(r) for r in scenario.requests), outcome.compared


def rows(plain: SparkSession, path: str, recipe: tuple[Any, ...] | None = None) -> set[tuple[int, Any]]:
    predicates = [ours(recipe)] if recipe is not None else []
    return {(r.key, r.ts) for r in TableReader(plain, path).snapshot(predicates).collect()}


PARTITIONS = {  # partition type: its values, a literal of another type and the keys it matches
    "date": ((dt.date(2024, 1, 1), dt.date(2024, 1, 2)), "2024-01-01", {0, 2}),
    "int": ((2024, 2023), "2024", {0, 2}),
    "string": (("5", "a"), 5, {0, 2}),
}


@pytest.mark.parametrize("partition_type", [
    "date", pytest.param("int", marks=pytest.mark.full), pytest.param("string", marks=pytest.mark.full)])
def test_a_partition_literal_of_another_type_prunes_as_sparks_filter_matches(
    spark: SparkSession, plain_spark: SparkSession, tmp_path: Path, partition_type: str
) -> None:
    values, literal, keys = PARTITIONS[partition_type]
    equal, unequal = ("cmp", "=", "part", literal), ("cmp", "!=", "part", literal)
    within = ("in", "part", (literal,))
    scenario = Scenario(
        shape(partition_type=partition_type, hive_style=True),
        (Write("insert", tuple(Record(k, values[k % 2], 10, 0, "p", k) for k in range(4))),),
        ((Request("snapshot", equal), Request("snapshot", unequal), Request("snapshot", within),
          Request("as_of", equal)),))
    path = str(tmp_path / "t")
    run(spark, plain_spark, path, scenario)
    assert {k for k, _ in rows(plain_spark, path, equal)} == keys  # was empty: every partition pruned


@pytest.mark.parametrize("metadata", [True, pytest.param(False, marks=pytest.mark.full)],
                         ids=["metadata-table-statistics", "parquet-footers"])
def test_a_naive_timestamp_from_a_client_outside_utc_prunes_no_matching_file(
    spark: SparkSession, plain_spark: SparkSession, tmp_path: Path, metadata: bool
) -> None:
    # Kolkata is UTC+5:30: a naive 05:00 there is 23:30 UTC the day before, so records at 03:00 UTC match;
    # read as UTC (05:00), the file holding them (max 03:00) was pruned. One file per partition.
    after = ("cmp", ">", "t", dt.datetime(2024, 1, 1, 5))
    scenario = Scenario(
        shape(partition_type="int", metadata=metadata, column_stats=metadata),
        (Write("insert", (Record(0, 1, 10, 180, "p", 0), Record(1, 2, 10, -120, "p", 1),
                          Record(2, 3, 10, 600, "p", 2))),),
        ((Request("snapshot", after, zone="Asia/Kolkata"), Request("snapshot", ("not", after), zone="Asia/Kolkata"),
          Request("snapshot", after, zone="America/Los_Angeles")),))
    path = str(tmp_path / "t")
    run(spark, plain_spark, path, scenario)
    with client_zone("Asia/Kolkata"):
        assert {k for k, _ in rows(plain_spark, path, after)} == {0, 2}


def test_an_instant_in_a_predicate_reads_the_same_whichever_session_is_active_in_the_process(
    spark: SparkSession, plain_spark: SparkSession, plain_server_url: str, tmp_path: Path
) -> None:
    """pyspark types a datetime literal by the process's active session (its ``spark.sql.timestampType``), not
    the one the plan runs in. With another session active that prefers TIMESTAMP_NTZ, our instant became its
    wall-clock time: 05:00+05:30 (23:30 UTC the day before) read as 05:00 UTC, and the record at 00:00 UTC was
    lost. Our literals are typed TIMESTAMP themselves (``spark_columns.spark_literal``)."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    path = str(tmp_path / "t")
    table = HudiTable.create(spark, path, "id int, t timestamp, ts long", record_key="id", ordering_field="ts",
                             table_type="COPY_ON_WRITE")
    table.upsert(spark.sql("SELECT 1 AS id, TIMESTAMP'2024-01-01 00:00:00' AS t, 1L AS ts UNION ALL "
                           "SELECT 2, TIMESTAMP'2024-01-01 10:00:00', 1L"))
    kolkata = dt.timezone(dt.timedelta(hours=5, minutes=30))
    after = col("t") > dt.datetime(2024, 1, 1, 5, tzinfo=kolkata)
    wall_clock = connect(plain_server_url)
    wall_clock.conf.set("spark.sql.timestampType", "TIMESTAMP_NTZ")
    active = ConnectSession.getActiveSession()
    ConnectSession._active_session.session = wall_clock
    try:
        read = HudiTable.open(plain_spark, path)
        assert sorted(r.id for r in read.snapshot(after).collect()) == [1, 2]
        assert sorted(r.id for r in read.snapshot(~after).collect()) == []
    finally:
        ConnectSession._active_session.session = active
        wall_clock.stop()


def test_mor_late_records_after_natural_deletes_merge_as_hudis_before_and_after_compaction(
    spark: SparkSession, plain_spark: SparkSession, tmp_path: Path
) -> None:
    every = (Request("snapshot", None), Request("as_of", None, commit=-2), Request("incremental", None, begin=1))
    scenario = Scenario(
        shape(table_type="MERGE_ON_READ", index="BLOOM"),
        (Write("insert", tuple(Record(k, "a", 10, k, "p", k) for k in range(4))),
         Write("delete", (Record(0, "a", 10, 0, "p", 0), Record(1, "a", 10, 1, "p", 1))),
         # late (5 < 10) and newer (15) records of the deleted keys; a late soft delete (5) and a newer one (15)
         Write("upsert", (Record(0, "a", 5, 50, "late", 0), Record(1, "a", 15, 51, "new", 1))),
         Write("soft_delete", (Record(2, "a", 5, 2, "p", 2), Record(3, "a", 15, 3, "p", 3))),
         Service("compact")),
        (every[:1], every, every, every, every))
    path = str(tmp_path / "t")
    run(spark, plain_spark, path, scenario)
    # Hudi's merger: the late record replaces the natural delete, then loses to the base record (ts 10), which
    # comes back; the late soft delete (ts 5) loses to the base record too
    assert rows(plain_spark, path) == {(0, 10), (1, 15), (2, 10)}


def test_a_timestamp_key_generators_partition_column_reads_as_hudis_string(
    spark: SparkSession, plain_spark: SparkSession, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    day = int(dt.datetime(2024, 1, 16, 9, 30, tzinfo=dt.UTC).timestamp() * 1000)
    options = {
        "hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "event_ms",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
        "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
        "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd", "hoodie.keygen.timebased.timezone": "UTC",
    }
    spark.createDataFrame([(1, day, 1), (2, day + 86_400_000, 1)], "id int, event_ms long, ts int") \
        .write.format("hudi").options(**options).mode("append").save(path)
    theirs = HudiTable.open(spark, path).hudi.snapshot()
    mine = TableReader(plain_spark, path).snapshot().drop("_hoodie_commit_time", "_hoodie_commit_seqno",
                                                          "_hoodie_record_key", "_hoodie_partition_path",
                                                          "_hoodie_file_name")
    assert dict(mine.dtypes)["event_ms"] == dict(theirs.dtypes)["event_ms"] == "string"
    assert sorted(map(tuple, mine.collect())) == sorted(map(tuple, theirs.collect()))
    assert {r.id for r in TableReader(plain_spark, path).snapshot([ours(("cmp", "=", "event_ms", day))])
            .collect()} == {1}


def test_a_read_the_executors_slice_refuses_files_a_clean_removed_after_planning(
    spark: SparkSession, plain_spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The executors list a large read's files only when it runs; the slices are chosen as of the plan. A write
    and a clean in between removed the slices the plan would choose: refused by name, never fewer rows."""
    path = str(tmp_path / "t")
    table_shape = shape(partition_type="int")
    for ts in (1, 2):
        write_step(spark, table_shape, path, Write("upsert", tuple(Record(k, k % 2, ts, 0, "p", k) for k in range(6))))
    monkeypatch.setattr(table_reader, "MAX_PLANNED_SLICES", 0)
    reader = TableReader(plain_spark, path)
    assert reader.plan().slices is None
    unchanged = reader.snapshot()
    planned = reader.snapshot()
    assert unchanged.count() == 6  # collected before anything changed: every row
    write_step(spark, table_shape, path, Write("upsert", tuple(Record(k, k % 2, 3, 0, "p", k) for k in range(6))))
    assert HudiTable.open(spark, path).clean(retain_commits=1) is not None
    with pytest.raises(ConcurrentTableChangeError, match="clean"), library_errors():
        planned.collect()


def test_an_empty_string_partition_value_is_kept_by_the_predicates_it_satisfies(
    spark: SparkSession, plain_spark: SparkSession, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    write_step(spark, shape(hive_style=True), path, Write("insert", (
        Record(0, "", 10, 0, "p", 0), Record(1, None, 10, 0, "p", 1), Record(2, "x", 10, 0, "p", 2))))
    # the oracle: the records written (Hudi's read shows '' as NULL and matches NULL with = '')
    assert {k for k, _ in rows(plain_spark, path, ("cmp", "=", "part", ""))} == {0}
    assert {k for k, _ in rows(plain_spark, path, ("cmp", "!=", "part", "x"))} == {0}
    assert {k for k, _ in rows(plain_spark, path, ("null", "part"))} == {1}
    assert {k for k, _ in rows(plain_spark, path, ("in", "part", ("", "y")))} == {0}


@pytest.mark.full
def test_url_encoded_partition_values_read_as_stored_where_hudis_incremental_shows_them_encoded(
    spark: SparkSession, plain_spark: SparkSession, tmp_path: Path
) -> None:
    """The differential run's one difference from Hudi 1.2 (seeds 1002 and 1015): Hudi's incremental read of a
    table with URL-encoded partition paths shows the partition column as the path's encoded text, where its
    snapshot (and hudi-rs, and ours) shows the stored value. Kept out of the oracle; this pins both answers."""
    path = str(tmp_path / "t")
    write_step(spark, shape(url_encode=True), path, Write("insert", (Record(0, "x/y", 10, 0, "p", 0),)))
    table = HudiTable.open(spark, path)
    assert {r.part for r in table.hudi.snapshot().collect()} == {"x/y"}
    assert {r.part for r in table.hudi.incremental("earliest").collect()} == {"x%2Fy"}  # Hudi's, encoded
    reader = TableReader(plain_spark, path)
    assert {r.part for r in reader.snapshot().collect()} == {r.part for r in reader.incremental("earliest").collect()} \
        == {"x/y"}


@pytest.mark.full
def test_a_timestamp_key_generators_partition_column_filters_its_values_where_hudis_read_prunes_by_path_text(
    spark: SparkSession, plain_spark: SparkSession, tmp_path: Path
) -> None:
    """The differential run's seed 9103 (1.0.2-written, Hudi 1.2 the oracle): Hudi 1.2 shows a timestamp key
    generator's partition column as the stored value ('1704059760000') but prunes a filter on it by the path's
    formatted text (2023/12/31), so `ms = '1704059760000'`, or any filter the path text fails, returns no row.
    Kept out of the oracle; this pins both answers (ours: the rows whose value matches)."""
    path = str(tmp_path / "t")
    table_shape = shape(partition_type="int", key_generator="timestamp", hive_style=True)
    write_step(spark, table_shape, path, Write("insert", (Record(6, 2023, 29, -124, "r", None),
                                                          Record(0, 2023, 27, 1175, "r", 1))))
    hudis = HudiTable.open(spark, path).hudi.snapshot()
    assert {r.key: r.ms for r in hudis.collect()} == {6: "1704059760000", 0: "1704137700000"}
    assert hudis.where("ms = '1704059760000'").count() == 0  # Hudi's: pruned by the path's text
    ours = TableReader(plain_spark, path)
    assert [r.key for r in ours.snapshot("ms = '1704059760000'").collect()] == [6]
    assert {r.key for r in ours.snapshot([col("ms") <= "1704067200000"]).collect()} == {6}


@pytest.mark.full
def test_a_change_of_a_key_a_file_holds_twice_pairs_the_row_that_changed_where_hudis_cdc_takes_the_other(
    spark: SparkSession, plain_spark: SparkSession, tmp_path: Path
) -> None:
    """The 1.2 run's seed 8106: `insert` (no index lookup) writes key 1 again, clustering puts both rows in one
    file, and an upsert changes one of them. Hudi's CDC query (DATA_BEFORE: only the before image is logged)
    looks the after image up by key and takes the row the commit did not change; ours pairs the row it wrote.
    Kept out of the oracle; this pins both answers."""
    path = str(tmp_path / "t")
    table_shape = shape(version=6, partition_type="int", index="BLOOM", cdc="DATA_BEFORE")
    for step in (Write("insert", (Record(1, 2023, 26, 45, "r", None),)),
                 Write("insert", (Record(1, 2023, 14, -344, "p", None),)),
                 Service("cluster"), Write("upsert", (Record(1, 2023, 28, 2000, "q", None),))):
        write_step(spark, table_shape, path, step)
    stored = sorted(r.ts for r in TableReader(plain_spark, path).snapshot().collect())
    assert len(stored) == 2 and 28 in stored  # both rows stay: the one the upsert merged into, and the other
    unchanged = next(ts for ts in stored if ts != 28)

    def after_ts(df: Any) -> list[int]:
        return [json.loads(r.after)["ts"] for r in df.collect()]
    previous = list(TableReader(plain_spark, path).view.timeline().write_commits())[-2]  # the clustering
    assert after_ts(ChangeQuery(plain_spark, path).changes(previous)) == [28]  # ours: the row the upsert wrote
    assert after_ts(HudiTable.open(spark, path).hudi.cdc(previous)) == [unchanged]  # Hudi's: the other row


def test_a_delete_of_one_of_two_rows_of_a_key_is_that_rows_delete_as_hudis_time_travel_shows(
    spark: SparkSession, plain_spark: SparkSession, tmp_path: Path
) -> None:
    """The 1.2 run's seed 8112: an `insert` wrote key 6 again into its bucket, so the file held it twice; a delete
    removed the first row only (Hudi's reader meets the delete there) and a second delete the other. Ours missed
    the first delete (a key still present looked unchanged); now each delete is its row's, as the model of Hudi's
    time travel has it (Hudi's CDC query takes the second row's image both times, so it is no oracle here)."""
    table_shape = shape(version=6, partition_type="none", index="BUCKET", cdc="OP_KEY_ONLY", hive_style=True)
    changes = Request("changes", None, commit=-1, begin=2)
    scenario = Scenario(table_shape, (
        Write("insert", (Record(0, None, 26, 570, "r", 3), Record(6, None, 1, -180, "q", None))),
        Write("insert", (Record(4, None, 19, -136, "r", 3), Record(6, None, 38, 299, "p", 1))),
        Write("delete", (Record(6, None, 12, 2000, "r", None),)),
        Write("delete", (Record(4, None, 0, -267, "r", 3), Record(6, None, 19, -217, "q", 8)))),
        ((), (), (changes, Request("changes", None, commit=-1, begin=0)),
         (changes, Request("changes", None, commit=-2, begin=2), Request("changes", None, commit=-1, begin=0))))
    path = str(tmp_path / "t")
    outcome = run_scenario(spark, plain_spark, path, scenario)
    assert not outcome.differences, "\n".join(outcome.differences)
    assert outcome.compared == {"equal to the model (Hudi's time travel)": 5}, outcome.compared
    commits = list(TableReader(plain_spark, path).view.timeline().write_commits())
    first_delete = ChangeQuery(plain_spark, path).changes(commits[1], commits[2]).collect()
    assert [(r.op, json.loads(r.before)["ts"]) for r in first_delete] == [("d", 1)]


def test_the_model_of_hudis_time_travel_equals_hudis_cdc_where_no_file_holds_a_key_twice(
    spark: SparkSession, plain_spark: SparkSession, tmp_path: Path
) -> None:
    """The model the tester holds change queries against where Hudi's CDC is no oracle, checked against Hudi's
    CDC query where it is: updates (one late), deletes, inserts, an insert_overwrite, on MOR with a compaction."""
    from integration.differential.runner import _data_only, _rows, model_changes
    table_shape = shape(table_type="MERGE_ON_READ", version=8, partition_type="int", cdc="DATA_BEFORE_AFTER")
    path = str(tmp_path / "t")
    for step in (Write("insert", (Record(0, 2023, 5, 1, "p", None), Record(1, 2024, 5, 2, "q", None))),
                 Write("upsert", (Record(0, 2023, 9, 3, "r", 1), Record(1, 2024, 2, 4, "r", None),
                                  Record(2, 2024, 1, 5, "p", None))),
                 Service("compact"), Write("delete", (Record(2, 2024, 9, 6, "p", None),)),
                 Write("insert_overwrite", (Record(0, 2023, 1, 7, "q", 2),))):
        write_step(spark, table_shape, path, step)
    table = HudiTable.open(spark, path)
    commits = list(TableReader(plain_spark, path).view.timeline().write_commits())
    _, hudis = _rows(table.hudi.cdc("earliest", commits[-1]))
    assert sum(hudis.values()) == 7
    assert _data_only(model_changes(table, commits, 0, len(commits) - 1)) == _data_only(hudis)


@pytest.mark.full
def test_a_delete_in_the_null_partition_of_a_1_0_table_is_in_our_changes_as_in_hudis_time_travel(
    spark: SparkSession, plain_spark: SparkSession, hudi_10_spark: SparkSession, tmp_path: Path
) -> None:
    """The 1.0.2 run's seed 9601 (COW v8, OP_KEY_ONLY, a boolean partition with NULL): a soft delete removes key 2
    from `part=__HIVE_DEFAULT_PARTITION__` and key 1 from `part=true`. Hudi 1.2's CDC query shows only key 1's
    delete, Hudi 1.0.2's shows none, though both snapshots and Hudi's time travel lose both keys. Ours shows both,
    as the model of Hudi's time travel has it; the tester counts such a request as Hudi inconsistent with itself."""
    from integration.differential.runner import _data_only, _rows, model_changes
    table_shape = shape(version=8, partition_type="boolean", hive_style=True, index="BLOOM", metadata=True,
                        column_stats=True, cdc="OP_KEY_ONLY")
    path = str(tmp_path / "t")
    for step in (Write("insert", (Record(0, True, 25, 36, "p", None), Record(1, True, 0, 372, "p", None),
                                  Record(2, None, 17, 275, "p", 4))),
                 Write("soft_delete", (Record(1, True, 25, 351, "r", 3), Record(2, None, 37, 757, "q", None)))):
        write_step(hudi_10_spark, table_shape, path, step)
    commits = list(TableReader(plain_spark, path).view.timeline().write_commits())
    ours = _data_only(_rows(ChangeQuery(plain_spark, path).changes(commits[0], commits[1]))[1])
    model = _data_only(model_changes(HudiTable.open(spark, path), commits, 1, 1))
    assert ours == model and {dict(before)["key"] for _, _, before, _ in ours} == {1, 2}
    hudis = _data_only(_rows(HudiTable.open(spark, path).hudi.cdc(commits[0], commits[1]))[1])
    assert {dict(before)["key"] for _, _, before, _ in hudis} == {1}  # Hudi 1.2's: key 2's delete missing


def test_a_delete_of_a_key_an_insert_duplicated_in_one_base_file_removes_one_row_as_hudis(
    spark: SparkSession, plain_spark: SparkSession, tmp_path: Path
) -> None:
    """The differential run's seed 2001: `insert` skips the index, so a small base file rewritten with new records
    holds a key twice; a delete then meets the first row only in Hudi's reader (the other stays), before and
    after time travel."""
    every = (Request("snapshot", None), Request("as_of", None, commit=-1), Request("as_of", None, commit=-2))
    scenario = Scenario(
        shape(table_type="MERGE_ON_READ", version=6, partition_type="int", index="BLOOM", metadata=True),
        (Write("insert", (Record(5, 2023, 33, 230, "q", None),)),
         Write("insert", (Record(1, 2023, 40, -372, "r", 4), Record(5, 2023, 34, 1024, "q", 0))),
         Write("delete", (Record(5, 2023, 30, 589, "r", 0),))),
        (every[:1], every, every))
    path = str(tmp_path / "t")
    run(spark, plain_spark, path, scenario)
    assert rows(plain_spark, path) == {(1, 40), (5, 34)}
