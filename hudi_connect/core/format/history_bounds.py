"""How far back a table's history can be read: the cleaner's and the timeline's bounds.

Hudi's time travel (``TimelineUtils.validateTimestampAsOf``) refuses an instant at
or after the first pending write (its files may still change) and one the cleaner
may have taken files from: older than the latest completed clean's
``earliestCommitToRetain`` (ours: of the latest clean, a pending one by its plan's
``earliestInstantToRetain``, since it deletes files before it completes), or, for a clean that records none (the
``KEEP_LATEST_FILE_VERSIONS`` policy), older than the first write commit on the
active timeline. Change queries and incremental reads need the files of every
commit they read, and of the commit before the first, so the same bound says
where their answers stop being whole.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass

from hudi_connect.core.format.commit_metadata import AVRO_MAGIC
from hudi_connect.core.format.timeline import Action, Instant, Timeline


def earliest_commit_to_retain(content: bytes) -> str | None:
    """``earliestCommitToRetain`` of a completed clean's metadata (Avro ``HoodieCleanMetadata``), or
    ``earliestInstantToRetain`` of a pending clean's plan (``HoodieCleanerPlan``); None if it records none or
    is not Avro (the cleaner's bound is then taken from the timeline)."""
    if not content.startswith(AVRO_MAGIC):
        return None
    import fastavro

    records = list(fastavro.reader(io.BytesIO(content)))
    record = records[0] if records and isinstance(records[0], dict) else {}
    value = record.get("earliestCommitToRetain")
    planned = record.get("earliestInstantToRetain")
    if not value and isinstance(planned, dict):
        value = planned.get("timestamp")
    return str(value) if value else None


def latest_clean(timeline: Timeline) -> Instant | None:
    """The last clean on the active timeline, completed or not: a clean under way is deleting files already
    (Hudi's time travel looks at completed cleans only; a read planned meanwhile would miss what it deletes)."""
    cleans = [i for i in timeline if i.action is Action.CLEAN]
    return cleans[-1] if cleans else None


def first_pending_write(timeline: Timeline) -> Instant | None:
    """The first write not completed (clustering excluded, as Hudi's check does): a read as of its time or
    later could see its files change."""
    pending = [i for i in timeline.pending() if i.writes_data]
    return pending[0] if pending else None


@dataclass(frozen=True)
class CleanedBound:
    """Instants older than ``instant`` may have lost files to the cleaner (``reason`` says why). A cleaner
    keeping file versions rather than commits (``retains_commits`` false) may have taken superseded files of
    any commit: time travel takes Hudi's bound, but readers of a commit's own files must look for them."""

    instant: str
    reason: str
    retains_commits: bool = True

    def may_have_cleaned(self, instants: Iterable[Instant]) -> bool:
        """Whether files ``instants`` wrote may be gone."""
        return not self.retains_commits or any(i.requested_time < self.instant for i in instants)


def cleaned_bound(timeline: Timeline, retained_from: str | None) -> CleanedBound | None:
    """The cleaner's bound, given the latest clean's ``earliestCommitToRetain`` (``retained_from``)."""
    clean = latest_clean(timeline)
    if clean is None:
        return None
    which = f"clean {clean.requested_time}" + ("" if clean.is_completed else ", under way")
    if retained_from:
        return CleanedBound(retained_from, f"the cleaner ({which}) retains commits from {retained_from} on")
    first = timeline.write_commits().first()
    if first is None:
        return None
    return CleanedBound(first.requested_time, f"the cleaner ({which}) keeps file versions, not commits, and the "
                                              f"active timeline's first commit is {first.requested_time}",
                        retains_commits=False)
