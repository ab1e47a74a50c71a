"""Instant-range resolution, one rule (issue #34 item 3), held to Hudi's semantics: ranges are (begin, end], begin
exclusive and end inclusive; tables of version 8+ compare completion times, older ones requested times; a pending
instant cannot bound a completion-time range; 'earliest' begins before every instant."""

from __future__ import annotations

import pytest

from hudi_connect.core.errors import InvalidInstantError
from hudi_connect.core.format.timeline import Action, Instant, InstantState, Timeline, range_time

# requested times in one order, completion times in another: b was requested after a but completed before it
A = Instant("20261120100000000", Action.COMMIT, InstantState.COMPLETED, "20261120100009000")
B = Instant("20261120100001000", Action.COMMIT, InstantState.COMPLETED, "20261120100002000")
C = Instant("20261120100010000", Action.COMMIT, InstantState.COMPLETED, "20261120100011000")
PENDING = Instant("20261120100012000", Action.COMMIT, InstantState.INFLIGHT)
TIMELINE = Timeline((A, B, C, PENDING))


def _between(begin: Instant | str, end: Instant | str | None, *, by_completion: bool) -> list[Instant]:
    return TIMELINE.commits_between(begin, end, by_completion=by_completion)


def test_begin_is_exclusive_and_end_inclusive() -> None:
    assert _between(B, C, by_completion=True) == [A, C]  # after B completed: A (completed later), then C
    assert _between(A, None, by_completion=False) == [B, C]
    assert _between("earliest", B, by_completion=False) == [A, B]


def test_version_8_compares_completion_times_and_version_6_requested_times() -> None:
    assert range_time(A, by_completion=True) == A.completion_time
    assert range_time(A, by_completion=False) == A.requested_time
    assert _between("earliest", B, by_completion=True) == [B]  # A completed after B
    assert _between("earliest", B, by_completion=False) == [A, B]


def test_earliest_is_before_every_instant_and_strings_are_validated() -> None:
    assert range_time("earliest", by_completion=True) < min(A.requested_time, B.completion_time or "")
    assert range_time("20261120100001000", by_completion=True) == "20261120100001000"
    with pytest.raises(InvalidInstantError, match="is not an instant time"):
        range_time("yesterday", by_completion=False)


def test_a_pending_instant_cannot_bound_a_completion_time_range() -> None:
    with pytest.raises(InvalidInstantError, match="has not completed"):
        _between(PENDING, None, by_completion=True)
    assert _between(B, PENDING, by_completion=False) == [C]  # requested times: it bounds as its own time


def test_the_timeline_as_a_completion_time_left_it_shows_later_completions_pending() -> None:
    at_b = TIMELINE.as_completed_at(B.completion_time or "")
    assert [i.requested_time for i in at_b.write_commits()] == [B.requested_time]  # A completed after B
    assert at_b.find(A.requested_time).state is InstantState.INFLIGHT
    assert at_b.find(A.requested_time).completion_time is None
    assert [i.requested_time for i in at_b.pending()] == [A.requested_time, C.requested_time, PENDING.requested_time]
    assert TIMELINE.as_completed_at(C.completion_time or "") == TIMELINE
