"""A table's history (like ``DeltaTable.history()``): each instant with its operation and write statistics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hudi_connect.core.format.commit_metadata import CommitMetadata
from hudi_connect.core.format.timeline import Instant


@dataclass(frozen=True)
class HistoryEntry:
    """One instant of a table's history."""

    requested_time: str
    completion_time: str | None
    action: str
    state: str
    operation_type: str | None
    partitions_written: int
    files_written: int
    records_written: int
    inserts: int
    updates: int
    deletes: int
    bytes_written: int
    archived: bool = False  # moved to the archived timeline by Hudi's archiver


def history_entries(instants: Sequence[Instant], metadata: Mapping[Instant, CommitMetadata], *,
                    archived: bool = False) -> list[HistoryEntry]:
    """One entry per instant, in the order given; instants without metadata (pending ones) count nothing."""
    entries = []
    for instant in instants:
        meta = metadata.get(instant)
        stats = meta.write_stats if meta else ()
        entries.append(HistoryEntry(
            requested_time=instant.requested_time,
            completion_time=instant.completion_time,
            action=instant.action.value,
            state=instant.state.value,
            operation_type=meta.operation_type if meta else None,
            partitions_written=len(meta.partitions) if meta else 0,
            files_written=len(stats),
            records_written=sum(s.num_writes for s in stats),
            inserts=sum(s.num_inserts for s in stats),
            updates=sum(s.num_updates for s in stats),
            deletes=sum(s.num_deletes for s in stats),
            bytes_written=sum(s.total_write_bytes for s in stats),
            archived=archived,
        ))
    return entries
