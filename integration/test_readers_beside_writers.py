"""Readers beside a writer (issue #36): while one client upserts and deletes, and Hudi compacts, clusters,
cleans and archives inline after its writes, another client reads the same table in a loop through the
jar-free readers on the plain server: snapshots, time travel, incremental reads and change queries, and on COW
tables FileIndex listings of the latest slices, whose base files Spark's own Parquet reader reads.

The oracle is a plain-Python model of the table after each write. A snapshot must equal the model state of a
write that was the latest when the read began or completed after it (never a mix, never a missing row); a
time travel, incremental read or change query must equal the model of the instants it names. The cleaner keeps
two commits, so files a read planned on are often removed before it reads them: such a read may end only in
:class:`ConcurrentTableChangeError` (a planned file gone) or :class:`HistoryUnavailableError` (a range the
cleaner or the archiver took), never in a shorter answer or another error.

A file removed between planning and reading is also forced deterministically: the plan's base and log files
are deleted before the read runs.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_connect import FileIndex, library_errors
from hudi_connect.cdc import ChangeQuery
from hudi_connect.core.errors import ConcurrentTableChangeError, HistoryUnavailableError
from hudi_connect.core.format.timeline import Instant
from hudi_connect.reader import TableReader
from hudi_connect.table.hudi_table import HudiTable

SCHEMA = "id int, v string, ts int, part string"
KEYS = 120
# every write cleans down to two retained commits, archives beyond four, compacts (MOR) every third delta
# commit and clusters every fourth commit: files disappear under the readers as fast as Hudi lets them
SERVICES = {
    "hoodie.clean.automatic": "true", "hoodie.clean.async": "false", "hoodie.cleaner.commits.retained": "2",
    "hoodie.keep.min.commits": "3", "hoodie.keep.max.commits": "4",
    "hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "4",
    "hoodie.parquet.small.file.limit": "0",
}
COMPACTION = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "3"}  # MOR only

Row = tuple[int, str, int, str]


def row(key: int, version: int) -> Row:
    return (key, f"r{version}", version, f"p{key % 2}")


@dataclass(frozen=True)
class Write:
    """One write of the writer's loop, its instant and the model state after it."""

    instant: Instant
    upserted: frozenset[Row]
    deleted: frozenset[int]
    state: frozenset[Row]


def round_rows(version: int) -> tuple[list[Row], list[int]]:
    """Round ``version``'s upserts (a window of existing keys and five new ones) or, every fourth round, deletes."""
    start = version * 17 % KEYS
    if version % 4 == 3:
        return [], [(start + i) % KEYS for i in range(8)]
    window = [(start + i) % KEYS for i in range(30)] + [KEYS + version * 5 + i for i in range(5)]
    return [row(key, version) for key in window], []


@dataclass
class Writer:
    """Writes rounds on the Hudi server in a thread, recording each write with the model state after it."""

    table: HudiTable
    rounds: int
    options: dict[str, str]
    writes: list[Write] = field(default_factory=list)
    error: BaseException | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: threading.Event = field(default_factory=threading.Event)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self._run, daemon=True)
        thread.start()
        return thread

    def latest(self) -> int:
        with self.lock:
            return len(self.writes) - 1

    def _record(self, instant: Instant, upserted: list[Row], deleted: list[int]) -> None:
        with self.lock:
            before = {r[0]: r for r in self.writes[-1].state} if self.writes else {}
            after = {key: r for key, r in before.items() if key not in deleted} | {r[0]: r for r in upserted}
            self.writes.append(Write(instant, frozenset(upserted), frozenset(k for k in deleted if k in before),
                                     frozenset(after.values())))

    def _run(self) -> None:
        spark = self.table.spark
        try:
            for version in range(1, self.rounds + 1):
                upserted, deleted = round_rows(version)
                if upserted:
                    instant = self.table.upsert(spark.createDataFrame(upserted, SCHEMA), options=self.options)
                else:
                    keys = spark.createDataFrame([(k,) for k in deleted], "id int")
                    instant = self.table.delete(keys)
                self._record(instant, upserted, deleted)
        except BaseException as error:  # the test fails with it
            self.error = error
        finally:
            self.done.set()


def rows_of(df: DataFrame) -> frozenset[Row]:
    return frozenset((r.id, r.v, r.ts, r.part) for r in df.select("id", "v", "ts", "part").collect())


Judge = Callable[[Any, list[Write]], bool]  # an answer against every write, once the writer is done


@dataclass
class Outcomes:
    """Each kind of read's outcomes ('equal', 'WRONG' or the refusal's class name), judged once every write
    is known (a write is visible when Hudi commits it, before its thread has recorded it)."""

    answers: list[tuple[str, str, Judge, Any]] = field(default_factory=list)
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    wrong: list[str] = field(default_factory=list)

    def run(self, kind: str, read: Callable[[], Any], judge: Judge, detail: str) -> None:
        refusals: tuple[type[Exception], ...] = (ConcurrentTableChangeError,)
        if kind != "snapshot":  # the latest state is never cleaned
            refusals += (HistoryUnavailableError,)
        try:
            with library_errors():
                self.answers.append((kind, detail, judge, read()))
        except refusals as refusal:
            self.counts[(kind, type(refusal).__name__)] += 1
            if isinstance(refusal, ConcurrentTableChangeError):
                assert "is gone" in str(refusal) and refusal.path, refusal

    def judge(self, writes: list[Write]) -> None:
        for kind, detail, judge, answer in self.answers:
            equal = judge(answer, writes)
            self.counts[(kind, "equal" if equal else "WRONG")] += 1
            if not equal:
                self.wrong.append(f"{kind}: {detail}")


def changes_model(before: Write, write: Write) -> Counter[tuple[str, int, str | None]]:
    """The change events of ``write``: (op, key, the after image's v)."""
    existing = {r[0] for r in before.state}
    events: Counter[tuple[str, int, str | None]] = Counter()
    for upserted in write.upserted:
        events[("u" if upserted[0] in existing else "i", upserted[0], upserted[1])] += 1
    for key in write.deleted:
        events[("d", key, None)] += 1
    return events


def changes_of(df: DataFrame) -> Counter[tuple[str, int, str | None]]:
    key = F.coalesce(F.col("after.id"), F.col("before.id"))
    return Counter((r.op, r.key, r.v) for r in df.select("op", key.alias("key"), F.col("after.v").alias("v"))
                   .collect())


def one_read(plain: SparkSession, path: str, writer: Writer, kind: str,
             spread: int) -> tuple[Callable[[], Any], Judge, str] | None:
    """A read of ``kind`` and how its answer is judged (None if the table has no range to read yet)."""
    latest = writer.latest()
    with writer.lock:
        writes = list(writer.writes)
    if kind == "snapshot":  # the state of the write latest when it began, or of a later one
        return (lambda: rows_of(TableReader(plain, path).snapshot()),
                lambda answer, every: any(w.state == answer for w in every[latest:]), f"began after write {latest}")
    if kind == "file index":  # COW: the latest slices' base files, read by Spark's own Parquet reader
        def listed_rows() -> frozenset[Row]:
            base_files = [f"{path.rstrip('/')}/{s.partition}/{s.base_file.name}"
                          for partition in FileIndex(plain, path).list_files_at() for s in partition.file_slices
                          if s.base_file is not None]
            # a file the cleaner removed since: Spark's missing-file error, ConcurrentTableChangeError in Outcomes
            return rows_of(plain.read.option("ignoreMissingFiles", "false").parquet(*base_files))
        return (listed_rows, lambda answer, every: any(w.state == answer for w in every[latest:]),
                f"began after write {latest}")
    if latest < 1:
        return None
    target = writes[max(1, latest - spread)]
    previous = writes[writes.index(target) - 1]
    if kind == "time travel":
        return (lambda: rows_of(TableReader(plain, path).as_of(target.instant)),
                lambda answer, _: answer == target.state, f"as of {target.instant.requested_time}")
    span = f"({previous.instant.requested_time}, {target.instant.requested_time}]"
    if kind == "incremental":  # the range's own files, or refused: Hudi's full-scan fallback answers otherwise
        return (lambda: rows_of(TableReader(plain, path).incremental(previous.instant, target.instant,
                                                                     fallback_to_full_scan=False)),
                lambda answer, _: answer == target.upserted, span)
    return (lambda: changes_of(ChangeQuery(plain, path).changes(previous.instant, target.instant, format="typed")),
            lambda answer, _: answer == changes_model(previous, target), span)


def read_beside(plain: SparkSession, path: str, writer: Writer, outcomes: Outcomes, table_type: str) -> int:
    """Reads in a loop until the writer is done; how many reads ran."""
    turn = reads = 0
    kinds = ["snapshot", "time travel", "incremental", "changes"]
    if table_type == "COPY_ON_WRITE":  # a MOR slice's logs need merging: its listings are judged by the kill suite
        kinds.append("file index")
    while not writer.done.is_set():
        kind = kinds[turn % len(kinds)]
        read = one_read(plain, path, writer, kind, spread=turn % 3)
        turn += 1
        if read is not None:
            outcomes.run(kind, *read)
            reads += 1
    return reads


def concurrent_run(spark: SparkSession, plain: SparkSession, path: str, table_type: str, metadata_table: bool,
                   rounds: int) -> tuple[Outcomes, Writer, int]:
    table = HudiTable.create(spark, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="part",
                             table_type=table_type, metadata_table=metadata_table, cdc="DATA_BEFORE_AFTER")
    initial = [row(key, 0) for key in range(KEYS)]
    writer = Writer(table, rounds, SERVICES | (COMPACTION if table_type == "MERGE_ON_READ" else {}))
    writer._record(table.bulk_insert(spark.createDataFrame(initial, SCHEMA)), initial, [])
    outcomes = Outcomes()
    thread = writer.start()
    try:
        reads = read_beside(plain, path, writer, outcomes, table_type)
    finally:
        thread.join(timeout=600)
    assert not thread.is_alive(), "the writer did not finish"
    if writer.error is not None:
        raise writer.error
    outcomes.judge(writer.writes)
    return outcomes, writer, reads


def check(outcomes: Outcomes, writer: Writer, reads: int, plain: SparkSession, path: str) -> None:
    print(f"{reads} reads beside {len(writer.writes) - 1} writes: {dict(sorted(outcomes.counts.items()))}")
    assert not outcomes.wrong, outcomes.wrong
    assert not any(outcome == "WRONG" for _, outcome in outcomes.counts), outcomes.counts
    # the reads ran beside the writes, and answers of every kind were judged (refusals are allowed, not all)
    assert reads >= 8, reads
    assert outcomes.counts[("snapshot", "equal")] >= 2, outcomes.counts
    assert sum(n for (_, outcome), n in outcomes.counts.items() if outcome == "equal") >= 4, outcomes.counts
    assert rows_of(TableReader(plain, path).snapshot()) == writer.writes[-1].state


# CI: MOR with the metadata table on local disk; the other tables, and MinIO, under --full
@pytest.mark.parametrize(("table_type", "metadata_table"), [
    pytest.param("MERGE_ON_READ", True, id="MOR-metadata-table"),
    pytest.param("MERGE_ON_READ", False, id="MOR-storage-listing", marks=pytest.mark.full),
    pytest.param("COPY_ON_WRITE", True, id="COW-metadata-table", marks=pytest.mark.full),
    pytest.param("COPY_ON_WRITE", False, id="COW-storage-listing", marks=pytest.mark.full)])
def test_reads_beside_a_writer_equal_a_completed_state_or_refuse(
    spark: SparkSession, plain_spark: SparkSession, local_base_path: str, table_type: str, metadata_table: bool
) -> None:
    outcomes, writer, reads = concurrent_run(spark, plain_spark, local_base_path, table_type, metadata_table,
                                             rounds=8)
    check(outcomes, writer, reads, plain_spark, local_base_path)


@pytest.mark.full
@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_reads_beside_a_writer_on_minio(spark: SparkSession, plain_spark: SparkSession, s3a_base_path: str,
                                        table_type: str) -> None:
    outcomes, writer, reads = concurrent_run(spark, plain_spark, s3a_base_path, table_type, True, rounds=8)
    check(outcomes, writer, reads, plain_spark, s3a_base_path)


def _planned_files(path: str, reader: TableReader) -> list[Path]:
    plan = reader.plan()
    assert plan.slices is not None
    return [Path(path, s.partition, name) for s in plan.slices
            for name in ([s.base_file.name] if s.base_file else []) + [f.name for f in s.log_files]]


def test_a_file_removed_after_planning_is_refused_by_name(
    spark: SparkSession, plain_spark: SparkSession, local_base_path: str
) -> None:
    """The cleaner's removal forced between planning and reading: a MOR slice with logs (read by the workers)
    ends in ConcurrentTableChangeError naming the file and the instant; a base-only slice (Spark's Parquet scan)
    too, even where the session ignores missing files: never a shorter answer."""
    table = HudiTable.create(spark, local_base_path, SCHEMA, record_key="id", ordering_field="ts",
                             partition_by="part", table_type="MERGE_ON_READ", metadata_table=False,
                             options={"hoodie.compact.inline.max.delta.commits": "100"})
    table.bulk_insert(spark.createDataFrame([row(k, 0) for k in range(20)], SCHEMA))
    latest = table.upsert(spark.createDataFrame([row(k, 1) for k in range(0, 20, 4)], SCHEMA))
    reader = TableReader(plain_spark, local_base_path)
    merged = [f for f in _planned_files(local_base_path, reader) if ".log." in f.name]
    read = reader.snapshot()
    gone = merged[0]
    os.remove(gone)
    with pytest.raises(ConcurrentTableChangeError) as refused, library_errors():
        read.collect()
    assert refused.value.path.endswith(f"/{gone.name}") and refused.value.planned_at == latest.requested_time

    # a COW table: base-only slices go through Spark's own scan; the session ignores missing files
    cow = local_base_path + "_cow"
    HudiTable.create(spark, cow, SCHEMA, record_key="id", ordering_field="ts", partition_by="part",
                     table_type="COPY_ON_WRITE", metadata_table=False).bulk_insert(
        spark.createDataFrame([row(k, 0) for k in range(20)], SCHEMA))
    reader = TableReader(plain_spark, cow)
    files = _planned_files(cow, reader)
    read = reader.snapshot()
    os.remove(files[0])
    plain_spark.conf.set("spark.sql.files.ignoreMissingFiles", "true")
    try:
        with pytest.raises(ConcurrentTableChangeError) as refused, library_errors():
            read.collect()
    finally:
        plain_spark.conf.unset("spark.sql.files.ignoreMissingFiles")
    assert refused.value.path is not None and refused.value.path.endswith(files[0].name)
