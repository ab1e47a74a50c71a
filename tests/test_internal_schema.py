"""Schema on read: columns found by id across schema versions, on a history shaped as Hudi 1.2 writes it
(``.hoodie/.schema/<instant>_<completion>.schemacommit`` after ALTER TABLE rename v to v2, drop d,
add d string). The end-to-end check against Hudi's own reads is the ``schema_on_read`` cells of
``integration/test_conformance_matrix.py``."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from hudi_connect.core.errors import UnsupportedTableFeatureError
from hudi_connect.core.format.internal_schema import (
    column_renames,
    latest_history_file,
    renames_needed,
    schema_history,
    version_at,
    versions_with_renames,
    with_reader_names,
)

META = [{"id": i, "name": n, "optional": True, "type": "string", "doc": ""} for i, n in enumerate(
    ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
     "_hoodie_file_name"])]


def version(version_id: int, *fields: tuple[int, str, object]) -> dict[str, object]:
    return {"max_column_id": max(f[0] for f in fields), "version_id": version_id, "type": "record",
            "fields": META + [{"id": i, "name": n, "optional": True, "type": t} for i, n, t in fields]}


BASE = [(5, "id", "int"), (6, "part", "string")]
HISTORY = json.dumps({"schemas": [  # newest first, as Hudi writes it
    version(20250101000400000, *BASE, (9, "v2", "string"), (11, "d", "string")),
    version(20250101000300000, *BASE, (9, "v2", "string")),
    version(20250101000200000, *BASE, (9, "v2", "string"), (10, "d", "int")),
    version(0, *BASE, (9, "v", "string"), (10, "d", "int")),
]})


def test_a_file_has_the_greatest_version_at_or_before_its_instant() -> None:
    versions = schema_history(HISTORY)
    assert [v.version_id for v in versions] == ["0", "20250101000200000", "20250101000300000", "20250101000400000"]
    assert version_at(versions, "20250101000100000").version_id == "0"  # type: ignore[union-attr]
    assert version_at(versions, "20250101000300000").version_id == "20250101000300000"  # type: ignore[union-attr]
    assert version_at(versions, "20250101000350000").version_id == "20250101000300000"  # type: ignore[union-attr]


def test_columns_are_matched_by_id_so_a_dropped_column_never_returns_under_its_old_name() -> None:
    versions = schema_history(HISTORY)
    latest = versions[-1]
    assert renames_needed(versions, latest)
    first = dict(column_renames(versions[0], latest))
    assert first["v"] == "v2" and "d" not in first  # id 10 was dropped; the d readers see is id 11
    old_file = pa.table({"_hoodie_commit_time": ["1"], "id": [1], "part": ["a"], "v": ["x"], "d": [7]})
    renames = versions_with_renames(versions, latest)
    read = with_reader_names(old_file, renames, "20250101000100000")
    assert read.column_names == ["_hoodie_commit_time", "id", "part", "v2"]
    assert read.to_pylist() == [{"_hoodie_commit_time": "1", "id": 1, "part": "a", "v2": "x"}]
    new_file = pa.table({"id": [2], "part": ["b"], "v2": ["y"], "d": ["z"]})
    assert with_reader_names(new_file, renames, "20250101000500000").to_pylist() == [
        {"id": 2, "part": "b", "v2": "y", "d": "z"}]


def test_time_travel_before_a_rename_reads_newer_files_under_the_old_names() -> None:
    versions = schema_history(HISTORY)
    reader = version_at(versions, "20250101000100000")
    assert reader is not None and renames_needed(versions, reader)
    assert dict(column_renames(versions[-1], reader)) == {
        "_hoodie_commit_time": "_hoodie_commit_time", "_hoodie_commit_seqno": "_hoodie_commit_seqno",
        "_hoodie_record_key": "_hoodie_record_key", "_hoodie_partition_path": "_hoodie_partition_path",
        "_hoodie_file_name": "_hoodie_file_name", "id": "id", "part": "part", "v2": "v"}


def test_a_history_without_renames_or_drops_needs_none() -> None:
    versions = schema_history(json.dumps({"schemas": [version(0, *BASE), version(20250101000200000, *BASE,
                                                                                 (7, "added", "string"))]}))
    assert not renames_needed(versions, versions[-1])


def test_a_nested_rename_is_refused_by_name() -> None:
    struct = {"type": "record", "fields": [{"id": 8, "name": "a", "optional": True, "type": "int"}]}
    renamed = {"type": "record", "fields": [{"id": 8, "name": "b", "optional": True, "type": "int"}]}
    versions = schema_history(json.dumps({"schemas": [version(0, *BASE, (7, "info", struct)),
                                                      version(20250101000200000, *BASE, (7, "info", renamed))]}))
    with pytest.raises(UnsupportedTableFeatureError) as caught:
        versions_with_renames(versions, versions[-1])
    assert caught.value.feature == "schema-on-read rename of a nested field"


def test_readers_trust_only_the_history_of_a_completed_commit() -> None:
    names = ["20250101000200000.schemacommit.requested", "20250101000200000_20250101000200100.schemacommit",
             "20250101000300000.schemacommit.inflight", "20250101000300000_20250101000300100.schemacommit",
             "20250101000400000_20250101000400100.schemacommit"]  # 04: its commit failed (not completed)
    completed = ["20250101000100000", "20250101000200000", "20250101000300000"]
    assert latest_history_file(names, completed) == "20250101000300000_20250101000300100.schemacommit"
    assert latest_history_file(names[:1], completed) is None
    # tables of version 6 name completed history files by their instant alone
    assert latest_history_file(["20250101000200000.schemacommit"], completed) == "20250101000200000.schemacommit"
