"""A bootstrapped table's skeleton files joined with their source files (issue #70), against plain models: the
join by position, the partition column read from a hive-style path, the index entry's source file. Hudi's own
bootstrap is read against Hudi in ``integration/test_read_what_we_refused.py``."""

from __future__ import annotations

import io

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_connect.core.errors import LogDecodeError, UnsupportedTableFeatureError
from hudi_connect.core.format.bootstrap import (
    Bootstrap,
    index_key,
    is_skeleton,
    joined_records,
    source_uri,
)
from hudi_connect.core.format.table_config import TableProperties
from hudi_connect.core.format.table_features import check_readable
from hudi_connect.core.format.table_schema import META_COLUMNS

SCHEMA = pa.schema([*(pa.field(c, pa.string()) for c in META_COLUMNS), ("id", pa.int32()), ("name", pa.string()),
                    ("part", pa.int64())])
BOOTSTRAP = Bootstrap("file:///t/.hoodie/.aux/.bootstrap/.fileids/x.hfile", ("part",), hive_style=True,
                      url_encoded=False)


def test_skeleton_files_are_those_of_the_bootstrap_instant() -> None:
    assert is_skeleton("162fe6fa-e1e7-4399-98a2-2b95bcb495a2_3-10-14_00000000000001.parquet")
    assert not is_skeleton("162fe6fa-e1e7-4399-98a2-2b95bcb495a2_0-34-57_20261129045026617.parquet")
    assert not is_skeleton("162fe6fa-0_0-34-57_00000000000002.parquet")  # a full-record bootstrap's: ordinary
    assert index_key("part=a", "162fe6fa") == b"part=part=a;fileid=162fe6fa"


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(-5, 5), st.one_of(st.none(), st.text(max_size=3))), max_size=8),
       part=st.integers(-3, 3))
def test_skeleton_and_source_join_row_by_row_with_the_partition_from_the_path(
        rows: list[tuple[int, str | None]], part: int) -> None:
    keys = [str(i) for i, _ in rows]
    skeleton = pa.table({c: pa.array(keys if c == "_hoodie_record_key" else [c] * len(rows), pa.string())
                         for c in META_COLUMNS})
    source = pa.table({"id": pa.array([i for i, _ in rows], pa.int32()), "name": [n for _, n in rows]})
    joined = joined_records(skeleton, source, f"part={part}", BOOTSTRAP, SCHEMA, where="f")
    assert joined.select([c.name for c in SCHEMA]).to_pylist() == [
        {**{c: c for c in META_COLUMNS}, "_hoodie_record_key": str(i), "id": i, "name": n, "part": part}
        for i, n in rows]


def test_a_join_of_files_of_other_lengths_or_an_unreadable_partition_is_refused() -> None:
    skeleton = pa.table({c: ["x"] for c in META_COLUMNS})
    with pytest.raises(LogDecodeError, match="cannot be joined by position"):
        joined_records(skeleton, pa.table({"id": pa.array([1, 2], pa.int32())}), "part=1", BOOTSTRAP, SCHEMA, "f")
    with pytest.raises(UnsupportedTableFeatureError, match="partition column"):
        joined_records(skeleton, pa.table({"id": pa.array([1], pa.int32())}), "part=x", BOOTSTRAP, SCHEMA, "f")


def index_entry(uri: str) -> bytes:
    """An entry of the file-id index as Hudi writes it: one HoodieBootstrapFilePartitionInfo in an Avro container."""
    path = {"type": "record", "name": "HoodiePath", "fields": [
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "uri", "type": ["null", "string"], "default": None}]}
    status = {"type": "record", "name": "HoodieFileStatus", "fields": [
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "path", "type": ["null", path], "default": None},
        {"name": "length", "type": ["null", "long"], "default": None}]}
    schema = {"type": "record", "name": "HoodieBootstrapFilePartitionInfo", "namespace": "org.apache.hudi.avro.model",
              "fields": [{"name": "version", "type": ["int", "null"], "default": 1},
                         {"name": "bootstrapPartitionPath", "type": ["null", "string"], "default": None},
                         {"name": "bootstrapFileStatus", "type": ["null", status], "default": None},
                         {"name": "partitionPath", "type": ["null", "string"], "default": None}]}
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), [{
        "version": 1, "bootstrapPartitionPath": "part=a", "partitionPath": "part=a",
        "bootstrapFileStatus": {"version": 1, "path": {"version": 1, "uri": uri}, "length": 10}}])
    return out.getvalue()


def test_the_index_names_the_source_file_as_a_uri_the_workers_read() -> None:
    assert source_uri(index_entry("file:/src/part=a/f.parquet"), "i") == "file:///src/part=a/f.parquet"
    assert source_uri(index_entry("s3a://lake/src/f.parquet"), "i") == "s3a://lake/src/f.parquet"
    with pytest.raises(LogDecodeError, match="not a bootstrap index entry"):
        source_uri(b"not avro", "i")


def test_a_bootstrap_names_its_index_and_one_without_it_is_refused_by_name() -> None:
    raw = {"hoodie.table.name": "t", "hoodie.table.type": "COPY_ON_WRITE", "hoodie.table.version": "9",
           "hoodie.table.recordkey.fields": "id", "hoodie.timeline.layout.version": "2"}
    assert Bootstrap.of("file:///t", TableProperties.from_properties(raw)) is None
    found = Bootstrap.of("file:///t", TableProperties.from_properties(raw | {"hoodie.bootstrap.base.path": "/src"}))
    assert found is not None and found.index_uri.endswith(".hoodie/.aux/.bootstrap/.fileids/"
                                                          "00000000-0000-0000-0000-000000000000-0_1-0-1_00000000000001.hfile")
    for key, value in (("hoodie.bootstrap.index.enable", "false"), ("hoodie.bootstrap.index.type", "NONE"),
                       ("hoodie.bootstrap.index.class", "org.apache.hudi.common.bootstrap.index.NoOpBootstrapIndex")):
        props = TableProperties.from_properties(raw | {"hoodie.bootstrap.base.path": "/src", key: value})
        with pytest.raises(UnsupportedTableFeatureError, match="without its index") as caught:
            check_readable(props)
        assert (caught.value.property, caught.value.value) == (key, value)
    check_readable(TableProperties.from_properties(raw | {"hoodie.bootstrap.base.path": "/src"}))
