"""Avro records of Hudi data blocks, decoded into Arrow tables.

The content of an Avro data block (``HoodieAvroDataBlock``, also used by
``HoodieCDCDataBlock``) is, big-endian::

    version   int   data block version (1-3; Hudi writes 3)
    count     int   number of records
    count x   int length, then one record in Avro binary encoding

The records are written with the Avro schema of the block's ``SCHEMA``
header. Read with that schema alone, they go through a decoder generated for
it (:class:`_DecoderSource`); a different reader schema is applied with
fastavro's Avro schema resolution.

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
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

import fastavro
import pyarrow as pa
from fastavro.read import LOGICAL_READERS

from hudi_connect.core.errors import LogDecodeError
from hudi_connect.core.format.log.native_avro import NATIVE_MIN_RECORDS, decode_natively, framed_schema_json

_INT = struct.Struct(">i")
_FLOAT, _DOUBLE = struct.Struct("<f"), struct.Struct("<d")
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


def _undecodable(where: str, index: int, error: Exception) -> LogDecodeError:
    return LogDecodeError(f"{where}: record {index} cannot be decoded: {type(error).__name__}: {error}")


def _misfit(where: str, index: int, length: int, used: int) -> LogDecodeError:
    return LogDecodeError(f"{where}: record {index} is {length} bytes long but its Avro encoding takes {used}")


# Columns decoded from ``content`` at each ``(start, end)`` span; ``where`` names the block in errors.
_ColumnsDecoder = Callable[[bytes, list[tuple[int, int]], str], list[list[Any]]]
_Store = Callable[[str], str]  # the statement handing a value's expression on, e.g. "f3 = {}".format


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """The unsigned variable-length integer at ``data[pos]`` and the position after it (10 bytes at most)."""
    value = 0
    for shift in range(0, 70, 7):
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
    raise ValueError("a variable-length integer runs past 10 bytes")


def _long(target: str, zigzag: bool = True) -> list[str]:
    """Statements reading an Avro int or long into ``target``; one-byte values, the most common, inline."""
    lines = [f"{target} = data[pos]", "pos += 1", f"if {target} > 127:", f"    {target}, pos = _varint(data, pos - 1)"]
    return [*lines, f"{target} = ({target} >> 1) ^ -({target} & 1)"] if zigzag else lines


def _indented(lines: list[str], levels: int = 1) -> list[str]:
    return ["    " * levels + line for line in lines]


def _block(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The item count of an array's or map's next block (0 after the last), skipping its byte size if written."""
    count, pos = _varint(data, pos)
    count = (count >> 1) ^ -(count & 1)
    if count < 0:
        count = -count
        pos = _varint(data, pos)[1]
    # Items take a byte at least (_SchemaConverter refuses arrays of nulls): a corrupt count stops here.
    if count > end - pos:
        raise ValueError(f"{count} items cannot fit in {end - pos} bytes")
    return count, pos


class _DecoderSource:
    """Python source decoding the records of one writer schema (parsed by fastavro) into columns.

    fastavro reads value by value through a file object and looks up each
    value's type by name; this source indexes the content's bytes, with the
    schema unrolled into straight-line code, and appends each top-level field
    to its column: about twice as fast. Records, arrays and maps get a
    function each, so the source grows with the schema, not its nesting. Types
    fastavro converts (decimal) go through fastavro's own logical readers.
    """

    def __init__(self, writer: dict[str, Any]) -> None:
        self.named: dict[str, Any] = writer["__named_schemas"]
        self.functions: list[str] = []
        self.constants: dict[str, Any] = {}
        self.function_of: dict[int, str] = {}  # id of a record, array or map schema: its function's name

    def source(self, record: dict[str, Any]) -> str:
        """A function ``decode(data, spans, where)`` returning the columns of the records at the spans."""
        count = len(record["fields"])
        if not count or len({field["name"] for field in record["fields"]}) < count:
            raise ValueError("records without fields or with duplicate field names are left to fastavro")
        body = [*(f"c{index} = []; a{index} = c{index}.append" for index in range(count)),
                "for index, (start, end) in enumerate(spans):", "    pos = start", "    try:",
                *_indented(self.fields(record, "a{}({{}})"), 2),
                "    except Exception as error:", "        raise _undecodable(where, index, error) from None",
                "    if pos != end:", "        raise _misfit(where, index, end - start, pos - start)",
                f"return [{', '.join(f'c{index}' for index in range(count))}]"]
        return "\n".join(["def decode(data, spans, where):", *_indented(body), *self.functions])

    def fields(self, record: dict[str, Any], store: str) -> list[str]:
        """Statements reading a record's fields; ``store`` is a template of the field's index, then its value."""
        return [line for index, field in enumerate(record["fields"])
                for line in self.value(field["type"], store.format(index).format)]

    def value(self, schema: Any, store: _Store) -> list[str]:
        """Statements reading one value of ``schema`` at ``pos``, moving ``pos`` past it, and storing it."""
        if isinstance(schema, list):
            lines = _long("i", zigzag=False)  # the union branch
            for index, branch in enumerate(schema):
                lines += [f"{'el' if index else ''}if i == {2 * index}:", *_indented(self.value(branch, store))]
            return [*lines, "else:", "    raise ValueError(f'union branch out of range (encoded as {i})')"]
        if isinstance(schema, str):
            return self.value(self.named.get(schema, {"type": schema}), store)
        kind = schema["type"]
        logical = LOGICAL_READERS.get(f"{kind}-{schema.get('logicalType')}")
        if logical is not None:
            plain = self.value({**schema, "logicalType": None}, "v = {}".format)
            return [*plain, store(f"{self.constant(logical)}(v, {self.constant(schema)}, None)")]
        if kind == "null":
            return [store("None")]
        if kind == "boolean":
            return [store("data[pos] != 0"), "pos += 1"]
        if kind in ("int", "long"):
            return [*_long("v"), store("v")]
        if kind in ("float", "double"):
            return [store(f"_{kind}(data, pos)[0]"), f"pos += {4 if kind == 'float' else 8}"]
        if kind in ("bytes", "string"):  # strings stay bytes: Arrow checks their UTF-8 faster than decode() does
            return [*_long("n"), "if n < 0:", "    raise ValueError(f'negative length {n}')",
                    store("data[pos:pos + n]"), "pos += n"]
        if kind == "fixed":
            return [store(f"data[pos:pos + {int(schema['size'])}]"), f"pos += {int(schema['size'])}"]
        if kind == "enum":
            symbols = tuple(schema["symbols"])
            return [*_long("i"), f"if not 0 <= i < {len(symbols)}:",
                    "    raise ValueError(f'enum index {i} out of range')", store(f"{self.constant(symbols)}[i]")]
        if kind in ("record", "error", "array", "map"):
            return [f"v, pos = {self.function(schema)}(data, pos, end)", store("v")]
        raise ValueError(f"type {kind!r} is left to fastavro")

    def function(self, schema: dict[str, Any]) -> str:
        """The name of a function reading a record, array or map: ``value, pos = function(data, pos, end)``."""
        if id(schema) in self.function_of:
            return self.function_of[id(schema)]
        if schema["type"] in ("array", "map"):  # blocks of items, up to an empty one
            item = (self.value(schema["items"], "result.append({})".format) if schema["type"] == "array"
                    else [*self.value("string", "key = {}".format),
                          *self.value(schema["values"], "result[key] = {}".format)])
            body = [f"result = {'[]' if schema['type'] == 'array' else '{}'}", "while True:",
                    "    count, pos = _block(data, pos, end)", "    if not count:", "        return result, pos",
                    "    for _ in range(count):", *_indented(item, 2)]
        else:
            names = ", ".join(f"{field['name']!r}: f{index}" for index, field in enumerate(schema["fields"]))
            body = [*self.fields(schema, "f{} = {{}}"), f"return {{{names}}}, pos"]
        name = self.function_of[id(schema)] = f"_read{len(self.functions)}"
        self.functions.append("\n".join([f"def {name}(data, pos, end):", *_indented(body)]))
        return name

    def constant(self, value: Any) -> str:
        name = f"_constant{len(self.constants)}"
        self.constants[name] = value
        return name


def _compiled_decoder(writer: Any) -> _ColumnsDecoder | None:
    """The columns decoder of a parsed writer schema, or None for schemas left to fastavro."""
    try:
        writer_source = _DecoderSource(writer)
        source = writer_source.source(writer)
        namespace: dict[str, Any] = {"_varint": _varint, "_block": _block, "_float": _FLOAT.unpack_from,
                                     "_double": _DOUBLE.unpack_from, "_undecodable": _undecodable, "_misfit": _misfit,
                                     **writer_source.constants}
        exec(compile(source, f"<Avro decoder of {writer.get('name')}>", "exec"), namespace)
    except Exception:  # an unusual or invalid schema (or one too large to compile): fastavro's path handles it
        return None
    return cast(_ColumnsDecoder, namespace["decode"])


class AvroRecordDecoder:
    """Decodes Avro binary records of one writer schema, resolved to an optional reader schema, into Arrow.

    Without a reader schema, a decoder generated for the writer schema reads them; fastavro reads the rest.
    """

    def __init__(self, writer_schema_json: str, reader_schema_json: str | None = None) -> None:
        writer = _load_schema(writer_schema_json, "writer")
        _arrow_schema(writer)  # refuses what cannot be decoded safely, such as arrays of nulls
        reader = None
        if reader_schema_json is not None and reader_schema_json != writer_schema_json:
            reader = _load_schema(reader_schema_json, "reader")
            if reader == writer:  # the same schema written differently: nothing to resolve
                reader = None
        self.arrow_schema = _arrow_schema(reader if reader is not None else writer)
        try:
            self._storage_schema = pa.schema([item.with_type(_storage_type(item.type))
                                              for item in self.arrow_schema])
            self._writer = fastavro.parse_schema(_for_decoding(writer))
            self._reader = None if reader is None else fastavro.parse_schema(_for_decoding(reader))
        except Exception as error:  # fastavro raises several kinds for a schema it cannot parse
            raise LogDecodeError(f"the Avro schema cannot be prepared for decoding: "
                                 f"{type(error).__name__}: {error}") from None
        self._compiled = None if self._reader is not None else _compiled_decoder(self._writer)
        # Arrow's decoder reads with the writer schema alone
        self.native_schema_json = framed_schema_json(writer) if reader is None else None

    def decode(self, content: bytes, spans: list[tuple[int, int]], where: str) -> pa.Table:
        """The records at ``content[start:end]`` for each span, as a table of :attr:`arrow_schema`."""
        if self._compiled is not None:
            columns = self._compiled(bytes(content), spans, where)
            return self._table(where, lambda: pa.Table.from_arrays(
                [pa.array(column, type=item.type) for column, item in zip(columns, self._storage_schema, strict=True)],
                schema=self._storage_schema))
        read, new_stream = fastavro.schemaless_reader, io.BytesIO
        writer, reader = self._writer, self._reader
        rows = []
        for index, (start, end) in enumerate(spans):
            # A stream per record is faster than seeking in one, and bounds what a corrupt record can read.
            stream = new_stream(content[start:end])
            try:
                rows.append(read(stream, writer, reader))
            except Exception as error:  # any failure of fastavro on malformed bytes
                raise _undecodable(where, index, error) from None
            if stream.tell() != end - start:
                raise _misfit(where, index, end - start, stream.tell())
        return self._table(where, lambda: pa.Table.from_pylist(rows, schema=self._storage_schema))

    def _table(self, where: str, build: Callable[[], pa.Table]) -> pa.Table:
        """The table ``build`` makes of the decoded values, cast from storage types to :attr:`arrow_schema`."""
        try:
            table = build()
            return table if self._storage_schema == self.arrow_schema else table.cast(self.arrow_schema)
        except (pa.ArrowException, ValueError, TypeError, OverflowError, RecursionError) as error:
            raise LogDecodeError(f"{where}: the records do not fit their Arrow schema: {error}") from None


@lru_cache(maxsize=64)
def avro_record_decoder(writer_schema_json: str, reader_schema_json: str | None = None) -> AvroRecordDecoder:
    """The decoder of a schema pair, parsed once per process (blocks of one table share their schema)."""
    return AvroRecordDecoder(writer_schema_json, reader_schema_json)


def record_count(content: bytes, where: str) -> int:
    """The record count of an Avro data block's content, after checking its version and that the count fits."""
    if len(content) < 2 * _INT.size:
        raise LogDecodeError(f"{where}: the content has {len(content)} bytes, too few for a version and a count")
    version, count = struct.unpack_from(">ii", content, 0)
    if version not in SUPPORTED_DATA_BLOCK_VERSIONS:
        raise LogDecodeError(f"{where}: Avro data block version {version} is not supported "
                             f"(known: {', '.join(map(str, SUPPORTED_DATA_BLOCK_VERSIONS))})")
    if count < 0 or count > (len(content) - 2 * _INT.size) // _INT.size:
        raise LogDecodeError(f"{where}: record count {count} does not fit in {len(content)} bytes of content")
    return cast(int, count)


def record_spans(content: bytes, where: str) -> list[tuple[int, int]]:
    """Where each record of an Avro data block's content lies, after checking version, count and lengths."""
    count = record_count(content, where)
    position = 2 * _INT.size
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
    decoder = avro_record_decoder(writer_schema_json, reader_schema_json)
    count = record_count(content, where)
    if decoder.native_schema_json is not None and count >= NATIVE_MIN_RECORDS:
        decoded = decode_natively(content, count, decoder.native_schema_json, decoder.arrow_schema, where)
        if decoded is not None:
            # each length Arrow's decoder read stood where the records before it end; ours checks the last
            # record fills its own
            table, last = decoded
            decoder.decode(content, [(len(content) - last, len(content))], where)
            return table
    return decoder.decode(content, record_spans(content, where), where)
