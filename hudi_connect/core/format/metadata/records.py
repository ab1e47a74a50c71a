"""Records of the metadata table, decoded from its HFiles and log blocks into small models.

Every metadata partition stores ``HoodieMetadataRecord`` (``HoodieMetadata.avsc``)
values, Avro binary, in HFile cells keyed by the record key. The ``type``
field says which payload the record carries (``MetadataPartitionType``):

=====  ===================  ==================================================
type   partition            payload
=====  ===================  ==================================================
1      files                ``__all_partitions__``: every data partition
2      files                one partition's files and sizes (key: the partition, "." if none)
3      column_stats         one column of one data file (``ColumnStatsMetadata``)
4      bloom_filters        one data file's bloom filter
5      record_index         where a record key lives (``recordIndexMetadata``)
6      partition_stats      one column over one partition (``ColumnStatsMetadata``)
7      secondary_index_*    one (secondary key, record key) pair, both in the key
=====  ===================  ==================================================

The writer schema of a base file is in its file info (``schema``); an HFile
log block carries it in its ``SCHEMA`` header (and in its HFile's file info).
Hudi blanks the ``key`` field of the Avro value (the HFile key holds it),
so the key is always taken from the cell. Deleted keys sit in delete blocks
(:func:`hudi_connect.core.format.log.delete_records`).

Decoding is per cell, so a lookup of a few keys decodes only their values.
How records of one key combine is :mod:`hudi_connect.core.format.metadata.merge`.
"""

from __future__ import annotations

import datetime
import io
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache
from types import MappingProxyType
from typing import Any
from uuid import UUID

import fastavro

from hudi_connect.core.errors import MetadataTableError
from hudi_connect.core.format.log.blocks import delete_records, rollback_target
from hudi_connect.core.format.log.format import LogBlock, LogBlockType
from hudi_connect.core.format.metadata.hfile import ByteSource, HFile, open_hfile
from hudi_connect.core.format.metadata.keys import data_partition, secondary_index_key_parts
from hudi_connect.core.format.metadata.selection import KeySelection
from hudi_connect.core.format.metadata.values import unwrap_value

SCHEMA_FILE_INFO = "schema"
"""File info key of the Avro writer schema in Hudi's HFiles (``HoodieAvroHFileReaderImplBase.SCHEMA_KEY``)."""
RECORD_INDEX_UUID_ENCODING = 0
RECORD_INDEX_MISSING_FILE_INDEX = -1


class MetadataRecordType(IntEnum):
    """The ``type`` field of ``HoodieMetadataRecord`` (``MetadataPartitionType.getRecordType``)."""

    PARTITION_LIST = 1
    FILES = 2
    COLUMN_STATS = 3
    BLOOM_FILTER = 4
    RECORD_INDEX = 5
    PARTITION_STATS = 6
    SECONDARY_INDEX = 7


@dataclass(frozen=True)
class PartitionList:
    """The data partitions (relative paths, "" for a non-partitioned table) and tombstoned ones."""

    partitions: frozenset[str]
    deleted: frozenset[str] = frozenset()


@dataclass(frozen=True)
class PartitionFiles:
    """One data partition's files: name -> size in bytes, and tombstones of deleted files not (yet) cancelled."""

    partition: str
    files: Mapping[str, int]
    deleted: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ColumnStats:
    """Statistics of one column of one data file (column_stats) or one partition (partition_stats).

    For column_stats, ``partition`` is None until resolved from the key (see
    :func:`hudi_connect.core.format.metadata.merge.column_stats`); for partition_stats
    ``file_name`` is None and ``partition`` is the data partition.
    """

    partition: str | None
    file_name: str | None
    column: str
    min_value: object
    max_value: object
    null_count: int | None
    value_count: int | None
    total_size: int | None
    total_uncompressed_size: int | None
    is_deleted: bool
    is_tight_bound: bool = False


@dataclass(frozen=True)
class BloomFilterEntry:
    """A data file's serialized bloom filter (``HoodieMetadataBloomFilter``)."""

    bloom_type: str
    timestamp: str
    bloom_filter: bytes
    is_deleted: bool


@dataclass(frozen=True)
class RecordLocation:
    """Where the record index says a record key lives (``HoodieRecordGlobalLocation``).

    ``instant_millis`` is the epoch time Hudi stores for the instant that
    placed the record; :meth:`instant_time` formats it back into an instant
    time, which needs the writer's time zone (``hoodie.table.timeline.timezone``:
    UTC, or LOCAL, the writer JVM's zone).
    """

    partition: str
    file_id: str
    instant_millis: int
    position: int | None = None

    def instant_time(self, zone: datetime.tzinfo = datetime.UTC) -> str:
        """The instant time ``yyyyMMddHHmmssSSS`` in ``zone`` (``HoodieInstantTimeGenerator.formatDate``)."""
        moment = datetime.datetime.fromtimestamp(self.instant_millis // 1000, zone)
        return moment.strftime("%Y%m%d%H%M%S") + f"{self.instant_millis % 1000:03d}"


@dataclass(frozen=True)
class SecondaryIndexEntry:
    """One (secondary key, record key) pair of a secondary index; either key may be null."""

    secondary_key: str | None
    record_key: str | None
    is_deleted: bool


MetadataPayload = PartitionList | PartitionFiles | ColumnStats | BloomFilterEntry | RecordLocation | SecondaryIndexEntry


@dataclass(frozen=True)
class MetadataRecord:
    """One record of the metadata table and the instant that wrote it.

    ``instant_time`` is the writing metadata-table instant: a log block's
    ``INSTANT_TIME`` (for deltacommits, the data table instant's requested
    time) or the instant in a base file's name (compaction or initialization).
    """

    key: str
    record_type: MetadataRecordType
    payload: MetadataPayload
    instant_time: str | None = None

    @property
    def is_tombstone(self) -> bool:
        """Whether the payload marks its key deleted (column stats, bloom filter, secondary index ``isDeleted``)."""
        return bool(getattr(self.payload, "is_deleted", False))


@dataclass(frozen=True)
class MetadataDelete:
    """A key deleted by a delete block (``EmptyHoodieRecordPayload`` in Hudi's merge)."""

    key: str
    instant_time: str | None = None


MetadataEntry = MetadataRecord | MetadataDelete


@lru_cache(maxsize=16)
def _parsed_schema(schema_json: str) -> Any:
    try:
        return fastavro.parse_schema(json.loads(schema_json))
    except (ValueError, fastavro.schema.SchemaParseException) as error:
        raise MetadataTableError(f"the writer schema is not a valid Avro schema: {error}") from None


def _avro(value: bytes, schema_json: str, where: str) -> dict[str, Any]:
    stream = io.BytesIO(value)
    try:
        decoded = fastavro.schemaless_reader(stream, _parsed_schema(schema_json), None,
                                             return_named_type=True, return_named_type_override=True)
    except Exception as error:  # fastavro fails with assorted types on bytes that do not match the schema
        raise MetadataTableError(f"{where}: the value is not a HoodieMetadataRecord in the writer schema "
                                 f"({type(error).__name__}: {error})") from None
    if not isinstance(decoded, dict) or stream.tell() != len(value):
        raise MetadataTableError(f"{where}: the value decodes to {stream.tell()} of its {len(value)} bytes")
    return decoded


def _field(record: Mapping[str, Any], name: str, where: str) -> Any:
    value = record.get(name)
    if value is None:
        raise MetadataTableError(f"{where}: the record has no {name}")
    return value


def _listing(record: Mapping[str, Any]) -> tuple[dict[str, int], frozenset[str]]:
    entries = record.get("filesystemMetadata") or {}
    files = {name: int(info["size"]) for name, info in entries.items() if not info["isDeleted"]}
    deleted = frozenset(name for name, info in entries.items() if info["isDeleted"])
    return files, deleted


def _column_stats(record: Mapping[str, Any], record_type: MetadataRecordType, where: str) -> ColumnStats:
    stats = _field(record, "ColumnStatsMetadata", where)
    value_type = stats.get("valueType") or {}
    ordinal, info = value_type.get("typeOrdinal"), value_type.get("additionalInfo")
    try:
        low = unwrap_value(stats.get("minValue"), ordinal, info)
        high = unwrap_value(stats.get("maxValue"), ordinal, info)
    except MetadataTableError as error:
        raise MetadataTableError(f"{where}: {error}") from None
    per_partition = record_type is MetadataRecordType.PARTITION_STATS
    return ColumnStats(
        partition=stats.get("fileName") if per_partition else None,
        file_name=None if per_partition else stats.get("fileName"),
        column=_field(stats, "columnName", where), min_value=low, max_value=high,
        null_count=stats.get("nullCount"), value_count=stats.get("valueCount"), total_size=stats.get("totalSize"),
        total_uncompressed_size=stats.get("totalUncompressedSize"), is_deleted=bool(stats.get("isDeleted")),
        is_tight_bound=bool(stats.get("isTightBound")))


def _record_location(record: Mapping[str, Any], where: str) -> RecordLocation:
    """``HoodieTableMetadataUtil.getLocationFromRecordIndexInfo``: a UUID file id in two longs plus a file
    index (``{uuid}-{index}``, index -1 for none), or the raw ``fileId`` when ``fileIdEncoding`` is 1."""
    info = _field(record, "recordIndexMetadata", where)
    if info.get("fileIdEncoding", RECORD_INDEX_UUID_ENCODING) == RECORD_INDEX_UUID_ENCODING:
        high, low = _field(info, "fileIdHighBits", where), _field(info, "fileIdLowBits", where)
        file_id = str(UUID(int=((high & (1 << 64) - 1) << 64) | (low & (1 << 64) - 1)))
        index = info.get("fileIndex")
        if index is not None and index != RECORD_INDEX_MISSING_FILE_INDEX:
            file_id += f"-{index}"
    else:
        file_id = _field(info, "fileId", where)
    return RecordLocation(_field(info, "partitionName", where), file_id, _field(info, "instantTime", where),
                          info.get("position"))


def _payload(key: str, record_type: MetadataRecordType, record: Mapping[str, Any], where: str) -> MetadataPayload:
    if record_type is MetadataRecordType.PARTITION_LIST:
        files, deleted = _listing(record)
        return PartitionList(frozenset(map(data_partition, files)), frozenset(map(data_partition, deleted)))
    if record_type is MetadataRecordType.FILES:
        files, deleted = _listing(record)
        return PartitionFiles(data_partition(key), MappingProxyType(files), deleted)
    if record_type in (MetadataRecordType.COLUMN_STATS, MetadataRecordType.PARTITION_STATS):
        return _column_stats(record, record_type, where)
    if record_type is MetadataRecordType.RECORD_INDEX:
        return _record_location(record, where)
    if record_type is MetadataRecordType.BLOOM_FILTER:
        bloom = _field(record, "BloomFilterMetadata", where)
        return BloomFilterEntry(bloom["type"], bloom["timestamp"], bytes(bloom["bloomFilter"]),
                                bool(bloom["isDeleted"]))
    secondary = _field(record, "SecondaryIndexMetadata", where)
    try:
        secondary_key, record_key = secondary_index_key_parts(key)
    except ValueError as error:
        raise MetadataTableError(f"{where}: {error}") from None
    return SecondaryIndexEntry(secondary_key, record_key, bool(secondary["isDeleted"]))


def decode_metadata_record(key: bytes, value: bytes, schema_json: str, instant_time: str | None = None,
                           source: str = "metadata table") -> MetadataRecord:
    """One HFile cell of the metadata table as a :class:`MetadataRecord`.

    Example::

        record = decode_metadata_record(b"region=us", value, schema_json, "20260307162434124")
        record.payload.files  # {'c7bb...parquet': 438578, ...}
    """
    text_key = key.decode("utf-8", "replace")
    where = f"{source}: record {text_key!r}"
    record = _avro(value, schema_json, where)
    raw_type = _field(record, "type", where)
    try:
        record_type = MetadataRecordType(raw_type)
    except ValueError:
        raise MetadataTableError(f"{where}: unknown metadata record type {raw_type} (known: "
                                 f"{', '.join(f'{t.value} {t.name}' for t in MetadataRecordType)}); it may have "
                                 "been written by a newer Hudi") from None
    try:
        payload = _payload(text_key, record_type, record, where)
    except (KeyError, TypeError, ValueError) as error:
        raise MetadataTableError(f"{where}: malformed {record_type.name} payload: {error!r}") from None
    return MetadataRecord(text_key, record_type, payload, instant_time)


def _schema_of(hfile: HFile, header_schema: str | None) -> str:
    if header_schema is not None:
        return header_schema
    raw = hfile.file_info.get(SCHEMA_FILE_INFO)
    if raw is None:
        raise MetadataTableError(f"{hfile.source}: no writer schema, neither in a SCHEMA header nor in the "
                                 f"file info key {SCHEMA_FILE_INFO!r}")
    return raw.decode("utf-8")


def _records(hfile: HFile, schema_json: str, instant_time: str | None,
             select: KeySelection | None) -> Iterator[MetadataRecord]:
    if select is None:
        cells: Iterable[tuple[bytes, bytes]] = hfile.cells()
    elif select.where is not None:  # every key tested, only the selected values decoded
        cells = ((key, value) for key, value in hfile.cells() if select.matches(key.decode("utf-8")))
    else:
        cells = hfile.selected_cells(*select.encoded())
    for key, value in cells:
        yield decode_metadata_record(key, value, schema_json, instant_time, hfile.source)


def hfile_records(data: bytes | ByteSource, *, instant_time: str | None = None, select: KeySelection | None = None,
                  source: str = "metadata base file") -> Iterator[MetadataRecord]:
    """The records of a metadata table base file (``.hfile``), in key order, decoded as they are reached; only
    those ``select`` selects when given. ``data``: the whole file, or a :class:`ByteSource` reading it by range.

    ``instant_time`` is the instant in the file's name, recorded on each record.

    Example::

        name = "files-0000-0_0-5-4_00000000000000000.hfile"
        records = list(hfile_records(path.read_bytes(), instant_time=name.rsplit("_", 1)[1][:-6]))
    """
    hfile = open_hfile(data, source)
    return _records(hfile, _schema_of(hfile, None), instant_time, select)


def hfile_block_records(block: LogBlock, select: KeySelection | None = None) -> Iterator[MetadataRecord]:
    """The records of an HFile data block of a metadata table log file, in key order; only those ``select``
    selects when given.

    Example::

        for block in read_log_blocks(data):
            if block.block_type is LogBlockType.HFILE_DATA:
                records = list(hfile_block_records(block))
    """
    if block.block_type is not LogBlockType.HFILE_DATA:
        raise ValueError(f"{block.block_type.name} block at byte {block.offset} is not an HFile data block")
    hfile = open_hfile(block.content, f"HFILE_DATA block at byte {block.offset}")
    return _records(hfile, _schema_of(hfile, block.schema_json), block.instant_time, select)


def log_entries(blocks: Iterable[LogBlock], select: KeySelection | None = None) -> list[MetadataEntry]:
    """The records and deletes of a file slice's log blocks, in order; only those ``select`` selects when given.

    Like Hudi's log record reader, corrupt blocks are skipped and a rollback
    command block drops the blocks of its target instant read before it.
    Filtering blocks by completed instant is left to the caller: every entry
    carries its block's instant.

    Example::

        blocks = [b for path in log_paths for b in read_log_blocks(path.read_bytes(), source=str(path))]
        entries = log_entries(blocks, KeySelection.of(keys=["TXN-001"]))
    """
    kept: list[LogBlock] = []
    for block in blocks:
        if block.block_type is LogBlockType.CORRUPT:
            continue
        target = rollback_target(block)
        if target is not None:
            kept = [earlier for earlier in kept if earlier.instant_time != target]
        elif block.block_type in (LogBlockType.HFILE_DATA, LogBlockType.DELETE):
            kept.append(block)
        else:
            raise MetadataTableError(f"{block.block_type.name} block at byte {block.offset}: metadata table log "
                                     "files hold only HFile data, delete and command blocks")
    entries: list[MetadataEntry] = []
    for block in kept:
        if block.block_type is LogBlockType.HFILE_DATA:
            entries.extend(hfile_block_records(block, select))
        else:
            entries.extend(MetadataDelete(deleted.record_key, block.instant_time) for deleted in delete_records(block)
                           if select is None or select.matches(deleted.record_key))
    return entries
