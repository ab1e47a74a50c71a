"""What a reverse-stream sink is: something that takes one batch and says where it went."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pyspark.sql import DataFrame

from hudi_connect.core.errors import SinkError
from hudi_connect.core.executor.object_store import StorageOp, StorageResult


@dataclass(frozen=True)
class BatchContext:
    """The batch being sent: checkpoint ``sequence`` covers commits in (begin, end] (begin None: a full read)."""

    stream: str
    sequence: int
    table_name: str
    base_path: str
    record_key_fields: tuple[str, ...]
    begin_completion_time: str | None
    end_requested_time: str
    end_completion_time: str
    unique_keys: bool  # at most one change per key (a full read, or latest mode): no per-key ordering needed
    persisted: bool = False  # the batch is cached: a sink may read it again, or in fewer tasks, at no cost
    timeline_zone: str = "UTC"  # the zone the table's instant times are on (client.instants.timeline_zone_id)


class Sink(Protocol):
    """Where a reverse stream (RFC-70) sends its batches: :class:`~hudi_connect.reverse.FileSink`,
    :class:`~hudi_connect.reverse.KafkaSink`, :class:`~hudi_connect.reverse.PostgresSink`, or any object with
    these three methods. A sink may also define ``on_session(spark)``, returning itself on a new session,
    for streams that reconnect after a lost server, and the methods of :class:`ClaimingSink`."""

    def describe(self) -> str:
        """Where the sink writes, without credentials: recorded in checkpoints and shown on the CLI."""
        ...

    def published_end(self, sequence: int) -> str | None:
        """The end (completion time) of a batch with this sequence a dead run already published in full, if
        any: the streamer then sends that same range again, so the sink can skip it (exactly once)."""
        ...

    def write(self, batch: DataFrame, context: BatchContext) -> None:
        """Send the batch (columns of :data:`hudi_connect.reverse.changes.BATCH_COLUMNS`). Raises SinkError
        when the sink failed; what it already sent must then be safe to send again."""
        ...


class ClaimingSink(Sink, Protocol):
    """A sink whose :meth:`published_end` is a storage op's finding, run in the task that reads the stream's
    timeline instead of a job of its own (:class:`~hudi_connect.reverse.FileSink`)."""

    def claims_op(self) -> StorageOp:
        """The storage op whose result :meth:`published_end_from` reads."""
        ...

    def published_end_from(self, found: StorageResult, sequence: int) -> str | None:
        """:meth:`published_end` from what :meth:`claims_op` found."""
        ...


def sink_failure(sink: Sink, context: BatchContext, error: BaseException, consequence: str,
                 secrets: tuple[str, ...] = ()) -> SinkError:
    """The SinkError of a failed batch: names the stream, batch and sink, never its credentials."""
    text = str(error).strip()
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    cause = text.splitlines()[0] if text else type(error).__name__
    return SinkError(f"batch {context.sequence} of reverse stream {context.stream!r} to {sink.describe()} failed "
                     f"and was not checkpointed ({consequence}): {cause}")
