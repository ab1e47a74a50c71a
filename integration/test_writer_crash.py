"""Writers killed mid-write (HUDI-2285 under real kills): the Hudi Connect server, the writer's JVM and its
executors, is SIGKILLed at seeded moments of a write (issue: writer crashes).

Phases, each armed on the table's own timeline (read from storage, never through the dying server):
- ``data``: while the write's instant is inflight, a random delay in;
- ``between``: once the metadata table completed the write's deltacommit, before the data table did;
- ``after_commit``: once the write's commit completed (inline services and the reply still to come);
- ``compaction``, ``clustering``, ``clean``: while the inline table service is inflight.

After each kill, before any recovery, every reader of ours on the plain server shows exactly the last
committed state of a plain-Python model: snapshot, time travel, incremental, change query, FileIndex and
RecordIndex listings, and a reverse stream to files. No write is ever partly visible, and the writer's
inline forwarding (``forwarding_to``) has exported nothing of an uncommitted write. Meanwhile the server
comes back (a restart touches no table); then the table is recovered (``HudiTable.recover()``, or Hudi's
own rollback: the cleaner after the next commit, once the dead write's heartbeat expired), the write is
retried, ours equals Hudi's own read, and the inline export has resumed exactly.
"""

from __future__ import annotations

import os
import random
import re
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hudi_connect_stack.endpoints import MinioEndpoint
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from hudi_connect import HudiTable, ServerUnavailableError, WriteFailedError, WriterActiveError, connect
from hudi_connect.cdc.query import ChangeQuery
from hudi_connect.client.timeline_view import TimelineView
from hudi_connect.core.format.timeline import InstantState
from hudi_connect.reader import TableReader
from hudi_connect.reverse import FileSink, ReverseStream
from hudi_connect.table.recovery import plan_recovery
from hudi_connect.table.write_outcome import WriteState, write_outcome
from hudi_connect.table_spec.file_index import FileIndex
from hudi_connect.table_spec.record_index import RecordIndex
from integration.killable import Kill, KillableServer, TimelineWatch

SCHEMA = "id int, v string, ts long, part string"
State = dict[int, tuple[str, int]]
_COMPLETED = re.compile(r"^(\d+)_(\d+)\.(commit|deltacommit|replacecommit)$")
# a COW commit's inflight file is plain 'T.inflight'
_PENDING = re.compile(r"^(\d+)(\.(commit|deltacommit|replacecommit|clustering))?\.(requested|inflight)$")


@dataclass(frozen=True)
class Config:
    name: str
    table_type: str
    storage: str  # local or minio
    metadata_indexes: tuple[str, ...] | None  # None: no metadata table
    phases: tuple[str, ...]  # in CI; none: the configuration runs under --full only
    full_phases: tuple[str, ...]  # the whole sequence, with --full
    forwarding: bool = False  # the writer forwards each commit to a file sink inline

    def options(self) -> dict[str, str]:
        # a dead writer's heartbeat expires in 4 s (Hudi's default: 2 min), so that the cleaner after the first
        # write on the restarted server rolls its write back (lazy cleaning of failed writes, the default)
        options = {"hoodie.clean.commits.retained": "4", "hoodie.client.heartbeat.interval_in_ms": "2000"}
        if "compaction" in self.phases + self.full_phases:
            options |= {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2"}
        if "clustering" in self.phases + self.full_phases:
            options |= {"hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "2"}
        return options


# 1 kill point in CI, 34 with --full. CI kills a MOR write on MinIO with a metadata table (and inline forwarding)
# while it writes its data. --full runs the fresh server's test below, whose first write compacts the metadata
# table, and every configuration's whole
# sequence: the kill points between writes, in compaction, clustering and clean, on local disk, with the record
# index. A point costs 36 s (COW without a metadata table) to 57 s (MOR with one) for the kill, the restart and the
# rewrite (on a 2-core machine of 2026-11-25; about 1.5 times that on a slower one). The random batches are seeded
# by the configuration's name, so a CI sequence that is a prefix of the full one replays its history. Each sequence
# matters, not only its count: cow-local-mdt cut to (data, between, clustering, clean) left a table whose rewrite
# after the clean kill failed even after recover() ("Failed to instantiate Metadata table"), so --full keeps the
# sequences that have always run.
CONFIGS = [
    Config("mor-local-mdt", "MERGE_ON_READ", "local", ("column_stats", "record_index"), (),
           ("data", "between", "compaction", "clean", "data", "data", "data", "data", "after_commit", "between",
            "compaction")),
    Config("cow-local-mdt", "COPY_ON_WRITE", "local", ("column_stats", "record_index"), (),
           ("data", "data", "data", "between", "clustering", "clean", "data", "data", "after_commit")),
    Config("mor-minio-mdt", "MERGE_ON_READ", "minio", ("column_stats",), ("data",),
           ("data", "after_commit", "between", "compaction", "data", "data", "clean"), forwarding=True),
    Config("cow-minio-nomdt", "COPY_ON_WRITE", "minio", None, (),
           ("data", "data", "clean", "data", "data", "data", "after_commit")),
]
TALLY: Counter[str] = Counter()


@dataclass
class Run:
    """One table under kills: its model, its writer's server, and our readers' sessions."""

    config: Config
    path: str
    server: KillableServer
    plain: SparkSession
    minio: MinioEndpoint
    rng: random.Random
    model: State = field(default_factory=dict)
    step: int = 0
    checked: tuple[str, State] = ("earliest", {})  # the last state the readers showed, and its commit

    def writer(self) -> HudiTable:
        spark = connect(self.server.url, server_timeout=5)
        table = HudiTable.open(spark, self.path, options=self.config.options())
        if not self.config.forwarding:
            return table
        return table.forwarding_to(table.reverse_stream("inline", [FileSink(f"{self.path}-inline", spark=spark)]))

    def create(self, spark: SparkSession, path: str) -> HudiTable:
        config = self.config
        return HudiTable.create(spark, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="part",
                                table_type=config.table_type, metadata_table=config.metadata_indexes is not None,
                                metadata_indexes=config.metadata_indexes or (), cdc="DATA_BEFORE_AFTER",
                                options=config.options())

    def batch(self) -> tuple[list[tuple[int, str, int, str]], State]:
        """Upserts of some existing keys and some new ones, with the step as ordering value."""
        self.step += 1
        existing = self.rng.sample(sorted(self.model), k=min(len(self.model), 1000))
        new = range(self.step * 100_000, self.step * 100_000 + 2000)
        rows = [(k, f"s{self.step}-{k}", self.step, f"p{k % 4}") for k in [*existing, *new]]
        return rows, self.model | {r[0]: (r[1], r[2]) for r in rows}


@pytest.fixture(scope="module")
def writer_server(tmp_path_factory: pytest.TempPathFactory, minio_endpoint: MinioEndpoint) -> Iterator[KillableServer]:
    server = KillableServer(tmp_path_factory.mktemp("writer"), "hudi", minio_endpoint)
    yield server
    server.stop()
    print(f"\nkill suite: {dict(sorted(TALLY.items()))}")


def _condition(phase: str, watch: TimelineWatch, known: set[str]) -> tuple[object, float]:
    """When to kill, and the longest random delay after it."""
    def new(pattern: str, metadata_table: bool = False) -> list[str]:
        return [n for n in watch.names(metadata_table) - known if re.search(pattern, n)]

    def between() -> bool:
        data = watch.names()
        pending = {m.group(1) for n in data if (m := _PENDING.match(n))}
        done = {m.group(1) for n in data if (m := _COMPLETED.match(n))}
        return any((m := _COMPLETED.match(n)) and m.group(1) in pending - done for n in watch.names(True))

    conditions = {
        "data": (lambda: bool(new(r"^\d+(\.commit|\.deltacommit)?\.inflight$")), 1.5),
        "between": (between, 0.0),
        "after_commit": (lambda: bool(new(r"^\d+_\d+\.(commit|deltacommit)$")), 0.0),
        "compaction": (lambda: bool(new(r"\.compaction\.inflight$")), 1.0),
        "clustering": (lambda: bool(new(r"\.clustering\.inflight$")), 1.0),
        "clean": (lambda: bool(new(r"\.clean\.inflight$")), 0.0),
    }
    return conditions[phase]


def _published(sink: FileSink, completed: set[str]) -> State:
    """The state a file sink's published batches replay to; none of them of an uncommitted instant."""
    rows = sink.read_published().collect()
    assert {r.commit_time for r in rows} <= completed, f"{sink.root} exported an uncommitted write"
    state: State = {}
    for r in sorted(rows, key=lambda r: (r.sequence, r.completion_time, r.commit_time)):
        state[r.id] = (r.v, r.ts)
    return state


def _committed(view: TimelineView) -> set[str]:
    """The requested times of every completed instant, archived ones too (a long sequence of kill points archives
    the commits its exports hold; Hudi archives only completed instants, and a rolled-back write's not as a commit)."""
    timeline = view.timeline()
    archived = view.archived_timeline(timeline).write_commits()
    return {i.requested_time for i in timeline.completed()} | {i.requested_time for i in archived}


def _check_readers(run: Run, expected: State, before: State, pending_keys: set[int]) -> None:
    """Every reader of ours shows ``expected``, the last committed state, and nothing of a pending write;
    the inline export shows ``expected`` or, when the kill came between commit and forwarding, ``before``."""
    plain, path = run.plain, run.path
    reader = TableReader(plain, path)
    timeline = reader.view.timeline()
    completed = _committed(reader.view)
    last = timeline.write_commits().last()
    assert last is not None

    def state(df: object) -> State:
        return {r.id: (r.v, r.ts) for r in df.select("id", "v", "ts").collect()}  # type: ignore[attr-defined]

    assert state(reader.snapshot()) == expected, "snapshot"
    assert state(reader.as_of(last)) == expected, "time travel"
    assert state(reader.incremental("earliest")) == expected, "incremental"
    since, replayed = run.checked  # changes since the last check: older slices may be cleaned by now
    replayed = dict(replayed)
    for change in sorted(ChangeQuery(plain, path).changes(since, format="typed").collect(),
                         key=lambda c: (c.completion_time, c.requested_time)):
        assert change.requested_time in completed, f"a change of uncommitted {change.requested_time}"
        if change.op == "d":
            replayed.pop(change.before.id, None)
        else:
            replayed[change.after.id] = (change.after.v, change.after.ts)
    assert replayed == expected, "change query"
    for partition in FileIndex(plain, path).list_files_at():
        for file_slice in partition.file_slices:
            instants = [f.instant_time for f in file_slice.log_files]
            if file_slice.base_file is not None:
                instants.append(file_slice.base_file.instant_time)
            assert set(instants) <= completed, f"a file of an uncommitted instant listed: {file_slice}"
    if run.config.metadata_indexes and "record_index" in run.config.metadata_indexes:
        located = RecordIndex(plain, path).tag([str(k) for k in sorted(pending_keys)[:50]])
        assert all(located[str(k)] is None for k in sorted(pending_keys)[:50] if k not in expected), "record index"
    ReverseStream(plain, path, "crash", [FileSink(f"{path}-export", spark=plain)]).run_once()
    assert _published(FileSink(f"{path}-export", spark=plain), completed) == expected, "reverse stream"
    if run.config.forwarding:
        assert _published(FileSink(f"{path}-inline", spark=plain), completed) in (expected, before), "inline forwarding"
    run.checked = (last.completion_time or last.requested_time, expected)


def _write_after_restart(run: Run, rows: list[tuple[int, str, int, str]], *, recover: bool) -> str:
    """The retried write on the restarted server; how the first attempt went."""
    table = run.writer()
    if recover:
        if plan_recovery(table.timeline()).rollback:  # the dead writer's heartbeat may still be fresh
            try:
                table.recover()
                TALLY["recover: no fresh heartbeat, went ahead"] += 1
            except WriterActiveError:
                TALLY["recover: refused, heartbeat fresh"] += 1
        report = table.recover(assume_no_writer=True)
        TALLY["recover rolled back"] += len(report.rolled_back)
        assert table.recover().rolled_back == (), "recover() is idempotent"
    df = table.spark.createDataFrame(rows, SCHEMA)
    try:
        table.upsert(df)
        return "ok"
    except WriteFailedError as error:  # what the error says to do, then the write again
        print(f"\n  first write after restart failed: {error}")
        assert "table.recover()" in str(error)
        table.recover(assume_no_writer=True)
        table.upsert(table.spark.createDataFrame(rows, SCHEMA))
        # Hudi refuses updates to the file groups of a pending clustering (its reject-update strategy): a kill
        # during clustering leaves one, which recover() completes and Hudi's next write alone does not
        cause = " (pending clustering)" if "clustering file group" in str(error) else ""
        return "failed" + (" (after recover)" if recover else "") + cause


def _kill_point(run: Run, phase: str, index: int) -> None:
    started = time.monotonic()
    watch = TimelineWatch(run.path, run.minio)
    for _attempt in range(4):  # a service runs every other write: try until the phase is reached
        rows, after = run.batch()
        known = watch.names()
        condition, longest = _condition(phase, watch, known)
        kill = Kill(run.server, condition, delay=run.rng.uniform(0, longest))  # type: ignore[arg-type]
        table = run.writer()
        error: ServerUnavailableError | None = None
        try:
            table.upsert(table.spark.createDataFrame(rows, SCHEMA))
        except ServerUnavailableError as lost:
            error = lost
        except WriteFailedError as refused:  # a live server refused a later write: what the error says, then on
            killed = kill.join() is not None
            print(f"\n  a write after an earlier crash failed: {refused}")
            TALLY["later write failed"] += 1
            assert "table.recover()" in str(refused) and not killed
            run.writer().recover(assume_no_writer=True)
            continue
        killed = kill.join() is not None  # also when it fired after the call returned: still a kill point
        if not killed:
            run.model = after
            TALLY[f"{phase}: not reached"] += 1
            continue
        break
    else:
        pytest.fail(f"phase {phase} never reached in 4 writes")
    killed_at = time.monotonic()
    # Which of the write's instants completed decides the state every reader must show.
    view = TimelineView.open(run.plain, run.path)
    timeline = view.timeline()
    committed = True  # when the call returned, the write had committed
    if error is not None and error.write_id:
        outcome = write_outcome(error.write_id, timeline, view.commit_metadata(list(timeline.write_commits())))
        committed = outcome.state is WriteState.COMMITTED
    expected = after if committed else run.model
    pending = [i for i in timeline.pending() if i.writes_data or i.action.value in ("compaction", "clustering")]
    TALLY[f"{phase}: killed"] += 1
    TALLY[f"{phase}: {'write committed' if committed else 'write pending'}"] += 1
    TALLY["pending instants left by kills"] += len(pending)
    with ThreadPoolExecutor(1) as pool:  # the server comes back while the plain server reads
        restarted = pool.submit(run.server.restart)
        _check_readers(run, expected, run.model, {r[0] for r in rows})
        checked = time.monotonic()
        restarted.result()
    restarted_at = time.monotonic()
    first = _write_after_restart(run, rows, recover=index % 2 == 0)
    rewritten = time.monotonic()
    TALLY[f"first write after restart: {first}"] += 1
    run.model = after
    ours = {r.id: (r.v, r.ts) for r in TableReader(run.plain, run.path).snapshot().select("id", "v", "ts").collect()}
    hudi = {r.id: (r.v, r.ts) for r in run.writer().hudi.snapshot().select("id", "v", "ts").collect()}
    assert ours == hudi == run.model, "after recovery, ours equals Hudi's own read"
    if run.config.forwarding:
        completed = _committed(TableReader(run.plain, run.path).view)
        assert _published(FileSink(f"{run.path}-inline", spark=run.plain), completed) == run.model, "inline resumed"
    assert all(i.state is InstantState.COMPLETED or not i.writes_data
               for i in TableReader(run.plain, run.path).view.timeline())
    print(f"  {phase}: write+kill {killed_at - started:.0f}s, readers {checked - killed_at:.0f}s, "
          f"restart {restarted_at - killed_at:.0f}s, write {rewritten - restarted_at:.0f}s, "
          f"compare {time.monotonic() - rewritten:.0f}s")


def _selects_full(config: pytest.Config) -> bool:
    """Whether this run includes the tests marked `full`: CI's selection excludes them (`-m "not full and ..."`)."""
    return "not full" not in (config.getoption("-m") or "")


# CI runs each configuration's `phases`; `ci/test.sh --full` its `full_phases`.
@pytest.mark.parametrize("config", [pytest.param(c, id=c.name, marks=() if c.phases else pytest.mark.full)
                                    for c in CONFIGS])
def test_kills_never_show_a_partial_write(config: Config, writer_server: KillableServer, plain_spark: SparkSession,
                                          minio_endpoint: MinioEndpoint, s3a_base_path: str, tmp_path: Path,
                                          request: pytest.FixtureRequest) -> None:
    phases = config.full_phases if _selects_full(request.config) else config.phases
    path = s3a_base_path if config.storage == "minio" else str(tmp_path / "table")
    run = Run(config, path, writer_server, plain_spark, minio_endpoint, random.Random(f"{config.name}-2285"))
    run.create(connect(writer_server.url, server_timeout=5), path)
    seed = [(k, f"s0-{k}", 0, f"p{k % 4}") for k in range(5000)]
    writer = run.writer()
    writer.upsert(writer.spark.createDataFrame(seed, SCHEMA))
    run.model = {r[0]: (r[1], r[2]) for r in seed}
    started = time.monotonic()
    for index, phase in enumerate(phases):
        _kill_point(run, phase, index)
    print(f"\n{config.name}: {len(phases)} kill points in {time.monotonic() - started:.0f}s")


# The metadata table's first write after a restart (issue #36, item 4): 50 consecutive kill points of every kind on
# MinIO (the kill suite's MinIO configuration: MOR, the metadata table with column statistics), each followed by a
# write on the restarted server with nothing recovered first every other point. Every one of those first writes must
# succeed, but after a clustering kill with nothing recovered, where Hudi refuses updates to the pending clustering's
# file groups until recover() completes it (a documented refusal, not the metadata table). Before the stack's servers
# initialized Hudi's metadata payload at start (HudiServerPlugin), a first write failed whenever the fresh JVM's first
# metadata-table writer was the compaction Hudi runs at the start of a write.
FIFTY_KINDS = ("data", "between", "after_commit", "compaction", "clustering", "clean")
FIFTY = Config("mor-minio-mdt-50", "MERGE_ON_READ", "minio", ("column_stats",), (),
               tuple(random.Random(36).choices(FIFTY_KINDS, k=50)))


@pytest.mark.full
@pytest.mark.timeout(7200)  # 50 points of about a minute each
def test_fifty_kill_points_on_minio_and_every_first_write_succeeds(
        writer_server: KillableServer, plain_spark: SparkSession, minio_endpoint: MinioEndpoint,
        s3a_base_path: str) -> None:
    run = Run(FIFTY, s3a_base_path, writer_server, plain_spark, minio_endpoint, random.Random(FIFTY.name))
    run.create(connect(writer_server.url, server_timeout=5), s3a_base_path)
    seed = [(k, f"s0-{k}", 0, f"p{k % 4}") for k in range(5000)]
    writer = run.writer()
    writer.upsert(writer.spark.createDataFrame(seed, SCHEMA))
    run.model = {r[0]: (r[1], r[2]) for r in seed}
    before = Counter({k: v for k, v in TALLY.items() if k.startswith("first write after restart")})
    started = time.monotonic()
    for index, phase in enumerate(FIFTY.full_phases):
        _kill_point(run, phase, index)
    firsts = Counter({k: v for k, v in TALLY.items() if k.startswith("first write after restart")}) - before
    print(f"\n{FIFTY.name}: {len(FIFTY.full_phases)} kill points in {time.monotonic() - started:.0f}s: {dict(firsts)}")
    # the only first write allowed to fail: one after a clustering kill with nothing recovered first
    refused = firsts.pop("first write after restart: failed (pending clustering)", 0)
    assert refused <= FIFTY.full_phases[1::2].count("clustering"), firsts
    assert firsts == Counter({"first write after restart: ok": len(FIFTY.full_phases) - refused}), firsts


def test_recover_refuses_while_a_writer_is_alive(writer_server: KillableServer, tmp_path: Path) -> None:
    """A live write under Hudi's LAZY failed-writes policy keeps a heartbeat from its first instant file:
    recover() from another session refuses it, and once the write commits finds nothing to do."""
    path = str(tmp_path / "live")
    spark = connect(writer_server.url, server_timeout=5)
    table = HudiTable.create(spark, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="part",
                             table_type="COPY_ON_WRITE", options={"hoodie.clean.failed.writes.policy": "LAZY"})
    rows = [(k, f"v{k}", 1, f"p{k % 4}") for k in range(2000)]

    @F.udf(StringType())
    def slowly(v: str, k: int) -> str:  # one row holds the write open (Hudi reads its input once)
        import time

        if k == 7:
            time.sleep(10)
        return v

    heartbeats, watch = Path(path) / ".hoodie" / ".heartbeat", TimelineWatch(path)

    def started() -> bool:
        beating = heartbeats.is_dir() and any(not n.startswith(".") for n in os.listdir(heartbeats))
        return beating and any(_PENDING.match(n) for n in watch.names())

    other = HudiTable.open(connect(writer_server.url, server_timeout=5), path)
    with ThreadPoolExecutor(1) as pool:
        writing = pool.submit(table.upsert, spark.createDataFrame(rows, SCHEMA).withColumn("v", slowly("v", "id")))
        deadline = time.monotonic() + 120
        while not started():
            assert time.monotonic() < deadline and not writing.done(), "the write never started a heartbeat"
            time.sleep(0.05)
        with pytest.raises(WriterActiveError, match="may be alive"):
            other.recover()
        writing.result()
    assert other.recover().rolled_back == ()
    assert {r.id: r.v for r in other.hudi.snapshot().select("id", "v").collect()} == {r[0]: r[1] for r in rows}


@pytest.mark.full  # the plugin it guards loads at every Hudi server's start, under every write of the suite
def test_a_fresh_server_whose_first_write_compacts_the_metadata_table(writer_server: KillableServer,
                                                                      tmp_path: Path) -> None:
    """Hudi 1.2 compacts a due metadata table at the start of a write, before the write's own metadata records.
    In a fresh JVM where that compaction is the first metadata-table writer (no rollback ran before it), the
    metadata payload's schema check by identity failed and every metadata-table write of that JVM with it
    ("Error while completing streaming commit to metadata", then "Failed to instantiate Metadata table"); the
    stack's Hudi servers load the payload's class at start (``HudiServerPlugin``). Each write here runs on a
    restarted server, and the metadata table compacts every second delta commit (without the plugin, the second
    write failed)."""
    path = str(tmp_path / "fresh")
    options = {"hoodie.metadata.compact.max.delta.commits": "2"}
    HudiTable.create(connect(writer_server.url, server_timeout=5), path, SCHEMA, record_key="id", ordering_field="ts",
                     partition_by="part", table_type="COPY_ON_WRITE", metadata_indexes=("column_stats", "record_index"),
                     options=options)
    model: State = {}
    watch, writes_that_compacted = TimelineWatch(path), 0
    for step in range(1, 4):
        writer_server.kill()
        writer_server.restart()
        table = HudiTable.open(connect(writer_server.url, server_timeout=5), path, options=options)
        compactions = {n for n in watch.names(True) if n.endswith(".commit")}
        rows = [(k, f"s{step}-{k}", step, f"p{k % 4}") for k in range(step * 50, step * 50 + 200)]
        table.upsert(table.spark.createDataFrame(rows, SCHEMA))
        model |= {r[0]: (r[1], r[2]) for r in rows}
        writes_that_compacted += bool({n for n in watch.names(True) if n.endswith(".commit")} - compactions)
    # Hudi compacts at a write's start (never after its commit): a write during which a compaction completed began so
    assert writes_that_compacted >= 1, "no write compacted the metadata table"
    assert {r.id: (r.v, r.ts) for r in table.hudi.snapshot().select("id", "v", "ts").collect()} == model
