"""What a log block holds: records, keys to delete, or a command.

Each function decodes the content of one kind of :class:`LogBlock` on demand,
mirroring the Hudi class that reads it: ``HoodieAvroDataBlock``,
``HoodieParquetDataBlock`` and ``HoodieCDCDataBlock`` hold records,
``HoodieDeleteBlock`` the keys deleted by an instant, ``HoodieCommandBlock``
a rollback of an earlier instant's blocks.
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

from hudi_connect.core.errors import LogDecodeError
from hudi_connect.core.format.log.avro_records import avro_to_arrow_schema, decode_avro_data_content, record_spans
from hudi_connect.core.format.log.format import HeaderKey, LogBlock, LogBlockType
from hudi_connect.core.format.parquet_files import read_parquet

# HoodieCommandBlock.HoodieCommandBlockTypeEnum: the header holds the ordinal, ROLLBACK_BLOCK is the only one.
ROLLBACK_COMMAND = "0"
# HoodieDeleteBlock: versions 1 and 2 hold Kryo-serialized Java objects, 3 an Avro HoodieDeleteRecordList.
AVRO_DELETE_BLOCK_VERSION = 3


@dataclass(frozen=True)
class DeleteRecord:
    """A key deleted by a delete block, with the ordering value deciding it against other writes of that key.

    Mirrors ``org.apache.hudi.common.model.DeleteRecord``; Hudi writes the
    ordering value 0 when the delete carries none (natural order).
    """

    record_key: str
    partition_path: str
    ordering_value: object | None
    # Hudi's "natural order" (``OrderingValues.isDefault``): no ordering value, or exactly the Java Integer 0
    # (a delete by key carries it); a long 0 or a double 0.0 is an ordering value like any other
    natural_order: bool = False


def _where(block: LogBlock) -> str:
    return f"{block.block_type.name} block at byte {block.offset}"


def data_block_records(block: LogBlock, reader_schema_json: str | None = None) -> pa.Table:
    """The records of a data block as an Arrow table.

    Avro and CDC blocks are decoded with the Avro schema of their ``SCHEMA``
    header, resolved to ``reader_schema_json`` when given; a Parquet block's
    content is a Parquet file, whose columns are matched to the reader schema
    by name. HFile blocks (metadata table) are not decoded.

    Example::

        for block in read_log_blocks(data):
            if block.block_type is LogBlockType.AVRO_DATA:
                table = data_block_records(block)
    """
    if block.block_type in (LogBlockType.AVRO_DATA, LogBlockType.CDC_DATA):
        if block.schema_json is None:
            raise LogDecodeError(f"{_where(block)} has no SCHEMA header to decode its records with")
        return decode_avro_data_content(block.content, block.schema_json, reader_schema_json, _where(block))
    if block.block_type is LogBlockType.PARQUET_DATA:
        return _parquet_records(block, reader_schema_json)
    if block.block_type is LogBlockType.HFILE_DATA:
        raise LogDecodeError(f"{_where(block)}: HFile data blocks (metadata table) are not decoded; "
                             "read the metadata table with Hudi")
    raise ValueError(f"{_where(block)} holds no records; only data blocks do")


def data_block_record_bytes(block: LogBlock) -> list[bytes]:
    """Each record of an Avro or CDC data block as its undecoded Avro binary encoding (in the writer
    schema of the block's ``SCHEMA`` header), for a decoder outside Python (Spark's ``from_avro``)."""
    if block.block_type not in (LogBlockType.AVRO_DATA, LogBlockType.CDC_DATA):
        raise ValueError(f"{_where(block)} holds no Avro records; only Avro and CDC data blocks do")
    content = block.content
    return [content[start:end] for start, end in record_spans(content, _where(block))]


def _parquet_records(block: LogBlock, reader_schema_json: str | None) -> pa.Table:
    """``HoodieParquetDataBlock``: the content is a whole Parquet file."""
    try:
        # Not pq.read_table: its dataset scanner leaves Arrow threads behind, which can abort the worker
        # when it exits (apache/arrow#34314); Spark already runs one task per core.
        table = read_parquet(pa.BufferReader(block.content))
    except (pa.ArrowException, OSError, ValueError) as error:
        raise LogDecodeError(f"{_where(block)}: the content is not a readable Parquet file: {error}") from None
    if reader_schema_json is None:
        return table
    target = avro_to_arrow_schema(reader_schema_json)
    columns = []
    for target_field in target:
        if target_field.name not in table.column_names:
            if not target_field.nullable:
                raise LogDecodeError(f"{_where(block)}: the reader schema's non-null column "
                                     f"{target_field.name!r} is missing from the block")
            columns.append(pa.nulls(table.num_rows, target_field.type))
            continue
        column = table.column(target_field.name)
        try:
            columns.append(column if column.type == target_field.type else column.cast(target_field.type))
        except (pa.ArrowException, ValueError) as error:
            raise LogDecodeError(f"{_where(block)}: column {target_field.name!r} of type {column.type} cannot "
                                 f"be read as {target_field.type}: {error}") from None
    return pa.Table.from_arrays(columns, schema=target)


def _ordering_wrapper(name: str, value_type: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": [{"name": "value", "type": value_type}]}


# The ordering value wrappers of HoodieMetadata.avsc, in the union order of HoodieDeleteRecordList.avsc.
# Java leaves the date and timestamp wrappers without logical types and converts by hand; declaring
# them here has fastavro return datetime.date and datetime.datetime, as Java's unwrapAvroValueWrapper does.
_ORDERING_WRAPPERS = [
    _ordering_wrapper("BooleanWrapper", "boolean"),
    _ordering_wrapper("IntWrapper", "int"),
    _ordering_wrapper("LongWrapper", "long"),
    _ordering_wrapper("FloatWrapper", "float"),
    _ordering_wrapper("DoubleWrapper", "double"),
    _ordering_wrapper("BytesWrapper", "bytes"),
    _ordering_wrapper("StringWrapper", "string"),
    _ordering_wrapper("DateWrapper", {"type": "int", "logicalType": "date"}),
    _ordering_wrapper("DecimalWrapper", {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}),
    _ordering_wrapper("TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
    _ordering_wrapper("TimestampMicrosWrapper", {"type": "long", "logicalType": "timestamp-micros"}),
]


def _delete_record_list_schema(ordering_branches: list[Any]) -> dict[str, Any]:
    optional_string = {"type": ["null", "string"], "default": None}
    record = {"type": "record", "name": "HoodieDeleteRecord", "fields": [
        {"name": "recordKey", **optional_string},
        {"name": "partitionPath", **optional_string},
        {"name": "orderingVal", "type": ["null", *ordering_branches], "default": None},
    ]}
    return {"type": "record", "name": "HoodieDeleteRecordList", "namespace": "org.apache.hudi.avro.model",
            "fields": [{"name": "deleteRecordList", "type": {"type": "array", "items": record}}]}


_ARRAY_WRAPPER = "ArrayWrapper"


@lru_cache(maxsize=1)
def _delete_record_list_schemas() -> tuple[Any, ...]:
    """HoodieDeleteRecordList as Hudi releases write it: up to 1.1, one wrapped ordering value; 1.2, one
    wrapped value or, for a table of several ordering fields, an ``ArrayWrapper`` of them (a thirteenth union
    branch); Hudi's master branch, an array of wrapped values (one per ordering field)."""
    one_value = _delete_record_list_schema(_ORDERING_WRAPPERS)
    names = [f"org.apache.hudi.avro.model.{w['name']}" for w in _ORDERING_WRAPPERS]
    # 1.2 wraps a date among several ordering values in a LocalDateWrapper, a branch of the array's items only
    local_date = _ordering_wrapper("LocalDateWrapper", {"type": "int", "logicalType": "date"})
    array_wrapper = {"type": "record", "name": _ARRAY_WRAPPER, "fields": [
        {"name": "wrappedValues", "type": ["null", {"type": "array", "items": ["null", *names, local_date]}],
         "default": None}]}
    wrapped_values = _delete_record_list_schema([*_ORDERING_WRAPPERS, array_wrapper])
    several_values = _delete_record_list_schema([{"type": "array", "items": ["null", *_ORDERING_WRAPPERS]}])
    return tuple(fastavro.parse_schema(s) for s in (one_value, wrapped_values, several_values))


def delete_records(block: LogBlock) -> list[DeleteRecord]:
    """The keys a delete block deletes (``HoodieDeleteBlock.getRecordsToDelete``).

    Only version 3 blocks, which hold an Avro ``HoodieDeleteRecordList``, can
    be read; versions 1 and 2, written by older Hudi releases, hold
    Kryo-serialized Java objects and raise :class:`LogDecodeError`.

    Example::

        deleted = {record.record_key for record in delete_records(block)}
    """
    if block.block_type is not LogBlockType.DELETE:
        raise ValueError(f"{_where(block)} is not a delete block")
    content, where = block.content, _where(block)
    if len(content) < 8:
        raise LogDecodeError(f"{where}: the content has {len(content)} bytes, too few for a version and a length")
    version, length = struct.unpack_from(">ii", content, 0)
    if version in (1, 2):
        raise LogDecodeError(f"{where}: delete block version {version} holds Kryo-serialized Java objects, "
                             "which only Hudi itself can read; compact the file group with Hudi to rewrite it")
    if version != AVRO_DELETE_BLOCK_VERSION:
        raise LogDecodeError(f"{where}: delete block version {version} is not supported "
                             f"(known: {AVRO_DELETE_BLOCK_VERSION})")
    if not 0 <= length <= len(content) - 8:
        raise LogDecodeError(f"{where}: delete records claim {length} bytes but {len(content) - 8} are left")
    payload = content[8:8 + length]
    failures = []
    for schema in _delete_record_list_schemas():
        stream = io.BytesIO(payload)
        try:
            decoded = fastavro.schemaless_reader(stream, schema, None, return_record_name=True)
        except Exception as error:  # any failure of fastavro on bytes of the other layout or malformed ones
            failures.append(f"{type(error).__name__}: {error}")
            continue
        if stream.tell() == len(payload) and isinstance(decoded, dict):
            return [_delete_record(item, where) for item in decoded["deleteRecordList"]]
        failures.append(f"decoding used {stream.tell()} of {len(payload)} bytes")
    raise LogDecodeError(f"{where}: the delete records are not an Avro HoodieDeleteRecordList "
                         f"({'; '.join(failures)})")


def _delete_record(item: dict[str, Any], where: str) -> DeleteRecord:
    if item["recordKey"] is None:
        raise LogDecodeError(f"{where}: a delete record has no record key")
    wrapped = item["orderingVal"]
    if isinstance(wrapped, tuple) and str(wrapped[0]).endswith(_ARRAY_WRAPPER):
        # several ordering fields' values (Hudi's ArrayComparable), never the default that marks a natural delete
        values = wrapped[1]["wrappedValues"]
        if values is None:
            return DeleteRecord(item["recordKey"], item["partitionPath"] or "", None, True)
        unwrapped = [_unwrap(v) for v in values]
        return DeleteRecord(item["recordKey"], item["partitionPath"] or "", tuple(unwrapped), False)
    values = wrapped if isinstance(wrapped, list) else [wrapped]
    unwrapped = [_unwrap(v) for v in values]
    natural = all(v is None or _is_integer_zero(v) for v in values)
    ordering = unwrapped[0] if len(unwrapped) == 1 else tuple(unwrapped)
    return DeleteRecord(item["recordKey"], item["partitionPath"] or "", ordering, natural)


def _is_integer_zero(wrapped: object) -> bool:
    return isinstance(wrapped, tuple) and str(wrapped[0]).endswith("IntWrapper") and _unwrap(wrapped) == 0


def _unwrap(value: object) -> object | None:
    """The value inside an ordering value wrapper (``HoodieAvroWrapperUtils.unwrapAvroValueWrapper``), read
    with its wrapper's name (``(name, {"value": v})``)."""
    if isinstance(value, tuple):
        value = value[1]
    if isinstance(value, dict):
        unwrapped: object | None = value["value"]
        return unwrapped
    return value


def rollback_target(block: LogBlock) -> str | None:
    """The instant whose blocks a rollback command block undoes, or None for any other block.

    Hudi appends a ``ROLLBACK_BLOCK`` command block to a log file when it
    rolls back an instant that had already appended blocks to it; readers then
    drop that instant's blocks (``HoodieCommandBlock``).
    """
    if block.block_type is not LogBlockType.COMMAND:
        return None
    command = block.headers.get(HeaderKey.COMMAND_BLOCK_TYPE)
    if command != ROLLBACK_COMMAND:
        raise LogDecodeError(f"{_where(block)}: unknown command block type {json.dumps(command)} "
                             f"(known: {ROLLBACK_COMMAND} for ROLLBACK_BLOCK)")
    target = block.target_instant_time
    if target is None:
        raise LogDecodeError(f"{_where(block)}: rollback command block has no TARGET_INSTANT_TIME header")
    return target
