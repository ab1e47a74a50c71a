"""The way back after a writer died: which pending instants to roll back, and whether a writer lives.

A writer killed mid-write leaves its instant pending (requested or inflight)
with data files that no reader trusts (HUDI-2285). Hudi removes them at the
next write's eager rollback; :meth:`HudiTable.recover` does it now, through
Hudi's ``rollback_to_instant``, so the table is clean before anyone writes.
Pending *writes* are rolled back. A pending clustering is completed instead:
Hudi rejects every update to a file group under a pending clustering plan
(``HoodieClusteringUpdateException``), so until it completes no upsert that
touches those file groups is accepted; the kill suite found exactly that. Other
table services (compaction, clean) keep their plans for Hudi's next run: they
block no write, and rolling back a compaction plan would lose its merge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from hudi_connect.client.remote_files import RemoteFile
from hudi_connect.core.format.timeline import Action, Instant, Timeline

# Hudi's defaults: a writer beats every interval and is presumed dead after this many missed beats.
HEARTBEAT_INTERVAL_KEY = "hoodie.client.heartbeat.interval_in_ms"
HEARTBEAT_MISSES_KEY = "hoodie.client.heartbeat.tolerable.misses"
DEFAULT_HEARTBEAT_INTERVAL_MS = 60_000
DEFAULT_HEARTBEAT_MISSES = 2


@dataclass(frozen=True)
class RecoveryPlan:
    """What recovery does to the pending instants of a data table's timeline."""

    rollback: tuple[Instant, ...]  # pending writes: rolled back
    complete: tuple[Instant, ...]  # pending clustering: executed, since it blocks updates
    left: tuple[Instant, ...]  # pending compaction, clean and the like: Hudi's next run resumes them


@dataclass(frozen=True)
class RecoveryReport:
    """What :meth:`HudiTable.recover` found and did."""

    rolled_back: tuple[Instant, ...]
    completed: tuple[Instant, ...]
    left: tuple[Instant, ...]
    metadata_table_pending: tuple[Instant, ...]  # pending instants of .hoodie/metadata before recovery

    @property
    def changed(self) -> bool:
        """Whether recovery rolled back or completed any instant."""
        return bool(self.rolled_back or self.completed)

    def __str__(self) -> str:
        if not self.changed and not self.left:
            return "nothing pending: the table is clean"
        parts = []
        if self.rolled_back:
            parts.append("rolled back " + ", ".join(f"{i.action.value} {i.requested_time}" for i in self.rolled_back))
        if self.completed:
            parts.append("completed " + ", ".join(f"{i.action.value} {i.requested_time}" for i in self.completed))
        if self.left:
            left = (f"{i.action.value} {i.requested_time} ({i.state.value.lower()})" for i in self.left)
            parts.append("left for Hudi's next run: " + ", ".join(left))
        return "; ".join(parts)


def plan_recovery(timeline: Timeline) -> RecoveryPlan:
    """Pending writes, newest first (Hudi rolls back the latest first), pending clustering, and the rest."""
    pending = timeline.pending().instants
    writes = tuple(sorted((i for i in pending if i.writes_data), key=lambda i: i.requested_time, reverse=True))
    clustering = tuple(i for i in pending if i.action is Action.CLUSTERING)
    return RecoveryPlan(writes, clustering, tuple(i for i in pending if not i.writes_data and i not in clustering))


def heartbeat_expiry_ms(options: Mapping[str, str]) -> int:
    """How old a heartbeat must be for Hudi to call its writer dead (interval times tolerable misses)."""
    interval = int(options.get(HEARTBEAT_INTERVAL_KEY, DEFAULT_HEARTBEAT_INTERVAL_MS))
    misses = int(options.get(HEARTBEAT_MISSES_KEY, DEFAULT_HEARTBEAT_MISSES))
    return interval * misses


def live_heartbeats(files: Iterable[RemoteFile], now_ms: int, expiry_ms: int) -> list[str]:
    """Instants whose heartbeat file (``.hoodie/.heartbeat/<instant>``) was touched within ``expiry_ms``."""
    return sorted(f.name for f in files if not f.name.startswith(".") and now_ms - f.modification_time_ms <= expiry_ms)
