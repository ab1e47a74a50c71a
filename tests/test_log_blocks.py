"""Tests of hudi_connect.core.format.log, the pure-Python decoder of Hudi log files.

Datasets: the real tables of shared/fixtures/hudi-rs-tables, written by Apache
Hudi (see its README.md for each table's history):

- ``mor_avro_v6_trips_8i1u``: 8 inserts, then 1 update appended as an Avro data block.
- ``mor_avro_v6_trips_8i3d``: 8 inserts, then 3 deletes appended as a delete block.
- ``mor_avro_v9_txns_*``: table version 9; updates (Avro blocks) and deletes (delete
  blocks) of TXN-001..008, an update then a delete of TXN-005, then compaction and clustering.
- ``mor_parquet_v6_*``: an upsert appended as a Parquet data block, over a schema with
  nearly every Spark type.
- ``*_meta`` tables: their metadata tables' log files hold HFile and delete blocks.

Oracle: hudi-rs 0.5.0 (the ``hudi`` package), an independent reader of the same tables.
Synthetic blocks are built by :func:`encode_block`, whose output is checked to
reproduce every real block byte for byte.
"""

from __future__ import annotations

import ast
import dataclasses
import datetime
import decimal
import functools
import io
import json
import re
import struct
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hudi import HudiTableBuilder
from hudi_connect_stack.testing.fixture_tables import fixture_names, unzip_fixture
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hudi_connect.core.errors import HudiConnectError, LogDecodeError
from hudi_connect.core.format.log import (
    MAGIC,
    DeleteRecord,
    HeaderKey,
    LogBlock,
    LogBlockType,
    avro_to_arrow_schema,
    data_block_record_bytes,
    data_block_records,
    delete_records,
    read_log_blocks,
    rollback_target,
)

Tables = Callable[[str], Path]  # fixture table name -> its base path, unzipped once per session
REPO = Path(__file__).resolve().parents[1]
MOR_DATA_TABLES = [name for name in fixture_names() if name.startswith("mor_")]
META_TABLES = [name for name in fixture_names() if name.endswith("_meta")]
FUZZ = settings(derandomize=True, max_examples=200, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Hudi's on-disk ordinals, stated independently of the enums under test
# (HoodieLogBlock.HoodieLogBlockType and HoodieLogBlock.HeaderMetadataType).
BLOCK_TYPE_ORDINALS = {
    LogBlockType.COMMAND: 0, LogBlockType.DELETE: 1, LogBlockType.CORRUPT: 2, LogBlockType.AVRO_DATA: 3,
    LogBlockType.HFILE_DATA: 4, LogBlockType.PARQUET_DATA: 5, LogBlockType.CDC_DATA: 6,
}
HEADER_ORDINALS = {
    HeaderKey.INSTANT_TIME: 0, HeaderKey.TARGET_INSTANT_TIME: 1, HeaderKey.SCHEMA: 2,
    HeaderKey.COMMAND_BLOCK_TYPE: 3, HeaderKey.COMPACTED_BLOCK_TIMES: 4, HeaderKey.RECORD_POSITIONS: 5,
    HeaderKey.BLOCK_IDENTIFIER: 6, HeaderKey.IS_PARTIAL: 7, HeaderKey.BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS: 8,
}
LOG_FILE_NAME = re.compile(r"^\.(?P<file_id>.+)_(?P<instant>\d+)\.log\.(?P<version>\d+)_(?P<write_token>.+)$")
COMPLETED_DELTACOMMIT = re.compile(r"^(?P<instant>\d+)(_\d+)?\.deltacommit$")


# ---------------------------------------------------------------------------------------------------------------
# Helpers: a writer for synthetic blocks, and a reader that decodes everything
# ---------------------------------------------------------------------------------------------------------------

def _metadata_bytes(entries: Mapping[HeaderKey, str]) -> bytes:
    out = struct.pack(">i", len(entries))
    for key, value in entries.items():
        raw = value.encode()
        out += struct.pack(">ii", HEADER_ORDINALS[key], len(raw)) + raw
    return out


def encode_block(block_type: LogBlockType, headers: Mapping[HeaderKey, str], content: bytes,
                 footers: Mapping[HeaderKey, str] | None = None, *, version: int = 1) -> bytes:
    """One log block as HoodieLogFormatWriter writes it."""
    body = (struct.pack(">ii", version, BLOCK_TYPE_ORDINALS[block_type]) + _metadata_bytes(headers)
            + struct.pack(">q", len(content)) + content + _metadata_bytes(footers or {}))
    size = len(body) + 8
    return MAGIC + struct.pack(">q", size) + body + struct.pack(">q", size + len(MAGIC))


def reencode(block: LogBlock, block_type: LogBlockType | None = None, content: bytes | None = None) -> bytes:
    return encode_block(block_type or block.block_type, block.headers,
                        block.content if content is None else content, block.footers,
                        version=block.format_version or 1)


def avro_data_content(schema: Any, rows: list[dict[str, Any]], version: int = 3) -> bytes:
    """The content of an Avro data block (HoodieAvroDataBlock.serializeRecords) holding ``rows``."""
    parsed = fastavro.parse_schema(schema)
    out = struct.pack(">ii", version, len(rows))
    for row in rows:
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, row)
        out += struct.pack(">i", len(buffer.getvalue())) + buffer.getvalue()
    return out


def only_block(data: bytes) -> LogBlock:
    blocks = list(read_log_blocks(data))
    assert len(blocks) == 1, blocks
    return blocks[0]


def decode_block(block: LogBlock) -> object:
    if block.block_type in (LogBlockType.AVRO_DATA, LogBlockType.PARQUET_DATA, LogBlockType.CDC_DATA,
                            LogBlockType.HFILE_DATA):
        return data_block_records(block)
    if block.block_type is LogBlockType.DELETE:
        return delete_records(block)
    if block.block_type is LogBlockType.COMMAND:
        return rollback_target(block)
    return None


def decode_everything(data: bytes) -> list[LogBlock]:
    """Read every block and decode its content; only LogDecodeError may come out, and is swallowed.

    Also checks that the blocks read tile the file from its start.
    """
    blocks: list[LogBlock] = []
    try:
        for block in read_log_blocks(data):
            assert block.offset == (blocks[-1].offset + blocks[-1].size if blocks else 0)
            assert block.size > 0 and block.offset + block.size <= len(data)
            assert (block.format_version is None) == (block.block_type is LogBlockType.CORRUPT)
            blocks.append(block)
            try:
                decode_block(block)
            except LogDecodeError as error:
                assert str(error)
    except LogDecodeError as error:
        assert "block at byte" in str(error)
        return blocks
    end = blocks[-1].offset + blocks[-1].size if blocks else 0
    assert len(data) - end < len(MAGIC)
    return blocks


def hudi_rs_snapshot(base_path: Path) -> dict[str, dict[str, Any]]:
    """The latest snapshot as hudi-rs reads it, by record key."""
    batches = HudiTableBuilder.from_base_uri(str(base_path)).build().read()
    return {row["_hoodie_record_key"]: row for batch in batches for row in batch.to_pylist()}


def table_version(base_path: Path) -> int:
    properties = (base_path / ".hoodie" / "hoodie.properties").read_text()
    match = re.search(r"^hoodie\.table\.version=(\d+)$", properties, re.MULTILINE)
    assert match, properties
    return int(match.group(1))


def completed_deltacommits(base_path: Path) -> set[str]:
    hoodie = base_path / ".hoodie"
    names = [path.name for folder in (hoodie, hoodie / "timeline") if folder.is_dir() for path in folder.iterdir()]
    return {match.group("instant") for name in names if (match := COMPLETED_DELTACOMMIT.match(name))}


def log_files(base_path: Path, *, metadata_table: bool = False) -> list[Path]:
    """The log files (``.<fileId>_<instant>.log.<N>_<writeToken>``) of a table, or of its metadata table."""
    metadata = base_path / ".hoodie" / "metadata"
    return sorted(path for path in base_path.rglob(".*.log.*")
                  if path.is_file() and path.is_relative_to(metadata) == metadata_table)


def blocks_of(path: Path) -> list[LogBlock]:
    return list(read_log_blocks(path.read_bytes(), source=str(path)))


@pytest.fixture(scope="session")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Tables:
    root = tmp_path_factory.mktemp("hudi-rs-tables")
    return functools.cache(lambda name: unzip_fixture(name, root))


@pytest.fixture(scope="session")
def samples(tables: Tables) -> dict[str, bytes]:
    """Real log files: one Avro data block, one delete block, one Parquet data block, one HFile block."""
    def first_log(name: str, metadata_table: bool = False) -> bytes:
        return log_files(tables(name), metadata_table=metadata_table)[-1].read_bytes()
    return {
        "avro": first_log("mor_avro_v6_trips_8i1u"),
        "delete": first_log("mor_avro_v6_trips_8i3d"),
        "parquet": first_log("mor_parquet_v6_nonpartitioned"),
        "hfile": next(path.read_bytes() for path in log_files(tables("mor_avro_v9_txns_simple_meta"),
                                                               metadata_table=True)
                      if only_block(path.read_bytes()).block_type is LogBlockType.HFILE_DATA),
    }


# ---------------------------------------------------------------------------------------------------------------
# Every real log file
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", fixture_names())
def test_every_fixture_log_file_decodes(tables: Tables, name: str) -> None:
    base_path = tables(name)
    for path in log_files(base_path) + log_files(base_path, metadata_table=True):
        data = path.read_bytes()
        blocks = blocks_of(path)
        assert blocks, path
        assert sum(block.size for block in blocks) == len(data)
        for block in blocks:
            assert block.block_type is not LogBlockType.CORRUPT, (path, block.corruption)
            assert block.format_version == 1
            assert reencode(block) == data[block.offset:block.offset + block.size]
            if block.block_type is LogBlockType.HFILE_DATA:
                with pytest.raises(LogDecodeError, match="HFile"):
                    data_block_records(block)
                continue
            decoded = decode_block(block)
            if block.block_type in (LogBlockType.AVRO_DATA, LogBlockType.PARQUET_DATA):
                assert isinstance(decoded, pa.Table) and decoded.num_rows > 0
            if block.block_type is LogBlockType.DELETE:
                assert isinstance(decoded, list)


@pytest.mark.parametrize("name", MOR_DATA_TABLES)
def test_instant_headers_name_completed_deltacommits(tables: Tables, name: str) -> None:
    """Every block's INSTANT_TIME is a completed deltacommit. Since table version 8 a log file is named after
    the instant that wrote it; before, after its file slice's base instant, which precedes the block's."""
    base_path = tables(name)
    deltacommits = completed_deltacommits(base_path)
    paths = log_files(base_path)
    assert paths
    for path in paths:
        match = LOG_FILE_NAME.match(path.name)
        assert match, path.name
        for block in blocks_of(path):
            assert block.instant_time in deltacommits
            if table_version(base_path) >= 8:
                assert block.instant_time == match.group("instant")
            else:
                assert block.instant_time is not None and block.instant_time > match.group("instant")
            if block.is_data_block:
                assert block.schema_json is not None and json.loads(block.schema_json)["type"] == "record"
                assert block.target_instant_time is None


def test_update_block_equals_the_hudi_rs_snapshot_row(tables: Tables) -> None:
    base_path = tables("mor_avro_v6_trips_8i1u")
    [path] = log_files(base_path)
    [block] = blocks_of(path)
    assert block.block_type is LogBlockType.AVRO_DATA
    [record] = data_block_records(block).to_pylist()
    assert record["_hoodie_commit_time"] == block.instant_time
    snapshot_row = hudi_rs_snapshot(base_path)[record["uuid"]]
    assert {key: value for key, value in record.items() if not key.startswith("_hoodie_")} == \
        {key: value for key, value in snapshot_row.items() if not key.startswith("_hoodie_")}


@pytest.mark.parametrize("name", MOR_DATA_TABLES)
def test_log_records_equal_hudi_rs_rows_of_the_same_write(tables: Tables, name: str) -> None:
    """A record whose write survives in hudi-rs's snapshot (same commit sequence number, kept by compaction
    and clustering) equals that snapshot row in every column but the file name."""
    base_path = tables(name)
    snapshot = hudi_rs_snapshot(base_path)
    records = [record for path in log_files(base_path) for block in blocks_of(path)
               if block.block_type in (LogBlockType.AVRO_DATA, LogBlockType.PARQUET_DATA)
               for record in data_block_records(block).to_pylist()]
    surviving = [record for record in records
                 if snapshot.get(record["_hoodie_record_key"], {}).get("_hoodie_commit_seqno")
                 == record["_hoodie_commit_seqno"]]
    if records:
        assert surviving
    for record in surviving:
        row = snapshot[record["_hoodie_record_key"]]
        assert {key: value for key, value in record.items() if key != "_hoodie_file_name"} == \
            {key: value for key, value in row.items() if key in record and key != "_hoodie_file_name"}


def test_delete_block_holds_the_keys_hudi_rs_no_longer_sees(tables: Tables) -> None:
    base_path = tables("mor_avro_v6_trips_8i3d")
    first_commit_keys = {key for path in base_path.rglob("*.parquet") if ".hoodie" not in path.parts
                         for key in pq.ParquetFile(path).read(columns=["_hoodie_record_key"]).column(0).to_pylist()}
    [path] = log_files(base_path)
    [block] = blocks_of(path)
    assert block.block_type is LogBlockType.DELETE
    deleted = delete_records(block)
    assert len(deleted) == 3
    assert {record.record_key for record in deleted} == first_commit_keys - set(hudi_rs_snapshot(base_path))
    assert {(record.partition_path, record.ordering_value) for record in deleted} == {("city=san_francisco", 0)}


@pytest.mark.parametrize("name", [name for name in MOR_DATA_TABLES if "_v9_" in name])
def test_v9_delete_blocks_delete_txn_002_and_005(tables: Tables, name: str) -> None:
    base_path = tables(name)
    deleted = [record for path in log_files(base_path) for block in blocks_of(path)
               if block.block_type is LogBlockType.DELETE for record in delete_records(block)]
    assert {record.record_key for record in deleted} == {"TXN-002", "TXN-005"}
    assert not {record.record_key for record in deleted} & set(hudi_rs_snapshot(base_path))


@pytest.mark.parametrize("name", META_TABLES)
def test_metadata_table_logs_hold_hfile_and_delete_blocks(tables: Tables, name: str) -> None:
    paths = log_files(tables(name), metadata_table=True)
    types = {block.block_type for path in paths for block in blocks_of(path)}
    assert types == {LogBlockType.HFILE_DATA, LogBlockType.DELETE}


def test_parquet_block_keeps_every_spark_type(tables: Tables) -> None:
    [path] = log_files(tables("mor_parquet_v6_nonpartitioned"))
    [block] = blocks_of(path)
    assert block.block_type is LogBlockType.PARQUET_DATA
    table = data_block_records(block)
    assert table.num_rows == 1
    assert table.schema.field("timestampField").type == pa.timestamp("us", tz="UTC")
    assert table.schema.field("decimalField").type == pa.decimal128(10, 5)
    assert table.column("id").to_pylist() == [1]


# ---------------------------------------------------------------------------------------------------------------
# Avro to Arrow
# ---------------------------------------------------------------------------------------------------------------

def _avro_value(value: Any) -> Any:
    """An Arrow Python value as fastavro writes it: maps as dicts."""
    if isinstance(value, list):
        if value and all(isinstance(item, tuple) and len(item) == 2 for item in value):
            return {key: _avro_value(item) for key, item in value}
        return [_avro_value(item) for item in value]
    if isinstance(value, dict):
        return {key: _avro_value(item) for key, item in value.items()}
    return value


def test_avro_block_of_every_spark_type_reads_like_hudi_rs(tables: Tables) -> None:
    """The rows hudi-rs reads from the all-types table, written as an Avro block with the table's Avro schema,
    come back equal, with the Arrow types hudi-rs gives them."""
    base_path = tables("mor_parquet_v6_nonpartitioned")
    [block] = blocks_of(log_files(base_path)[0])
    assert block.schema_json is not None
    schema = json.loads(block.schema_json)
    rows = list(hudi_rs_snapshot(base_path).values())
    nulls = {field["name"]: None for field in schema["fields"]}
    content = avro_data_content(schema, [_avro_value(row) for row in rows] + [nulls])
    avro_block = only_block(reencode(block, LogBlockType.AVRO_DATA, content))
    table = data_block_records(avro_block)
    assert table.to_pylist() == [*rows, nulls]
    hudi_rs_schema = HudiTableBuilder.from_base_uri(str(base_path)).build().get_schema_with_meta_fields()
    for field in table.schema:
        assert field.type == hudi_rs_schema.field(field.name).type, field.name


def test_logical_types_named_types_and_nesting() -> None:
    fixed16 = {"type": "fixed", "name": "Hash", "size": 16}
    schema = {"type": "record", "name": "Everything", "namespace": "test", "fields": [
        {"name": "ts_millis", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "ts_micros", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
        {"name": "local_ts", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "time_millis", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "time_micros", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "big", "type": {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 3}},
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
        {"name": "hash", "type": fixed16},
        {"name": "hash_again", "type": ["null", "test.Hash"]},
        {"name": "matrix", "type": {"type": "array", "items": {"type": "array", "items": "double"}}},
        {"name": "dates_by_name", "type": {"type": "map", "values": {"type": "int", "logicalType": "date"}}},
        {"name": "nested", "type": {"type": "record", "name": "Nested", "fields": [
            {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}}]}},
        {"name": "float", "type": "float"},
    ]}
    utc = datetime.UTC
    row = {
        "ts_millis": datetime.datetime(2024, 1, 2, 3, 4, 5, 6000, tzinfo=utc),
        "ts_micros": datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=utc),
        "local_ts": datetime.datetime(2024, 5, 6, 7, 8, 9, 10),
        "time_millis": datetime.time(1, 2, 3, 4000),
        "time_micros": datetime.time(23, 59, 59, 999999),
        "day": datetime.date(1900, 1, 1),
        "big": decimal.Decimal("-1234567890123456789012345678901234567.891"),
        "id": str(uuid.UUID(int=7)),
        "color": "GREEN",
        "hash": bytes(range(16)),
        "hash_again": None,
        "matrix": [[1.5], [], [2.0, -0.0]],
        "dates_by_name": {"epoch": datetime.date(1970, 1, 1)},
        "nested": {"at": datetime.datetime(2000, 2, 29, tzinfo=utc)},
        "float": 0.5,
    }
    block = only_block(encode_block(LogBlockType.AVRO_DATA, {HeaderKey.INSTANT_TIME: "1",
                                                             HeaderKey.SCHEMA: json.dumps(schema)},
                                    avro_data_content(schema, [row])))
    table = data_block_records(block)
    assert table.to_pylist() == [{**row, "dates_by_name": [("epoch", datetime.date(1970, 1, 1))]}]
    types = {field.name: field.type for field in table.schema}
    assert types["ts_millis"] == pa.timestamp("ms", tz="UTC")
    assert types["local_ts"] == pa.timestamp("us")
    assert types["time_millis"] == pa.time32("ms") and types["time_micros"] == pa.time64("us")
    assert types["big"] == pa.decimal256(40, 3)
    assert types["id"] == pa.string() and types["color"] == pa.string()
    assert types["hash"] == types["hash_again"] == pa.binary(16)
    assert table.schema.field("ts_micros").nullable and not table.schema.field("ts_millis").nullable
    assert avro_to_arrow_schema(json.dumps(schema)) == table.schema


@pytest.mark.parametrize("schema, message", [
    ({"type": "record", "name": "r", "fields": [{"name": "u", "type": ["null", "int", "string"]}]}, "union"),
    ({"type": "record", "name": "r", "fields": [{"name": "a", "type": {"type": "array", "items": "null"}}]},
     "take no bytes"),
    ({"type": "record", "name": "r", "fields": [{"name": "x", "type": "Missing"}]}, "undefined type"),
    ({"type": "array", "items": "int"}, "must be a record"),
    ('{"type": "record", "name": "r", "fields": [{"name": "deep", "type": '
     + '{"type": "array", "items": ' * 5000 + '"int"' + "}" * 5000 + "}]}", "nested too deeply|not valid JSON"),
])
def test_unsupported_avro_schemas_are_refused(schema: Any, message: str) -> None:
    with pytest.raises(LogDecodeError, match=message):
        avro_to_arrow_schema(schema if isinstance(schema, str) else json.dumps(schema))


def test_reader_schema_drops_and_adds_columns(samples: dict[str, bytes]) -> None:
    for sample in ("avro", "parquet"):
        block = only_block(samples[sample])
        assert block.schema_json is not None
        schema = json.loads(block.schema_json)
        kept = [field for field in schema["fields"] if field["name"] not in ("rider", "name")]
        added = {"name": "tip", "type": ["null", "double"], "default": None}
        reader = json.dumps({**schema, "fields": [*kept, added]})
        table = data_block_records(block, reader)
        assert table.column_names == [field["name"] for field in kept] + ["tip"]
        assert table.column("tip").to_pylist() == [None] * table.num_rows
        full = data_block_records(block)
        assert table.column(kept[-1]["name"]).to_pylist() == full.column(kept[-1]["name"]).to_pylist()


def test_cdc_block_decodes_like_an_avro_block(samples: dict[str, bytes]) -> None:
    block = only_block(samples["avro"])
    cdc = only_block(reencode(block, LogBlockType.CDC_DATA))
    assert cdc.block_type is LogBlockType.CDC_DATA and cdc.is_data_block
    assert data_block_records(cdc) == data_block_records(block)


def test_record_bytes_are_each_record_undecoded(samples: dict[str, bytes]) -> None:
    """What the JVM decodes: each record's bytes alone decode (fastavro, the block's writer schema) to the
    record the block decodes to."""
    block = only_block(samples["avro"])
    assert block.schema_json is not None
    schema = fastavro.parse_schema(json.loads(block.schema_json))
    records = data_block_record_bytes(block)
    decoded = [fastavro.schemaless_reader(io.BytesIO(record), schema, None) for record in records]
    assert decoded == data_block_records(block).to_pylist()
    assert len(records) > 0
    with pytest.raises(ValueError, match="no Avro records"):
        data_block_record_bytes(only_block(reencode(block, LogBlockType.PARQUET_DATA)))


# ---------------------------------------------------------------------------------------------------------------
# Delete and command blocks
# ---------------------------------------------------------------------------------------------------------------

# HoodieDeleteRecordList.avsc as Hudi writes it, ordering values wrapped as in HoodieMetadata.avsc.
_WRAPPED = ["boolean", "int", "long", "float", "double", "bytes", "string", "int",
            {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}, "long", "long"]
_WRAPPER_NAMES = ["BooleanWrapper", "IntWrapper", "LongWrapper", "FloatWrapper", "DoubleWrapper", "BytesWrapper",
                  "StringWrapper", "DateWrapper", "DecimalWrapper", "TimeMicrosWrapper", "TimestampMicrosWrapper"]
_WRAPPERS = [{"type": "record", "name": name, "fields": [{"name": "value", "type": value_type}]}
             for name, value_type in zip(_WRAPPER_NAMES, _WRAPPED, strict=True)]


def _java_delete_list_schema(ordering: list[Any]) -> dict[str, Any]:
    return {"type": "record", "name": "HoodieDeleteRecordList", "namespace": "org.apache.hudi.avro.model",
            "fields": [{"name": "deleteRecordList", "type": {"type": "array", "items": {
                "type": "record", "name": "HoodieDeleteRecord", "fields": [
                    {"name": "recordKey", "type": ["null", "string"], "default": None},
                    {"name": "partitionPath", "type": ["null", "string"], "default": None},
                    {"name": "orderingVal", "type": ["null", *ordering], "default": None}]}}}]}


def _delete_block(records: list[dict[str, Any]], schema: dict[str, Any], version: int = 3) -> LogBlock:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema), {"deleteRecordList": records})
    content = struct.pack(">ii", version, len(buffer.getvalue())) + buffer.getvalue()
    return only_block(encode_block(LogBlockType.DELETE, {HeaderKey.INSTANT_TIME: "20250101000000000"}, content))


def test_a_delete_of_several_ordering_fields_as_hudi_1_2_wrote_it() -> None:
    """The payloads of two delete blocks Hudi 1.2.0 wrote to a MOR table ordered by ``ts,ts2`` (ints): a delete
    by key (its Integer 0 alone: natural) and a soft delete at (5, 1), an ``ArrayWrapper`` (a thirteenth branch of
    the ordering value's union) of two IntWrappers, which is never Hudi's natural order."""
    def block(payload: str) -> LogBlock:
        content = bytes.fromhex(payload)
        return only_block(encode_block(LogBlockType.DELETE, {HeaderKey.INSTANT_TIME: "20261129042830069"},
                                       struct.pack(">ii", 3, len(content)) + content))
    assert delete_records(block("02020233020261040000")) == [DeleteRecord("3", "a", 0, natural_order=True)]
    assert delete_records(block("02020230020261180204040a04020000")) == [DeleteRecord("0", "a", (5, 1))]
    # a date among them is a LocalDateWrapper, a branch of the array's items alone (seed 70120: refused before);
    # encoded with the schema of Hudi 1.2.0's HoodieDeleteRecordList class, key 7 at (day 19000, 3)
    assert delete_records(block("02020237020018020418f0a80204060000")) == [
        DeleteRecord("7", "", (datetime.date(1970, 1, 1) + datetime.timedelta(days=19000), 3))]


def test_delete_records_unwrap_ordering_values() -> None:
    def wrapped(name: str, value: object) -> tuple[str, dict[str, object]]:
        return (f"org.apache.hudi.avro.model.{name}", {"value": value})
    records: list[dict[str, Any]] = [
        {"recordKey": "a", "partitionPath": "p=1", "orderingVal": wrapped("LongWrapper", 1695046462179)},
        {"recordKey": "b", "partitionPath": None, "orderingVal": wrapped("StringWrapper", "z")},
        {"recordKey": "c", "partitionPath": "", "orderingVal": wrapped("DateWrapper", 19000)},
        {"recordKey": "d", "partitionPath": "", "orderingVal": wrapped("TimestampMicrosWrapper", 1_000_001)},
        {"recordKey": "e", "partitionPath": "", "orderingVal": wrapped("DecimalWrapper", decimal.Decimal("1.5"))},
        {"recordKey": "f", "partitionPath": "", "orderingVal": None},
        # Hudi's natural order is no value or exactly Integer 0 (OrderingValues.isDefault); 0L and 0.0 are values
        {"recordKey": "g", "partitionPath": "", "orderingVal": wrapped("IntWrapper", 0)},
        {"recordKey": "h", "partitionPath": "", "orderingVal": wrapped("LongWrapper", 0)},
        {"recordKey": "i", "partitionPath": "", "orderingVal": wrapped("DoubleWrapper", 0.0)},
        {"recordKey": "j", "partitionPath": "", "orderingVal": wrapped("IntWrapper", 7)},
    ]
    block = _delete_block(records, _java_delete_list_schema(_WRAPPERS))
    assert delete_records(block) == [
        DeleteRecord("a", "p=1", 1695046462179),
        DeleteRecord("b", "", "z"),
        DeleteRecord("c", "", datetime.date(1970, 1, 1) + datetime.timedelta(days=19000)),
        DeleteRecord("d", "", datetime.datetime(1970, 1, 1, 0, 0, 1, 1, tzinfo=datetime.UTC)),
        DeleteRecord("e", "", decimal.Decimal("1.500000000000000")),
        DeleteRecord("f", "", None, natural_order=True),
        DeleteRecord("g", "", 0, natural_order=True),
        DeleteRecord("h", "", 0),
        DeleteRecord("i", "", 0.0),
        DeleteRecord("j", "", 7),
    ]


def test_delete_records_of_the_several_ordering_fields_layout() -> None:
    """Hudi's master branch declares orderingVal as an array of wrapped values (one per ordering field)."""
    schema = _java_delete_list_schema([{"type": "array", "items": ["null", *_WRAPPERS]}])
    records = [{"recordKey": "k", "partitionPath": "p",
                "orderingVal": [("org.apache.hudi.avro.model.IntWrapper", {"value": 3}),
                                ("org.apache.hudi.avro.model.StringWrapper", {"value": "x"})]}]
    assert delete_records(_delete_block(records, schema)) == [DeleteRecord("k", "p", (3, "x"))]


@pytest.mark.parametrize("version, message", [(1, "version 1 holds Kryo"), (2, "version 2 holds Kryo"),
                                              (4, "version 4 is not supported")])
def test_delete_blocks_of_other_versions_are_refused(version: int, message: str) -> None:
    block = _delete_block([], _java_delete_list_schema(_WRAPPERS), version=version)
    with pytest.raises(LogDecodeError, match=message):
        delete_records(block)


def _command_block(headers: Mapping[HeaderKey, str]) -> LogBlock:
    return only_block(encode_block(LogBlockType.COMMAND, headers, b""))


def test_rollback_command_block_names_its_target(samples: dict[str, bytes]) -> None:
    block = _command_block({HeaderKey.INSTANT_TIME: "20250126040936578", HeaderKey.COMMAND_BLOCK_TYPE: "0",
                            HeaderKey.TARGET_INSTANT_TIME: "20250126040826878"})
    assert rollback_target(block) == "20250126040826878" == block.target_instant_time
    assert block.instant_time == "20250126040936578" and not block.is_data_block
    assert rollback_target(only_block(samples["avro"])) is None
    with pytest.raises(LogDecodeError, match="unknown command block type"):
        rollback_target(_command_block({HeaderKey.COMMAND_BLOCK_TYPE: "1", HeaderKey.TARGET_INSTANT_TIME: "1"}))
    with pytest.raises(LogDecodeError, match="TARGET_INSTANT_TIME"):
        rollback_target(_command_block({HeaderKey.COMMAND_BLOCK_TYPE: "0"}))


def test_functions_refuse_blocks_of_the_wrong_kind(samples: dict[str, bytes]) -> None:
    with pytest.raises(ValueError, match="holds no records"):
        data_block_records(only_block(samples["delete"]))
    with pytest.raises(ValueError, match="not a delete block"):
        delete_records(only_block(samples["avro"]))
    with pytest.raises(TypeError):
        list(read_log_blocks(bytearray(samples["avro"])))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------------------
# Damaged files: corrupt blocks as Hudi reports them, LogDecodeError for the rest, never anything else
# ---------------------------------------------------------------------------------------------------------------

def test_empty_file_has_no_blocks() -> None:
    assert list(read_log_blocks(b"")) == []
    assert list(read_log_blocks(MAGIC[:5])) == []  # Hudi's reader meets EOF reading the magic and stops


def test_file_of_only_the_magic_is_one_corrupt_block() -> None:
    [block] = read_log_blocks(MAGIC)
    assert (block.block_type, block.offset, block.size, block.content) == (LogBlockType.CORRUPT, 0, 6, b"")
    assert block.corruption is not None and "block size field" in block.corruption
    assert dict(block.headers) == {} and block.instant_time is None


def test_garbage_before_the_first_magic_is_a_corrupt_block(samples: dict[str, bytes]) -> None:
    corrupt, block = read_log_blocks(b"garbage" + samples["avro"])
    assert (corrupt.block_type, corrupt.offset, corrupt.size, corrupt.content) == \
        (LogBlockType.CORRUPT, 0, 7, b"garbage")
    assert block.block_type is LogBlockType.AVRO_DATA and block.offset == 7


@pytest.mark.parametrize("sample", ["avro", "parquet", "delete"])
def test_truncated_copies_are_one_corrupt_block(samples: dict[str, bytes], sample: str) -> None:
    data = samples[sample]
    for cut in range(len(MAGIC), len(data), 7):
        [block] = decode_everything(data[:cut])
        assert block.block_type is LogBlockType.CORRUPT and block.size == cut


def test_truncated_two_block_file_keeps_the_intact_first_block(samples: dict[str, bytes]) -> None:
    first, second = samples["avro"], samples["delete"]
    data = first + second
    for cut in range(len(first) + len(MAGIC), len(data), 7):
        blocks = decode_everything(data[:cut])
        assert [block.block_type for block in blocks] == [LogBlockType.AVRO_DATA, LogBlockType.CORRUPT]


def _flip(data: bytes, position: int) -> bytes:
    return data[:position] + bytes([data[position] ^ 0xFF]) + data[position + 1:]


@pytest.mark.parametrize("damage", ["size field", "reverse pointer", "bytes cut from the middle",
                                    "bytes added to the middle"])
def test_damaged_block_is_corrupt_and_the_next_block_is_still_read(samples: dict[str, bytes], damage: str) -> None:
    first, second = samples["avro"], samples["delete"]
    damaged = {
        "size field": lambda: _flip(first, len(MAGIC) + 7),
        "reverse pointer": lambda: _flip(first, len(first) - 1),
        "bytes cut from the middle": lambda: first[:500] + first[510:],
        "bytes added to the middle": lambda: first[:500] + b"\x00" * 10 + first[500:],
    }[damage]()
    corrupt, block = decode_everything(damaged + second)
    assert corrupt.block_type is LogBlockType.CORRUPT and corrupt.corruption
    assert (corrupt.offset, corrupt.size, corrupt.content) == (0, len(damaged), damaged[len(MAGIC):])
    assert block.block_type is LogBlockType.DELETE and block.offset == len(damaged)
    assert len(delete_records(block)) == 3


def test_damaged_content_raises_only_log_decode_errors(samples: dict[str, bytes]) -> None:
    """Blocks carry no checksum: damage inside a well-framed block shows when its content is decoded."""
    for sample in ("avro", "delete", "parquet"):
        data = samples[sample]
        for position in range(len(MAGIC) + 8, len(data) - 8, 3):
            decode_everything(_flip(data, position))


@pytest.mark.parametrize("mutate, message", [
    (lambda body: struct.pack(">i", 2) + body[4:], "log format version 2"),
    (lambda body: body[:4] + struct.pack(">i", 7) + body[8:], "unknown block type ordinal 7"),
    (lambda body: body[:8] + struct.pack(">i", 2**31 - 1) + body[12:], "header entry count"),
    (lambda body: body[:12] + struct.pack(">i", 9) + body[16:], "unknown key ordinal 9"),
    (lambda body: body[:16] + struct.pack(">i", 2**31 - 1) + body[20:], "needs 2147483647 bytes"),
    (lambda body: body[:16] + struct.pack(">i", -5) + body[20:], "needs -5 bytes"),
])
def test_well_framed_blocks_with_impossible_fields_raise(samples: dict[str, bytes], mutate: Any,
                                                         message: str) -> None:
    data = samples["avro"]
    body = mutate(data[len(MAGIC) + 8:-8])
    with pytest.raises(LogDecodeError, match=message) as raised:
        list(read_log_blocks(data[:len(MAGIC) + 8] + body + data[-8:], source="f.log"))
    assert str(raised.value).startswith("f.log: block at byte 0: ")
    assert isinstance(raised.value, HudiConnectError)


def test_huge_lengths_in_contents_are_refused_before_allocating(samples: dict[str, bytes]) -> None:
    avro, delete = only_block(samples["avro"]), only_block(samples["delete"])
    huge_count = struct.pack(">ii", 3, 2**31 - 1) + avro.content[8:]
    with pytest.raises(LogDecodeError, match="record count 2147483647 does not fit"):
        data_block_records(only_block(reencode(avro, content=huge_count)))
    huge_record = avro.content[:8] + struct.pack(">i", 2**31 - 1) + avro.content[12:]
    with pytest.raises(LogDecodeError, match="claims 2147483647 bytes"):
        data_block_records(only_block(reencode(avro, content=huge_record)))
    huge_deletes = delete.content[:4] + struct.pack(">i", 2**31 - 1) + delete.content[8:]
    with pytest.raises(LogDecodeError, match="claim 2147483647 bytes"):
        delete_records(only_block(reencode(delete, content=huge_deletes)))
    header_length = encode_block(LogBlockType.AVRO_DATA, {}, b"")
    size_field = struct.pack(">q", 2**62)
    assert only_block(header_length[:6] + size_field + header_length[14:]).block_type is LogBlockType.CORRUPT


def test_blocks_are_immutable(samples: dict[str, bytes]) -> None:
    block = only_block(samples["avro"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        block.offset = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        block.headers[HeaderKey.INSTANT_TIME] = "x"  # type: ignore[index]


@FUZZ
@given(data=st.binary(max_size=3000))
def test_fuzz_random_bytes(data: bytes) -> None:
    decode_everything(data)
    decode_everything(MAGIC + data)


@FUZZ
@given(choice=st.sampled_from(["avro", "delete", "parquet", "hfile", "avro+delete"]),
       flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=1, max_value=255)), max_size=4),
       cut=st.one_of(st.none(), st.integers(min_value=0)),
       insert=st.one_of(st.none(), st.tuples(st.integers(min_value=0), st.sampled_from([MAGIC, b"\x00" * 9,
                                                                                          b"\xff" * 8]))))
def test_fuzz_damaged_real_files(samples: dict[str, bytes], choice: str, flips: list[tuple[int, int]],
                                 cut: int | None, insert: tuple[int, bytes] | None) -> None:
    data = bytearray(samples["avro"] + samples["delete"] if choice == "avro+delete" else samples[choice])
    for position, mask in flips:
        data[position % len(data)] ^= mask
    if insert is not None:
        position = insert[0] % len(data)
        data[position:position] = insert[1]
    if cut is not None:
        del data[cut % (len(data) + 1):]
    decode_everything(bytes(data))


# ---------------------------------------------------------------------------------------------------------------
# What the package may import: it runs in Spark executors' Python workers
# ---------------------------------------------------------------------------------------------------------------

def _imports(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def test_package_imports_only_stdlib_pyarrow_and_fastavro() -> None:
    core = REPO / "hudi_connect" / "core"
    sources = [*sorted((core / "format" / "log").glob("*.py")), core / "format" / "parquet_files.py",
               core / "errors.py"]
    assert len(sources) > 3
    for source in sources:
        # the optional native decoder, with numpy, only where a worker's Python has it
        optional = {"datafusion", "numpy"} if source.name == "native_avro.py" else set()
        for module in _imports(source):
            top = module.split(".")[0]
            allowed = top in sys.stdlib_module_names or top in {"pyarrow", "fastavro", *optional} or \
                module in ("hudi_connect.core.errors", "hudi_connect.core.format.parquet_files") or \
                module.startswith("hudi_connect.core.format.log")
            assert allowed, f"{source.name} imports {module}"
    # Loaded without hudi_connect/__init__.py, as from a zip of just these modules, nothing else comes along.
    probe = (
        "import sys, types\n"
        f"package = types.ModuleType('hudi_connect'); package.__path__ = [{str(REPO / 'hudi_connect')!r}]\n"
        "sys.modules['hudi_connect'] = package\n"
        "import hudi_connect.core.format.log\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'pyspark', 'pandas', 'py4j', 'grpc'}))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
