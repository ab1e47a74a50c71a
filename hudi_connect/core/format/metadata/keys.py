"""Record keys and file groups of the metadata table, computed as Hudi computes them.

A reader looking up a few keys needs to know where they live without
scanning: which file group of a metadata partition holds a record key
(``HoodieTableMetadataUtil.mapRecordKeyToFileGroupIndex``), and what the key
of a column's statistics for one data file is (``HoodieMetadataPayload
.getColumnStatsIndexKey``: base64 of hashes of the column, the partition and
the file name). Hudi hashes with XXHash64 (column, partition; seed
``0xdabadaba``) and MD5 (file name) (``HashID``), so a small XXHash64 lives here.
"""

from __future__ import annotations

import base64
import hashlib
import struct

ALL_PARTITIONS_KEY = "__all_partitions__"
"""Key of the files partition's record listing every data partition (``RECORDKEY_PARTITION_LIST``)."""
NON_PARTITIONED_NAME = "."
"""How the metadata table names the partition of a non-partitioned table (``NON_PARTITIONED_NAME``)."""
SECONDARY_INDEX_SEPARATOR = "$"
_ESCAPE = "\\"
_NULL_KEY = "\0"

# File id prefixes of metadata partitions (MetadataPartitionType); secondary and expression index
# partitions use their own name with "_" replaced by "-" instead (getFileIDForFileGroup).
FILE_ID_PREFIXES = {
    "files": "files-",
    "column_stats": "col-stats-",
    "bloom_filters": "bloom-filters-",
    "record_index": "record-index-",
    "partition_stats": "partition-stats-",
}

_HASH_SEED = -0x25452546  # HashID.HASH_SEED, the int 0xdabadaba, widened to a long by Java
_MASK = (1 << 64) - 1
_P1, _P2, _P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_P4, _P5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5
_U64, _U32 = struct.Struct("<Q"), struct.Struct("<I")


def _rotate(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (64 - bits))) & _MASK


def _round(accumulator: int, lane: int) -> int:
    return (_rotate((accumulator + lane * _P2) & _MASK, 31) * _P1) & _MASK


def xxhash64(data: bytes, seed: int) -> int:
    """XXHash64 of ``data`` (the reference algorithm, as lz4-java's ``XXHash64`` computes it)."""
    length, position, seed = len(data), 0, seed & _MASK
    if length >= 32:
        lanes = [(seed + _P1 + _P2) & _MASK, (seed + _P2) & _MASK, seed, (seed - _P1) & _MASK]
        while position + 32 <= length:
            for lane in range(4):
                lanes[lane] = _round(lanes[lane], _U64.unpack_from(data, position + 8 * lane)[0])
            position += 32
        digest = (_rotate(lanes[0], 1) + _rotate(lanes[1], 7) + _rotate(lanes[2], 12) + _rotate(lanes[3], 18)) & _MASK
        for lane in lanes:
            digest = (((digest ^ _round(0, lane)) * _P1) + _P4) & _MASK
    else:
        digest = (seed + _P5) & _MASK
    digest = (digest + length) & _MASK
    while position + 8 <= length:
        digest ^= _round(0, _U64.unpack_from(data, position)[0])
        digest = (_rotate(digest, 27) * _P1 + _P4) & _MASK
        position += 8
    if position + 4 <= length:
        digest ^= (_U32.unpack_from(data, position)[0] * _P1) & _MASK
        digest = (_rotate(digest, 23) * _P2 + _P3) & _MASK
        position += 4
    while position < length:
        digest ^= (data[position] * _P5) & _MASK
        digest = (_rotate(digest, 11) * _P1) & _MASK
        position += 1
    digest ^= digest >> 33
    digest = (digest * _P2) & _MASK
    digest ^= digest >> 29
    digest = (digest * _P3) & _MASK
    return digest ^ (digest >> 32)


def _hash64_id(name: str) -> str:
    """``ColumnIndexID`` / ``PartitionIndexID``: base64 of the big-endian XXHash64 of the UTF-8 name."""
    return base64.b64encode(xxhash64(name.encode(), _HASH_SEED).to_bytes(8, "big")).decode()


def _file_id(file_name: str) -> str:
    """``FileIndexID``: base64 of the MD5 of the file name."""
    return base64.b64encode(hashlib.md5(file_name.encode(), usedforsecurity=False).digest()).decode()


def partition_identifier(partition: str) -> str:
    """How the metadata table names a data partition: the relative path, or "." for a non-partitioned table."""
    return partition or NON_PARTITIONED_NAME


def data_partition(identifier: str) -> str:
    """The data table's relative partition path for a metadata partition identifier ("." becomes "")."""
    return "" if identifier == NON_PARTITIONED_NAME else identifier


def partition_hash(partition: str) -> str:
    """The partition part of column stats, partition stats and bloom filter keys."""
    return _hash64_id(partition_identifier(partition))


def column_stats_key(partition: str, file_name: str, column: str) -> str:
    """Key of a column's statistics in one data file (``getColumnStatsIndexKey``): column, partition, file hashes.

    Example::

        column_stats_key("region=us", "c7bb...-0_1-27-53_20260307162434124.parquet", "txn_id")
    """
    return _hash64_id(column) + partition_hash(partition) + _file_id(file_name)


def column_stats_prefix(column: str) -> str:
    """The prefix every key of a column's statistics starts with, in any partition and data file
    (what Hudi's ``getRecordsByKeyPrefixes`` looks up for data skipping)."""
    return _hash64_id(column)


def partition_stats_key(partition: str, column: str) -> str:
    """Key of a column's statistics over one partition (``getPartitionStatsIndexKey``)."""
    return _hash64_id(column) + partition_hash(partition)


def bloom_filter_key(partition: str, file_name: str) -> str:
    """Key of a data file's bloom filter (``getBloomFilterRecordKey``)."""
    return partition_hash(partition) + _file_id(file_name)


COLUMN_HASH_LENGTH = len(_hash64_id(""))
"""Characters of a column or partition hash in a key (base64 of 8 bytes)."""


def java_string_hash(value: str) -> int:
    """``String.hashCode``: 31 * h + char over the UTF-16 code units, in 32-bit two's complement."""
    digest = 0
    encoded = value.encode("utf-16-be")
    for index in range(0, len(encoded), 2):
        digest = (31 * digest + (encoded[index] << 8 | encoded[index + 1])) & 0xFFFFFFFF
    return digest - (1 << 32) if digest >= 1 << 31 else digest


def _java_abs(value: int) -> int:
    """``Math.abs`` on an int: Integer.MIN_VALUE stays negative."""
    return value if value == -(1 << 31) else abs(value)


def file_group_index(record_key: str, file_group_count: int) -> int:
    """Which file group of a metadata partition holds ``record_key`` (``mapRecordKeyToFileGroupIndex``).

    Applies to the record index and, with the secondary key, to secondary
    indexes of version 1; the count is the number of file groups of the
    partition (``record-index-0000-0`` ...).

    Example::

        file_group_id("record_index", file_group_index("TXN-001", 10))  # 'record-index-0008-0'
    """
    if file_group_count <= 0:
        raise ValueError(f"file_group_count must be positive, not {file_group_count}")
    remainder = _java_abs(java_string_hash(record_key))
    # Java's % keeps the sign of the dividend
    remainder = -(-remainder % file_group_count) if remainder < 0 else remainder % file_group_count
    return abs(remainder)


def file_group_id(metadata_partition: str, index: int) -> str:
    """The file id of file group ``index`` of a metadata partition (``getFileIDForFileGroup``)."""
    prefix = FILE_ID_PREFIXES.get(metadata_partition, metadata_partition.replace("_", "-") + "-")
    return f"{prefix}{index:04d}-0"


def secondary_index_key_parts(key: str) -> tuple[str | None, str | None]:
    """(secondary key, record key) of a secondary index record key ``escaped$escaped``
    (``SecondaryIndexKeyUtils``): "\\" escapes "\\", "$" and NUL; a lone NUL stands for null."""
    escaped = False
    for position, char in enumerate(key):
        if escaped:
            escaped = False
        elif char == _ESCAPE:
            escaped = True
        elif char == SECONDARY_INDEX_SEPARATOR:
            return _unescape(key[:position]), _unescape(key[position + 1:])
    raise ValueError(f"secondary index key {key!r} has no unescaped {SECONDARY_INDEX_SEPARATOR!r}")


def _unescape(part: str) -> str | None:
    if part == _NULL_KEY:
        return None
    out, escaped = [], False
    for char in part:
        if escaped or char != _ESCAPE:
            out.append(char)
            escaped = False
        else:
            escaped = True
    return "".join(out)


def secondary_index_key(secondary_key: str | None, record_key: str | None) -> str:
    """The record key of a secondary index entry (``constructSecondaryIndexKey``)."""
    def escape(part: str | None) -> str:
        if part is None:
            return _NULL_KEY
        return "".join(_ESCAPE + char if char in (_ESCAPE, SECONDARY_INDEX_SEPARATOR, _NULL_KEY) else char
                       for char in part)
    return escape(secondary_key) + SECONDARY_INDEX_SEPARATOR + escape(record_key)
