"""The Hudi timeline: instants, their states and the files that record them.

Two layouts exist (``TimelineLayout`` in Hudi): layout 1 (table version 6)
keeps instant files in ``.hoodie/`` and records no completion time in the
name; layout 2 (versions 8 and 9) keeps them in ``.hoodie/timeline/`` and
names a completed instant ``<requested>_<completed>.<action>``. A pending
instant is ``<requested>.<action>.requested`` or ``.inflight`` (a commit's
inflight file is just ``<requested>.inflight``). Compaction completes as a
``commit`` and clustering as a ``replacecommit``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, tzinfo
from enum import StrEnum

from hudi_connect.core.errors import InvalidInstantError


class InstantState(StrEnum):
    """The state of an instant (Hudi's ``HoodieInstant.State``): requested, inflight or completed."""

    REQUESTED = "REQUESTED"
    INFLIGHT = "INFLIGHT"
    COMPLETED = "COMPLETED"


class Action(StrEnum):
    """The timeline actions the readers know (``HoodieTimeline``'s action names)."""

    COMMIT = "commit"
    DELTA_COMMIT = "deltacommit"
    REPLACE_COMMIT = "replacecommit"
    CLUSTERING = "clustering"
    COMPACTION = "compaction"
    LOG_COMPACTION = "logcompaction"
    CLEAN = "clean"
    ROLLBACK = "rollback"
    SAVEPOINT = "savepoint"
    RESTORE = "restore"
    INDEXING = "indexing"
    # RFC-70's reverse-stream checkpoints: Hudi's timeline loader skips actions it does not know
    REVERSE_COMMIT = "reversecommit"


# Actions whose completed instants carry data files (HoodieTimeline.getCommitsTimeline).
WRITE_ACTIONS = frozenset({Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT})
# Actions that delete data files, and write their instant's requested file before they do
FILE_REMOVING_ACTIONS = frozenset({Action.CLEAN, Action.ROLLBACK, Action.RESTORE})
_STATE_RANK = {InstantState.REQUESTED: 0, InstantState.INFLIGHT: 1, InstantState.COMPLETED: 2}
_INSTANT_TIME = re.compile(r"^\d{14}(\d{3})?$")
# An instant time in a file name: seconds or milliseconds, and on a metadata table of version 6 three-digit
# suffixes for its own actions, which stack: a compaction (001) right after a partition's initialization (010)
# is 20261128151833109010001, 23 digits. Hudi reads any run of digits and orders them as strings, as we do.
INSTANT_TIME_PATTERN = r"\d{14,}"
_FILE_NAME = re.compile(rf"^(?P<requested>{INSTANT_TIME_PATTERN})(?:_(?P<completed>{INSTANT_TIME_PATTERN}))?"
                        r"(?:\.(?P<rest>[a-z.]+))?$")


def validate_instant_time(value: str) -> str:
    """``value`` if it is an instant time (yyyyMMddHHmmss[SSS]), else InvalidInstantError."""
    if not isinstance(value, str) or not _INSTANT_TIME.match(value):
        raise InvalidInstantError(
            f"{value!r} is not an instant time: expected 17 digits yyyyMMddHHmmssSSS (or 14 without millis)"
        )
    return value


def instant_time_of(moment: datetime, zone: tzinfo = UTC) -> str:
    """The instant time of a moment on a timeline written in ``zone`` (``hoodie.table.timeline.timezone``: UTC,
    or the writer's zone); a naive ``moment`` is the client's local time, as pyspark reads naive datetimes."""
    return moment.astimezone(zone).strftime("%Y%m%d%H%M%S%f")[:17]


_DATE_TIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?: (\d{2}):(\d{2}):(\d{2})(?:\.(\d{3}))?)?$")


def query_instant_time(value: str) -> str:
    """An instant time given as text, read as Hudi reads a query's instant (``formatQueryInstant``): 17 or 14
    digits as they are; ``yyyy-MM-dd HH:mm:ss[.SSS]`` as those digits of the timeline's clock (without millis:
    the end of that second, ``.999``); ``yyyy-MM-dd`` as that day's start; ``earliest`` as it is."""
    if value == "earliest":
        return value
    match = _DATE_TIME.match(value) if isinstance(value, str) else None
    if match is None:
        try:
            return validate_instant_time(value)
        except InvalidInstantError:
            raise InvalidInstantError(
                f"{value!r} is not an instant time: expected 17 digits yyyyMMddHHmmssSSS (or 14 without millis), "
                "yyyy-MM-dd HH:mm:ss[.SSS], yyyy-MM-dd, an Instant or a datetime") from None
    year, month, day, hour, minute, second, millis = match.groups()
    if hour is None:
        return f"{year}{month}{day}000000000"
    return f"{year}{month}{day}{hour}{minute}{second}{millis if millis is not None else '999'}"


EARLIEST_TIME = "000"  # before every instant time; what Hudi's own incremental options take for "from the start"


def as_of_time(value: Instant | str) -> str:
    """The time a time travel reads as of: an instant's requested time, or instant-time text as Hudi reads it
    (:func:`query_instant_time`); ``earliest`` names no time to read as of."""
    if isinstance(value, Instant):
        return value.requested_time
    if value == "earliest":
        raise InvalidInstantError("'earliest' begins a range; a time travel needs an instant")
    return query_instant_time(value)


def range_time(value: Instant | str, *, by_completion: bool) -> str:
    """The time a range bound stands for, the one rule of every incremental range (ours and the options given
    to Hudi's queries): an instant's completion time on tables comparing those (version 8 and later; a pending
    instant has none and is refused), else its requested time; a string as it is, 'earliest' before every
    instant. Ranges are Hudi's (begin, end]: begin exclusive, end inclusive (:meth:`Timeline.commits_between`)."""
    if isinstance(value, Instant):
        if not by_completion:
            return value.requested_time
        if value.completion_time is None:
            raise InvalidInstantError(f"instant {value.requested_time} has not completed: a range bound on this "
                                      "table is a completion time")
        return value.completion_time
    return EARLIEST_TIME if value == "earliest" else query_instant_time(value)


@dataclass(frozen=True, order=True)
class Instant:
    """One instant of the timeline, in its most advanced state."""

    requested_time: str
    action: Action
    state: InstantState
    completion_time: str | None = None  # None while pending

    @property
    def is_completed(self) -> bool:
        """Whether the instant is completed."""
        return self.state is InstantState.COMPLETED

    @property
    def writes_data(self) -> bool:
        """Whether the action writes data files (commit, deltacommit, replacecommit), in any state."""
        return self.action in WRITE_ACTIONS


@dataclass(frozen=True)
class InstantFile:
    """What an instant file's name says."""

    requested_time: str
    action: Action
    state: InstantState
    completion_time: str | None
    name: str


def file_removals_between(before: Iterable[str], after: Iterable[str]) -> list[str]:
    """The instant files of cleans, rollbacks and restores among ``after``'s names and not ``before``'s: a
    listing of data files made between the two listings of the timeline may miss files they deleted."""
    known = set(before)
    return sorted(name for name in set(after) - known
                  if (parsed := parse_instant_file_name(name)) is not None and parsed.action in FILE_REMOVING_ACTIONS)


def parse_instant_file_name(name: str, modification_time_ms: int | None = None) -> InstantFile | None:
    """Parse an instant file name of either layout; None for anything else.

    In layout 1 the completion time of a completed instant is the file's
    modification time, as Hudi itself falls back to.
    """
    match = _FILE_NAME.match(name)
    if match is None or match.group("rest") is None:
        return None
    requested, completed, rest = match.group("requested"), match.group("completed"), match.group("rest")
    parts = rest.split(".")
    if parts == ["inflight"]:
        return InstantFile(requested, Action.COMMIT, InstantState.INFLIGHT, None, name)
    try:
        action = Action(parts[0])
    except ValueError:
        return None
    if len(parts) == 2 and parts[1] in ("requested", "inflight"):
        state = InstantState.REQUESTED if parts[1] == "requested" else InstantState.INFLIGHT
        return InstantFile(requested, action, state, None, name)
    if len(parts) != 1:
        return None
    if completed is None and modification_time_ms is not None:
        completed = instant_time_of(datetime.fromtimestamp(modification_time_ms / 1000, tz=UTC))
    return InstantFile(requested, action, InstantState.COMPLETED, completed, name)


@dataclass(frozen=True)
class Timeline:
    """An immutable view of a table's active instants, ordered by requested time."""

    instants: tuple[Instant, ...]

    @classmethod
    def from_files(cls, files: Iterable[InstantFile]) -> Timeline:
        """The timeline of parsed instant files: each instant in the most advanced state a file records."""
        best: dict[str, InstantFile] = {}
        for file in files:
            current = best.get(file.requested_time)
            if current is None or _STATE_RANK[file.state] > _STATE_RANK[current.state]:
                best[file.requested_time] = file
        instants = sorted(
            Instant(f.requested_time, f.action, f.state, f.completion_time) for f in best.values()
        )
        return cls(tuple(instants))

    def __iter__(self) -> Iterator[Instant]:
        return iter(self.instants)

    def __len__(self) -> int:
        return len(self.instants)

    def completed(self) -> Timeline:
        """The completed instants."""
        return Timeline(tuple(i for i in self.instants if i.is_completed))

    def pending(self) -> Timeline:
        """The requested and inflight instants."""
        return Timeline(tuple(i for i in self.instants if not i.is_completed))

    def write_commits(self) -> Timeline:
        """Completed instants that wrote data (commit, deltacommit, replacecommit)."""
        return Timeline(tuple(i for i in self.instants if i.is_completed and i.writes_data))

    def last(self) -> Instant | None:
        """The instant requested last, or None for an empty timeline."""
        return self.instants[-1] if self.instants else None

    def planned_at(self) -> str | None:
        """The instant a read planned on this timeline is named by (in errors): its last completed instant."""
        last = self.completed().last()
        return last.requested_time if last else None

    def first(self) -> Instant | None:
        """The instant requested first, or None for an empty timeline."""
        return self.instants[0] if self.instants else None

    def find(self, requested_time: str) -> Instant:
        """The instant requested at ``requested_time``, or InvalidInstantError."""
        validate_instant_time(requested_time)
        for instant in self.instants:
            if instant.requested_time == requested_time:
                return instant
        raise InvalidInstantError(f"instant {requested_time} is not on the table's active timeline")

    def after(self, other: Timeline) -> Timeline:
        """Instants completed here that were not completed in ``other`` (an earlier view)."""
        before = {i.requested_time for i in other.instants if i.is_completed}
        return Timeline(tuple(i for i in self.instants if i.is_completed and i.requested_time not in before))

    def as_completed_at(self, completion_time: str) -> Timeline:
        """The timeline as a reader saw it once ``completion_time`` passed: instants that completed later are
        still inflight (a write requested before another may complete after it, beside it)."""
        return Timeline(tuple(
            i if i.completion_time is None or i.completion_time <= completion_time
            else replace(i, state=InstantState.INFLIGHT, completion_time=None)
            for i in self.instants))

    def latest_completed_at(self, time: str) -> Instant | None:
        """The last completed instant requested at or before ``time``."""
        candidates = [i for i in self.instants if i.is_completed and i.requested_time <= time]
        return candidates[-1] if candidates else None

    def begins_before(self, begin: Instant | str, *, by_completion: bool) -> bool:
        """Whether a range from ``begin`` may reach before this timeline's first instant (into archived history)."""
        first = self.first()
        if first is None:
            return False
        first_time = (first.completion_time or first.requested_time) if by_completion else first.requested_time
        return range_time(begin, by_completion=by_completion) < first_time

    def commits_between(self, begin: Instant | str, end: Instant | str | None, *,
                        by_completion: bool) -> list[Instant]:
        """Completed write commits in Hudi's range (begin, end]; 'earliest' begins before all.

        Tables of version 8 and later compare completion times (``by_completion``),
        older ones requested times. An ``Instant`` bound stands for its own time of that kind.
        """

        begin_time = range_time(begin, by_completion=by_completion)
        end_time = range_time(end, by_completion=by_completion) if end is not None else None
        if end_time is not None and end_time < begin_time:
            raise InvalidInstantError(f"the range ({begin_time}, {end_time}] ends before it begins")

        def in_range(instant: Instant) -> bool:
            time = (instant.completion_time or "") if by_completion else instant.requested_time
            return time > begin_time and (end_time is None or time <= end_time)

        return [c for c in self.write_commits() if in_range(c)]
