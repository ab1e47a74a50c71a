"""A server that dies under a call: every call returns within its bound with ServerUnavailableError, and
what the timeline says afterwards is what the error promised to find out (issue: lost-server errors).

The killed servers are the tests' own (:mod:`integration.killable`); the shared ones stay up and check
the tables independently.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hudi_connect_stack.endpoints import MinioEndpoint
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from hudi_connect import HudiTable, ServerUnavailableError, WriteState, connect, is_server_lost
from hudi_connect.cli import main
from hudi_connect.core.format.expressions import col
from hudi_connect.reader import TableReader
from hudi_connect.reverse import FileSink, ReverseStream
from hudi_connect.table_spec import FileIndex
from integration.killable import Kill, KillableServer, TimelineWatch

BOUND = 10.0  # the tests' server_timeout; the default is 30 s
SLACK = 8.0  # what a call may take beyond its retry budget (the kill itself, one last attempt, the error path)
SCHEMA = "id int, v string, ts long"


@pytest.fixture(scope="module")
def hudi_victim(tmp_path_factory: pytest.TempPathFactory, minio_endpoint: MinioEndpoint) -> Iterator[KillableServer]:
    server = KillableServer(tmp_path_factory.mktemp("hudi-victim"), "hudi", minio_endpoint)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def plain_victim(tmp_path_factory: pytest.TempPathFactory, minio_endpoint: MinioEndpoint) -> Iterator[KillableServer]:
    server = KillableServer(tmp_path_factory.mktemp("plain-victim"), "plain", minio_endpoint)
    yield server
    server.stop()


def _rows(start: int, count: int, ts: int) -> str:
    return (f"select cast(id as int) id, concat('v', cast(id as string), repeat('x', 40)) v, {ts}L ts "
            f"from range({start}, {start + count})")


def _state(spark: SparkSession, path: str) -> dict[int, tuple[str, int]]:
    return {r.id: (r.v, r.ts) for r in TableReader(spark, path).snapshot().select("id", "v", "ts").collect()}


def _bounded(started: float) -> float:
    elapsed = time.monotonic() - started
    assert elapsed <= BOUND + SLACK, f"the call took {elapsed:.1f}s after the kill; the bound is {BOUND:g}s"
    return elapsed


def test_an_unreachable_server_fails_within_the_bound(tmp_path: Path) -> None:
    """Nothing listens on the port: the first call fails after the budget, not pyspark's ten minutes."""
    from hudi_connect_stack.process import free_port

    spark = connect(f"sc://127.0.0.1:{free_port()}", server_timeout=3)
    started = time.monotonic()
    with pytest.raises(ServerUnavailableError, match="unreachable or died while opening a table to read") as caught:
        TableReader(spark, str(tmp_path / "t"))
    assert 1.4 <= time.monotonic() - started <= 3 + SLACK  # it retried (100+200+400+800 ms), then gave up
    assert is_server_lost(caught.value)
    started = time.monotonic()  # the session is known lost now: no more waiting on it
    with pytest.raises(ServerUnavailableError):
        HudiTable.exists(spark, str(tmp_path / "t"))
    assert time.monotonic() - started < 2


# Under --full: CI's kill suite loses a write during its data (its other points under --full) and reads the
# outcome from the error's write id the same way (``write_outcome``); the streamer's faults lose batches
@pytest.mark.full
@pytest.mark.parametrize("moment", ["during the write", "after its commit"])
def test_write_killed(hudi_victim: KillableServer, plain_spark: SparkSession, local_base_path: str,
                      moment: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The error says the outcome is unknown and names the write; outcome_of on a new session answers it,
    and the table holds the write's rows exactly when the answer is 'committed'."""
    spark = connect(hudi_victim.url, server_timeout=BOUND)
    table = HudiTable.create(spark, local_base_path, SCHEMA, record_key="id", ordering_field="ts",
                             table_type="MERGE_ON_READ", metadata_indexes=["column_stats"])
    table.insert(spark.sql(_rows(0, 20_000, 1)))
    before = _state(plain_spark, local_base_path)
    watch = TimelineWatch(local_base_path)
    known = watch.names()
    if moment == "during the write":
        def condition() -> bool:
            return any(n.endswith(".deltacommit.inflight") for n in watch.names() - known)
        kill = Kill(hudi_victim, condition, delay=1.0)
    else:
        def condition() -> bool:  # a completed deltacommit: 'T_C.deltacommit'
            return any(n.endswith(".deltacommit") and "_" in n for n in watch.names() - known)
        kill = Kill(hudi_victim, condition, poll=0.005)
    with pytest.raises(ServerUnavailableError) as caught:
        table.upsert(spark.sql(_rows(10_000, 200_000, 2)))
    killed_at = kill.join()
    assert killed_at is not None
    elapsed = _bounded(killed_at)
    error = caught.value
    assert error.write_id and error.write_id in str(error) and "outcome_of" in str(error)

    hudi_victim.restart()
    again = HudiTable.open(connect(hudi_victim.url, server_timeout=BOUND), local_base_path)
    outcome = again.outcome_of(error.write_id)
    after = _state(plain_spark, local_base_path)
    expected_after = before | {i: (f"v{i}" + "x" * 40, 2) for i in range(10_000, 210_000)}
    if outcome.state is WriteState.COMMITTED:
        assert after == expected_after
        assert outcome.instant is not None and outcome.instant.is_completed
    else:
        assert after == before
        assert outcome.state is WriteState.PENDING  # the dead write's instant is still on the timeline
        assert main(["recover", local_base_path, "--remote", hudi_victim.url, "--write-id", error.write_id]) == 0
        assert f"write {error.write_id} has not committed; pending writes" in capsys.readouterr().out
        report = again.recover(assume_no_writer=True)
        assert [i.requested_time for i in report.rolled_back] == [i.requested_time for i in outcome.pending]
        assert again.outcome_of(error.write_id).state is WriteState.NOT_COMMITTED
        assert again.recover().rolled_back == ()  # idempotent
        assert main(["recover", local_base_path, "--remote", hudi_victim.url]) == 0
        assert "nothing pending: the table is clean" in capsys.readouterr().out
    if moment == "after its commit":
        assert outcome.state is WriteState.COMMITTED
    again.upsert(again.spark.sql(_rows(0, 10, 3)))  # the next write is accepted
    assert _state(plain_spark, local_base_path)[5][1] == 3
    with capsys.disabled():
        print(f"\nwrite killed {moment}: ServerUnavailableError {elapsed:.1f}s after the kill; {outcome}")


@pytest.mark.full  # CI loses a listing while it is consumed (and the kill suite writes)
def test_read_killed(plain_victim: KillableServer, spark: SparkSession, local_base_path: str) -> None:
    """A read under way when the server dies fails within the bound; hudi-connect's next call on the session
    says the server is gone at once; a read planned against the dead server fails with the bound too."""
    table = HudiTable.create(spark, local_base_path, SCHEMA, record_key="id", ordering_field="ts",
                             table_type="MERGE_ON_READ")
    table.insert(spark.sql(_rows(0, 400_000, 1)))
    table.upsert(spark.sql(_rows(0, 100_000, 2)))
    reader_spark = connect(plain_victim.url, server_timeout=BOUND)
    reader = TableReader(reader_spark, local_base_path)
    snapshot = reader.snapshot()
    def slowly(batches: Iterator[Any]) -> Iterator[Any]:  # nested: pickled by value for the server's workers
        import time

        time.sleep(10)
        yield from batches

    # the user's own slow step keeps the action under way when the kill lands (the read alone can finish in
    # under the 2 s on an idle machine)
    action = snapshot.mapInArrow(slowly, snapshot.schema).groupBy((F.col("id") % 7).alias("k")).count()
    timer = threading.Timer(2.0, plain_victim.kill)
    timer.start()
    started = time.monotonic()
    with pytest.raises(Exception) as caught:
        action.collect()  # pyspark's own action
    timer.join()
    during = _bounded(started + 2.0)
    assert is_server_lost(caught.value), caught.value
    started = time.monotonic()
    with pytest.raises(ServerUnavailableError, match="planning a snapshot read"):
        reader.snapshot()
    planned = _bounded(started)
    print(f"\nread killed: pyspark's action failed {during:.1f}s after the kill, recognised as a lost server; "
          f"planning on the dead server: ServerUnavailableError after {planned:.1f}s")
    plain_victim.restart()
    fresh = connect(plain_victim.url, server_timeout=BOUND)
    assert TableReader(fresh, local_base_path).snapshot().count() == 400_000


def test_listing_killed_while_it_is_consumed(plain_victim: KillableServer, spark: SparkSession,
                                             local_base_path: str) -> None:
    """A generator the client returns (``FileIndex.list_files_at``) meets the server only as it is consumed: a
    server lost then raises ServerUnavailableError naming the listing, within the bound, never a raw pyspark
    error (issue #34, item 4)."""
    table = HudiTable.create(spark, local_base_path, "id int, v string, ts long, part string", record_key="id",
                             ordering_field="ts", partition_by="part", table_type="COPY_ON_WRITE")
    table.insert(spark.sql("select cast(id as int) id, concat('v', id) v, 1L ts, concat('p', id % 5) part "
                           "from range(0, 1000)"))
    reader_spark = connect(plain_victim.url, server_timeout=BOUND)
    index = FileIndex(reader_spark, local_base_path, use_metadata=False)
    state = index.state()  # the timeline read while the server lives; a column predicate lists in a job
    listing = index.list_files_at(predicates=[col("v") == "v7"], state=state)
    plain_victim.kill()
    started = time.monotonic()
    with pytest.raises(ServerUnavailableError, match="listing file slices") as caught:
        next(listing)
    _bounded(started)
    assert is_server_lost(caught.value)
    plain_victim.restart()


@pytest.mark.full
def test_stream_batch_killed_then_resumed(plain_victim: KillableServer, spark: SparkSession, local_base_path: str,
                                          tmp_path: Path) -> None:
    """A batch under way fails with ServerUnavailableError and leaves the checkpoint; run_continuously
    reconnects once the server is back and sends the table exactly once."""
    table = HudiTable.create(spark, local_base_path, SCHEMA, record_key="id", ordering_field="ts",
                             table_type="COPY_ON_WRITE")
    table.insert(spark.sql(_rows(0, 300_000, 1)))
    expected = _state(spark, local_base_path)
    stream_spark = connect(plain_victim.url, server_timeout=BOUND)
    sink_root = str(tmp_path / "export")
    messages: list[str] = []
    stream = ReverseStream(stream_spark, local_base_path, "lost-server", [FileSink(sink_root, spark=stream_spark)],
                           progress=messages.append)
    timer = threading.Timer(2.5, plain_victim.kill)
    timer.start()
    started = time.monotonic()
    with pytest.raises(ServerUnavailableError, match="reverse-stream batch") as caught:
        stream.run_once()
    timer.join()
    elapsed = _bounded(started + 2.5)
    print(f"\nstream batch killed: ServerUnavailableError {elapsed:.1f}s after the kill")
    assert "checkpoint did not move" in str(caught.value)

    restarted = threading.Timer(3.0, plain_victim.restart)
    restarted.start()
    results = list(stream.run_continuously(interval=0.5, max_batches=1))  # reconnects itself
    restarted.join()
    assert len(results) == 1 and results[0].checkpoint is not None and results[0].checkpoint.sequence == 1
    assert any("reconnecting" in m for m in messages), messages
    fresh = connect(plain_victim.url, server_timeout=BOUND)
    published = FileSink(sink_root, spark=fresh).read_published().select("op", "id", "v", "ts").collect()
    assert len(published) == len(expected)  # exactly once
    assert {r.id: (r.v, r.ts) for r in published if r.op != "d"} == expected
