"""HUDI-2285's reader rules for the metadata table, on timelines built by hand:
which metadata log blocks count, and when the metadata table is behind."""

from __future__ import annotations

from hudi_connect.core.executor.metadata_reader import (
    DataTimeline,
    MetadataSource,
    MetadataTimeline,
    missing_instants,
    valid_block_instants,
)
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


def missing(source: MetadataSource, metadata: Timeline | None, version: int = 8, archived: bool = False) -> list[str]:
    return missing_instants(source, MetadataTimeline(metadata, version) if metadata is not None else None,
                            lambda: archived)


def test_the_metadata_table_must_have_every_completed_tracked_data_instant() -> None:
    # the savepoint writes no metadata deltacommit: the commit and the clean are what it must have
    assert [t for t, _ in SOURCE.data.tracked] == ["20240101000000001", "20240101000000002"]
    behind = timeline(("20240101000000001", Action.DELTA_COMMIT, DONE),
                      ("20240101000000002", Action.DELTA_COMMIT, PENDING))
    assert missing(SOURCE, behind) == ["20240101000000002"]
    assert missing(SOURCE, timeline(("20240101000000001", Action.DELTA_COMMIT, DONE),
                                    ("20240101000000002", Action.DELTA_COMMIT, DONE))) == []
    assert missing(SOURCE, None) == ["20240101000000001", "20240101000000002"]
    empty = MetadataSource("file:///t", DataTimeline.of(Timeline(())), 8)
    assert missing(empty, Timeline(())) == []


def test_a_commit_without_its_deltacommit_is_missing_though_a_later_one_has_its_own() -> None:
    """The tester's seed 70072 (Hudi 1.2, version 6): the insert 697 completed without a deltacommit (it could not
    initialize column_stats beside the pending delete 723), which initialized it at 697010, then landed its own."""
    data = timeline(("00000000000001", Action.DELTA_COMMIT, DONE), ("20261130043205697", Action.DELTA_COMMIT, DONE),
                    ("20261130043205723", Action.DELTA_COMMIT, DONE))
    source = MetadataSource("file:///t", DataTimeline.of(data), 6)
    metadata = timeline(("00000000000000010", Action.DELTA_COMMIT, DONE), ("00000000000000010001", Action.COMMIT, DONE),
                        ("00000000000001", Action.DELTA_COMMIT, DONE),
                        ("20261130043205697010", Action.DELTA_COMMIT, DONE),
                        ("20261130043205723", Action.DELTA_COMMIT, DONE))
    assert missing(source, metadata, version=6) == ["20261130043205697"]


def test_the_files_initialization_reflects_the_instants_completed_before_it() -> None:
    data = timeline(("20240101000000001", Action.COMMIT, DONE), ("20240101000000002", Action.COMMIT, DONE),
                    ("20240101000000003", Action.COMMIT, DONE))
    source = MetadataSource("file:///t", DataTimeline.of(data), 6)
    # version 6: enabled on a written table at its latest completed instant, with Hudi's 010 suffix
    enabled_later = timeline(("20240101000000002010", Action.DELTA_COMMIT, DONE),
                             ("20240101000000003", Action.DELTA_COMMIT, DONE))
    assert missing(source, enabled_later, version=6) == []
    # once the metadata table has archived instants, its first is no longer its initialization
    assert missing(source, enabled_later, version=6, archived=True) == ["20240101000000001", "20240101000000002"]
    # a first instant that stands for a data-table instant initialized nothing
    assert missing(source, timeline(("20240101000000002", Action.DELTA_COMMIT, DONE),
                                    ("20240101000000003", Action.DELTA_COMMIT, DONE)), version=6) \
        == ["20240101000000001"]
    # version 8: the initialization is named 00000000000000000; completion times tell what it listed
    data8 = Timeline((Instant("20240101000000001", Action.COMMIT, DONE, "20240101000000011"),
                      Instant("20240101000000002", Action.COMMIT, DONE, "20240101000000030"),
                      Instant("20240101000000003", Action.COMMIT, DONE, "20240101000000012")))
    source8 = MetadataSource("file:///t", DataTimeline.of(data8), 8)
    initialized = Timeline((Instant("00000000000000000", Action.DELTA_COMMIT, DONE, "20240101000000020"),))
    assert missing(source8, initialized) == ["20240101000000002"]
