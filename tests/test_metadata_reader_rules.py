"""HUDI-2285's reader rules for the metadata table, on timelines built by hand:
which metadata log blocks count, and when the metadata table is behind."""

from __future__ import annotations

from hudi_connect.core.executor.metadata_reader import DataTimeline, MetadataSource, caught_up, valid_block_instants
from hudi_connect.core.format.timeline import Action, Instant, InstantState, Timeline

DONE, PENDING = InstantState.COMPLETED, InstantState.INFLIGHT


def timeline(*instants: tuple[str, Action, InstantState]) -> Timeline:
    return Timeline(tuple(Instant(t, a, s, f"{t}9" if s is DONE else None) for t, a, s in instants))


DATA = timeline(("20240101000000001", Action.COMMIT, DONE), ("20240101000000002", Action.CLEAN, DONE),
                ("20240101000000003", Action.COMMIT, PENDING), ("20240101000000004", Action.SAVEPOINT, DONE))
SOURCE = MetadataSource("file:///t", DataTimeline.of(DATA), 8)


def test_blocks_count_only_for_completed_data_instants_or_metadata_only_instants() -> None:
    metadata = timeline(("00000000000000000", Action.DELTA_COMMIT, DONE),  # initialization
                        ("20240101000000001", Action.DELTA_COMMIT, DONE),
                        ("20240101000000002", Action.DELTA_COMMIT, DONE),
                        # the crashed write: complete on the metadata table, pending on the data table
                        ("20240101000000003", Action.DELTA_COMMIT, DONE),
                        ("20240101000000005", Action.DELTA_COMMIT, PENDING))
    valid = valid_block_instants(SOURCE, metadata)
    assert {"00000000000000000", "20240101000000001", "20240101000000002"} <= valid
    assert "20240101000000003" not in valid and "20240101000000005" not in valid


def test_the_metadata_table_must_have_the_latest_tracked_data_instant() -> None:
    # the savepoint writes no metadata deltacommit: the clean is the latest instant to look for
    assert SOURCE.data.latest_tracked == "20240101000000002"
    behind = timeline(("20240101000000001", Action.DELTA_COMMIT, DONE),
                      ("20240101000000002", Action.DELTA_COMMIT, PENDING))
    assert not caught_up(SOURCE, behind)
    assert caught_up(SOURCE, timeline(("20240101000000002", Action.DELTA_COMMIT, DONE)))
    assert not caught_up(SOURCE, None)
    empty = MetadataSource("file:///t", DataTimeline.of(Timeline(())), 8)
    assert caught_up(empty, Timeline(()))
