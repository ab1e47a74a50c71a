"""Avro data blocks decoded by Arrow's compiled decoder (DataFusion) equal our own decoder's tables, value by
value, on random schemas and records; damaged framing is never read shifted."""

from __future__ import annotations

import datetime
import decimal
import io
import json
import struct
from typing import Any

import datafusion  # noqa: F401  (the test extras install it: without it this module fails, never skips)
import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hudi_connect.core.errors import LogDecodeError
from hudi_connect.core.format.log import native_avro
from hudi_connect.core.format.log.avro_records import avro_record_decoder, decode_avro_data_content, record_spans

UTC = datetime.UTC
NO_NAN = {"allow_nan": False, "allow_infinity": False}
# (schema, values) of the leaf types Hudi's writers put in log blocks
LEAVES: dict[str, tuple[Any, st.SearchStrategy[Any]]] = {
    "int": ("int", st.integers(-(2**31), 2**31 - 1)),
    "long": ("long", st.integers(-(2**63), 2**63 - 1)),
    "float": ("float", st.floats(width=32, allow_nan=False)),
    "double": ("double", st.floats(allow_nan=False)),
    "boolean": ("boolean", st.booleans()),
    "string": ("string", st.text(max_size=12)),
    "bytes": ("bytes", st.binary(max_size=12)),
    "date": ({"type": "int", "logicalType": "date"}, st.dates(datetime.date(1, 1, 1), datetime.date(9999, 12, 31))),
    "timestamp-micros": ({"type": "long", "logicalType": "timestamp-micros"},
                         st.datetimes(datetime.datetime(1, 1, 2), datetime.datetime(9999, 12, 30),
                                      timezones=st.just(UTC))),
    "timestamp-millis": ({"type": "long", "logicalType": "timestamp-millis"},
                         st.datetimes(datetime.datetime(1900, 1, 1), datetime.datetime(2200, 1, 1),
                                      timezones=st.just(UTC)).map(
                             lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))),
    "local-timestamp-micros": ({"type": "long", "logicalType": "local-timestamp-micros"},
                               st.datetimes(datetime.datetime(1, 1, 2), datetime.datetime(9999, 12, 30))),
    "decimal-bytes": ({"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2},
                      st.decimals(min_value=-(10**9), max_value=10**9, places=2, **NO_NAN)),
    "decimal-wide": ({"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 3},
                     st.decimals(min_value=-(10**36), max_value=10**36, places=3, **NO_NAN)),
    "uuid": ({"type": "string", "logicalType": "uuid"}, st.uuids().map(str)),
}


@st.composite
def schemas_and_rows(draw: st.DrawFn) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A record schema of leaves, nullable leaves, arrays, maps, a nested record, an enum and a fixed decimal,
    and rows of it (enough of them for the native path)."""
    fields: list[dict[str, Any]] = [{"name": "_hoodie_record_key", "type": ["null", "string"], "default": None}]
    values: dict[str, st.SearchStrategy[Any]] = {"_hoodie_record_key": st.none() | st.text(max_size=8)}
    for index, kind in enumerate(draw(st.lists(st.sampled_from(sorted(LEAVES)), min_size=1, max_size=6))):
        schema, strategy = LEAVES[kind]
        shape = draw(st.sampled_from(["plain", "nullable", "array", "map", "record"]))
        name = f"f{index}"
        if shape == "nullable":
            schema, strategy = ["null", schema], st.none() | strategy
        elif shape == "array":
            schema, strategy = {"type": "array", "items": schema}, st.lists(strategy, max_size=3)
        elif shape == "map":
            schema = {"type": "map", "values": schema}
            strategy = st.dictionaries(st.text(max_size=4), strategy, max_size=3)
        elif shape == "record":
            schema = ["null", {"type": "record", "name": f"R{index}", "fields": [{"name": "x", "type": schema}]}]
            strategy = st.none() | st.fixed_dictionaries({"x": strategy})
        fields.append({"name": name, "type": schema})
        values[name] = strategy
    fields.append({"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}})
    values["color"] = st.sampled_from(["RED", "GREEN"])
    fields.append({"name": "price", "type": ["null", {"type": "fixed", "name": "Price", "size": 8,
                                                      "logicalType": "decimal", "precision": 10, "scale": 2}]})
    values["price"] = st.none() | st.decimals(min_value=-(10**7), max_value=10**7, places=2, allow_nan=False,
                                              allow_infinity=False)
    distinct = draw(st.lists(st.fixed_dictionaries(values), min_size=1, max_size=8))
    count = draw(st.integers(native_avro.NATIVE_MIN_RECORDS, native_avro.NATIVE_MIN_RECORDS + 40))
    rows = [distinct[i % len(distinct)] for i in range(count)]
    return {"type": "record", "name": "hoodie_record", "namespace": "hoodie.t", "fields": fields}, rows


def block_content(schema: dict[str, Any], rows: list[dict[str, Any]]) -> bytes:
    parsed = fastavro.parse_schema(schema)
    records = []
    for row in rows:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, row)
        records.append(out.getvalue())
    return struct.pack(">ii", 3, len(records)) + b"".join(struct.pack(">i", len(r)) + r for r in records)


def python_decoded(content: bytes, schema_json: str) -> pa.Table:
    return avro_record_decoder(schema_json).decode(content, record_spans(content, "test"), "test")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(drawn=schemas_and_rows())
def test_arrows_decoder_equals_ours_value_by_value(drawn: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    schema, rows = drawn
    content, schema_json = block_content(schema, rows), json.dumps(schema)
    decoder = avro_record_decoder(schema_json)
    assert decoder.native_schema_json is not None
    native = native_avro.decode_natively(content, len(rows), decoder.native_schema_json, decoder.arrow_schema, "t")
    assert native is not None, "Arrow's decoder reads every type Hudi writes"
    ours = python_decoded(content, schema_json)
    assert native[0].schema == ours.schema
    assert native[0].to_pylist() == ours.to_pylist()
    assert decode_avro_data_content(content, schema_json, None, "t").equals(ours)


def test_small_blocks_and_other_reader_schemas_take_our_decoder() -> None:
    schema = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"}]}
    wide = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"},
                                                      {"name": "b", "type": ["null", "int"], "default": None}]}
    decoder = avro_record_decoder(json.dumps(schema), json.dumps(wide))
    assert decoder.native_schema_json is None
    content = block_content(schema, [{"a": i} for i in range(native_avro.NATIVE_MIN_RECORDS)])
    resolved = decode_avro_data_content(content, json.dumps(schema), json.dumps(wide), "t")
    assert resolved.column("b").null_count == native_avro.NATIVE_MIN_RECORDS


def _framed(count: int) -> tuple[bytes, str, pa.Schema]:
    schema = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"}, {"name": "s", "type": "string"}]}
    content = block_content(schema, [{"a": i, "s": "x" * (i % 7)} for i in range(count)])
    decoder = avro_record_decoder(json.dumps(schema))
    assert decoder.native_schema_json is not None
    return content, decoder.native_schema_json, decoder.arrow_schema


def test_lengths_that_do_not_stand_where_records_end_are_refused() -> None:
    content, framed, arrow_schema = _framed(600)
    decoded = native_avro.decode_natively(content, 600, framed, arrow_schema, "t")
    assert decoded is not None
    _, last = decoded
    assert last == struct.unpack_from(">i", content, len(content) - last - 4)[0]
    # the first record's length one byte short: the native path gives up; ours names the damage
    (first,) = struct.unpack_from(">i", content, 8)
    damaged = content[:8] + struct.pack(">i", first - 1) + content[12:]
    assert native_avro.decode_natively(damaged, 600, framed, arrow_schema, "t") is None
    with pytest.raises(LogDecodeError):
        decode_avro_data_content(damaged, json.dumps({"type": "record", "name": "r", "fields": [
            {"name": "a", "type": "long"}, {"name": "s", "type": "string"}]}), None, "t")


def test_a_block_cut_short_is_never_read_as_fewer_records() -> None:
    content, framed, arrow_schema = _framed(600)
    assert native_avro.decode_natively(content[:-3], 600, framed, arrow_schema, "t") is None
    with pytest.raises(LogDecodeError):
        decode_avro_data_content(content[:-3], json.dumps({"type": "record", "name": "r", "fields": [
            {"name": "a", "type": "long"}, {"name": "s", "type": "string"}]}), None, "t")


def test_decimal_values_survive_both_paths() -> None:
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 3}}]}
    rows = [{"d": decimal.Decimal("-1234567890123456789012345678901234567.891")}] * native_avro.NATIVE_MIN_RECORDS
    table = decode_avro_data_content(block_content(schema, rows), json.dumps(schema), None, "t")
    assert table.schema.field("d").type == pa.decimal256(40, 3)
    assert set(table.column("d").to_pylist()) == {rows[0]["d"]}
