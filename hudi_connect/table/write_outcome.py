"""Did a write commit? Answered from the timeline by the write's id, after its server was lost.

Every write through ``HudiTable`` carries a write id that Hudi copies into the
commit's metadata (an option starting with ``_`` becomes extra metadata, Hudi's
``hoodie.datasource.write.commitmeta.key.prefix``). Only a completed commit has
that metadata, so the id is found exactly when the write committed. The id starts
with the client's clock, which tells when the timeline can no longer answer:
a commit older than the active timeline may have been archived.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from hudi_connect.core.format.commit_metadata import CommitMetadata
from hudi_connect.core.format.timeline import Instant, Timeline, instant_time_of

WRITE_ID_OPTION = "_hudi_connect.write_id"  # '_' is Hudi's default prefix for commit extra metadata


def new_write_id(now: datetime | None = None) -> str:
    """``<instant time of now>-<random>``: unique, and ordered with the table's instants."""
    return f"{instant_time_of(now or datetime.now(UTC))}-{uuid.uuid4().hex[:12]}"


class WriteState(enum.Enum):
    """Whether a write committed, as the timeline tells (:class:`WriteOutcome`)."""

    COMMITTED = "committed"
    PENDING = "pending"  # not committed; the timeline has pending writes, one of which may be it
    NOT_COMMITTED = "not committed"
    UNKNOWN = "unknown"  # older than the active timeline: its commit may have been archived


@dataclass(frozen=True)
class WriteOutcome:
    """What the timeline says of one write."""

    write_id: str
    state: WriteState
    instant: Instant | None = None  # the commit, when committed
    pending: tuple[Instant, ...] = ()  # the table's pending writes, when not committed

    def __str__(self) -> str:
        if self.state is WriteState.COMMITTED and self.instant is not None:
            return f"write {self.write_id} committed as {self.instant.action.value} {self.instant.requested_time}"
        if self.state is WriteState.PENDING:
            times = ", ".join(i.requested_time for i in self.pending)
            return (f"write {self.write_id} has not committed; pending writes {times} may be it, still running or "
                    "left by a dead writer (HudiTable.recover() rolls those back once no writer is alive)")
        if self.state is WriteState.UNKNOWN:
            return f"write {self.write_id} is older than the active timeline; its commit, if any, is archived"
        return f"write {self.write_id} did not commit and never will; the table is as it was"


def write_outcome(write_id: str, timeline: Timeline, metadata: Mapping[Instant, CommitMetadata]) -> WriteOutcome:
    """The outcome of ``write_id`` on ``timeline``, given the metadata of its completed write commits."""
    for instant, commit in metadata.items():
        if commit.extra_metadata.get(WRITE_ID_OPTION) == write_id:
            return WriteOutcome(write_id, WriteState.COMMITTED, instant)
    started = write_id.split("-", 1)[0]
    writes = timeline.write_commits()
    earliest = writes.first()
    if earliest is not None and earliest.requested_time > started:  # older instants were archived (or restored)
        return WriteOutcome(write_id, WriteState.UNKNOWN)
    # Every pending write may be this one: the server's clock, which named it, need not agree with ours.
    pending = tuple(i for i in timeline.pending() if i.writes_data)
    if pending:
        return WriteOutcome(write_id, WriteState.PENDING, pending=pending)
    return WriteOutcome(write_id, WriteState.NOT_COMMITTED)
