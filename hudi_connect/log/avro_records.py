"""Avro records of Hudi data blocks, decoded with fastavro into Arrow tables.

The content of an Avro data block (``HoodieAvroDataBlock``, also used by
``HoodieCDCDataBlock``) is, big-endian::

    version   int   data block version (1-3; Hudi writes 3)
    count     int   number of records
    count x   int length, then one record in Avro binary encoding

The records are written with the Avro schema of the block's ``SCHEMA``
header; an optional reader schema is applied with Avro schema resolution.

Avro types map to Arrow as Spark and hudi-rs map them: int/long to
int32/int64, ``["null", T]`` to a nullable T, date to date32, timestamp-micros
to ``timestamp[us, UTC]``, decimal to decimal128 (decimal256 past 38 digits),
fixed to fixed_size_binary, enum and uuid to string, array to list, map to
map<string, V>, record to struct. Unions of several non-null types have no
Arrow equivalent in Hudi tables and are refused.
"""

from __future__ import annotations

import io
import json
import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import fastavro
import pyarrow as pa

from hudi_connect.errors import LogDecodeError

_INT = struct.Struct(">i")
SUPPORTED_DATA_BLOCK_VERSIONS = (1, 2, 3)

_PRIMITIVES: dict[str, pa.DataType] = {
    "null": pa.null(), "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
    "double": pa.float64(), "bytes": pa.binary(), "string": pa.string(),
}
# Logical types over int or long that fastavro would turn into Python date/time objects, only for Arrow to
# turn them back into integers: they are read as plain integers and the finished columns are cast instead.
_INTEGER_LOGICAL_TYPES: dict[tuple[str, str], pa.DataType] = {
    ("int", "date"): pa.date32(),
    ("int", "time-millis"): pa.time32("ms"),
    ("long", "time-micros"): pa.time64("us"),
    ("long", "timestamp-millis"): pa.timestamp("ms", tz="UTC"),
    ("long", "timestamp-micros"): pa.timestamp("us", tz="UTC"),
    ("long", "timestamp-nanos"): pa.timestamp("ns", tz="UTC"),
    ("long", "local-timestamp-millis"): pa.timestamp("ms"),
    ("long", "local-timestamp-micros"): pa.timestamp("us"),
    ("long", "local-timestamp-nanos"): pa.timestamp("ns"),
}
# Logical types fastavro would decode into objects Arrow cannot take (uuid.UUID): read the plain type.
_IGNORED_LOGICAL_TYPES = frozenset({"uuid"})


@dataclass(frozen=True)
class _Converted:
    """An Avro schema's Arrow type, whether it admits null, and whether its encoding can take zero bytes."""

    arrow_type: pa.DataType
    nullable: bool
    zero_width: bool


class _SchemaConverter:
    """Walks an Avro schema (parsed JSON) once, resolving named types by their full names."""

    def __init__(self) -> None:
        self.named: dict[str, _Converted] = {}

    def convert(self, schema: Any, namespace: str, path: str) -> _Converted:
        if isinstance(schema, str):
            return self._named_or_primitive(schema, namespace, path)
        if isinstance(schema, list):
            return self._union(schema, namespace, path)
        if not isinstance(schema, dict) or "type" not in schema:
            raise LogDecodeError(f"Avro schema at {path} is not a type: {json.dumps(schema)[:200]}")
        kind = schema["type"]
        if isinstance(kind, (dict, list)):
            return self.convert(kind, namespace, path)
        if not isinstance(kind, str):
            raise LogDecodeError(f"Avro schema at {path} has an invalid type {kind!r}")
        if kind in ("record", "error"):
            return self._record(schema, namespace, path)
        if kind == "enum":
            return self._register(schema, namespace, path, _Converted(pa.string(), False, False))
        if kind == "fixed":
            size = schema.get("size")
            if not isinstance(size, int) or size < 0:
                raise LogDecodeError(f"Avro fixed type at {path} has an invalid size {size!r}")
            decimal = _decimal_type(schema)
            arrow_type = decimal if decimal is not None else pa.binary(size)
            return self._register(schema, namespace, path, _Converted(arrow_type, False, size == 0))
        if kind == "array":
            items = self.convert(schema.get("items"), namespace, f"{path}[]")
            if items.zero_width:
                # A corrupt item count would make the decoder loop without consuming input.
                raise LogDecodeError(f"Avro array at {path} has items that take no bytes (null); not supported")
            return _Converted(pa.list_(pa.field("element", items.arrow_type, items.nullable)), False, False)
        if kind == "map":
            values = self.convert(schema.get("values"), namespace, f"{path}{{}}")
            map_type = pa.map_(pa.field("key", pa.string(), nullable=False),
                               pa.field("value", values.arrow_type, values.nullable))
            return _Converted(map_type, False, False)
        if kind in _PRIMITIVES:
            return _Converted(_primitive_type(kind, schema), kind == "null", kind == "null")
        return self._named_or_primitive(kind, namespace, path)

    def _named_or_primitive(self, name: str, namespace: str, path: str) -> _Converted:
        if name in _PRIMITIVES:
            return _Converted(_PRIMITIVES[name], name == "null", name == "null")
        for candidate in (_full_name(name, namespace), name):
            if candidate in self.named:
                return self.named[candidate]
        raise LogDecodeError(f"Avro schema at {path} refers to an undefined type {name!r}")

    def _union(self, branches: list[Any], namespace: str, path: str) -> _Converted:
        converted = [self.convert(branch, namespace, path) for branch in branches]
        non_null = [branch for branch in converted if not pa.types.is_null(branch.arrow_type)]
        if len(non_null) > 1:
            raise LogDecodeError(f"Avro union at {path} has {len(non_null)} non-null branches; only "
                                 "[\"null\", T] unions are supported")
        if not non_null:
            return _Converted(pa.null(), True, False)
        return _Converted(non_null[0].arrow_type, len(converted) > 1 or non_null[0].nullable, False)

    def _record(self, schema: dict[str, Any], namespace: str, path: str) -> _Converted:
        name = _full_name(str(schema.get("name", "")), str(schema.get("namespace", namespace)))
        inner_namespace = name.rpartition(".")[0]
        fields = schema.get("fields")
        if not isinstance(fields, list):
            raise LogDecodeError(f"Avro record at {path} has no field list")
        arrow_fields = []
        zero_width = True
        for avro_field in fields:
            if not isinstance(avro_field, dict) or not isinstance(avro_field.get("name"), str):
                raise LogDecodeError(f"Avro record at {path} has a field without a name")
            field_name = avro_field["name"]
            converted = self.convert(avro_field.get("type"), inner_namespace, f"{path}.{field_name}")
            arrow_fields.append(pa.field(field_name, converted.arrow_type, converted.nullable))
            zero_width = zero_width and converted.zero_width
        result = _Converted(pa.struct(arrow_fields), False, zero_width)
        self.named[name] = result
        return result

    def _register(self, schema: dict[str, Any], namespace: str, path: str, converted: _Converted) -> _Converted:
        if not isinstance(schema.get("name"), str):
            raise LogDecodeError(f"Avro {schema['type']} type at {path} has no name")
        self.named[_full_name(schema["name"], str(schema.get("namespace", namespace)))] = converted
        return converted


def _full_name(name: str, namespace: str) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _primitive_type(kind: str, schema: dict[str, Any]) -> pa.DataType:
    logical = schema.get("logicalType")
    if isinstance(logical, str):
        if (kind, logical) in _INTEGER_LOGICAL_TYPES:
            return _INTEGER_LOGICAL_TYPES[(kind, logical)]
        if kind == "bytes":
            decimal = _decimal_type(schema)
            if decimal is not None:
                return decimal
    return _PRIMITIVES[kind]


def _decimal_type(schema: dict[str, Any]) -> pa.DataType | None:
    """The Arrow decimal of a ``decimal`` logical type, or None when it has none or an invalid one (Avro: ignore)."""
    if schema.get("logicalType") != "decimal":
        return None
    precision, scale = schema.get("precision"), schema.get("scale", 0)
    if not isinstance(precision, int) or not isinstance(scale, int) or not 0 <= scale <= precision or precision < 1:
        return None
    return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)


def avro_to_arrow_schema(schema_json: str) -> pa.Schema:
    """The Arrow schema of the records of an Avro record schema (JSON).

    Example::

        avro_to_arrow_schema(block.schema_json).field("ts").type  # int64
    """
    schema = _load_schema(schema_json, "schema")
    return _arrow_schema(schema)


def _arrow_schema(schema: Any) -> pa.Schema:
    if not isinstance(schema, dict) or schema.get("type") not in ("record", "error"):
        raise LogDecodeError("a data block's Avro schema must be a record, not "
                             f"{json.dumps(schema)[:200]}")
    try:
        converted = _SchemaConverter().convert(schema, "", str(schema.get("name", "record")))
    except RecursionError:
        raise LogDecodeError("the Avro schema is nested too deeply to decode") from None
    return pa.schema(list(converted.arrow_type))


def _load_schema(schema_json: str, role: str) -> Any:
    try:
        return json.loads(schema_json)
    except (ValueError, RecursionError) as error:
        raise LogDecodeError(f"the {role} Avro schema is not valid JSON: {error}") from None


def _for_decoding(schema: Any) -> Any:
    """A copy of ``schema`` without the logical types that are read as their underlying type here."""
    if isinstance(schema, list):
        return [_for_decoding(branch) for branch in schema]
    if not isinstance(schema, dict):
        return schema
    copy = {key: _for_decoding(value) if key in ("type", "items", "values") else value
            for key, value in schema.items()}
    if "fields" in schema and isinstance(schema["fields"], list):
        copy["fields"] = [{**field, "type": _for_decoding(field.get("type"))} if isinstance(field, dict) else field
                          for field in schema["fields"]]
    logical = schema.get("logicalType")
    if ((schema.get("type"), logical) in _INTEGER_LOGICAL_TYPES or logical in _IGNORED_LOGICAL_TYPES
            or (logical == "decimal" and _decimal_type(schema) is None)):
        del copy["logicalType"]
    return copy


def _storage_type(arrow_type: pa.DataType) -> pa.DataType:
    """The type Arrow builds a column of before the cast to ``arrow_type`` (integers for dates and times)."""
    if pa.types.is_timestamp(arrow_type) or pa.types.is_time64(arrow_type):
        return pa.int64()
    if pa.types.is_date32(arrow_type) or pa.types.is_time32(arrow_type):
        return pa.int32()
    if pa.types.is_struct(arrow_type):
        return pa.struct([item.with_type(_storage_type(item.type)) for item in arrow_type.fields])
    if pa.types.is_map(arrow_type):
        return pa.map_(arrow_type.key_field, arrow_type.item_field.with_type(_storage_type(arrow_type.item_type)))
    if pa.types.is_list(arrow_type):
        return pa.list_(arrow_type.value_field.with_type(_storage_type(arrow_type.value_type)))
    return arrow_type


class AvroRecordDecoder:
    """Decodes Avro binary records of one writer schema, resolved to an optional reader schema, into Arrow."""

    def __init__(self, writer_schema_json: str, reader_schema_json: str | None = None) -> None:
        writer = _load_schema(writer_schema_json, "writer")
        _arrow_schema(writer)  # refuses what cannot be decoded safely, such as arrays of nulls
        reader = None
        if reader_schema_json is not None and reader_schema_json != writer_schema_json:
            reader = _load_schema(reader_schema_json, "reader")
        self.arrow_schema = _arrow_schema(reader if reader is not None else writer)
        try:
            self._storage_schema = pa.schema([item.with_type(_storage_type(item.type))
                                              for item in self.arrow_schema])
            self._writer = fastavro.parse_schema(_for_decoding(writer))
            self._reader = None if reader is None else fastavro.parse_schema(_for_decoding(reader))
        except Exception as error:  # fastavro raises several kinds for a schema it cannot parse
            raise LogDecodeError(f"the Avro schema cannot be prepared for decoding: "
                                 f"{type(error).__name__}: {error}") from None

    def decode(self, content: bytes, spans: list[tuple[int, int]], where: str) -> pa.Table:
        """The records at ``content[start:end]`` for each span, as a table of :attr:`arrow_schema`."""
        read, new_stream = fastavro.schemaless_reader, io.BytesIO
        writer, reader = self._writer, self._reader
        rows = []
        for index, (start, end) in enumerate(spans):
            # A stream per record is faster than seeking in one, and bounds what a corrupt record can read.
            stream = new_stream(content[start:end])
            try:
                rows.append(read(stream, writer, reader))
            except Exception as error:  # any failure of fastavro on malformed bytes
                raise LogDecodeError(f"{where}: record {index} cannot be decoded: "
                                     f"{type(error).__name__}: {error}") from None
            if stream.tell() != end - start:
                raise LogDecodeError(f"{where}: record {index} is {end - start} bytes long but its Avro encoding "
                                     f"takes {stream.tell()}")
        try:
            table = pa.Table.from_pylist(rows, schema=self._storage_schema)
            return table if self._storage_schema == self.arrow_schema else table.cast(self.arrow_schema)
        except (pa.ArrowException, ValueError, TypeError, OverflowError, RecursionError) as error:
            raise LogDecodeError(f"{where}: the records do not fit their Arrow schema: {error}") from None


@lru_cache(maxsize=64)
def avro_record_decoder(writer_schema_json: str, reader_schema_json: str | None = None) -> AvroRecordDecoder:
    """The decoder of a schema pair, parsed once per process (blocks of one table share their schema)."""
    return AvroRecordDecoder(writer_schema_json, reader_schema_json)


def record_spans(content: bytes, where: str) -> list[tuple[int, int]]:
    """Where each record of an Avro data block's content lies, after checking version, count and lengths."""
    if len(content) < 2 * _INT.size:
        raise LogDecodeError(f"{where}: the content has {len(content)} bytes, too few for a version and a count")
    version, count = struct.unpack_from(">ii", content, 0)
    if version not in SUPPORTED_DATA_BLOCK_VERSIONS:
        raise LogDecodeError(f"{where}: Avro data block version {version} is not supported "
                             f"(known: {', '.join(map(str, SUPPORTED_DATA_BLOCK_VERSIONS))})")
    position = 2 * _INT.size
    if count < 0 or count > (len(content) - position) // _INT.size:
        raise LogDecodeError(f"{where}: record count {count} does not fit in {len(content)} bytes of content")
    spans = []
    for index in range(count):
        if position + _INT.size > len(content):
            raise LogDecodeError(f"{where}: the content ends before record {index} of {count}")
        (length,) = _INT.unpack_from(content, position)
        start = position + _INT.size
        end = start + length
        if length < 0 or end > len(content):
            raise LogDecodeError(f"{where}: record {index} claims {length} bytes but "
                                 f"{len(content) - start} are left")
        spans.append((start, end))
        position = end
    if position != len(content):
        raise LogDecodeError(f"{where}: {len(content) - position} bytes follow the last of {count} records")
    return spans


def decode_avro_data_content(content: bytes, writer_schema_json: str, reader_schema_json: str | None,
                             where: str) -> pa.Table:
    """The records of an Avro (or CDC) data block's content as an Arrow table."""
    spans = record_spans(content, where)
    return avro_record_decoder(writer_schema_json, reader_schema_json).decode(content, spans, where)
