"""The cleaner's bound while a clean is under way: it deletes files before it completes, so its plan's
``earliestInstantToRetain`` bounds what can be read from the moment it is requested (Hudi's time travel looks
at completed cleans only, and a storage listing made meanwhile misses what the clean deleted)."""

from __future__ import annotations

import io

import fastavro

from hudi_connect.core.format.history_bounds import cleaned_bound, earliest_commit_to_retain, latest_clean
from hudi_connect.core.format.timeline import Action, Instant, InstantState, Timeline

PLAN_SCHEMA: dict[str, object] = {  # the part of Hudi's HoodieCleanerPlan the bound reads
    "type": "record", "name": "HoodieCleanerPlan", "fields": [
        {"name": "earliestInstantToRetain", "default": None, "type": ["null", {
            "type": "record", "name": "HoodieActionInstant", "fields": [
                {"name": "timestamp", "type": "string"}, {"name": "action", "type": "string"},
                {"name": "state", "type": "string"}]}]},
        {"name": "policy", "type": "string"}]}


def avro(schema: dict[str, object], record: dict[str, object]) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), [record])
    return out.getvalue()


def commit(time: str) -> Instant:
    return Instant(time, Action.COMMIT, InstantState.COMPLETED, time)


def test_a_pending_cleans_plan_bounds_the_history() -> None:
    plan = avro(PLAN_SCHEMA, {"earliestInstantToRetain": {"timestamp": "20261126100300000", "action": "commit",
                                                          "state": "COMPLETED"}, "policy": "KEEP_LATEST_COMMITS"})
    assert earliest_commit_to_retain(plan) == "20261126100300000"
    pending = Instant("20261126100500000", Action.CLEAN, InstantState.INFLIGHT)
    timeline = Timeline((commit("20261126100100000"), commit("20261126100200000"), commit("20261126100300000"),
                         commit("20261126100400000"), pending))
    assert latest_clean(timeline) == pending
    bound = cleaned_bound(timeline, earliest_commit_to_retain(plan))
    assert bound is not None and bound.instant == "20261126100300000" and "under way" in bound.reason
    assert bound.may_have_cleaned([commit("20261126100200000")])
    assert not bound.may_have_cleaned([commit("20261126100300000"), commit("20261126100400000")])


def test_a_plan_without_a_commit_to_retain_bounds_at_the_first_active_commit() -> None:
    plan = avro(PLAN_SCHEMA, {"earliestInstantToRetain": None, "policy": "KEEP_LATEST_FILE_VERSIONS"})
    assert earliest_commit_to_retain(plan) is None
    timeline = Timeline((commit("20261126100100000"), commit("20261126100200000"),
                         Instant("20261126100500000", Action.CLEAN, InstantState.REQUESTED)))
    bound = cleaned_bound(timeline, None)
    assert bound is not None and bound.instant == "20261126100100000" and not bound.retains_commits


def test_without_any_clean_nothing_is_bounded() -> None:
    assert cleaned_bound(Timeline((commit("20261126100100000"),)), None) is None


def test_a_clean_rollback_or_restore_begun_between_two_listings_is_found() -> None:
    from hudi_connect.core.format.timeline import file_removals_between

    before = ["20261126100100000_20261126100101000.commit", "20261126100200000.commit.requested", "history/"]
    assert file_removals_between(before, [*before, "20261126100300000.commit.requested"]) == []
    assert file_removals_between(before, before) == []
    after = [*before, "20261126100300000.clean.requested", "20261126100400000.rollback.requested",
             "20261126100500000.restore.inflight", "hoodie.properties"]
    assert file_removals_between(before, after) == ["20261126100300000.clean.requested",
                                                    "20261126100400000.rollback.requested",
                                                    "20261126100500000.restore.inflight"]
