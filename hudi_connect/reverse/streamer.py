"""The reverse streamer (RFC-70): a Hudi table's data, then its changes, out to serving systems.

    stream = ReverseStream(spark, "s3a://lake/trips", "trips-to-serving",
                           [KafkaSink("broker:9092", "trips"), PostgresSink(dsn, "trips")])
    stream.run_once()                    # full read the first time, then the commits since the checkpoint
    for batch in stream.run_continuously(interval=30): ...

A batch covers the commits completed after the stream's checkpoint, up to the
latest completed one (or ``max_commits`` of them). It is written to every sink
and only then checkpointed on the table's timeline (:mod:`.checkpoint`). A run
that dies leaves the checkpoint where it was; the next run sends the range
again, which Kafka receives at least once and the file and PostgreSQL sinks
exactly once.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import cast

from pyspark.sql import DataFrame, SparkSession

from hudi_connect.cdc.plan import needs_file_slices
from hudi_connect.client import remote_files
from hudi_connect.client.instants import timeline_zone_id
from hudi_connect.client.server import reconnector
from hudi_connect.client.server_loss import ensure_bounded, is_server_lost, mark_lost, over_connect
from hudi_connect.client.timeline_view import TimelineView, load_properties
from hudi_connect.core.errors import HistoryUnavailableError, InvalidInstantError, ServerUnavailableError
from hudi_connect.core.executor.object_store import StorageResult
from hudi_connect.core.format.timeline import Instant, Timeline, range_time
from hudi_connect.reverse.changes import StreamMode, change_batch, full_batch
from hudi_connect.reverse.checkpoint import Checkpoint, CheckpointStore, validate_stream_name
from hudi_connect.reverse.sink import BatchContext, ClaimingSink, Sink


def unsent_commits(timeline: Timeline, position: Instant | None, *, by_completion: bool) -> list[Instant]:
    """Completed write commits after a stream's ``position``, in the order to send them.

    Tables before version 8 order commits by requested time only. There a write still pending (a hollow
    commit) may complete later with an earlier time than one sent, and would be skipped for ever, so the
    stream stops before it (Hudi's BLOCK handling of hollow commits for streaming reads)."""
    commits = list(timeline.write_commits())
    if not by_completion:
        hollow = min((i.requested_time for i in timeline.pending() if i.writes_data), default=None)
        if hollow is not None:
            commits = [c for c in commits if c.requested_time < hollow]
    if position is None:
        return commits
    if by_completion:
        after = position.completion_time or position.requested_time
        return sorted((c for c in commits if (c.completion_time or "") > after),
                      key=lambda c: (c.completion_time or "", c.requested_time))
    return [c for c in commits if c.requested_time > position.requested_time]


def _behind_history(name: str, error: HistoryUnavailableError) -> HistoryUnavailableError:
    """A stream's batch that reaches history the table no longer holds: it stops, never skipping a commit."""
    behind = HistoryUnavailableError(
        f"reverse stream {name!r} stops: its checkpoint is behind what the table still holds (Hudi archived or "
        "cleaned the commits after it), and no commit is skipped. reset() sends the table whole again at the next "
        f"run; set_checkpoint() moves it on knowingly. {error}", earliest_answerable=None)
    behind.earliest_answerable = error.earliest_answerable
    return behind


def _claim_names(names: Iterable[str]) -> frozenset[str]:
    """Checkpoint claims among a directory's entry names (as either listing shows them)."""
    return frozenset(n for n in names if not n.endswith("/") and not n.startswith((".", "_")))


@dataclass(frozen=True)
class BatchResult:
    """One run of the streamer: the checkpoint it recorded (None when there was nothing new)."""

    checkpoint: Checkpoint | None
    records: int = 0
    seconds: float = 0.0

    @property
    def sent(self) -> bool:
        """Whether the run sent a batch (and recorded its checkpoint)."""
        return self.checkpoint is not None


Progress = Callable[[str], None]
log = logging.getLogger(__name__)


class ReverseStream:
    """One named stream of one table to one or more sinks.

    RFC-70's reverse streamer: the table in full at the first batch, then the changes of the commits
    completed since (``changes`` mode: every change; ``latest``: each key's last change per batch), written
    to every sink before the stream's checkpoint moves on the table's timeline (``reversecommit`` instants).

    Example::

        stream = ReverseStream(spark, "s3a://lake/trips", "trips-export",
                               [FileSink("s3a://lake/exports/trips", "parquet")])
        result = stream.run_once()            # BatchResult: the checkpoint it recorded, or None
        stream.checkpoint().end_completion_time
    """

    @over_connect("opening a reverse stream")
    def __init__(self, spark: SparkSession, base_path: str, name: str, sinks: Sequence[Sink], *,
                 mode: StreamMode = "changes", max_commits: int | None = None,
                 progress: Progress | None = None) -> None:
        if mode not in ("changes", "latest"):
            raise ValueError(f"stream mode {mode!r}: choose 'changes' (every change) or 'latest' (last state)")
        if max_commits is not None and max_commits < 1:
            raise ValueError("max_commits must be at least 1")
        self._base_path = base_path.rstrip("/")
        self.name = validate_stream_name(name)
        self.sinks = tuple(sinks)
        self.mode: StreamMode = mode
        self._max_commits = max_commits
        self._positioned = False  # whether a checkpoint read had a position: batches are likely incremental
        # the timeline and checkpoint claims of the last batch that found nothing new (see run_once)
        self._idle: tuple[Timeline, frozenset[str]] | None = None
        self._progress = _logged(progress)
        self._use_session(spark)

    def _use_session(self, spark: SparkSession) -> None:
        """Read, write and checkpoint through ``spark`` (at start, and after reconnecting)."""
        properties = load_properties(ensure_bounded(spark), self._base_path)  # all or nothing: first the call
        self._spark, self._properties = spark, properties
        self._view = TimelineView(spark, self._base_path, properties)
        self.checkpoints = CheckpointStore(spark, self._base_path, properties)
        # sinks that send through a session send through the stream's (and, reconnected, move to the new one)
        self.sinks = tuple(_on_session(sink, spark) for sink in self.sinks)

    # --- checkpoints ----------------------------------------------------------------------------

    @over_connect("reading a reverse stream's checkpoint")
    def checkpoint(self) -> Checkpoint:
        """The stream's current checkpoint (sequence 0 if it never ran)."""
        return self.checkpoints.latest(self.name)

    @over_connect("setting a reverse stream's checkpoint")
    def set_checkpoint(self, instant: Instant | str) -> Checkpoint:
        """Manual override: the next batch starts after this completed commit (its requested time)."""
        commits = self._view.timeline().write_commits().completed()
        wanted = instant.requested_time if isinstance(instant, Instant) else instant
        try:
            target = commits.find(wanted)
        except InvalidInstantError as error:
            raise InvalidInstantError(f"cannot set the checkpoint of {self.name!r}: {error}") from error
        current = self.checkpoint()
        return self.checkpoints.advance(current, current.successor("override", target))

    @over_connect("resetting a reverse stream")
    def reset(self) -> Checkpoint:
        """Forget the position: the next batch reads the table in full."""
        current = self.checkpoint()
        return self.checkpoints.advance(current, current.successor("reset", None))

    # --- batches ---------------------------------------------------------------------------------

    @over_connect("running a reverse-stream batch",
                  outcome="Its checkpoint did not move: the next run sends the batch again.")
    def run_once(self, *, until: Instant | None = None) -> BatchResult:
        """Send what is new since the checkpoint (at most up to ``until``), then checkpoint it.

        A lost server fails the batch with ServerUnavailableError: the checkpoint stays, as for any failure."""
        started = time.monotonic()
        if until is None and self._idle is not None and self._still_idle(*self._idle):
            return BatchResult(None, seconds=time.monotonic() - started)
        # the checkpoint, the sinks' claims, the timeline and (where the batch is likely to need them) the
        # table's files in one task: each Spark job costs a tenth of a second or more
        probes = [getattr(sink, "claims_op", None) for sink in self.sinks]
        timeline, (last, *claims) = self._view.list_with_files(
            [self.checkpoints.latest_op(self.name), *(probe() for probe in probes if probe is not None)],
            files=self._files_likely_needed())
        found = iter(claims)
        sink_claims = [None if probe is None else next(found) for probe in probes]
        current = self.checkpoints.checkpoint_of(self.name, last)
        files = self._view.cached_files
        position = current.position
        self._positioned = position is not None
        pending = unsent_commits(timeline, position, by_completion=self._properties.ranges_by_completion)
        if until is not None:
            pending = [c for c in pending if (c.completion_time or "") <= (until.completion_time or "")]
        if not pending:
            self._idle = (timeline, _claim_names(last.names)) if until is None else None
            return BatchResult(None, seconds=time.monotonic() - started)
        self._idle = None
        end = pending[-1] if position is None or self._max_commits is None else pending[:self._max_commits][-1]
        end = self._published_end(current.sequence + 1, pending, sink_claims) or end
        by_completion = self._properties.ranges_by_completion
        begin = None if position is None else range_time(position, by_completion=by_completion)
        context = BatchContext(self.name, current.sequence + 1, self._properties.name, self._base_path,
                               self._properties.record_key_fields, begin, end.requested_time,
                               end.completion_time or end.requested_time, begin is None or self.mode == "latest",
                               timeline_zone=timeline_zone_id(self._spark, self._properties))
        # the batch is planned on the timeline listed above, with the commit metadata this stream has read
        view = self._view.pinned(timeline, files)
        known_records = None  # a full read's count, where the write stats of its base files tell it
        try:
            if begin is None:
                batch, known_records = full_batch(self._spark, self._base_path, self._properties, end, view)
            else:
                batch = change_batch(self._spark, self._base_path, begin, end, self.mode, view)
        except HistoryUnavailableError as error:
            raise _behind_history(self.name, error) from error
        sent = self._send(batch, context, known_records)
        new = current.successor("batch", end, begin=begin, records=sent.records or 0,
                                sinks=tuple(s.describe() for s in self.sinks))
        try:
            new = self.checkpoints.advance(current, new, counting=sent.cached)
        finally:
            sent.release()
        records = new.records
        elapsed = time.monotonic() - started
        self._progress(f"batch {new.sequence}: {records} records of "
                       f"{'a full read' if begin is None else f'{len(pending)} commit(s)'} up to "
                       f"{new.end_completion_time} sent in {elapsed:.1f}s; checkpoint {new.sequence} recorded")
        return BatchResult(new, records, elapsed)

    def _still_idle(self, timeline: Timeline, claims: frozenset[str]) -> bool:
        """Whether nothing changed since a batch found nothing new: the same timeline (asked of the server's
        driver, no Spark job; tables of version 8 on) and the same checkpoint claims (another run of this stream
        would have added one), so a polling stream costs the server no job while the table stands still."""
        if self._view.cached_timeline() is not timeline:
            return False
        paths = remote_files.driver_listing(self._spark, self.checkpoints.claims_directory(self.name))
        return _claim_names(p.rsplit("/", 1)[-1] for p in paths or ()) == claims

    def _files_likely_needed(self) -> bool:
        """Whether the batch's read is likely to list the table's files from storage: a full read (as the
        stream's first is) without the metadata table's file listing, or changes needing file slices (all but
        on COW tables logging both images)."""
        props = self._properties
        full_read = not self._positioned and "files" not in props.metadata_partitions
        return full_read or needs_file_slices(props)

    def _published_end(self, sequence: int, pending: list[Instant],
                       sink_claims: list[StorageResult | None]) -> Instant | None:
        """The end of a batch a dead run already published to some sink: this run re-sends that range.
        ``sink_claims``: what each sink's ``claims_op`` found in the timeline's task (None: it has none)."""
        for sink, found in zip(self.sinks, sink_claims, strict=True):
            end = sink.published_end(sequence) if found is None else \
                cast(ClaimingSink, sink).published_end_from(found, sequence)
            if end is not None:
                for commit in pending:
                    if (commit.completion_time or commit.requested_time) == end:
                        return commit
        return None

    def _send(self, batch: DataFrame, context: BatchContext, known_records: int | None = None) -> _Sent:
        """The batch sent to every sink, and either its record count or the cache to count it from."""
        # A change batch is costly to compute: cached, it is sent to every sink, then counted by the task that
        # records the checkpoint (one job, where counting before sending took three). A full read for one sink
        # is computed by the sink's write alone, and counted meanwhile (its count prunes every column, down to
        # Parquet footers for base files) unless the commits' write stats tell the count: a count job beside
        # the write takes task slots from it.
        if len(self.sinks) > 1 or context.begin_completion_time is not None:
            batch, context = batch.persist(), dataclasses.replace(context, persisted=True)
            try:
                for sink in self.sinks:
                    self._progress(f"batch {context.sequence}: writing to {sink.describe()}")
                    sink.write(batch, context)
            except Exception as error:
                if is_server_lost(error):
                    mark_lost(self._spark)  # so unpersisting below does not wait for the lost server again
                batch.unpersist()
                raise
            return _Sent(None, batch, lambda: _release(self.name, batch))
        if known_records is not None:
            self._progress(f"batch {context.sequence}: writing a full read of {known_records} records to "
                           f"{self.sinks[0].describe()}")
            self.sinks[0].write(batch, context)
            return _Sent(known_records)
        with ThreadPoolExecutor(max_workers=1) as pool:
            counted = pool.submit(batch.count)
            self._progress(f"batch {context.sequence}: writing a full read to {self.sinks[0].describe()}")
            self.sinks[0].write(batch, context)
            return _Sent(int(counted.result()))

    def run_continuously(self, *, interval: float, stop: threading.Event | None = None,
                         max_batches: int | None = None, reconnect: Callable[[], SparkSession] | None = None,
                         max_reconnect_delay: float = 60.0) -> Iterator[BatchResult]:
        """Batches every ``interval`` seconds, each that sent records yielded as it completes (nothing is kept:
        memory stays bounded however long it runs), until ``stop`` is set (checked between batches), after
        ``max_batches``, or when the caller stops iterating::

            for batch in stream.run_continuously(interval=30):
                print(batch.records, batch.checkpoint)

        A lost server fails the batch (its checkpoint stays); the stream then opens a new session with
        ``reconnect`` (by default, like the session it has, when that came from ``hudi_connect.connect``),
        waiting 1 s, then twice as long each time up to ``max_reconnect_delay``, and resumes at its checkpoint.
        """
        reconnect = reconnect or reconnector(self._spark)
        stop = stop or threading.Event()
        sent = 0
        delay = 1.0
        while not stop.is_set():
            try:
                result = self.run_once()
            except ServerUnavailableError as error:
                if reconnect is None:
                    raise
                self._progress(f"{self.name}: {error.doing} failed, the server is gone; reconnecting in {delay:g}s")
                if stop.wait(delay):
                    break
                delay = min(max_reconnect_delay, delay * 2)
                try:
                    self._use_session(reconnect())
                except Exception as lost:
                    if not is_server_lost(lost):
                        raise  # still gone otherwise: the next round waits longer
                continue
            delay = 1.0
            if result.sent:
                yield result
                sent += 1
                if max_batches is not None and sent >= max_batches:
                    return
            else:
                self._progress(f"{self.name}: up to date; next look in {interval:g}s")
            stop.wait(interval)


@dataclass(frozen=True)
class _Sent:
    """A batch sent: its record count, or the persisted batch the checkpoint's task counts (then ``release``
    drops it)."""

    records: int | None
    cached: DataFrame | None = None
    release: Callable[[], None] = lambda: None


def _release(name: str, cached: DataFrame) -> None:
    """Drop a sent batch's cache without waiting: the request is a round trip of a tenth of a second, and
    nothing reads the cache after its checkpoint (a session closed meanwhile dropped it already)."""
    def unpersist() -> None:
        try:
            cached.unpersist()
        except Exception as error:  # nothing is left to release on a closed session
            log.debug("%s: releasing a sent batch's cache failed: %s", name, error)

    threading.Thread(target=unpersist, name=f"{name}-release", daemon=True).start()


def _logged(progress: Progress | None) -> Progress:
    """The stream's progress reports, logged too (``hudi_connect.reverse.streamer``, INFO)."""
    def report(message: str) -> None:
        log.info("%s", message)
        if progress is not None:
            progress(message)

    return report


def _on_session(sink: Sink, spark: SparkSession) -> Sink:
    """The sink, using ``spark`` if it holds a session of its own (sinks may define ``on_session``)."""
    on_session = getattr(sink, "on_session", None)
    return on_session(spark) if on_session is not None else sink
