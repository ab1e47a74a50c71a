"""Table configuration, timeline and commit metadata, parsed from the real fixture tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from hudi_connect_stack.testing.fixture_tables import fixture_names, unzip_fixture

from hudi_connect.core.errors import InvalidInstantError, UnsupportedTableVersionError
from hudi_connect.core.format.commit_metadata import decode_commit_metadata
from hudi_connect.core.format.table_config import CdcLoggingMode, TableProperties, TableType, parse_java_properties
from hudi_connect.core.format.timeline import (
    Action,
    InstantState,
    Timeline,
    parse_instant_file_name,
    validate_instant_time,
)


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fixtures")
    return {name: unzip_fixture(name, root) for name in fixture_names()}


def _props(base: Path) -> TableProperties:
    return TableProperties.from_properties(parse_java_properties((base / ".hoodie" / "hoodie.properties").read_text()))


def test_every_fixture_is_present() -> None:
    assert len(fixture_names()) == 17


def test_java_properties_escapes_comments_and_continuations() -> None:
    text = "# comment\n! also\na=1\nb\\:c = x\\:y\nlong = one \\\n    two\nu=\\u0041\nempty=\n"
    assert parse_java_properties(text) == {"a": "1", "b:c": "x:y", "long": "one two", "u": "A", "empty": ""}


@pytest.mark.parametrize(
    ("name", "version", "table_type", "key", "ordering", "partitions"),
    [
        ("cow_v6_nonpartitioned", 6, TableType.COPY_ON_WRITE, ("id",), ("longField",), ()),
        ("cow_v8_simplekeygen_nonhivestyle", 8, TableType.COPY_ON_WRITE, ("id",), ("longField",), ("byteField",)),
        ("cow_v9_txns_simple_nometa", 9, TableType.COPY_ON_WRITE, ("txn_id",), ("txn_ts",), ("region",)),
        ("mor_avro_v6_trips_8i1u", 6, TableType.MERGE_ON_READ, ("uuid",), ("ts",), ("city",)),
        ("mor_avro_v9_txns_nonpart_nometa", 9, TableType.MERGE_ON_READ, ("txn_id",), ("txn_ts",), ()),
    ],
)
def test_table_properties_of_fixtures(
    tables: dict[str, Path], name: str, version: int, table_type: TableType,
    key: tuple[str, ...], ordering: tuple[str, ...], partitions: tuple[str, ...],
) -> None:
    props = _props(tables[name])
    assert (props.version, props.table_type, props.record_key_fields) == (version, table_type, key)
    assert (props.ordering_fields, props.partition_fields) == (ordering, partitions)
    assert props.timeline_dir == ("timeline" if version >= 8 else "")
    # the archived timeline: version 6's log files where hoodie.archivelog.folder says (Hudi 0.x: "archived")
    assert props.archive_dir == ("timeline/history" if version >= 8 else "archived")
    if version == 6:
        assert (tables[name] / ".hoodie" / props.archive_dir).is_dir()
    assert not props.cdc_enabled


def test_the_archive_of_a_version_6_table_is_where_its_properties_say() -> None:
    written_by_hudi_1 = {"hoodie.table.version": "6", "hoodie.table.type": "COPY_ON_WRITE",
                         "hoodie.archivelog.folder": "history", "hoodie.timeline.layout.version": "1"}
    assert TableProperties.from_properties(written_by_hudi_1).archive_dir == "history"
    moved = {"hoodie.table.version": "9", "hoodie.table.type": "MERGE_ON_READ", "hoodie.timeline.layout.version": "2",
             "hoodie.timeline.path": "tl", "hoodie.timeline.history.path": "lsm"}
    assert TableProperties.from_properties(moved).archive_dir == "tl/lsm"


def test_metadata_partitions_are_read(tables: dict[str, Path]) -> None:
    assert "record_index" in _props(tables["cow_v9_txns_simple_meta"]).metadata_partitions
    assert _props(tables["cow_v9_txns_simple_nometa"]).metadata_partitions == ()


def test_unsupported_table_version_says_which_versions_work() -> None:
    with pytest.raises(UnsupportedTableVersionError, match=r"hoodie.table.version=5.*6, 8, 9"):
        TableProperties.from_properties({"hoodie.table.version": "5"})


def test_cdc_mode_legacy_names() -> None:
    raw = {"hoodie.table.version": "6", "hoodie.table.cdc.enabled": "true",
           "hoodie.table.cdc.supplemental.logging.mode": "cdc_data_before"}
    assert TableProperties.from_properties(raw).cdc_logging_mode is CdcLoggingMode.DATA_BEFORE


@pytest.mark.parametrize(
    ("name", "action", "state", "completion"),
    [
        ("20260307135657661_20260307135659468.commit", Action.COMMIT, InstantState.COMPLETED, "20260307135659468"),
        ("20260307135657661.commit.requested", Action.COMMIT, InstantState.REQUESTED, None),
        ("20260307135657661.inflight", Action.COMMIT, InstantState.INFLIGHT, None),
        ("20260307135709297.clustering.inflight", Action.CLUSTERING, InstantState.INFLIGHT, None),
        ("20260307135709297_20260307135709818.replacecommit", Action.REPLACE_COMMIT, InstantState.COMPLETED,
         "20260307135709818"),
        ("20240707001301554.deltacommit", Action.DELTA_COMMIT, InstantState.COMPLETED, "20240101000000000"),
    ],
)
def test_instant_file_names_of_both_layouts(
    name: str, action: Action, state: InstantState, completion: str | None
) -> None:
    parsed = parse_instant_file_name(name, modification_time_ms=1704067200000)
    assert parsed is not None
    assert (parsed.action, parsed.state, parsed.completion_time) == (action, state, completion)


@pytest.mark.parametrize("name", ["hoodie.properties", "history", ".20260307135657661.commit.crc", "x.commit",
                                  "20260307135657661.unknownaction", "20260307135657661.commit.weird"])
def test_other_files_are_not_instants(name: str) -> None:
    assert parse_instant_file_name(name) is None


def test_timeline_of_a_v9_fixture(tables: dict[str, Path]) -> None:
    directory = tables["cow_v9_txns_simple_nometa"] / ".hoodie" / "timeline"
    parsed = [parse_instant_file_name(p.name) for p in directory.iterdir()]
    timeline = Timeline.from_files(p for p in parsed if p is not None)
    # README: 10 commits and 2 replacecommits, all completed
    assert len(timeline) == 12 and len(timeline.pending()) == 0
    actions = [i.action for i in timeline]
    assert actions.count(Action.COMMIT) == 10 and actions.count(Action.REPLACE_COMMIT) == 2
    assert all(i.completion_time and i.completion_time > i.requested_time for i in timeline)
    assert timeline.find(timeline.instants[3].requested_time) == timeline.instants[3]
    with pytest.raises(InvalidInstantError, match="not on the table's active timeline"):
        timeline.find("20000101000000000")


def test_timeline_keeps_the_most_advanced_state() -> None:
    files = [parse_instant_file_name(n) for n in ("001.commit.requested",)]
    assert files == [None]  # too short to be an instant time
    names = ["20250101000000000.commit.requested", "20250101000000000.inflight",
             "20250102000000000.deltacommit.requested"]
    timeline = Timeline.from_files(f for f in map(parse_instant_file_name, names) if f is not None)
    assert [(i.action, i.state) for i in timeline] == [
        (Action.COMMIT, InstantState.INFLIGHT), (Action.DELTA_COMMIT, InstantState.REQUESTED)
    ]
    assert len(timeline.completed()) == 0


@pytest.mark.parametrize("value", ["2025", "2025010100000000x", "", "20250101000000000000"])
def test_malformed_instant_times_are_rejected(value: str) -> None:
    with pytest.raises(InvalidInstantError, match="is not an instant time"):
        validate_instant_time(value)


def test_commit_metadata_v6_json(tables: dict[str, Path]) -> None:
    base = tables["cow_v6_simplekeygen_nonhivestyle_overwritetable"]
    replace = sorted((base / ".hoodie").glob("*.replacecommit"))[0]
    meta = decode_commit_metadata(replace.read_bytes())
    assert meta.operation_type == "INSERT_OVERWRITE_TABLE"
    assert meta.replaced_file_ids, "an overwrite of the table replaces file groups"
    assert meta.records_written == 1  # README: one row after INSERT OVERWRITE TABLE
    assert meta.schema_json and '"type":"record"' in meta.schema_json.replace(" ", "")


def test_commit_metadata_v9_avro(tables: dict[str, Path]) -> None:
    directory = tables["mor_avro_v9_txns_simple_nometa"] / ".hoodie" / "timeline"
    deltas = sorted(directory.glob("*_*.deltacommit"))
    first = decode_commit_metadata(deltas[0].read_bytes())
    assert first.operation_type in {"UPSERT", "INSERT", "BULK_INSERT"}
    assert first.records_written == 8  # README: eight transactions inserted first
    later = [decode_commit_metadata(p.read_bytes()) for p in deltas[1:]]
    assert any(s.is_log_file for m in later for s in m.write_stats), "MOR updates go to log files"
    compaction = [decode_commit_metadata(p.read_bytes()) for p in sorted(directory.glob("*_*.commit"))]
    assert [m.operation_type for m in compaction] == ["COMPACT"]
