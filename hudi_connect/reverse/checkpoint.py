"""Reverse-stream checkpoints (RFC-70), kept on the table's timeline as ``reversecommit`` instants.

A stream's checkpoints form a chain numbered 1, 2, 3…: checkpoint n+1 is claimed
by creating ``.hoodie/.aux/reverse_stream/<stream>/<n+1>.json`` only if absent
(an atomic create-if-absent), so two runs of one stream can never both advance
it; the same task then publishes it as a completed ``reversecommit`` instant
whose content is the same JSON. Apache Hudi's timeline loader skips actions it does
not know, so its writers, table services, readers and CDC keep working beside
them (``integration/test_reverse_stream_timeline.py`` checks that). Sink
descriptions carry no credentials.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Literal

from pyspark.sql import DataFrame, SparkSession

from hudi_connect.client import remote_files
from hudi_connect.client.remote_files import run_storage_ops
from hudi_connect.client.timeline_view import TimelineView
from hudi_connect.core.errors import CheckpointConflictError, HudiConnectError
from hudi_connect.core.executor.object_store import ROW_COUNT, StorageOp, StorageResult
from hudi_connect.core.format.table_config import TableProperties
from hudi_connect.core.format.timeline import Action, Instant, InstantState, instant_time_of

CheckpointKind = Literal["batch", "override", "reset"]
_STREAM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
CLAIMS_DIRECTORY = ".hoodie/.aux/reverse_stream"


def validate_stream_name(name: str) -> str:
    """``name``, if it can name a stream (1-64 letters, digits, ``_``, ``-`` or ``.``, starting alphanumeric):
    it becomes a directory of the table's ``.hoodie/.aux``; ValueError otherwise."""
    if not isinstance(name, str) or not _STREAM_NAME.fullmatch(name):
        raise ValueError(f"stream name {name!r} must be 1-64 letters, digits, '_', '-' or '.', starting alphanumeric")
    return name


@dataclass(frozen=True)
class Checkpoint:
    """Where a stream stands: every commit up to ``end_completion_time`` (inclusive) has been sent."""

    stream: str
    sequence: int
    kind: CheckpointKind
    end_requested_time: str | None  # None: nothing sent yet (a reset), the next batch reads the table in full
    end_completion_time: str | None
    begin_completion_time: str | None = None  # a batch's exclusive start; None for a full read
    records: int = 0
    sinks: tuple[str, ...] = ()  # descriptions without credentials
    written_at: str = field(default_factory=lambda: instant_time_of(datetime.now(UTC)))

    @property
    def position(self) -> Instant | None:
        """The last commit sent (only its times are meaningful)."""
        if self.end_requested_time is None:
            return None
        return Instant(self.end_requested_time, Action.COMMIT, InstantState.COMPLETED, self.end_completion_time)

    def to_json(self, *, counted: bool = False) -> str:
        """The checkpoint as its claim file and its ``reversecommit`` instant hold it (``counted``: with
        :data:`~hudi_connect.core.executor.object_store.ROW_COUNT` for the records, which the task writing it
        counts)."""
        fields = asdict(self) | ({"records": json.loads(ROW_COUNT)} if counted else {})
        return json.dumps({"reverseStreamCheckpoint": fields}, indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, *, where: str) -> Checkpoint:
        """The checkpoint :meth:`to_json` wrote; HudiConnectError naming ``where`` if ``text`` is not one."""
        try:
            fields = json.loads(text)["reverseStreamCheckpoint"]
            fields["sinks"] = tuple(fields["sinks"])
            return cls(**fields)
        except (ValueError, KeyError, TypeError) as error:
            raise HudiConnectError(f"{where} is not a reverse-stream checkpoint: {error}") from error

    def successor(self, kind: CheckpointKind, end: Instant | None, *, begin: str | None = None, records: int = 0,
                  sinks: tuple[str, ...] = ()) -> Checkpoint:
        """The next checkpoint of the chain (sequence + 1), standing at ``end`` (None: nothing sent, as after
        a reset); it is recorded only by :meth:`CheckpointStore.advance`."""
        return Checkpoint(self.stream, self.sequence + 1, kind, end.requested_time if end else None,
                          end.completion_time if end else None, begin, records, sinks)


def origin(stream: str) -> Checkpoint:
    """The checkpoint before a stream's first: sequence 0, nothing sent."""
    return Checkpoint(validate_stream_name(stream), 0, "reset", None, None, written_at="0" * 17)


def claim_name(sequence: int) -> str:
    """The claim file of checkpoint ``sequence``, zero-padded so that names sort in sequence order."""
    return f"{sequence:010d}.json"


class CheckpointStore:
    """Reads and advances the checkpoints of a table's reverse streams."""

    def __init__(self, spark: SparkSession, base_path: str, properties: TableProperties) -> None:
        self._spark = spark
        self._base_path = base_path.rstrip("/")
        self._view = TimelineView(spark, self._base_path, properties)

    def claims_directory(self, stream: str) -> str:
        """Where the stream's checkpoint claims are created, one file each."""
        return f"{self._base_path}/{CLAIMS_DIRECTORY}/{validate_stream_name(stream)}"

    def latest(self, stream: str) -> Checkpoint:
        """The stream's newest checkpoint (sequence 0 when it never ran)."""
        return self.checkpoint_of(stream, run_storage_ops(self._spark, [self.latest_op(stream)])[0])

    def latest_op(self, stream: str) -> StorageOp:
        """The storage op reading the stream's newest claim, for a caller running it with other ops."""
        return StorageOp.last(self.claims_directory(stream))

    def checkpoint_of(self, stream: str, last: StorageResult) -> Checkpoint:
        """The checkpoint :meth:`latest_op` found."""
        if not last.text:
            return origin(stream)
        return Checkpoint.from_json(last.text, where=f"the last checkpoint claim under {self.claims_directory(stream)}")

    def advance(self, previous: Checkpoint, new: Checkpoint, *, counting: DataFrame | None = None) -> Checkpoint:
        """Record ``new`` after ``previous``, or CheckpointConflictError if another run got there first.

        One task claims ``new`` and publishes it on the timeline, with ``previous`` again: a run that
        died between its claim and its publication left the timeline one checkpoint short. With
        ``counting`` (the batch sent, persisted), that task counts its rows as ``new``'s records first."""
        if new.stream != previous.stream or new.sequence != previous.sequence + 1:
            raise ValueError(f"checkpoint {new.sequence} of {new.stream!r} cannot follow {previous.sequence} "
                             f"of {previous.stream!r}")
        uri = f"{self.claims_directory(new.stream)}/{claim_name(new.sequence)}"
        counted = counting is not None
        claim = StorageOp.create(uri, new.to_json(counted=counted), counted=counted)
        publish = [self._publication(new, counted=counted)]
        publish += [self._publication(previous)] if previous.sequence else []
        result = run_storage_ops(self._spark, [claim, *publish], counting=counting)[0]
        if not result.ok:
            raise CheckpointConflictError(
                f"reverse stream {new.stream!r} on {self._base_path}: checkpoint {new.sequence} was recorded by "
                "another run of the same stream; this run's batch is not checkpointed (restart it to go on)"
            )
        return new if result.counted is None else dataclasses.replace(new, records=result.counted)

    def _publication(self, checkpoint: Checkpoint, *, counted: bool = False) -> StorageOp:
        """The claim as a completed ``reversecommit`` instant (requested = completed = its write time)."""
        time = checkpoint.written_at
        name = f"{time}_{time}.reversecommit" if self._view.properties.timeline_dir else f"{time}.reversecommit"
        return StorageOp.put(f"{self._view.timeline_directory}/{name}", checkpoint.to_json(counted=counted),
                             counted=counted)

    def history(self, stream: str | None = None) -> list[Checkpoint]:
        """Published checkpoints from the timeline, oldest first (all streams unless one is named)."""
        paths = self._view.reverse_commits()
        contents = remote_files.read_files(self._spark, paths.values())
        by_name = {uri.rsplit("/", 1)[-1]: data for uri, data in contents.items()}
        found = [Checkpoint.from_json(by_name[p.rsplit("/", 1)[-1]].decode(), where=p)
                 for p in paths.values() if p.rsplit("/", 1)[-1] in by_name]
        return sorted((c for c in found if stream is None or c.stream == stream),
                      key=lambda c: (c.stream, c.sequence))
