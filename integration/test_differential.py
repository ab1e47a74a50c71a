"""Differential testing against Hudi (:mod:`integration.differential`): scenarios drawn from seeds, every
request ours against Hudi's own read of the same table.

CI runs the seeds of ``CI_SEEDS`` (two scenarios each: the simplest, then one drawn); ``ci/test.sh --full`` also runs
the tester for ``HUDI_CONNECT_DIFFERENTIAL_MINUTES`` (default 10; ``ci/test.sh --differential-minutes N``)
on ``HUDI_CONNECT_DIFFERENTIAL_RELEASE`` (1.2, 1.0.2 or 0.15.0: the Hudi release that writes, read back by
it and by 1.2), with its report in ``HUDI_CONNECT_DIFFERENTIAL_REPORT`` when set.
"""

from __future__ import annotations

import contextlib
import os
import random
import uuid
from pathlib import Path

import pytest
from hudi_connect_stack.provision import cache_dir
from hudi_connect_stack.testing.plugin import spark4_server
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from hudi_connect import HudiTable
from hudi_connect.reader import TableReader
from integration.differential.runner import run_scenario
from integration.differential.scenario import (
    FEATURES,
    Concurrent,
    Record,
    Request,
    Scenario,
    Service,
    Shape,
    Write,
    features_of,
    scenarios,
)
from integration.differential.session import Tally, check_seed, explore, root_causes
from integration.differential.spark4_reader import Spark4Reader

CI_SEEDS = (20261127, 57)
RELEASE = os.environ.get("HUDI_CONNECT_DIFFERENTIAL_RELEASE", "1.2")
WRITERS = {"1.2": "spark", "1.0.2": "hudi_10_spark", "0.15.0": "hudi_015_spark"}
WRITER_SERVICES = {"1.2": "spark-connect-hudi", "1.0.2": "spark-connect-hudi-1.0", "0.15.0": "spark-connect-hudi-0.15"}


def _paths(root: Path):  # type: ignore[no-untyped-def]
    return lambda: str(root / uuid.uuid4().hex[:12])


def test_root_causes_count_the_deepest_cause_of_each_trace_whatever_varies() -> None:
    """How the long runs classify Hudi's failed writes: by the deepest ``Caused by`` of each stack trace in the
    writing server's log, with instants, paths, stage numbers and file ids cut."""
    def trace(instant: str, path: str, stage: str) -> list[str]:
        return [f"26/11/29 ERROR SparkConnectService: Error during: execute. UserId: root. SessionId: {instant}",
                f"org.apache.hudi.exception.HoodieUpsertException: Failed to upsert for commit time {instant}",
                "\tat org.apache.hudi.table.action.commit.BaseWriteHelper.write(BaseWriteHelper.java:80)",
                f"Caused by: org.apache.spark.SparkException: Job aborted: Task 0 in stage {stage}",
                "\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2898)",
                f"Caused by: java.lang.NumberFormatException: For input string: \"e4cd47c1\" in {path}",
                "\t... 31 more"]
    log = [*trace("20261129082534740", "/tmp/a/b/c.log", "691.0"), "26/11/29 INFO next",
           *trace("20261129082612676", "/tmp/d/e/f.parquet", "949.0"), "26/11/29 WARN TaskSetManager: Lost task",
           "java.lang.NullPointerException", "\tat org.apache.hudi.common.util.Option.get(Option.java:12)", "INFO"]
    assert root_causes(log) == {'java.lang.NumberFormatException: For input string: "…" in …': 2,
                                "java.lang.NullPointerException": 1}


@settings(max_examples=60, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_a_focused_run_draws_its_features_into_every_scenario(data: st.DataObject) -> None:
    """``--focus``: every scenario has the features named, where Hudi writes them (MOR; log compaction and Parquet
    log blocks: MOR; two ordering fields: table version 8 or 9; a bootstrap first, of one ordering field), and the
    report's count by feature is the scenarios'."""
    focus = frozenset(data.draw(st.sets(st.sampled_from(FEATURES), min_size=1)))
    scenario = data.draw(scenarios(focus=focus))
    found = features_of(scenario)
    two_fields = any(f.startswith("two ordering fields") for f in found)
    bootstrapped = any(f.endswith("bootstrap") for f in found)
    assert ("MOR" in found) == scenario.shape.is_mor
    if "mor" in focus:
        assert scenario.shape.is_mor
    if "log_compaction" in focus:
        assert scenario.shape.is_mor and "log compaction" in found
    if "parquet_logs" in focus:
        assert scenario.shape.is_mor and "Parquet log blocks" in found
    assert scenario.shape.is_mor or scenario.shape.log_format == "avro"  # COW writes no log blocks
    if {"ordering_fields", "bootstrap"} <= focus:  # Hudi writes no bootstrap of several ordering fields
        assert two_fields != bootstrapped
    elif "ordering_fields" in focus:
        assert scenario.shape.version in (8, 9) and two_fields
    elif "bootstrap" in focus:
        assert bootstrapped
    tally = Tally()
    tally.count_features(scenario, 60.0, 3)
    assert set(tally.feature_scenarios) == set(found) and all(tally.feature_requests[f] == 3 for f in found)


@pytest.mark.parametrize("seed_value", CI_SEEDS)
def test_drawn_scenario_reads_equal_hudis(spark: SparkSession, plain_spark: SparkSession, tmp_path: Path,
                                          seed_value: int) -> None:
    tally = Tally()
    check_seed(spark, plain_spark, _paths(tmp_path), seed_value, 2, tally)  # the simplest scenario, then one drawn
    assert tally.outcome.compared["equal"] > 0, tally.report(0, "1.2")


def test_a_history_with_every_kind_of_write_reads_equal_hudis(spark: SparkSession, plain_spark: SparkSession,
                                                               tmp_path: Path) -> None:
    """The steps the drawn histories rarely combine, fixed: nested partitions (complex key generator), CDC, the
    smallest archival window, a writer that dies before completing (Hudi's next write rolls it back by its
    markers) and a dropped partition, on a MOR table with the metadata table."""
    def record(key: int, ts: int, part: str = "a") -> Record:
        return Record(key, part, ts, key, "p", key)

    shape = Shape("MERGE_ON_READ", 9, "string", hive_style=False, url_encode=False, ordering_type="int",
                  merge="event_time", index="SIMPLE", metadata=True, column_stats=False, key_generator="complex",
                  cdc="DATA_BEFORE_AFTER", archival=True)
    steps = (Write("insert", (record(0, 1), record(1, 1, "b"))), Write("upsert", (record(0, 2),)),
             Write("upsert", (record(1, 3, "b"),), fails=True), Write("upsert", (record(0, 4),)),
             Write("delete_partition", (record(1, 5, "b"),)), *(Write("upsert", (record(k, 5),)) for k in (2, 3, 4)))
    every = (Request("snapshot", None), Request("as_of", None, commit=-2), Request("incremental", None, begin=1),
             Request("changes", None, begin=0), Request("changes", None, begin=2))
    outcome = run_scenario(spark, plain_spark, str(tmp_path / "t"), Scenario(shape, steps, tuple(every for _ in steps)))
    assert not outcome.differences, "\n".join(outcome.differences)
    assert outcome.compared["equal"] >= 30, outcome.compared  # the rest: time travel past archived, cleaned files
    timeline = tmp_path / "t" / ".hoodie" / "timeline"
    assert any(p.name.endswith(".rollback") for p in timeline.iterdir())
    assert any((timeline / "history").iterdir())  # commits were archived


@pytest.mark.full
def test_changes_of_a_timestamp_keyed_table_held_against_the_model_keep_the_partition_columns_value(
        spark: SparkSession, plain_spark: SparkSession, tmp_path: Path) -> None:
    """The shrunk seed 369095 (the 10-minute run of 2026-11-28): an insert wrote a key twice, so the changes are
    held against the model of Hudi's time travel, whose rows give the timestamp key generator's ``ms`` as text;
    the images (Hudi's CDC query's and ours) hold the long. The model now takes the long back."""
    scenario = Scenario(
        shape=Shape(
            table_type="COPY_ON_WRITE",
            version=6,
            partition_type="int",
            hive_style=False,
            url_encode=False,
            ordering_type="int",
            merge="event_time",
            index="BLOOM",
            metadata=True,
            column_stats=False,
            key_generator="timestamp",
            cdc="OP_KEY_ONLY",
            archival=False,
        ),
        steps=(
            Write(
                operation="insert",
                records=(
                    Record(key=2, part=2023, ts=23, t=-599, v="r", n=None),
                    Record(key=5, part=2023, ts=27, t=1441, v="r", n=None),
                    Record(key=6, part=2023, ts=22, t=167, v="q", n=None),
                    Record(key=7, part=2023, ts=25, t=-600, v="r", n=None),
                ),
                fails=False,
            ),
            Write(
                operation="insert",
                records=(
                    Record(key=1, part=2023, ts=6, t=234, v="p", n=None),
                    Record(key=2, part=2023, ts=33, t=375, v="p", n=None),
                ),
                fails=False,
            ),
            Write(
                operation="insert",
                records=(
                    Record(key=1, part=2023, ts=30, t=-12, v="q", n=None),
                    Record(key=2, part=2023, ts=28, t=629, v="r", n=2),
                ),
                fails=False,
            ),
            Write(operation="upsert", records=(Record(key=1, part=2023, ts=3, t=0, v="r", n=None),), fails=False),
            Write(operation="delete", records=(Record(key=6, part=2023, ts=2, t=1, v="p", n=None),), fails=True),
            Write(operation="upsert", records=(Record(key=0, part=2023, ts=2, t=18, v="p", n=None),), fails=True),
        ),
        requests=(
            (
                Request(
                    kind="snapshot", predicate=None, commit=-1, begin=0, zone="America/Los_Angeles", spelling="ours"
                ),
            ),
            (
                Request(
                    kind="as_of",
                    predicate=("and", ("cmp", "!=", "region", 1), ("null", "n")),
                    commit=-1,
                    begin=1,
                    zone="America/Los_Angeles",
                    spelling="column",
                ),
                Request(kind="changes", predicate=None, commit=-1, begin=0, zone=None, spelling="sql"),
            ),
            (
                Request(
                    kind="incremental", predicate=None, commit=-1, begin=1, zone="America/Los_Angeles", spelling="sql"
                ),
                Request(
                    kind="as_of",
                    predicate=("cmp", "!=", "region", "e"),
                    commit=-2,
                    begin=2,
                    zone="America/Los_Angeles",
                    spelling="ours",
                ),
            ),
            (
                Request(kind="changes", predicate=None, commit=-2, begin=2, zone=None, spelling="sql"),
                Request(kind="as_of", predicate=None, commit=-2, begin=1, zone=None, spelling="column"),
            ),
            (Request(kind="changes", predicate=None, commit=-2, begin=1, zone="America/Los_Angeles", spelling="ours"),),
            (
                Request(kind="changes", predicate=None, commit=-3, begin=0, zone="America/Los_Angeles", spelling="sql"),
                Request(kind="changes", predicate=None, commit=-4, begin=1, zone="Asia/Kolkata", spelling="sql"),
            ),
        ),
    )
    outcome = run_scenario(spark, plain_spark, str(tmp_path / "t"), scenario)
    assert outcome.compared and not outcome.differences, outcome.differences


@pytest.mark.full
def test_a_snapshot_after_the_metadata_table_compacted_a_partition_it_had_just_initialised_lists_every_file(
        spark: SparkSession, plain_spark: SparkSession, hudi_015_spark: SparkSession, tmp_path: Path) -> None:
    """The shrunk seed 455009 (the 22-minute run on Hudi 0.15.0 of 2026-11-28): the clustering initialised the
    metadata table's column_stats partition (deltacommit <clustering>010) and compacted the metadata table at once
    (<clustering>010001: 23 digits). Instant times were read up to 20 digits, so that compaction's slice of the
    files partition was skipped for the one before it, and the snapshot lost the row the next upsert wrote."""
    def record(key: int, ts: int, part: str | None = "a") -> Record:
        return Record(key, part, ts, 100 * key, "p", None)

    shape = Shape("COPY_ON_WRITE", 6, "string", hive_style=True, url_encode=True, ordering_type="int",
                  merge="event_time", index="BLOOM", metadata=True, column_stats=True, key_generator="simple",
                  cdc="off", archival=True)
    steps = (Write("insert", (record(0, 40), record(4, 38, None))), Write("upsert", (record(0, 0),)),
             Service("cluster"), Write("upsert", (record(1, 25),)))
    snapshot = (Request("snapshot", None),)
    outcome = run_scenario(hudi_015_spark, plain_spark, str(tmp_path / "t"), Scenario(shape, steps, (snapshot,) * 4),
                           {"1.2": spark, "0.15.0": hudi_015_spark})
    assert outcome.compared["equal"] == 4 and not outcome.differences, (outcome.compared, outcome.differences)
    compactions = (tmp_path / "t" / ".hoodie" / "metadata" / ".hoodie").glob("*.commit")
    assert any(len(path.name.split(".")[0]) == 23 for path in compactions)  # the 23-digit compaction happened


@pytest.mark.full
@pytest.mark.parametrize("attempt", range(4))
def test_a_commit_the_metadata_table_lacks_is_read_from_storage(spark: SparkSession, plain_spark: SparkSession,
                                                                 tmp_path: Path, attempt: int) -> None:
    """The shrunk seed 70072 (the focused run of 2026-11-30): a version-6 MOR table made by a metadata-only
    bootstrap, then an insert beside a delete. When the insert completes first, it could not initialize the
    metadata table's column_stats partition beside the pending delete and commits without a deltacommit; the
    delete initializes that partition at <insert>010 and lands its own. Hudi's read through its metadata table
    then loses the insert's rows (its listing read has them), and ours followed it whenever the delete's instant
    was the later one. Which writer completes first is the servers' race: each attempt reads what it got, and
    ours must equal Hudi's listing read every time."""
    def record(key: int, part: bool, ts: int | None) -> Record:
        return Record(key, part, ts, 10 * key, "p", None)

    shape = Shape("MERGE_ON_READ", 6, "boolean", hive_style=True, url_encode=False, ordering_type="long",
                  merge="event_time", index="BLOOM", metadata=True, column_stats=False, key_generator="complex",
                  cdc="OP_KEY_ONLY", archival=True)
    steps = (Write("bootstrap", (record(2, False, 34), record(3, True, 26), record(6, True, 6))),
             Concurrent((Write("insert", (record(1, True, 2), record(7, True, None))),
                         Write("delete", (record(0, False, 0),)))))
    path = str(tmp_path / "t")
    outcome = run_scenario(spark, plain_spark, path, Scenario(shape, steps, ((), (Request("snapshot", None),))))
    assert not outcome.differences, outcome.differences
    table = HudiTable.open(spark, path)
    listing = {r["_hoodie_record_key"] for r in table.hudi.listing_storage().snapshot(with_meta_columns=True)
               .select("_hoodie_record_key").collect()}
    ours = {r["_hoodie_record_key"] for r in TableReader(plain_spark, path).snapshot()
            .select("_hoodie_record_key").collect()}
    assert ours == listing and {"key:1", "key:7"} <= ours, (ours, listing)


@pytest.mark.full
def test_a_null_int_partition_read_with_a_comparison_beyond_bigint_is_kept_as_spark_keeps_it(
        spark: SparkSession, plain_spark: SparkSession, tmp_path: Path) -> None:
    """The shrunk seed 71501 (the MOR run of 2026-11-30): an int partition column with nulls, read with
    ``NOT (part >= 10000000000000000000)``. Spark folds ``part >= 1e19`` to ``false`` (a NULL part too), so
    Hudi's read keeps the null partition's rows; our pruning read the comparison as NULL and dropped them."""
    def record(key: int, part: int | None) -> Record:
        return Record(key, part, 1, 100 * key, "p", None)

    shape = Shape("MERGE_ON_READ", 8, "int", hive_style=False, url_encode=False, ordering_type="int",
                  merge="commit_time", index="BUCKET", metadata=True, column_stats=True, key_generator="custom",
                  cdc="off", archival=False)
    steps = (Write("insert", (record(1, 2023), record(3, None), record(7, 5))),)
    request = Request("snapshot", ("not", ("cmp", ">=", "part", 10000000000000000000)))
    outcome = run_scenario(spark, plain_spark, str(tmp_path / "t"), Scenario(shape, steps, ((request,),)))
    assert outcome.compared == {"equal": 1} and not outcome.differences, (outcome.compared, outcome.differences)


MINUTES = float(os.environ.get("HUDI_CONNECT_DIFFERENTIAL_MINUTES", "10"))
# the Spark 4 line whose plain server also reads (ANSI on), from that line's client environment: the long runs'
# (python -m integration.differential: 4.3 unless told); none under pytest alone, whose Spark 4 set-up may not be
# done when leg 1 gets here (CI's slice of that reader: integration/test_spark4.py, on the Spark 4 legs)
SPARK4_LINE = os.environ.get("HUDI_CONNECT_DIFFERENTIAL_SPARK4", "")
# features every drawn scenario has (comma-separated, of scenario.FEATURES): a run spent on them
FOCUS = frozenset(f for f in os.environ.get("HUDI_CONNECT_DIFFERENTIAL_FOCUS", "").split(",") if f)


def _spark4_reader(request: pytest.FixtureRequest, tmp_path: Path, stack: contextlib.ExitStack) -> Spark4Reader:
    python = cache_dir() / f"venv-spark{SPARK4_LINE.replace('.', '')}" / "bin" / "python"
    assert python.is_file(), f"the tester's Spark {SPARK4_LINE} reader needs `bash ci/setup-spark4.sh {SPARK4_LINE}`"
    server = spark4_server(request.getfixturevalue("shared_services"), SPARK4_LINE)
    log = stack.enter_context(open(tmp_path / "spark4-reader.log", "w"))  # noqa: SIM115 (the stack closes it)
    reader = Spark4Reader(str(python), server.url, log)
    stack.callback(reader.close)
    return reader


@pytest.mark.full
@pytest.mark.timeout(MINUTES * 60 + 1800)  # the run, then a last seed's shrinking
def test_differential_run(request: pytest.FixtureRequest, spark: SparkSession, plain_spark: SparkSession,
                          tmp_path: Path) -> None:
    first = int(os.environ.get("HUDI_CONNECT_DIFFERENTIAL_SEED", str(random.randrange(10**6))))
    writer: SparkSession = request.getfixturevalue(WRITERS[RELEASE])
    oracles = {"1.2": spark} if RELEASE == "1.2" else {"1.2": spark, RELEASE: writer}
    tally = Tally()
    with contextlib.ExitStack() as stack:
        spark4 = _spark4_reader(request, tmp_path, stack) if SPARK4_LINE else None
        tally.spark4_line = spark4.line if spark4 else ""
        explore(writer, plain_spark, _paths(tmp_path), first, MINUTES, tally, RELEASE, oracles, spark4, FOCUS)
    log = request.getfixturevalue("hudi_connect_run_dir") / WRITER_SERVICES[RELEASE] / "server.log"
    if log.is_file():  # a local process's (a container's log is the engine's)
        with log.open(errors="replace") as lines:
            tally.server_causes = root_causes(lines)
    report = tally.report(MINUTES, RELEASE)
    target = os.environ.get("HUDI_CONNECT_DIFFERENTIAL_REPORT")
    if target:
        Path(target).write_text(report)
    print(report)
    assert tally.scenarios > 0
    assert not tally.failures, report
