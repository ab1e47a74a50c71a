"""RFC-64's table models: what an engine needs to plan a read, without Hudi's internals.

File slices are :class:`hudi_connect.core.format.fs_view.FileSlice` (an optional base file
and the log files after it); these models group them by partition and say at
which instants they were taken.
"""

from __future__ import annotations

import datetime as dt
import decimal
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import unquote

import pyarrow as pa

from hudi_connect.core.format.fs_view import FileSlice
from hudi_connect.core.format.table_config import TableProperties, TableType

# Hive's name for a NULL partition value; Hudi writes it for null partition columns.
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


class ReadingMode(StrEnum):
    """How a read uses a table's file slices."""

    SNAPSHOT = "SNAPSHOT"  # base files merged with their log files
    SNAPSHOT_READ_OPTIMIZED = "SNAPSHOT_READ_OPTIMIZED"  # base files only
    INCREMENTAL = "INCREMENTAL"  # latest state of records written in a range
    CDC = "CDC"  # every change in a range


@dataclass(frozen=True)
class TableId:
    """Where a table lives and what it is called (``hoodie.table.name``, ``hoodie.database.name``)."""

    base_path: str
    name: str
    database: str | None = None


@dataclass(frozen=True)
class TableDefinition:
    """What a table is: identity, layout and record schema (meta columns included when populated)."""

    id: TableId
    table_type: TableType
    version: int
    record_key_fields: tuple[str, ...]
    ordering_fields: tuple[str, ...]
    partition_fields: tuple[str, ...]
    schema: pa.Schema

    @classmethod
    def of(cls, base_path: str, properties: TableProperties, schema: pa.Schema) -> TableDefinition:
        """The definition of the table at ``base_path`` from its ``hoodie.properties`` and record schema."""
        return cls(TableId(base_path, properties.name, properties.raw.get("hoodie.database.name")),
                   properties.table_type, properties.version, properties.record_key_fields,
                   properties.ordering_fields, properties.partition_fields, schema)


@dataclass(frozen=True)
class PartitionDescriptor:
    """A partition: its relative path and the typed value of each partition column."""

    path: str
    values: Mapping[str, Any]

    @classmethod
    def parse(cls, path: str, fields: tuple[str, ...], schema: pa.Schema, *, hive_style: bool,
              url_encoded: bool, opaque: frozenset[str] = frozenset()) -> PartitionDescriptor:
        """The values a path encodes: ``city=paris/day=2024-01-01`` or ``paris/2024-01-01``.

        Values that do not split evenly over the fields, and the ``opaque`` fields (a key
        generator wrote a formatted timestamp, not the value), are left out, so predicates
        on them are not used for pruning.
        """
        parts = path.split("/") if path else []
        if len(parts) != len(fields):
            return cls(path, {})
        values: dict[str, Any] = {}
        for field, part in zip(fields, parts, strict=True):
            raw = part.split("=", 1)[1] if hive_style and "=" in part else part
            raw = unquote(raw) if url_encoded else raw
            if field in opaque:
                continue
            typed = _typed(raw, schema.field(field).type) if field in schema.names else raw
            if typed is not _UNTYPED:
                values[field] = typed
        return cls(path, values)


_UNTYPED = object()


def _typed(raw: str, arrow_type: pa.DataType) -> Any:
    if raw == NULL_PARTITION:
        # Hudi's key generators write an empty string there too: a string partition may hold '' or NULL
        return _UNTYPED if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) else None
    try:
        if pa.types.is_integer(arrow_type):
            return int(raw)
        if pa.types.is_float32(arrow_type):  # the float Spark reads, compared with a double as the double it is
            return struct.unpack("<f", struct.pack("<f", float(raw)))[0]
        if pa.types.is_floating(arrow_type):
            return float(raw)
        if pa.types.is_decimal(arrow_type):
            return decimal.Decimal(raw)
        if pa.types.is_date(arrow_type):
            return dt.date.fromisoformat(raw)
        if pa.types.is_boolean(arrow_type):
            return raw.lower() == "true"
        if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
            return raw
    except (ValueError, OverflowError):
        pass
    return _UNTYPED  # formats we do not decode (timestamps rendered by key generators, ...)


@dataclass(frozen=True)
class FileGroup:
    """A file group's slices, oldest first."""

    partition: str
    file_id: str
    slices: tuple[FileSlice, ...]


@dataclass(frozen=True)
class PartitionSnapshot:
    """The file slices to read in one partition at an instant."""

    partition: PartitionDescriptor
    instant: str | None  # requested time read at; None: the latest completed
    file_slices: tuple[FileSlice, ...]

    @property
    def total_bytes(self) -> int:
        """The size of every base file and log file of the partition's file slices."""
        return sum(slice_bytes(s) for s in self.file_slices)


@dataclass(frozen=True)
class PartitionIncrementalSnapshot:
    """The file slices of one partition holding records written in (begin, end]."""

    partition: PartitionDescriptor
    begin: str
    end: str | None
    file_slices: tuple[FileSlice, ...]
    commits: tuple[str, ...]  # requested times of the commits in the range


def slice_bytes(file_slice: FileSlice) -> int:
    """The size of a file slice: its base file (if any) plus its log files."""
    base = file_slice.base_file.size if file_slice.base_file else 0
    return base + sum(f.size for f in file_slice.log_files)
