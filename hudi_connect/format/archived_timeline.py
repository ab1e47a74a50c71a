"""The archived timeline: instants Hudi's archiver moved out of the active timeline.

Tables of version 8 and 9 keep it as an LSM tree (``LSMTimeline`` in Hudi) under
``.hoodie/timeline/history``: ``_version_`` holds the number N of the live
manifest, ``manifest_N`` lists the live Parquet files (compaction of the tree
leaves older files behind until they are cleaned, so only the manifest says what
is live), and each row of those files is one completed instant: ``instantTime``,
``completionTime``, ``action`` and ``metadata`` (the bytes of the instant's file
on the active timeline). Tables of version 6 keep Hudi log files under
``.hoodie/archived``; the readers do not decode those (see :func:`refuse_v6_archive`).

Only completed instants are archived, oldest first: every archived instant was
requested before the active timeline's first instant.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from hudi_connect.errors import InvalidInstantError, UnsupportedTableFeatureError
from hudi_connect.format.timeline import Action, Instant, InstantState, Timeline

LSM_DIRECTORY = "history"  # under the timeline directory (.hoodie/timeline)
VERSION_FILE = "_version_"
V6_ARCHIVE_DIRECTORY = "archived"  # under .hoodie
V6_ARCHIVE_PREFIX = ".commits_.archive."

# the LSM files' columns the readers use
INSTANT_TIME, COMPLETION_TIME, ACTION, METADATA = "instantTime", "completionTime", "action", "metadata"


def manifest_name(version_text: str, *, where: str) -> str:
    """The live manifest named by ``_version_``'s content."""
    text = version_text.strip()
    if not text.isdigit():
        raise InvalidInstantError(f"{where}: the archived timeline's {VERSION_FILE} holds {text[:40]!r}, "
                                  "not a manifest version")
    return f"manifest_{int(text)}"


def manifest_files(manifest_text: str, *, where: str) -> tuple[str, ...]:
    """The live Parquet files of the archived timeline, from its manifest (JSON)."""
    try:
        entries = json.loads(manifest_text)["files"]
        names = tuple(str(entry["fileName"]) for entry in entries)
    except (ValueError, KeyError, TypeError) as error:
        raise InvalidInstantError(f"{where}: the archived timeline's manifest is not readable ({error})") from error
    if any("/" in name or not name.endswith(".parquet") for name in names):
        raise InvalidInstantError(f"{where}: the archived timeline's manifest lists files other than Parquet")
    return names


def archived_instant(instant_time: str, completion_time: str | None, action: str) -> Instant | None:
    """One archived row as a completed instant; None for actions the timeline does not know."""
    try:
        kind = Action(action)
    except ValueError:
        return None
    return Instant(instant_time, kind, InstantState.COMPLETED, completion_time or instant_time)


@dataclass(frozen=True)
class ArchivedTimeline:
    """The archived instants of a table, oldest first (empty when nothing was ever archived)."""

    instants: tuple[Instant, ...] = ()

    def write_commits(self) -> tuple[Instant, ...]:
        return tuple(i for i in self.instants if i.writes_data)

    def commits_between(self, begin: Instant | str, end: Instant | str | None) -> list[Instant]:
        """Archived write commits in the range (begin, end], by completion time (the LSM is versions 8 and 9)."""
        return Timeline(self.instants).commits_between(begin, end, by_completion=True)

    def last_write_commit(self) -> Instant | None:
        commits = self.write_commits()
        return commits[-1] if commits else None


def refuse_v6_archive(where: str, *, needed_for: str) -> UnsupportedTableFeatureError:
    """The error for a read that needs a version-6 table's archived instants (not decoded)."""
    return UnsupportedTableFeatureError(
        "the archived timeline of table version 6 (Hudi log files under .hoodie/archived)",
        "hoodie.table.version", "6", where=where,
        detail=f"{needed_for} needs instants Hudi archived; begin at or after the active timeline's first instant",
    )
