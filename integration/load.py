"""Many clients on one server (issue #36, load): a fixed set of tables written once on the Hudi server, their
model in plain Python, and clients that each open their own Connect session and run a mix of reads and change
queries against one server for a bounded time. Every answer is compared with the model's; every error is
counted (nothing writes during the load, so no refusal is expected either).

Used by ``integration/test_load.py`` (CI's short slice) and ``benchmarks/load.py`` (longer, with the server's
memory)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_connect import ChangeQuery, HudiTable, TableReader, connect, library_errors
from hudi_connect.core.format.timeline import Instant

SCHEMA = "id int, v string, ts int, part string"
Row = tuple[int, str, int, str]
Events = Counter[tuple[str, int, str | None]]  # (op, key, the after image's v)


@dataclass(frozen=True)
class LoadTable:
    """A table written for the load, with the model state after each of its writes."""

    path: str
    table_type: str
    instants: tuple[Instant, ...]
    states: tuple[frozenset[Row], ...]
    upserted: tuple[frozenset[Row], ...]
    deleted: tuple[frozenset[int], ...]

    @property
    def last(self) -> int:
        return len(self.instants) - 1

    @property
    def middle(self) -> int:
        """A write in the middle of the history that upserted (the first write is the bulk insert)."""
        middle = max(1, self.last // 2)
        return middle - 1 if middle % 3 == 0 else middle

    def events(self, first: int, last: int) -> Events:
        """The change events of writes ``first`` to ``last``: upserts as inserts or updates, and deletes."""
        events: Events = Counter()
        for write in range(first, last + 1):
            existing = {r[0] for r in self.states[write - 1]}
            events.update(("u" if r[0] in existing else "i", r[0], r[1]) for r in self.upserted[write])
            events.update(("d", key, None) for key in self.deleted[write])
        return events


def write_table(spark: SparkSession, path: str, table_type: str, *, metadata_table: bool, rows: int,
                writes: int) -> LoadTable:
    """``rows`` records bulk-inserted, then ``writes`` rounds: upserts of a tenth of the keys and some new ones,
    every third round deletes instead. MOR tables compact inline every third delta commit."""
    options = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "3"} \
        if table_type == "MERGE_ON_READ" else {}
    table = HudiTable.create(spark, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="part",
                             table_type=table_type, metadata_table=metadata_table, cdc="DATA_BEFORE_AFTER",
                             options=options)
    initial = frozenset((k, "v0", 0, f"p{k % 4}") for k in range(rows))
    instants = [table.bulk_insert(spark.createDataFrame(sorted(initial), SCHEMA))]
    states, upserted, deleted = [initial], [initial], [frozenset[int]()]
    for version in range(1, writes + 1):
        state = {r[0]: r for r in states[-1]}
        window = [(version * 37 + i * 7) % rows for i in range(rows // 10)]
        if version % 3 == 0:
            gone = frozenset(k for k in window[: len(window) // 4] if k in state)
            instants.append(table.delete(spark.createDataFrame([(k,) for k in sorted(gone)], "id int")))
            changed: frozenset[Row] = frozenset()
        else:
            new = range(rows + version * 10, rows + version * 10 + 10)
            changed = frozenset((k, f"v{version}", version, f"p{k % 4}") for k in [*window, *new])
            instants.append(table.upsert(spark.createDataFrame(sorted(changed), SCHEMA)))
            gone = frozenset()
        state = {k: r for k, r in state.items() if k not in gone} | {r[0]: r for r in changed}
        states.append(frozenset(state.values()))
        upserted.append(changed)
        deleted.append(gone)
    return LoadTable(path, table_type, tuple(instants), tuple(states), tuple(upserted), tuple(deleted))


@dataclass(frozen=True)
class Query:
    """One kind of read on one table: how a client runs it and the answer it must give."""

    name: str
    run: Callable[[SparkSession], object]  # an answer compared by equality
    expected: object


def _rows(df: DataFrame) -> frozenset[Row]:
    return frozenset((r.id, r.v, r.ts, r.part) for r in df.select("id", "v", "ts", "part").collect())


def _typed_events(df: DataFrame) -> Events:
    key = F.coalesce(F.col("after.id"), F.col("before.id"))
    return Counter((r.op, r.key, r.v) for r in df.select("op", key.alias("key"), F.col("after.v").alias("v")).collect())


def _hudi_events(df: DataFrame) -> Events:
    """Hudi's CDC schema: before and after as JSON strings."""
    key = F.coalesce(F.get_json_object("after", "$.id"), F.get_json_object("before", "$.id")).cast("int")
    rows = df.select("op", key.alias("key"), F.get_json_object("after", "$.v").alias("v")).collect()
    return Counter((r.op, r.key, r.v) for r in rows)


def jar_free_queries(table: LoadTable) -> list[Query]:
    """Our reads, on any server: snapshot, time travel, an incremental read and a change query."""
    path, last, middle = table.path, table.last, table.middle
    begin, end = table.instants[middle - 1], table.instants[middle]
    since = table.instants[max(0, last - 3)]  # three writes, a delete among them
    name = path.rsplit("/", 1)[-1]
    return [
        Query(f"{name}: snapshot", lambda s: _rows(TableReader(s, path).snapshot()), table.states[last]),
        Query(f"{name}: time travel", lambda s: _rows(TableReader(s, path).as_of(end)), table.states[middle]),
        Query(f"{name}: incremental", lambda s: _rows(TableReader(s, path).incremental(begin, end)),
              table.upserted[middle]),
        Query(f"{name}: change query",
              lambda s: _typed_events(ChangeQuery(s, path).changes(since, table.instants[last], format="typed")),
              table.events(max(1, last - 2), last)),
    ]


def hudi_queries(table: LoadTable) -> list[Query]:
    """Hudi's own reads through :class:`HudiTable`, on the Hudi server."""
    path, last, middle = table.path, table.last, table.middle
    begin, end = table.instants[middle - 1], table.instants[middle]
    since = table.instants[max(0, last - 3)]
    name = path.rsplit("/", 1)[-1]
    return [
        Query(f"{name}: Hudi's snapshot", lambda s: _rows(HudiTable.open(s, path).hudi.snapshot()), table.states[last]),
        Query(f"{name}: Hudi's time travel", lambda s: _rows(HudiTable.open(s, path).hudi.as_of(end)),
              table.states[middle]),
        Query(f"{name}: Hudi's incremental", lambda s: _rows(HudiTable.open(s, path).hudi.incremental(begin, end)),
              table.upserted[middle]),
        Query(f"{name}: Hudi's CDC query",
              lambda s: _hudi_events(HudiTable.open(s, path).hudi.cdc(since, table.instants[last])),
              table.events(max(1, last - 2), last)),
    ]


def percentile(values: list[float], fraction: float) -> float:
    """The value at ``fraction`` (0.5: the median, 0.99) of ``values``, by the nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


@dataclass
class LoadResult:
    """What the clients saw: each query's latencies, the wrong answers and the errors."""

    clients: int
    seconds: float = 0.0
    latencies: dict[str, list[float]] = field(default_factory=dict)
    wrong: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    per_client: Counter[int] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, client: int, query: Query, seconds: float, outcome: str | None, wrong: bool) -> None:
        with self.lock:
            self.latencies.setdefault(query.name, []).append(seconds)
            self.per_client[client] += 1
            if wrong:
                self.wrong.append(query.name)
            if outcome is not None:
                self.errors.append(f"{query.name}: {outcome}")

    @property
    def operations(self) -> int:
        return sum(len(times) for times in self.latencies.values())

    def latency(self, fraction: float) -> float:
        """The latency at ``fraction`` over every operation (0.5: p50)."""
        return percentile([t for times in self.latencies.values() for t in times], fraction)

    def summary(self) -> str:
        lines = [f"{self.clients} clients, {self.seconds:.0f} s: {self.operations} operations "
                 f"({self.operations / self.seconds:.2f}/s), p50 {self.latency(0.5):.2f} s, "
                 f"p99 {self.latency(0.99):.2f} s, {len(self.wrong)} wrong, {len(self.errors)} errors"]
        for name, times in sorted(self.latencies.items()):
            lines.append(f"  {name}: {len(times)} runs, p50 {percentile(times, 0.5):.2f} s, "
                         f"p99 {percentile(times, 0.99):.2f} s")
        lines += [f"  error: {error}" for error in self.errors[:10]]
        return "\n".join(lines)


def run_load(url: str, queries: list[Query], *, clients: int, seconds: float) -> LoadResult:
    """``clients`` threads, each with its own Connect session on ``url``, running ``queries`` in turn (each
    client from a different start) until ``seconds`` have passed; a query under way then finishes. Each client
    runs its first query once before the clock starts (a service keeps its sessions). The sessions stop at the
    end; a client that could not start raises its error here."""
    result = LoadResult(clients)
    ready = threading.Barrier(clients + 1, timeout=600)  # the clock starts once every client has its session
    failed: list[BaseException] = []

    def client(number: int) -> None:
        turn = number * len(queries) // clients  # the clients start spread over the mix
        spark = None
        try:  # a session's first operation pays for its set-up on the server (its Python workers): untimed
            spark = connect(url)
            first = queries[turn % len(queries)]
            if first.run(spark) != first.expected:
                with result.lock:
                    result.wrong.append(f"{first.name} (a client's first run)")
            ready.wait()
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                query = queries[turn % len(queries)]
                turn += 1
                began = time.perf_counter()
                try:
                    with library_errors():
                        answer = query.run(spark)
                    result.record(number, query, time.perf_counter() - began, None, answer != query.expected)
                except Exception as error:  # counted and reported: the load's target is none
                    result.record(number, query, time.perf_counter() - began, f"{type(error).__name__}: {error}",
                                  False)
        except BaseException as error:
            failed.append(error)
            ready.abort()
        finally:
            if spark is not None:
                spark.stop()

    threads = [threading.Thread(target=client, args=(number,), daemon=True) for number in range(clients)]
    for thread in threads:
        thread.start()
    with contextlib.suppress(threading.BrokenBarrierError):  # a client failed to start: its error is raised below
        ready.wait()
    began = time.monotonic()
    for thread in threads:
        thread.join(timeout=seconds + 900)
    result.seconds = time.monotonic() - began
    causes = [error for error in failed if not isinstance(error, threading.BrokenBarrierError)]
    if causes or failed:
        raise (causes or failed)[0]
    return result
