"""How records of one metadata table key combine, and the merged state read as files, stats and locations.

Mirrors ``HoodieMetadataPayload.preCombine`` (used by ``combineAndGetUpdateValue``),
which a reader applies to a file slice's records in order: base file, then
log blocks oldest first. For each key:

- a delete (delete block) removes the key; a record after a delete starts afresh;
- files and the partition list (``combineFileSystemMetadata``): later records
  add files, a file's size is the largest seen, and a tombstone (``isDeleted``)
  removes a file listed before; a tombstone with nothing to cancel is kept,
  since the file may sit in an older part of the slice;
- column and partition stats (``mergeColumnStatsRecords``): a tombstone on
  either side, or a tight-bound newer record, wins outright; otherwise the
  ranges widen (smallest min, largest max) and counts and sizes add up;
- bloom filters, record index and secondary index: the later record wins.

The merged state then drops records whose payload is a tombstone, as Hudi's
``getInsertValue`` returns nothing for them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from hudi_connect.core.errors import MetadataTableError
from hudi_connect.core.format.metadata.keys import ALL_PARTITIONS_KEY, COLUMN_HASH_LENGTH, partition_hash
from hudi_connect.core.format.metadata.records import (
    ColumnStats,
    MetadataDelete,
    MetadataEntry,
    MetadataRecord,
    MetadataRecordType,
    PartitionFiles,
    PartitionList,
    RecordLocation,
    SecondaryIndexEntry,
)


def _merge_listing(old_files: Mapping[str, int], old_deleted: Iterable[str], new_files: Mapping[str, int],
                   new_deleted: Iterable[str]) -> tuple[dict[str, int], frozenset[str]]:
    """``combineFileSystemMetadata`` over (live name -> size, tombstones) pairs."""
    files, deleted = dict(old_files), set(old_deleted)
    for name, size in new_files.items():
        files[name] = max(size, files.get(name, 0))
        deleted.discard(name)
    for name in new_deleted:
        if files.pop(name, None) is None:
            deleted.add(name)
    return files, frozenset(deleted)


def _widest(values: Iterable[Any], smallest: bool, where: str) -> object:
    present = [value for value in values if value is not None]
    try:
        return (min(present) if smallest else max(present)) if present else None
    except TypeError as error:
        raise MetadataTableError(f"{where}: column statistics of different types cannot be merged: {error}") from None


def _sum(first: int | None, second: int | None) -> int | None:
    return None if first is None and second is None else (first or 0) + (second or 0)


def merge_column_stats(older: ColumnStats, newer: ColumnStats, where: str = "column stats") -> ColumnStats:
    """``HoodieTableMetadataUtil.mergeColumnStatsRecords``."""
    if older.column != newer.column:
        raise MetadataTableError(f"{where}: cannot merge statistics of column {older.column!r} with {newer.column!r}")
    if newer.is_deleted or older.is_deleted or newer.is_tight_bound:
        return newer
    return replace(
        newer,
        min_value=_widest((older.min_value, newer.min_value), True, where),
        max_value=_widest((older.max_value, newer.max_value), False, where),
        null_count=_sum(older.null_count, newer.null_count), value_count=_sum(older.value_count, newer.value_count),
        total_size=_sum(older.total_size, newer.total_size),
        total_uncompressed_size=_sum(older.total_uncompressed_size, newer.total_uncompressed_size))


def merge_records(older: MetadataRecord, newer: MetadataRecord) -> MetadataRecord:
    """The record ``newer`` makes of ``older`` (``HoodieMetadataPayload.preCombine``); same key and type."""
    where = f"metadata record {newer.key!r}"
    if older.key != newer.key:
        raise MetadataTableError(f"{where}: cannot merge with a record of key {older.key!r}")
    if older.record_type is not newer.record_type:
        raise MetadataTableError(f"{where}: cannot merge a {newer.record_type.name} record with a "
                                 f"{older.record_type.name} record (HoodieMetadataPayload.preCombine)")
    old, new = older.payload, newer.payload
    if isinstance(old, PartitionFiles) and isinstance(new, PartitionFiles):
        files, deleted = _merge_listing(old.files, old.deleted, new.files, new.deleted)
        return replace(newer, payload=PartitionFiles(new.partition, MappingProxyType(files), deleted))
    if isinstance(old, PartitionList) and isinstance(new, PartitionList):
        listed, deleted = _merge_listing(dict.fromkeys(old.partitions, 0), old.deleted,
                                         dict.fromkeys(new.partitions, 0), new.deleted)
        return replace(newer, payload=PartitionList(frozenset(listed), deleted))
    if isinstance(old, ColumnStats) and isinstance(new, ColumnStats):
        return replace(newer, payload=merge_column_stats(old, new, where))
    return newer


def merge_entries(entries: Iterable[MetadataEntry], *, keep_tombstones: bool = False) -> dict[str, MetadataRecord]:
    """The merged record of every key, applying ``entries`` in order (base file first, then log blocks).

    Keys deleted by a delete block are absent; so are records whose payload
    is a tombstone unless ``keep_tombstones`` (to merge the result with more
    entries later). Filter entries by instant before merging.

    Example::

        merged = merge_entries([*hfile_records(base, instant_time=base_instant), *log_entries(blocks)])
        files = partition_files(merged)
    """
    merged: dict[str, MetadataRecord] = {}
    for entry in entries:
        if isinstance(entry, MetadataDelete):
            merged.pop(entry.key, None)
            continue
        previous = merged.get(entry.key)
        merged[entry.key] = entry if previous is None else merge_records(previous, entry)
    if keep_tombstones:
        return merged
    return {key: record for key, record in merged.items() if not record.is_tombstone}


def _folded(record: MetadataRecord | None, later: Iterable[MetadataEntry]) -> MetadataRecord | None:
    """One key's record after applying its ``later`` entries in order (None: deleted, or never written)."""
    for entry in later:
        if isinstance(entry, MetadataDelete):
            record = None
        else:
            record = entry if record is None else merge_records(record, entry)
    return record


def merge_in_key_order(base: Iterable[MetadataRecord], later: Iterable[MetadataEntry]) -> Iterator[MetadataRecord]:
    """The live merged records of a file slice, in key order, as :func:`merge_entries` makes them of ``base``
    then ``later``, holding only ``later`` (a slice's log entries) in memory: ``base`` (its base file's records,
    in key order) streams through, one record at a time.

    Example::

        for record in merge_in_key_order(hfile_records(base_file), log_entries(blocks)):
            ...
    """
    by_key: dict[str, list[MetadataEntry]] = {}
    for entry in later:
        by_key.setdefault(entry.key, []).append(entry)
    pending = sorted(by_key)  # rows sort bytewise, and UTF-8 keeps the order of code points
    position = 0
    for record in base:
        while position < len(pending) and pending[position] <= record.key:
            key = pending[position]
            position += 1
            if key != record.key:
                merged = _folded(None, by_key[key])
                if merged is not None and not merged.is_tombstone:
                    yield merged
        merged = _folded(record, by_key.get(record.key, ()))
        if merged is not None and not merged.is_tombstone:
            yield merged
    for key in pending[position:]:
        merged = _folded(None, by_key[key])
        if merged is not None and not merged.is_tombstone:
            yield merged


def all_partitions(records: Mapping[str, MetadataRecord]) -> frozenset[str]:
    """The data partitions the files partition lists ("" for a non-partitioned table)."""
    record = records.get(ALL_PARTITIONS_KEY)
    return record.payload.partitions if record and isinstance(record.payload, PartitionList) else frozenset()


def partition_files(records: Mapping[str, MetadataRecord]) -> dict[str, PartitionFiles]:
    """Every partition's files, by data partition path ("" for a non-partitioned table)."""
    return {record.payload.partition: record.payload for record in records.values()
            if isinstance(record.payload, PartitionFiles)}


def column_stats(records: Mapping[str, MetadataRecord], partitions: Iterable[str] = ()) -> list[ColumnStats]:
    """Live column and partition statistics. A column_stats record names its file but not its partition:
    it is filled in from the partition hash in the key when one of ``partitions`` matches."""
    by_hash = {partition_hash(partition): partition for partition in partitions}
    found = []
    for record in records.values():
        stats = record.payload
        if not isinstance(stats, ColumnStats) or stats.is_deleted:
            continue
        if record.record_type is MetadataRecordType.COLUMN_STATS and stats.partition is None:
            hashed = record.key[COLUMN_HASH_LENGTH:2 * COLUMN_HASH_LENGTH]
            stats = replace(stats, partition=by_hash.get(hashed))
        found.append(stats)
    return found


def record_locations(records: Mapping[str, MetadataRecord]) -> dict[str, RecordLocation]:
    """Record key -> location, from merged record index records."""
    return {key: record.payload for key, record in records.items() if isinstance(record.payload, RecordLocation)}


def secondary_index_entries(records: Mapping[str, MetadataRecord]) -> list[SecondaryIndexEntry]:
    """Live (secondary key, record key) pairs of merged secondary index records."""
    return [record.payload for record in records.values()
            if isinstance(record.payload, SecondaryIndexEntry) and not record.payload.is_deleted]
