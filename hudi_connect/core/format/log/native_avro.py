"""Avro data blocks decoded by Apache Arrow's own Avro decoder, where the worker's Python has it.

Apache DataFusion's Python package (``datafusion``) reads Avro object container files with Arrow's compiled
decoder (``arrow-avro``), about 10 times faster than our generated Python decoder on blocks of thousands of
records (5.62 s against 0.55 s for 800k records, benchmarks/mor_phases.py). It reads files, not the
length-prefixed records of a Hudi data block, so the block is framed as a container in memory without copying
its records apart: its writer schema gains a first field, a ``fixed(4)`` that takes each record's 4-byte
length, and the block's content after its version and count becomes the container's one block. The lengths
read back are then checked against the content (each must sit where the ones before it say), and the last
record is decoded again by our decoder, which checks it fills its length: a record that does not decode to
its own length is refused there, never read shifted.

Without ``datafusion`` (it is optional: a server's workers need only pyarrow and fastavro), for small blocks,
where its fixed cost per call is larger than our decoder's, and for schemas resolved to another reader schema,
:mod:`avro_records` decodes alone. Both give the same Arrow table (tested value by value).
"""

from __future__ import annotations

import json
import os
import tempfile
from functools import lru_cache
from typing import Any

import pyarrow as pa

from hudi_connect.core.errors import LogDecodeError

# DataFusion costs about 1.4 ms a call (a file and a query plan), what our decoder spends on some 100 records;
# below this many records ours reads the block (a margin over that break-even, not a tuned figure)
NATIVE_MIN_RECORDS = 512
_LENGTH_FIELD = "_hudi_connect_record_length"
_LENGTH_TYPE = {"type": "fixed", "name": "RecordLength", "namespace": "hudi_connect.framing", "size": 4}
_MAGIC = b"Obj\x01"
_SYNC = bytes(range(16))
# Logical types the Arrow schema of a block does not keep (avro_records reads a uuid as its string)
_DROPPED_LOGICAL_TYPES = frozenset({"uuid"})


@lru_cache(maxsize=1)
def _context() -> Any | None:
    """One DataFusion session per worker process, single-threaded (Spark runs a task per core); None when the
    worker's Python has no ``datafusion``."""
    try:
        import datafusion  # optional: imported where it is used, once
    except ImportError:
        return None
    return datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(1))


def native_decoding_available() -> bool:
    """Whether this process decodes large Avro data blocks with Arrow's compiled decoder."""
    return _context() is not None


def _zigzag(value: int) -> bytes:
    """Avro's variable-length zigzag encoding of a long."""
    encoded = (value << 1) ^ (value >> 63)
    out = bytearray()
    while encoded & ~0x7F:
        out.append((encoded & 0x7F) | 0x80)
        encoded >>= 7
    out.append(encoded)
    return bytes(out)


def _avro_bytes(value: bytes) -> bytes:
    return _zigzag(len(value)) + value


def _without_dropped_logical_types(schema: Any) -> Any:
    """The schema with the logical types Arrow's decoder would type otherwise than our Arrow schema removed."""
    if isinstance(schema, list):
        return [_without_dropped_logical_types(branch) for branch in schema]
    if not isinstance(schema, dict):
        return schema
    # a field list is a list of dicts whose "type" this walks in turn
    return {key: _without_dropped_logical_types(value) if key in ("type", "items", "values", "fields") else value
            for key, value in schema.items() if not (key == "logicalType" and value in _DROPPED_LOGICAL_TYPES)}


def framed_schema_json(writer: dict[str, Any]) -> str:
    """The container's schema: the writer's record with the record-length field first."""
    framed = _without_dropped_logical_types(writer)
    framed["fields"] = [{"name": _LENGTH_FIELD, "type": _LENGTH_TYPE}, *framed["fields"]]
    return json.dumps(framed)


def framed_container(content: bytes, count: int, schema_json: str) -> bytes:
    """An Avro object container of one block holding a Hudi data block's records, their lengths included."""
    metadata = {b"avro.schema": schema_json.encode(), b"avro.codec": b"null"}
    header = b"".join([_MAGIC, _zigzag(len(metadata)),
                       *(_avro_bytes(key) + _avro_bytes(value) for key, value in metadata.items()), _zigzag(0), _SYNC])
    return b"".join([header, _zigzag(count), _zigzag(len(content) - 8), memoryview(content)[8:], _SYNC])


def _read_container(context: Any, container: bytes) -> pa.Table:
    """DataFusion reads files only: the container goes to a file in memory (/dev/shm) where there is one."""
    directory = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    handle, path = tempfile.mkstemp(suffix=".avro", dir=directory)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(container)
        return context.read_avro(path).to_arrow_table()
    finally:
        os.unlink(path)


def check_lengths(lengths: pa.ChunkedArray, content: bytes, where: str) -> int:
    """The records' lengths as decoded must be the ones at each record's place in the content, and fill it;
    the last record's length."""
    import numpy as np  # with datafusion only: a worker needs no numpy otherwise

    combined = lengths.combine_chunks()
    stated = np.frombuffer(combined.buffers()[1], dtype=">i4",
                           count=len(combined) + combined.offset)[combined.offset:].astype(np.int64)
    if len(stated) and int(stated.min()) < 0:
        raise LogDecodeError(f"{where}: a record claims a negative length")
    if int(stated.sum()) + 4 * len(stated) != len(content) - 8:
        raise LogDecodeError(f"{where}: the records' lengths do not add up to the {len(content)} bytes of content")
    starts = 8 + np.cumsum(stated + 4) - (stated + 4)
    stored = np.frombuffer(content, dtype=np.uint8)
    in_place = sum(stored[starts + i].astype(np.int64) << (24 - 8 * i) for i in range(4))
    if not np.array_equal(in_place, stated):
        raise LogDecodeError(f"{where}: a record does not decode to the length it states")
    return int(stated[-1])


def decode_natively(content: bytes, count: int, schema_json: str, arrow_schema: pa.Schema,
                    where: str) -> tuple[pa.Table, int] | None:
    """The block's records as a table of ``arrow_schema`` by Arrow's decoder, with the last record's length
    (for its caller to check that record fills it), or None where it cannot read them (no ``datafusion``, or a
    schema or value it does not take): our decoder then reads them, and raises what is wrong with them.
    ``schema_json``: :func:`framed_schema_json` of the writer schema."""
    context = _context()
    if context is None:
        return None
    try:
        table = _read_container(context, framed_container(content, count, schema_json))
    except Exception:  # DataFusion raises its own kinds; our decoder names what is wrong
        return None
    if table.num_rows != count:
        return None
    try:
        last = check_lengths(table.column(_LENGTH_FIELD), content, where)
        records = table.drop_columns([_LENGTH_FIELD])
        # column by column: a column already of its type is kept as it is (casting a struct whose null slots
        # hold nulls under a non-null child fails, though nothing is wrong with it)
        columns = [column if column.type == field.type else column.cast(field.type)
                   for column, field in zip(records.columns, arrow_schema, strict=True)]
        return pa.Table.from_arrays(columns, schema=arrow_schema), last
    except (LogDecodeError, pa.ArrowException, ValueError, TypeError):
        return None


__all__ = ["NATIVE_MIN_RECORDS", "check_lengths", "decode_natively", "framed_container", "framed_schema_json",
           "native_decoding_available"]
