"""Reads at the edges of a table's history, against Hudi's own reads of the same tables.

Each table is written by Hudi 1.2 (table version 9, or 6: its archive is log files) with aggressive archival
(``hoodie.keep.min.commits=2``, ``max=3``), so its first commits move to the archived timeline, and with or
without cleaning. Every read at ranges before, across
and after the archive boundary must either equal Hudi's answer or, where Hudi's own query fails (or where the
files a range needs are gone), be refused with :class:`HistoryUnavailableError`; never answered from part of the
history. The history lists archived commits too, and a reverse stream whose checkpoint fell behind archival stops.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hudi_connect_stack.testing.cdc_history import events
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from hudi_connect.cdc import ChangeQuery
from hudi_connect.core.errors import HistoryUnavailableError, InvalidInstantError
from hudi_connect.core.format.timeline import Instant, range_time
from hudi_connect.reader import TableReader
from hudi_connect.reverse import FileSink, ReverseStream
from hudi_connect.table.hudi_table import HudiTable

SCHEMA = "id int, v string, ts long, part string"
ARCHIVAL = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.parquet.small.file.limit": "0"}
CLEAN_EAGERLY = {"hoodie.clean.commits.retained": "1"}
NO_CLEAN = {"hoodie.clean.automatic": "false"}
MOR_COMPACTION = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "3"}


@dataclass(frozen=True)
class Case:
    table_type: str
    cdc: str
    options: dict[str, str]
    metadata_table: bool = True
    skewed: bool = False  # one file group written twice early, then only others: compaction skips it for good
    marks: tuple[Any, ...] = field(default=())


CASES = {
    # log blocks outliving their archived deltacommits (compaction by log-file count skips a file group), eager
    # cleaning; and a table never cleaned, whose archived instants stay readable. All under --full (CI's time):
    # CI reaches archived history through the conformance slice's cell with aggressive archival
    "mor-compaction-skips": Case("MERGE_ON_READ", "DATA_BEFORE_AFTER", CLEAN_EAGERLY | {
        "hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2",
        "hoodie.compaction.strategy":
            "org.apache.hudi.table.action.compact.strategy.LogFileNumBasedCompactionStrategy",
        "hoodie.compaction.logfile.num.threshold": "3"}, skewed=True, marks=(pytest.mark.full,)),
    # table version 6: the archive's log files (Hudi 1.2 writes them where hoodie.archivelog.folder says)
    "cow-v6-uncleaned": Case("COPY_ON_WRITE", "DATA_BEFORE_AFTER", NO_CLEAN | {"hoodie.write.table.version": "6"},
                             metadata_table=False, marks=(pytest.mark.full,)),
    "cow-uncleaned": Case("COPY_ON_WRITE", "OP_KEY_ONLY", NO_CLEAN, metadata_table=False, marks=(pytest.mark.full,)),
    "cow-cleaned": Case("COPY_ON_WRITE", "DATA_BEFORE_AFTER", CLEAN_EAGERLY, marks=(pytest.mark.full,)),
    "mor-uncleaned": Case("MERGE_ON_READ", "OP_KEY_ONLY", NO_CLEAN | MOR_COMPACTION, metadata_table=False,
                          marks=(pytest.mark.full,)),
    "mor-cleaned": Case("MERGE_ON_READ", "DATA_BEFORE", CLEAN_EAGERLY | MOR_COMPACTION, marks=(pytest.mark.full,)),
    "cow-file-versions": Case("COPY_ON_WRITE", "DATA_BEFORE_AFTER", {
        "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS", "hoodie.cleaner.fileversions.retained": "2"},
        marks=(pytest.mark.full,)),
}


def _records(df: DataFrame) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(sorted((k, v) for k, v in row.asDict().items() if not k.startswith("_hoodie")))
                   for row in df.collect())


Outcome = Counter[tuple[Any, ...]] | Exception


def _outcome(read: Callable[[], Counter[tuple[Any, ...]]]) -> Outcome:
    try:
        return read()
    except (PySparkException, HistoryUnavailableError, InvalidInstantError) as error:
        return error


def _agree(what: str, theirs: Outcome, ours: Outcome) -> str:
    """Equal answers, or Hudi's failure met by our refusal by name; the kind of outcome, for the summary."""
    if isinstance(theirs, Exception):
        assert isinstance(ours, HistoryUnavailableError | InvalidInstantError), (
            f"{what}: Hudi fails ({str(theirs).splitlines()[0][:200]}) but ours answers {ours}")
        return "refused"
    assert not isinstance(ours, Exception), f"{what}: Hudi answers {sum(theirs.values())} rows, ours: {ours}"
    assert ours == theirs, f"{what}:\nours only: {ours - theirs}\nHudi only: {theirs - ours}"
    return "equal"


def _write(spark: SparkSession, path: str, case: Case,
           early: Callable[[], object]) -> tuple[HudiTable, list[Instant]]:
    """The history; ``early`` runs after the second commit (before archival)."""
    table = HudiTable.create(spark, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="part",
                             table_type=case.table_type, cdc=case.cdc, metadata_table=case.metadata_table,
                             options=ARCHIVAL | case.options)

    def rows(ids: list[int], n: int) -> DataFrame:
        return spark.createDataFrame([(i, f"v{i}-{n}", n, f"p{i % 2}") for i in ids], SCHEMA)

    commits = [table.upsert(rows(list(range(10)), 1))]
    if case.skewed:
        commits.append(table.upsert(rows([1, 3], 2)))  # partition p1 only, never again: its log file stays
        early()
        commits += [table.upsert(rows([0, 2, 4], n)) for n in range(3, 14)]
    else:
        commits.append(table.upsert(rows([2, 5, 12], 2)))
        early()
        commits += [table.upsert(rows([n % 10, (n + 3) % 10, 10 + n], n)) for n in range(3, 14)]
    return table, commits


@pytest.mark.parametrize("name", [pytest.param(n, marks=c.marks) for n, c in CASES.items()])
def test_reads_at_the_archive_boundary_equal_hudis_or_are_refused(
    spark: SparkSession, plain_spark: SparkSession, local_base_path: str, tmp_path: Path, name: str
) -> None:
    case = CASES[name]
    sink = FileSink(str(tmp_path / "sink"), format="json", spark=plain_spark)
    streams: list[ReverseStream] = []

    def start_stream() -> None:  # checkpointed at the second commit, before archival
        streams.append(ReverseStream(plain_spark, local_base_path, "behind", [sink]))
        streams[0].run_once()

    table, commits = _write(spark, local_base_path, case, start_stream)
    stream = streams[0]
    reader = TableReader(plain_spark, local_base_path)
    timeline = reader.view.timeline()
    archived = reader.view.archived_timeline(timeline)
    last_archived = archived.last_write_commit()
    assert last_archived is not None and len(archived.write_commits()) >= 5, "archival did not happen"
    first_active = timeline.write_commits().first()
    assert first_active is not None
    by_completion = reader.properties.version >= 8  # version 6 compares requested times
    assert reader.properties.version == int(case.options.get("hoodie.write.table.version", "9"))
    outcomes: Counter[str] = Counter()

    # the history lists every commit once, the archived ones marked (model: the commits written)
    history = {e.requested_time: e for e in reader.view.history() if e.action in ("commit", "deltacommit")}
    written = {c.requested_time for c in commits}
    assert written <= set(history)
    assert {t for t in written if history[t].archived} == {c.requested_time for c in commits
                                                            if c.requested_time < timeline.first().requested_time}

    # snapshots: log blocks of archived deltacommits are merged as Hudi merges them
    outcomes[_agree("snapshot", _outcome(lambda: _records(table.hudi.snapshot())),
                    _outcome(lambda: _records(reader.snapshot())))] += 1

    ranges: dict[str, tuple[Instant | str, Instant | str | None]] = {
        "earliest": ("earliest", None), "pre-history": ("20200101000000000", None),
        "from the first commit": (commits[0], None), "across the boundary": (commits[2], commits[-2]),
        "from the last archived commit": (last_archived, None), "after it": (first_active, None),
        "the last commit": (commits[-2], commits[-1]),
    }
    for label, (begin, end) in ranges.items():
        theirs = _outcome(lambda b=begin, e=end: _records(  # type: ignore[misc]
            table.hudi.incremental(b, e, fallback_to_full_scan=True)))  # on version 6 too, where Hudi's default is off
        ours = _outcome(lambda b=begin, e=end: _records(reader.incremental(b, e)))  # type: ignore[misc]
        outcomes[_agree(f"incremental {label}", theirs, ours)] += 1
        without = _outcome(lambda b=begin, e=end: _records(  # type: ignore[misc]
            reader.incremental(b, e, fallback_to_full_scan=False)))
        if not isinstance(without, HistoryUnavailableError):  # answered only from the range's own commits
            outcomes[_agree(f"incremental {label} without fallback", theirs, without)] += 1
        elif isinstance(begin, str) and begin < last_archived.requested_time:
            assert without.earliest_answerable == range_time(last_archived, by_completion=by_completion), without
    query = ChangeQuery(plain_spark, local_base_path)
    for label, (begin, end) in ranges.items():
        outcomes[_agree(f"change query {label}",
                        _outcome(lambda b=begin, e=end: events(table.hudi.cdc(b, e))),  # type: ignore[misc]
                        _outcome(lambda b=begin, e=end: events(query.changes(b, e))))] += 1  # type: ignore[misc]

    def hudi_as_of(instant: str) -> Counter[tuple[Any, ...]]:
        return _records(spark.read.format("hudi").option("as.of.instant", instant).load(local_base_path))

    for label, commit in {"the first commit": commits[0], "the last archived commit": last_archived,
                          "the first active commit": first_active, "the latest": commits[-1]}.items():
        outcomes[_agree(f"time travel to {label}",
                        _outcome(lambda c=commit: hudi_as_of(c.requested_time)),  # type: ignore[misc]
                        _outcome(lambda c=commit: _records(reader.as_of(c))))] += 1  # type: ignore[misc]
    print(f"{name}: {dict(outcomes)}")
    assert outcomes["equal"] >= 10, outcomes
    if case.options.get("hoodie.clean.automatic") == "false":  # nothing cleaned: archived history is read
        assert outcomes["refused"] <= 8, outcomes
    else:
        assert outcomes["refused"] >= 3, outcomes

    # a reverse stream whose checkpoint fell behind archival stops by name and sends nothing more
    sent = sorted(p.name for p in (tmp_path / "sink").rglob("*.json"))
    checkpoint = stream.checkpoint()
    assert checkpoint.position is not None and checkpoint.position.requested_time < last_archived.requested_time
    with pytest.raises(HistoryUnavailableError, match="reverse stream 'behind' stops"):
        stream.run_once()
    assert stream.checkpoint() == checkpoint
    assert sorted(p.name for p in (tmp_path / "sink").rglob("*.json")) == sent and sent


def test_time_travel_before_a_pending_write_is_refused_as_hudi_refuses_it(
    spark: SparkSession, plain_spark: SparkSession, local_base_path: str
) -> None:
    table = HudiTable.create(spark, local_base_path, SCHEMA, record_key="id", ordering_field="ts",
                             table_type="COPY_ON_WRITE", metadata_table=False)
    first = table.upsert(spark.createDataFrame([(1, "a", 1, "p")], SCHEMA))
    second = table.upsert(spark.createDataFrame([(2, "b", 2, "p")], SCHEMA))
    # a write requested between the two that never completed (a writer still running, or dead)
    pending = str(int(first.requested_time) + 1)
    timeline_dir = Path(local_base_path) / ".hoodie" / "timeline"
    (timeline_dir / f"{pending}.commit.requested").write_bytes(b"")
    reader = TableReader(plain_spark, local_base_path)
    with pytest.raises(PySparkException, match="must be earlier than the first incomplete commit"):
        spark.read.format("hudi").option("as.of.instant", second.requested_time).load(local_base_path).collect()
    with pytest.raises(InvalidInstantError, match=f"requested at {pending} has not completed"):
        reader.as_of(second)
    assert [r.id for r in reader.as_of(first).collect()] == [1]  # before the pending write: answered


@pytest.mark.full
def test_an_incremental_range_reads_the_files_its_commits_wrote_not_a_later_completed_rewrite(
    spark: SparkSession, plain_spark: SparkSession, local_base_path: str
) -> None:
    """Seed 70080: a write requested before the range's last commit but completed after it (two writers at once)
    has not rewritten the range's files yet; Hudi reads the files the range's commits wrote."""
    table = HudiTable.create(spark, local_base_path, SCHEMA, record_key="id", ordering_field="ts",
                             partition_by="part", table_type="COPY_ON_WRITE", metadata_table=False)
    first = table.upsert(spark.createDataFrame([(1, "a", 1, "x"), (2, "b", 1, "y")], SCHEMA))
    rewrite = table.upsert(spark.createDataFrame([(1, "a2", 2, "x")], SCHEMA))
    last = table.upsert(spark.createDataFrame([(3, "c", 1, "y")], SCHEMA))
    # the rewrite of partition x completes after the last commit, as a writer beside it would
    assert last.completion_time is not None
    later = str(int(last.completion_time) + 1)
    timeline_dir = Path(local_base_path) / ".hoodie" / "timeline"
    completed = next(timeline_dir.glob(f"{rewrite.requested_time}_*.commit"))
    completed.rename(timeline_dir / f"{rewrite.requested_time}_{later}.commit")
    reader = TableReader(plain_spark, local_base_path)
    hudi = HudiTable.open(spark, local_base_path).hudi

    def rows(df: DataFrame) -> set[tuple[Any, ...]]:
        return {(r._hoodie_commit_time, r.id, r.v) for r in df.collect()}

    expected = {(first.requested_time, 1, "a"), (first.requested_time, 2, "b"), (last.requested_time, 3, "c")}
    assert rows(hudi.incremental("earliest", last, with_meta_columns=True)) == expected
    assert rows(reader.incremental("earliest", last)) == expected
    everything = expected - {(first.requested_time, 1, "a")} | {(rewrite.requested_time, 1, "a2")}
    assert rows(reader.incremental("earliest")) == rows(hudi.incremental("earliest", with_meta_columns=True)) \
        == everything
