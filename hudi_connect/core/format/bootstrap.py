"""Bootstrapped tables: an existing Parquet folder made a Hudi table without rewriting it (RFC-12).

A metadata-only bootstrap writes, per source file, a *skeleton* base file at the instant
:data:`METADATA_BOOTSTRAP_INSTANT` holding only the meta columns, one row per source row in the source's
order; the records are the two files zipped by position. The bootstrap index (an HFile under
``.hoodie/.aux/.bootstrap/.fileids``) maps each skeleton file group (``part=<partition>;fileid=<id>``) to its
source file. A partition column a hive-style source keeps in its paths only is read from the partition path.
A full-record bootstrap writes ordinary base files (at :data:`FULL_BOOTSTRAP_INSTANT`): nothing to join.
Once a write rewrites a file group, its new base file is an ordinary one; a MOR table's log files merge over
the joined records until then.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import fastavro
import pyarrow as pa

from hudi_connect.core.errors import LogDecodeError, UnsupportedTableFeatureError
from hudi_connect.core.format.spec_models import PartitionDescriptor
from hudi_connect.core.format.table_config import TableProperties
from hudi_connect.core.format.table_schema import META_COLUMNS

METADATA_BOOTSTRAP_INSTANT = "00000000000001"
FULL_BOOTSTRAP_INSTANT = "00000000000002"
BASE_PATH_PROPERTY = "hoodie.bootstrap.base.path"
_INDEX_FILE = "00000000-0000-0000-0000-000000000000-0_1-0-1_00000000000001.hfile"
FILE_ID_INDEX = f".hoodie/.aux/.bootstrap/.fileids/{_INDEX_FILE}"  # relative to the table's base path


@dataclass(frozen=True)
class Bootstrap:
    """How the workers join a bootstrapped table's skeleton files with their source files."""

    index_uri: str  # the file-id index (FILE_ID_INDEX under the table)
    partition_fields: tuple[str, ...]
    hive_style: bool
    url_encoded: bool

    @classmethod
    def of(cls, base_uri: str, props: TableProperties) -> Bootstrap | None:
        """The table's bootstrap, or None for a table that was not bootstrapped (a bootstrap without its index
        is refused with the table's other features: ``table_features.unsupported_features``)."""
        if not props.raw.get(BASE_PATH_PROPERTY, "").strip():
            return None
        raw = props.raw
        return cls(f"{base_uri.rstrip('/')}/{FILE_ID_INDEX}", props.partition_fields,
                   raw.get("hoodie.datasource.write.hive_style_partitioning", "false").strip().lower() == "true",
                   raw.get("hoodie.datasource.write.partitionpath.urlencode", "false").strip().lower() == "true")


def is_skeleton(base_file_name: str) -> bool:
    """Whether a base file is a metadata-only bootstrap's skeleton (its instant is the bootstrap's)."""
    return base_file_name.rsplit(".", 1)[0].endswith(f"_{METADATA_BOOTSTRAP_INSTANT}")


def index_key(partition: str, file_id: str) -> bytes:
    """The file-id index's key of a skeleton file group (``HFileBootstrapIndex``)."""
    return f"part={partition};fileid={file_id}".encode()


def source_uri(value: bytes, where: str) -> str:
    """The source file a file-id index entry names (``HoodieBootstrapFilePartitionInfo``, one record in an
    Avro container), as a URI the workers' storage clients read (``file:/x`` as ``file:///x``)."""
    try:
        record: Any = next(iter(fastavro.reader(io.BytesIO(value))))
        uri = str(record["bootstrapFileStatus"]["path"]["uri"])
    except (ValueError, KeyError, StopIteration, TypeError) as error:
        raise LogDecodeError(f"{where}: not a bootstrap index entry ({type(error).__name__}: {error})") from None
    if uri.startswith("file:/") and not uri.startswith("file:///"):
        uri = "file:///" + uri[len("file:/"):].lstrip("/")
    return uri


def skeleton_source(index: Mapping[bytes, bytes], bootstrap: Bootstrap, partition: str, file_id: str,
                    where: str) -> str:
    """The source file a skeleton file group joins, by the file-id index's entries (``index``); refused by name
    where the index names none."""
    entry = index.get(index_key(partition, file_id))
    if entry is None:
        raise UnsupportedTableFeatureError(
            "a skeleton file the bootstrap index does not name", "file id", file_id, where=where)
    return source_uri(entry, bootstrap.index_uri)


def joined_records(skeleton: pa.Table, source: pa.Table, partition: str, bootstrap: Bootstrap,
                   schema: pa.Schema, where: str) -> pa.Table:
    """A skeleton file's meta columns and its source file's columns, row by row (the skeleton holds one row per
    source row, in order), with the partition columns the source keeps in its paths only read from
    ``partition``; in ``schema``'s column order where present."""
    if skeleton.num_rows != source.num_rows:
        raise LogDecodeError(f"{where}: the skeleton file has {skeleton.num_rows} rows and its source file "
                             f"{source.num_rows}: they cannot be joined by position")
    columns = {c: skeleton[c] for c in skeleton.column_names if c in META_COLUMNS}
    columns |= {c: source[c] for c in source.column_names if c not in columns}
    missing = [f for f in bootstrap.partition_fields if f not in columns and f in schema.names]
    return _with_path_values(pa.table(columns), missing, partition, bootstrap, schema, where)


def with_partition_values_of_path(records: pa.Table, partition: str, bootstrap: Bootstrap, schema: pa.Schema,
                                  where: str) -> pa.Table:
    """An ordinary base file's records of a bootstrapped table with its partition columns read from the
    partition path, as Hudi's read of such a table takes them: Hudi 1.2, rewriting a skeleton's records into a
    new base file (a MOR insert into the skeleton's file group), wrote the record key's value into the
    partition column and a null key (the shrunk seed 73006); the path holds the partition's value."""
    present = [f for f in bootstrap.partition_fields if f in records.column_names and f in schema.names]
    return _with_path_values(records, present, partition, bootstrap, schema, where)


def _with_path_values(records: pa.Table, names: list[str], partition: str, bootstrap: Bootstrap, schema: pa.Schema,
                      where: str) -> pa.Table:
    """``records`` with the partition columns ``names`` set to the values the partition path holds."""
    if not names:
        return records
    values = PartitionDescriptor.parse(partition, bootstrap.partition_fields, schema,
                                       hive_style=bootstrap.hive_style, url_encoded=bootstrap.url_encoded).values
    for name in names:
        if name not in values:
            raise UnsupportedTableFeatureError(
                "a bootstrapped partition column not held in its source files nor readable from its path",
                "partition path", partition, where=where)
        column = pa.array([values[name]] * records.num_rows, schema.field(name).type)
        records = records.set_column(records.column_names.index(name), name, column) \
            if name in records.column_names else records.append_column(name, column)
    return records
