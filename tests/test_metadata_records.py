"""Tests of hudi_connect.core.format.metadata: HFiles, metadata records and their merge, against real metadata tables.

Datasets: the tables of shared/fixtures/hudi-rs-tables written by Hudi 1.1
(table version 9) with a metadata table (see its README.md for each history):

- ``cow_v9_txns_simple_meta``: COW, partitioned by region (hive style); inserts,
  updates and deletes, an overwrite of region=eu, clustering, one more insert,
  then two indexing instants adding secondary indexes on merchant_name and
  txn_date. Its metadata table has files, column_stats (2 file groups),
  partition_stats, record_index (10 file groups) and the two secondary index
  partitions, each a compacted ``.hfile`` base file plus later log files.
- ``mor_avro_v9_txns_simple_meta``: the same history on MOR, with a compaction.
- ``cow_v9_txns_simple_overwrite``: two commits then INSERT OVERWRITE TABLE;
  its metadata table was never compacted (log files only, but for the files
  partition's base file written at initialization).

Oracles: the files on storage (the files partition must list exactly them,
with their sizes), the latest snapshot as hudi-rs reads it (record index and
secondary indexes), the data files read with pyarrow (column statistics),
and Hudi's own key and file group hashing reproduced on the data (keys).
Synthetic HFiles, built by :func:`encode_hfile`, cover what the fixtures do
not: no compression, two index levels, cell tags, several data blocks.
"""

from __future__ import annotations

import datetime
import decimal
import functools
import gzip
import operator
import random
import re
import shutil
import struct
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hudi import HudiTableBuilder
from hudi_connect_stack.testing.fixture_tables import LocalTableView, local_table_view, unzip_fixture

from hudi_connect.core.errors import HFileDecodeError, HudiConnectError, MetadataTableError
from hudi_connect.core.executor import metadata_reader as reader
from hudi_connect.core.executor import slices as slices_module
from hudi_connect.core.executor.contracts import LISTING_PARTS
from hudi_connect.core.executor.listing import PartitionFilter, list_storage, list_subtrees, list_top_level
from hudi_connect.core.format.expressions import ColumnRange, Expression, col, lit, stats_may_match
from hudi_connect.core.format.fs_view import FileSlice, file_slices_at
from hudi_connect.core.format.log import LogBlock, LogBlockType, data_block_records, read_log_blocks
from hudi_connect.core.format.metadata import (
    ALL_PARTITIONS_KEY,
    ColumnStats,
    HFileCompression,
    KeySelection,
    MetadataDelete,
    MetadataEntry,
    MetadataRecord,
    MetadataRecordType,
    PartitionFiles,
    PartitionList,
    RecordLocation,
    SecondaryIndexEntry,
    all_partitions,
    column_stats,
    column_stats_key,
    column_stats_prefix,
    decode_metadata_record,
    file_group_id,
    file_group_index,
    hfile_block_records,
    hfile_records,
    log_entries,
    lookup,
    merge_entries,
    merge_in_key_order,
    open_hfile,
    partition_files,
    partition_stats_key,
    read_hfile,
    record_locations,
    secondary_index_entries,
    secondary_index_key,
    unwrap_value,
)
from hudi_connect.core.format.metadata import hfile as hfile_module
from hudi_connect.core.format.metadata.hfile_blocks import TRAILER_SIZE
from hudi_connect.core.format.metadata.keys import (
    data_partition,
    partition_identifier,
    secondary_index_key_parts,
    xxhash64,
)

Tables = Callable[[str], Path]
META_TABLES = ["cow_v9_txns_simple_meta", "mor_avro_v9_txns_simple_meta", "cow_v9_txns_simple_overwrite"]
METADATA_PARTITIONS = {  # metadata partition -> the record types it holds
    "files": {MetadataRecordType.PARTITION_LIST, MetadataRecordType.FILES},
    "column_stats": {MetadataRecordType.COLUMN_STATS},
    "partition_stats": {MetadataRecordType.PARTITION_STATS},
    "record_index": {MetadataRecordType.RECORD_INDEX},
    "secondary_index_merchant_idx": {MetadataRecordType.SECONDARY_INDEX},
    "secondary_index_txn_date_idx": {MetadataRecordType.SECONDARY_INDEX},
}
SOLO_COMMIT_TIMESTAMP = "00000000000000000"  # HoodieTimeline.INIT_INSTANT_TS: metadata partition initializations


@pytest.fixture(scope="session")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Tables:
    root = tmp_path_factory.mktemp("hudi-rs-tables")
    return functools.cache(lambda name: unzip_fixture(name, root))


# --- the metadata table of a fixture, read with the functions under test -----------------------------------------


def metadata_view(base: Path) -> LocalTableView:
    return local_table_view(base / ".hoodie" / "metadata")


def valid_log_instants(data: LocalTableView, metadata: LocalTableView) -> frozenset[str]:
    """``HoodieTableMetadataUtil.getValidInstantTimestamps`` (without rollbacks, which no fixture has): completed
    data instants, completed metadata deltacommits whose data instant is not pending, and initializations."""
    pending = {i.requested_time for i in data.timeline if not i.is_completed}
    valid = {i.requested_time for i in data.timeline if i.is_completed}
    valid |= {i.requested_time for i in metadata.timeline
              if i.is_completed and i.action.value == "deltacommit" and i.requested_time not in pending}
    return frozenset(valid)


def slice_entries(base: Path, file_slice: FileSlice, valid: frozenset[str] | None,
                  keys: Iterable[str] | None = None, select: KeySelection | None = None) -> list[MetadataEntry]:
    """The base file's records, then the log files' entries of valid instants (only ``keys``, or only what
    ``select`` selects, when given)."""
    folder = base / ".hoodie" / "metadata" / file_slice.partition
    if keys is not None:
        select = KeySelection.of(keys=keys)
    entries: list[MetadataEntry] = []
    if file_slice.base_file is not None:
        path = folder / file_slice.base_file.name
        entries += hfile_records(path.read_bytes(), instant_time=file_slice.base_file.instant_time,
                                 select=select, source=str(path))
    blocks = [block for log in file_slice.log_files
              for block in read_log_blocks((folder / log.name).read_bytes(), source=log.name)]
    entries += [entry for entry in log_entries(blocks, select) if valid is None or entry.instant_time in valid]
    return entries


def merged_partition(base: Path, partition: str, select: KeySelection | None = None) -> dict[str, MetadataRecord]:
    """A metadata partition's merged records, from the latest file slice of each of its file groups."""
    data, metadata = local_table_view(base), metadata_view(base)
    valid = valid_log_instants(data, metadata)
    merged: dict[str, MetadataRecord] = {}
    for file_slice in file_slices_at(metadata.files, metadata.timeline, table_version=9):
        if file_slice.partition == partition:
            merged.update(merge_entries(slice_entries(base, file_slice, valid, select=select)))
    return merged


def hfiles_of(base: Path) -> list[tuple[str, bytes]]:
    """Every HFile of a metadata table: base files and the content of HFile log blocks, with a name."""
    metadata = base / ".hoodie" / "metadata"
    found = [(str(path), path.read_bytes()) for path in sorted(metadata.rglob("*.hfile"))]
    for path in sorted(metadata.rglob(".*.log.*")):
        found += [(f"{path}@{block.offset}", block.content) for block in read_log_blocks(path.read_bytes())
                  if block.block_type is LogBlockType.HFILE_DATA]
    return found


def hudi_rs_snapshot(base: Path) -> list[dict[str, Any]]:
    return [row for batch in HudiTableBuilder.from_base_uri(str(base)).build().read() for row in batch.to_pylist()]


def file_id_of(file_name: str) -> str:
    """The file id in a base file name (``fileId_token_instant.ext``) or log file name (``.fileId_instant.log...``)."""
    match = re.match(r"^\.?(?P<file_id>.+?)_(?P<rest>.+)$", file_name)
    assert match, file_name
    return match["file_id"]


# --- synthetic HFiles ---------------------------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _vlong(value: int) -> bytes:
    """Hadoop ``WritableUtils.writeVLong`` (non-negative values)."""
    if value <= 127:
        return struct.pack(">b", value)
    body = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return struct.pack(">b", -112 - len(body)) + body


def _protobuf(fields: Iterable[tuple[int, int | bytes]]) -> bytes:
    out = b""
    for number, value in fields:
        if isinstance(value, int):
            out += _varint(number << 3) + _varint(value)
        else:
            out += _varint(number << 3 | 2) + _varint(len(value)) + value
    return out


def _kv_key(row: bytes) -> bytes:
    """HBase KeyValue key: row length, row, empty family and qualifier, LATEST_TIMESTAMP, type Put."""
    return struct.pack(">H", len(row)) + row + b"\x00" + struct.pack(">q", 2**63 - 1) + b"\x04"


def encode_hfile(cells: list[tuple[bytes, bytes]], *, compression: HFileCompression = HFileCompression.NONE,
                 cells_per_block: int = 2, index_levels: int = 1, tags: bool = False,
                 file_info: dict[str, bytes] | None = None) -> bytes:
    """An HFile v3 as HBase's and Hudi's writers lay it out (one or two data index levels)."""
    out = bytearray()

    def block(magic: bytes, payload: bytes) -> tuple[int, int]:
        stored = gzip.compress(payload) if compression is HFileCompression.GZ else payload
        offset = len(out)
        out.extend(struct.pack(">8siiqbii", magic, len(stored), len(payload), -1, 0, 16384, 33 + len(stored)))
        out.extend(stored)
        return offset, 33 + len(stored)

    index: list[tuple[bytes, int, int]] = []  # (first key, offset, size)
    for start in range(0, len(cells), cells_per_block):
        payload = b"".join(struct.pack(">ii", len(_kv_key(row)), len(value)) + _kv_key(row) + value
                           + (b"\x00\x00" if tags else b"") + b"\x00"
                           for row, value in cells[start:start + cells_per_block])
        index.append((_kv_key(cells[start][0]), *block(b"DATABLK*", payload)))
    if index_levels == 2:
        leaves = []
        for start in range(0, len(index), 2):
            entries = [struct.pack(">qi", offset, size) + key for key, offset, size in index[start:start + 2]]
            offsets = [sum(map(len, entries[:i])) for i in range(len(entries) + 1)]
            payload = struct.pack(f">i{len(offsets)}i", len(entries), *offsets) + b"".join(entries)
            leaves.append((index[start][0], *block(b"IDXLEAF2", payload)))
        index = leaves
    load_on_open = len(out)
    block(b"IDXROOT2", b"".join(struct.pack(">qi", o, s) + _vlong(len(k)) + k for k, o, s in index))
    block(b"IDXROOT2", b"")
    info = {"KEY_VALUE_VERSION": struct.pack(">i", 1), "hfile.LASTKEY": _kv_key(cells[-1][0]) if cells else b"",
            **({"MAX_TAGS_LEN": struct.pack(">i", 0)} if tags else {}), **(file_info or {})}
    message = _protobuf((1, _protobuf([(1, name.encode()), (2, value)])) for name, value in info.items())
    block(b"FILEINF2", b"PBUF" + _varint(len(message)) + message)
    trailer = _protobuf([(1, 0), (2, load_on_open), (5, len(index)), (6, 0), (7, len(cells)), (8, index_levels),
                         (11, b"org.apache.hudi.io.storage.HoodieHBaseKVComparator"), (12, int(compression))])
    body = b'TRABLK"$' + _varint(len(trailer)) + trailer
    return bytes(out) + body + bytes(4096 - 4 - len(body)) + struct.pack(">i", 3)


# --- HFile --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", META_TABLES)
def test_every_hfile_of_the_metadata_table_reads_and_looks_up(tables: Tables, name: str) -> None:
    hfiles = hfiles_of(tables(name))
    assert len(hfiles) > 20
    for source, data in hfiles:
        hfile = open_hfile(data, source)
        assert hfile.trailer.compression is HFileCompression.GZ  # Hudi's default for the metadata table
        # Base files carry a bloom filter of their keys in a meta block; HFile log blocks none.
        base_file = source.endswith(".hfile")
        assert [entry.first_key for entry in hfile.meta_index] == ([b"bloomFilter"] if base_file else [])
        assert bool(hfile.meta_block("bloomFilter")) == base_file and hfile.meta_block("absent") is None
        cells = list(hfile.cells())
        keys = [key for key, _ in cells]
        assert len(cells) == hfile.entry_count and keys == sorted(set(keys)), source
        assert hfile.last_key == (keys[-1] if keys else None)
        assert "schema" in hfile.file_info
        assert lookup(data, keys) == dict(cells)
        for key, value in cells:
            assert hfile.get([key]) == {key: value}
        absent = [b"", b"\x00", b"\xff\xff", *(key + b"\x00" for key in keys)]
        assert hfile.get(absent) == {}


@pytest.mark.parametrize("compression", [HFileCompression.NONE, HFileCompression.GZ])
@pytest.mark.parametrize("index_levels", [1, 2])
@pytest.mark.parametrize("tags", [False, True])
def test_synthetic_hfile_round_trips(compression: HFileCompression, index_levels: int, tags: bool) -> None:
    cells = [(f"key-{i:03d}".encode(), f"value {i}".encode() * (i % 4)) for i in range(0, 40, 3)]
    cells.append((b"z" * 300, b"a row longer than a one-byte vlong"))
    data = encode_hfile(cells, compression=compression, index_levels=index_levels, tags=tags, cells_per_block=3)
    hfile = open_hfile(data, "synthetic")
    assert hfile.trailer.data_index_levels == index_levels and len(hfile.data_index) == 5
    assert list(read_hfile(data)) == cells
    assert lookup(data, [b"key-009", b"key-010", b"z" * 300, b"key-039"]) == {
        b"key-009": b"value 9", b"z" * 300: cells[-1][1], b"key-039": b"value 39" * 3}
    assert list(read_hfile(encode_hfile([], compression=compression))) == []


def test_lookup_decodes_only_the_blocks_holding_the_keys() -> None:
    cells = [(f"k{i}".encode(), bytes([i])) for i in range(6)]
    data = bytearray(encode_hfile(cells, cells_per_block=2))
    second_block = open_hfile(bytes(data)).data_index[1].offset
    data[second_block:second_block + 8] = b"NOTADATA"
    assert lookup(bytes(data), [b"k0", b"k5"]) == {b"k0": b"\x00", b"k5": b"\x05"}
    with pytest.raises(HFileDecodeError, match=rf"block at byte {second_block}: expected a block magic"):
        list(read_hfile(bytes(data), source="broken.hfile"))


def test_prefix_lookups_find_exactly_the_rows_starting_with_each_prefix() -> None:
    rows = sorted({f"{a}{b}{c}".encode() for a in "ace" for b in "bd" for c in "xyz"} | {b"a", b"c", b"e~"})
    cells = [(row, row.upper()) for row in rows]
    for per_block in (1, 2, 5, 100):
        hfile = open_hfile(encode_hfile(cells, cells_per_block=per_block), "synthetic")
        # prefixes inside blocks, across block boundaries, equal to whole rows, before the first and past the last
        for prefixes in ([b"a"], [b"c", b"e"], [b"ad"], [b"cbz"], [b"b"], [b"0"], [b"f"], [b""], [b"e", b"a", b"e"]):
            expected = {row: value for row, value in cells if any(row.startswith(p) for p in prefixes)}
            assert hfile.with_prefixes(prefixes) == expected, (per_block, prefixes)
    assert open_hfile(encode_hfile([]), "empty").with_prefixes([b"a"]) == {}


def test_a_prefix_lookup_decodes_only_the_blocks_its_rows_are_in() -> None:
    cells = [(f"{letter}{i}".encode(), bytes([i])) for letter in "abc" for i in range(4)]
    data = bytearray(encode_hfile(cells, cells_per_block=4))  # a block per letter
    last_block = open_hfile(bytes(data)).data_index[2].offset
    data[last_block:last_block + 8] = b"NOTADATA"
    hfile = open_hfile(bytes(data))
    assert hfile.with_prefixes([b"a"]) == {row: value for row, value in cells if row.startswith(b"a")}
    with pytest.raises(HFileDecodeError):  # the b rows reach into the c block to learn where they end
        hfile.with_prefixes([b"b"])


@pytest.mark.parametrize("name", META_TABLES)
def test_selections_read_what_hudis_key_and_prefix_lookups_read(tables: Tables, name: str) -> None:
    """Each column's statistics by key prefix, and each partition's files by key, equal the whole partition's
    merged records restricted to them, base files and log blocks alike."""
    base = tables(name)
    every_stat = merged_partition(base, "column_stats")
    columns = {record.payload.column for record in every_stat.values() if isinstance(record.payload, ColumnStats)}
    assert len(columns) > 3
    for column in columns:
        selected = merged_partition(base, "column_stats", KeySelection.of(prefixes=[column_stats_prefix(column)]))
        assert selected == {key: record for key, record in every_stat.items()
                            if isinstance(record.payload, ColumnStats) and record.payload.column == column}
    two = sorted(columns)[:2]
    assert merged_partition(base, "column_stats", KeySelection.of(prefixes=map(column_stats_prefix, two))) == {
        key: record for key, record in every_stat.items()
        if isinstance(record.payload, ColumnStats) and record.payload.column in two}
    every_file = merged_partition(base, "files")
    partitions = all_partitions(merged_partition(base, "files", KeySelection.of(keys=[ALL_PARTITIONS_KEY])))
    assert partitions == all_partitions(every_file) and partitions
    for partition in partitions:
        selected = merged_partition(base, "files", KeySelection.of(keys=[partition_identifier(partition)]))
        assert partition_files(selected) == {partition: partition_files(every_file)[partition]}
    assert merged_partition(base, "files", KeySelection.of(keys=["no=such"])) == {}
    # keys chosen by a test on each key (the partitions a predicate keeps), every key tested
    for partition in partitions:
        identifier = partition_identifier(partition)
        chosen = KeySelection.of(where=lambda key, p=identifier: key == p)
        assert partition_files(merged_partition(base, "files", chosen)) == {
            partition: partition_files(every_file)[partition]}
    assert merged_partition(base, "files", KeySelection.of(where=lambda key: True)) == every_file


def test_truncated_or_corrupt_hfiles_raise_hfile_decode_error(tables: Tables) -> None:
    path = next((tables("cow_v9_txns_simple_meta") / ".hoodie" / "metadata" / "files").glob("*2026*.hfile"))
    data = path.read_bytes()
    for size in (0, 3, 100, len(data) - 4096, len(data) - 1):
        with pytest.raises(HFileDecodeError, match=f"{path.name}: trailer"):
            open_hfile(data[:size], source=path.name)
    # The trailer survives but the front is cut off: the index points outside what is left.
    with pytest.raises(HFileDecodeError, match="truncated"):
        list(read_hfile(data[len(data) // 2:], source=path.name))
    flipped = bytearray(data)
    flipped[len(data) - 4096] ^= 0xFF
    with pytest.raises(HFileDecodeError, match="expected the trailer magic"):
        open_hfile(bytes(flipped))
    hfile = open_hfile(data)
    body = bytearray(data)
    body[hfile.data_index[0].offset + 60] ^= 0xFF  # inside the gzip stream of the first data block
    with pytest.raises(HFileDecodeError, match="GZ block"):
        list(read_hfile(bytes(body)))


def test_random_damage_never_escapes_hfile_decode_error(tables: Tables) -> None:
    path = next((tables("mor_avro_v9_txns_simple_meta") / ".hoodie" / "metadata" / "column_stats").glob("*.hfile"))
    plain = encode_hfile([(f"k{i}".encode(), b"v" * i) for i in range(20)], index_levels=2)
    rng = random.Random(2285)
    for sample in (path.read_bytes(), plain):
        meaningful = len(sample) - 4096 + 80  # the blocks and the trailer's protobuf, not its zero padding
        for _ in range(300):
            damaged = bytearray(sample)
            for _ in range(rng.randint(1, 4)):
                damaged[rng.randrange(meaningful)] = rng.randrange(256)
            try:
                list(read_hfile(bytes(damaged[:rng.choice([len(damaged), rng.randrange(len(damaged))])])))
            except HFileDecodeError as error:
                assert str(error)


# --- records ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", META_TABLES)
def test_every_record_decodes_to_its_partitions_type(tables: Tables, name: str) -> None:
    metadata = tables(name) / ".hoodie" / "metadata"
    counts: dict[MetadataRecordType, int] = {}
    for path in sorted(metadata.rglob("*.hfile")):
        instant = path.stem.rsplit("_", 1)[1]
        for record in hfile_records(path.read_bytes(), instant_time=instant, source=str(path)):
            assert record.record_type in METADATA_PARTITIONS[path.parent.name] and record.instant_time == instant
            counts[record.record_type] = counts.get(record.record_type, 0) + 1
    for path in sorted(metadata.rglob(".*.log.*")):
        blocks = list(read_log_blocks(path.read_bytes(), source=str(path)))
        assert {block.block_type for block in blocks} <= {LogBlockType.HFILE_DATA, LogBlockType.DELETE}
        for entry in log_entries(blocks):
            assert entry.instant_time == re.search(r"_(\d{17})\.log", path.name)[1]  # type: ignore[index]
            if isinstance(entry, MetadataRecord):
                assert entry.record_type in METADATA_PARTITIONS[path.parent.name]
                counts[entry.record_type] = counts.get(entry.record_type, 0) + 1
    assert set(counts) >= {MetadataRecordType.PARTITION_LIST, MetadataRecordType.FILES,
                           MetadataRecordType.COLUMN_STATS, MetadataRecordType.PARTITION_STATS,
                           MetadataRecordType.RECORD_INDEX}


@pytest.mark.parametrize("name", META_TABLES)
def test_files_partition_lists_exactly_the_files_on_storage(tables: Tables, name: str) -> None:
    base = tables(name)
    merged = merged_partition(base, "files")
    on_storage: dict[str, dict[str, int]] = {}
    for stored in local_table_view(base).files:
        if stored.name != ".hoodie_partition_metadata":
            on_storage.setdefault(stored.partition, {})[stored.name] = stored.size
    assert all_partitions(merged) == set(on_storage)
    listed = partition_files(merged)
    assert {partition: dict(files.files) for partition, files in listed.items()} == on_storage
    assert all(not files.deleted for files in listed.values())
    assert merged[ALL_PARTITIONS_KEY].record_type is MetadataRecordType.PARTITION_LIST


@pytest.mark.parametrize("name", META_TABLES)
@pytest.mark.parametrize("partition", ["files", "column_stats", "partition_stats", "record_index"])
def test_replaying_every_log_file_gives_the_compacted_state(tables: Tables, name: str, partition: str) -> None:
    """Base files written at initialization plus every log file, oldest first, merge to what the latest file
    slices (the compaction's base file plus later log files) merge to."""
    base = tables(name)
    folder = base / ".hoodie" / "metadata" / partition
    by_group: dict[str, list[MetadataEntry]] = {}
    for path in sorted(folder.glob("*.hfile")):
        if path.stem.endswith(SOLO_COMMIT_TIMESTAMP):
            by_group.setdefault(file_id_of(path.name), []).extend(hfile_records(path.read_bytes()))
    logs = sorted(folder.glob(".*.log.*"), key=lambda path: (re.search(r"_(\d{17})\.log", path.name)[1], path.name))  # type: ignore[index]
    for path in logs:
        by_group.setdefault(file_id_of(path.name), []).extend(log_entries(read_log_blocks(path.read_bytes())))
    replayed = {key: record for entries in by_group.values() for key, record in merge_entries(entries).items()}
    assert {key: record.payload for key, record in replayed.items()} == {
        key: record.payload for key, record in merged_partition(base, partition).items()}
    assert replayed


@pytest.mark.parametrize("name", META_TABLES)
def test_record_index_says_where_every_live_record_is(tables: Tables, name: str) -> None:
    base = tables(name)
    snapshot = hudi_rs_snapshot(base)
    locations = record_locations(merged_partition(base, "record_index"))
    assert {key: (location.partition, location.file_id) for key, location in locations.items()} == {
        row["_hoodie_record_key"]: (row["_hoodie_partition_path"], file_id_of(row["_hoodie_file_name"]))
        for row in snapshot}
    # The stored epoch millis format back to the instant that put the record in its file group, in the
    # writer's zone (hoodie.table.timeline.timezone LOCAL): one UTC offset fits the whole table.
    written_by: dict[tuple[str, str], set[str]] = {}
    for stored in local_table_view(base).files:
        instant = re.search(r"_(\d{17})\.", stored.name)
        if instant:
            written_by.setdefault((stored.partition, file_id_of(stored.name)), set()).add(instant[1])
    common: set[datetime.timedelta] | None = None
    for location in locations.values():
        utc = datetime.datetime.fromtimestamp(location.instant_millis / 1000, datetime.UTC).replace(tzinfo=None)
        offsets = {datetime.datetime.strptime(instant, "%Y%m%d%H%M%S%f") - utc
                   for instant in written_by[(location.partition, location.file_id)]}
        common = offsets if common is None else common & offsets
    assert common is not None and len(common) == 1
    zone = datetime.timezone(common.pop())
    for location in locations.values():
        assert location.instant_time(zone) in written_by[(location.partition, location.file_id)]


@pytest.mark.parametrize("name", META_TABLES)
def test_record_index_lookup_reads_one_file_group_and_only_the_keys(tables: Tables, name: str) -> None:
    base = tables(name)
    metadata = metadata_view(base)
    valid = valid_log_instants(local_table_view(base), metadata)
    slices = [s for s in file_slices_at(metadata.files, metadata.timeline, table_version=9)
              if s.partition == "record_index"]
    assert [s.file_id for s in slices] == [file_group_id("record_index", index) for index in range(len(slices))]
    expected = record_locations(merged_partition(base, "record_index"))
    for key in [*expected, "TXN-002", "TXN-999"]:  # live keys, a deleted one, one never written
        file_slice = slices[file_group_index(key, len(slices))]
        found = record_locations(merge_entries(slice_entries(base, file_slice, valid, keys=[key])))
        assert found == ({key: expected[key]} if key in expected else {})
        for other in slices:
            if other is not file_slice:
                assert merge_entries(slice_entries(base, other, valid, keys=[key])) == {}


def _arrow_stats(column: pa.ChunkedArray) -> tuple[object, object, int]:
    extremes = pc.min_max(column).as_py()
    return extremes["min"], extremes["max"], column.null_count


def file_column_stats(path: Path, column: str) -> tuple[object, object, int, int]:
    """Min, max, null count and row count of a column of a Parquet base file, or of the records of a log
    file's data blocks (decoded by hudi_connect.core.format.log; a log file of deletes only has no values)."""
    if path.suffix == ".parquet":
        table = pq.ParquetFile(path).read(columns=[column], use_threads=False)
    else:
        blocks = [data_block_records(block) for block in read_log_blocks(path.read_bytes())
                  if block.block_type is LogBlockType.AVRO_DATA]
        if not blocks:
            return None, None, 0, 0
        table = pa.concat_tables(blocks).select([column])
    return (*_arrow_stats(table.column(0)), table.num_rows)


@pytest.mark.parametrize("name", META_TABLES)
def test_column_stats_match_the_rows_of_each_data_file(tables: Tables, name: str) -> None:
    base = tables(name)
    listed = partition_files(merged_partition(base, "files"))
    merged = merged_partition(base, "column_stats")
    stats = column_stats(merged, listed)
    assert stats and all(s.partition in listed and s.file_name in listed[s.partition].files for s in stats)
    for key, record in merged.items():
        payload = record.payload
        assert isinstance(payload, ColumnStats) and payload.file_name
        resolved = next(s for s in stats if s.file_name == payload.file_name and s.column == payload.column)
        assert key == column_stats_key(resolved.partition or "", payload.file_name, payload.column)
    # Every base and log file listed has statistics for the same columns; compare each with the file's rows.
    columns_by_file: dict[str, set[str]] = {}
    for s in stats:
        columns_by_file.setdefault(s.file_name or "", set()).add(s.column)
    assert set(columns_by_file) == {name for files in listed.values() for name in files.files}
    assert len({frozenset(columns) for columns in columns_by_file.values()}) == 1
    for s in stats:
        low, high, nulls, rows = file_column_stats(base / (s.partition or "") / (s.file_name or ""), s.column)
        assert (s.min_value, s.max_value, s.null_count, s.value_count) == (low, high, nulls, rows), s
    types = {type(s.min_value) for s in stats}
    assert {str, int, bool, decimal.Decimal, datetime.date, datetime.datetime}.issubset(types)


@pytest.mark.parametrize("name", META_TABLES)
def test_partition_stats_bound_every_live_value(tables: Tables, name: str) -> None:
    base = tables(name)
    stats = column_stats(merged_partition(base, "partition_stats"))
    snapshot = pa.Table.from_pylist(hudi_rs_snapshot(base))
    assert stats
    for s in stats:
        assert s.file_name is None and s.partition is not None and s.is_tight_bound
        rows = snapshot.filter(pc.equal(snapshot["_hoodie_partition_path"], s.partition))
        if s.column not in rows.column_names or rows.num_rows == 0:
            continue
        low, high, _ = _arrow_stats(rows[s.column])
        if low is not None:
            assert s.min_value <= low and high <= s.max_value, s  # type: ignore[operator]
    keys = set(merged_partition(base, "partition_stats"))
    assert keys == {partition_stats_key(s.partition or "", s.column) for s in stats}


@pytest.mark.parametrize("name", META_TABLES[:2])
def test_secondary_indexes_pair_every_live_record_with_its_value(tables: Tables, name: str) -> None:
    base = tables(name)
    snapshot = hudi_rs_snapshot(base)
    merchants = secondary_index_entries(merged_partition(base, "secondary_index_merchant_idx"))
    assert {(e.secondary_key, e.record_key) for e in merchants} == {
        (row["merchant_name"], row["txn_id"]) for row in snapshot}
    dates = secondary_index_entries(merged_partition(base, "secondary_index_txn_date_idx"))
    assert {(e.secondary_key, e.record_key) for e in dates} == {
        (str((row["txn_date"] - datetime.date(1970, 1, 1)).days), row["txn_id"]) for row in snapshot}


# --- merge rules (HoodieMetadataPayload.preCombine), on synthetic records ----------------------------------------


def _files(*entries: tuple[str, int], deleted: Iterable[str] = (), instant: str = "1") -> MetadataRecord:
    return MetadataRecord("p", MetadataRecordType.FILES, PartitionFiles("p", dict(entries), frozenset(deleted)),
                          instant)


def _stats(low: object, high: object, nulls: int, *, deleted: bool = False, tight: bool = False) -> MetadataRecord:
    payload = ColumnStats(None, "f.parquet", "c", low, high, nulls, 10, 100, 200, deleted, tight)
    return MetadataRecord("k", MetadataRecordType.COLUMN_STATS, payload)


def test_files_merge_adds_keeps_the_largest_size_and_cancels_tombstones() -> None:
    merged = merge_entries([_files(("a", 10), ("b", 5)), _files(("a", 7), ("c", 1), deleted=["b", "x"]),
                            _files(deleted=["x"])])
    assert merged["p"].payload == PartitionFiles("p", {"a": 10, "c": 1}, frozenset({"x"}))
    assert merged["p"].instant_time == "1"
    revived = merge_entries([_files(deleted=["a"]), _files(("a", 3))])
    assert revived["p"].payload == PartitionFiles("p", {"a": 3}, frozenset())
    listing = [MetadataRecord(ALL_PARTITIONS_KEY, MetadataRecordType.PARTITION_LIST, PartitionList(partitions))
               for partitions in (frozenset({"", "x"}), frozenset({"y"}))]
    listing.append(MetadataRecord(ALL_PARTITIONS_KEY, MetadataRecordType.PARTITION_LIST,
                                  PartitionList(frozenset(), frozenset({"x"}))))
    assert all_partitions(merge_entries(listing)) == {"", "y"}


def test_column_stats_merge_widens_unless_tight_or_deleted() -> None:
    widened = merge_entries([_stats(3, 9, 1), _stats(1, 5, 2)])["k"].payload
    assert isinstance(widened, ColumnStats)
    assert (widened.min_value, widened.max_value, widened.null_count, widened.value_count) == (1, 9, 3, 20)
    tight = _stats(1, 5, 2, tight=True)
    assert merge_entries([_stats(3, 9, 1), tight])["k"].payload == tight.payload
    assert merge_entries([_stats(3, 9, 1), _stats(None, None, 0, deleted=True)]) == {}
    kept = merge_entries([_stats(3, 9, 1), _stats(None, None, 0, deleted=True)], keep_tombstones=True)
    assert kept["k"].is_tombstone
    assert merge_entries([_stats(None, None, 0, deleted=True), _stats(4, 4, 0)])["k"].payload == _stats(4, 4, 0).payload
    with pytest.raises(MetadataTableError, match="different types"):
        merge_entries([_stats("a", "b", 0), _stats(1, 2, 0)])


def test_later_record_wins_and_deletes_remove_the_key() -> None:
    first = MetadataRecord("r", MetadataRecordType.RECORD_INDEX, RecordLocation("p", "f1", 1000), "1")
    moved = MetadataRecord("r", MetadataRecordType.RECORD_INDEX, RecordLocation("q", "f2", 2000), "2")
    assert merge_entries([first, moved]) == {"r": moved}
    assert merge_entries([first, MetadataDelete("r", "2")]) == {}
    assert merge_entries([first, MetadataDelete("r", "2"), moved]) == {"r": moved}
    secondary = MetadataRecord("s$r", MetadataRecordType.SECONDARY_INDEX, SecondaryIndexEntry("s", "r", False))
    tombstone = MetadataRecord("s$r", MetadataRecordType.SECONDARY_INDEX, SecondaryIndexEntry("s", "r", True))
    assert merge_entries([secondary, tombstone]) == {}
    with pytest.raises(MetadataTableError, match="cannot merge a RECORD_INDEX record with a COLUMN_STATS"):
        merge_entries([MetadataRecord("r", MetadataRecordType.COLUMN_STATS, _stats(1, 1, 0).payload), first])


# --- keys and values ----------------------------------------------------------------------------------------------


def test_keys_are_hudis_hashes() -> None:
    # Reference XXHash64 digests (python-xxhash's documentation); the first covers inputs of 32 bytes and more.
    assert xxhash64(b"Nobody inspects the spammish repetition", 0) == 0xFBCEA83C8A378BF1
    assert xxhash64(b"xxhash", 0) == 0x32DD38952C4BC720
    assert xxhash64(b"", 0) == 0xEF46DB3751D8E999
    assert file_group_index("TXN-001", 10) == 8 and file_group_id("record_index", 8) == "record-index-0008-0"
    assert file_group_id("secondary_index_merchant_idx", 3) == "secondary-index-merchant-idx-0003-0"
    assert (partition_identifier(""), data_partition("."), data_partition("region=us")) == (".", "", "region=us")
    for secondary, record in [("Grab", "TXN-008"), ("a$b\\c", "k$"), (None, "k"), ("\0", None)]:
        key = secondary_index_key(secondary, record)
        assert secondary_index_key_parts(key) == (secondary, record)


def test_record_keys_land_in_the_file_group_hudi_hashes_them_to(tables: Tables) -> None:
    for name in META_TABLES:
        folder = tables(name) / ".hoodie" / "metadata" / "record_index"
        groups = sorted({file_id_of(path.name) for path in folder.iterdir() if "record-index" in path.name})
        for path in folder.iterdir():
            if path.suffix == ".hfile":
                for key, _ in read_hfile(path.read_bytes()):
                    assert groups[file_group_index(key.decode(), len(groups))] == file_id_of(path.name)


def test_column_statistics_values_unwrap_to_python_types() -> None:
    wrapper = "org.apache.hudi.avro.model."
    assert unwrap_value((wrapper + "BytesWrapper", {"value": b"\t\xc4"}), 10, "10,2") == decimal.Decimal("25.00")
    assert unwrap_value((wrapper + "BytesWrapper", {"value": b"\xff"}), 10, "3,1") == decimal.Decimal("-0.1")
    assert unwrap_value((wrapper + "IntWrapper", {"value": 19737}), 12) == datetime.date(2024, 1, 15)
    assert unwrap_value((wrapper + "LongWrapper", {"value": 1705330800000000}), 16) == datetime.datetime(
        2024, 1, 15, 15, 0, tzinfo=datetime.UTC)
    assert unwrap_value((wrapper + "LongWrapper", {"value": 1500}), 18) == datetime.datetime(1970, 1, 1, 0, 0, 1,
                                                                                             500000)
    assert unwrap_value((wrapper + "LongWrapper", {"value": 3_600_000_001}), 14) == datetime.time(1, 0, 0, 1)
    # V1 (no value type): the wrapper decides
    assert unwrap_value((wrapper + "DateWrapper", {"value": 1})) == datetime.date(1970, 1, 2)
    assert unwrap_value((wrapper + "TimestampMicrosWrapper", {"value": 1})) == datetime.datetime(
        1970, 1, 1, 0, 0, 0, 1, tzinfo=datetime.UTC)
    assert unwrap_value((wrapper + "StringWrapper", {"value": "x"}), 0) == "x"
    array = (wrapper + "ArrayWrapper", {"wrappedValues": [(wrapper + "IntWrapper", {"value": 1}), None]})
    assert unwrap_value(array) == (1, None)
    assert unwrap_value(None) is None
    with pytest.raises(MetadataTableError, match="precision,scale"):
        unwrap_value((wrapper + "BytesWrapper", {"value": b"\x01"}), 10, None)
    with pytest.raises(MetadataTableError, match="newer Hudi"):
        unwrap_value((wrapper + "IntWrapper", {"value": 1}), 99)


def test_a_value_that_does_not_match_its_schema_raises_metadata_table_error(tables: Tables) -> None:
    path = next((tables("cow_v9_txns_simple_meta") / ".hoodie" / "metadata" / "files").glob("*2026*.hfile"))
    hfile = open_hfile(path.read_bytes())
    schema = hfile.file_info["schema"].decode()
    key, value = next(hfile.cells())
    with pytest.raises(MetadataTableError, match="__all_partitions__"):
        decode_metadata_record(key, value[:-3], schema)
    with pytest.raises(HudiConnectError):
        decode_metadata_record(key, value + b"\x00", schema)
    with pytest.raises(ValueError, match="not an HFile data block"):
        list(hfile_block_records(LogBlock(LogBlockType.DELETE, 1, {}, {}, 0, 0, b"")))


# --- the worker bodies on a fixture's metadata table ----------------------------------------------------------------


def metadata_source(base: Path) -> reader.MetadataSource:
    return reader.MetadataSource(base.as_uri(), reader.DataTimeline.of(local_table_view(base).timeline), 9)


@pytest.mark.parametrize("name", META_TABLES[:2])
def test_a_pruned_metadata_listing_reads_the_kept_partitions_by_key(tables: Tables, name: str) -> None:
    base = tables(name)
    source = metadata_source(base)

    def listing(predicate: Expression | None) -> set[tuple[str, str, int, str]]:
        keep = PartitionFilter(("region",), pa.schema([("region", pa.string())]), True, False, predicate)
        trigger = pa.record_batch({"base_uri": [source.base_uri]})
        rows = [row for batch in reader.list_through_metadata(source, keep, [trigger]) for row in batch.to_pylist()]
        return {(r["partition"], r["name"], r["size"], r["source"]) for r in rows}

    whole = listing(None)
    partitions = {row[0] for row in whole}
    assert len(partitions) > 1 and {row[3] for row in whole} == {"metadata"}
    for partition in partitions:
        region = partition.split("=", 1)[1]
        assert listing(col("region") == lit(region)) == {row for row in whole if row[0] == partition}
    assert listing(col("region") == lit("nowhere")) == set()


REGION = PartitionFilter(("region",), pa.schema([("region", pa.string())]), True, False, None)


@pytest.mark.parametrize("name", META_TABLES[:2])
@pytest.mark.parametrize("region", [None, "us", "nowhere"])
def test_column_statistics_lookups_shard_over_tasks_and_agree_with_a_whole_read(tables: Tables, name: str,
                                                                                 region: str | None) -> None:
    """Sharded or not, and narrowed to a partition predicate's partitions (by key prefix, as Hudi's data
    skipping looks them up) or not, a lookup's matches equal a whole read's of those partitions' files."""
    base = tables(name)
    source = metadata_source(base)
    predicate = col("amount") > lit(decimal.Decimal("100.00"))
    keep = REGION if region is None else replace(REGION, predicate=col("region") == lit(region))
    every = column_stats(merged_partition(base, "column_stats"), partition_files(merged_partition(base, "files")))
    expected = {s.file_name: stats_may_match(predicate, {"amount": ColumnRange(s.min_value, s.max_value,
                                                                               s.null_count, s.value_count)})
                for s in every if s.column == "amount" and s.partition is not None and keep.keeps(s.partition)}
    if region is None:
        assert set(expected.values()) == {True, False}  # the predicate prunes some files and keeps others
    else:  # one partition's files, or none
        assert len({s.partition for s in every if s.file_name in expected}) == (region == "us")
    for tasks in (1, 2, 3):
        found: dict[str, bool] = {}
        for shard, shards in reader.stats_shards(tasks):
            trigger = pa.record_batch({"shard": [shard], "shards": [shards]}, schema=reader.STATS_SHARDS_SCHEMA)
            for batch in reader.match_by_metadata_stats(source, keep, predicate, ("amount",), [trigger]):
                for row in batch.to_pylist():
                    assert row["name"] not in found  # each file group is read by one task
                    found[row["name"]] = row["may_match"]
        assert found == expected, tasks


@pytest.mark.parametrize("kept", [col("region") != lit("nowhere"), col("region") == lit("us")])
def test_a_lookup_narrowed_to_more_partitions_than_it_looks_up_by_prefix_reads_the_columns_whole(
        tables: Tables, monkeypatch: pytest.MonkeyPatch, kept: Expression) -> None:
    """Past PREFIXED_PARTITIONS kept partitions the lookup reads the column's statistics whole, keeping those of
    the kept partitions: the same matches as by prefix."""
    source = metadata_source(tables(META_TABLES[0]))
    predicate = col("amount") > lit(decimal.Decimal("100.00"))
    keep = replace(REGION, predicate=kept)
    trigger = [pa.record_batch({"shard": [0], "shards": [1]}, schema=reader.STATS_SHARDS_SCHEMA)]

    def matches() -> list[dict[str, Any]]:
        return [row for batch in reader.match_by_metadata_stats(source, keep, predicate, ("amount",), trigger)
                for row in batch.to_pylist()]

    narrowed = matches()
    assert len(narrowed) > 1
    monkeypatch.setattr(reader, "PREFIXED_PARTITIONS", 0)
    assert matches() == narrowed


@pytest.mark.parametrize("name", ["cow_v9_txns_simple_meta", "mor_avro_v9_txns_nonpart_nometa"])
@pytest.mark.parametrize("region", [None, "us"])
@pytest.mark.parametrize("batch_rows", [None, 3])
def test_a_fanned_out_storage_listing_equals_one_tasks(tables: Tables, tmp_path: Path, name: str,
                                                       region: str | None, batch_rows: int | None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    if batch_rows is not None:  # a task sends its directories' files in several batches
        monkeypatch.setattr(slices_module, "LISTING_BATCH_ROWS", batch_rows)
    base = Path(shutil.copytree(tables(name), tmp_path / name))
    (base / "region=zz" / "nested").mkdir(parents=True)  # a directory deeper than the partitions' level
    (base / "region=zz" / "nested" / "stray.parquet").write_bytes(b"")
    predicate = None if region is None else col("region") == lit(region)
    keep = PartitionFilter(("region",), pa.schema([("region", pa.string())]), True, False, predicate)
    trigger = pa.record_batch({"base_uri": [base.as_uri()]})
    one_task = [row for batch in list_storage(keep, [trigger]) for row in batch.to_pylist()]
    parts = [row for batch in list_top_level(keep, [trigger]) for row in batch.to_pylist()]
    assert all(part["subtree"] != ".hoodie" for part in parts)
    fanned = []
    for shard in range(3):  # the parts as three tasks would get them after a round-robin repartition
        batch = pa.RecordBatch.from_pylist(parts[shard::3], schema=LISTING_PARTS.schema)
        out = list(list_subtrees(keep, base.as_uri(), [batch]))
        assert batch_rows is None or len(out) > 1 or sum(b.num_rows for b in out) <= batch_rows
        fanned += [row for each in out for row in each.to_pylist()]
    key = operator.itemgetter("partition", "name")
    assert sorted(fanned, key=key) == sorted(one_task, key=key) and one_task
    if region and name.startswith("cow"):  # pruned, but for the path deeper than the partition field reads
        assert {row["partition"] for row in one_task} == {"region=us", "region=zz/nested"}


# --- reads by byte range and merges in key order (issue #33: no task holds a whole metadata file) -----------------


class CountingSource:
    """A file read by range that records each read: what a task would fetch from storage."""

    def __init__(self, data: bytes) -> None:
        self.data, self.reads = data, []

    @property
    def size(self) -> int:
        return len(self.data)

    def read(self, offset: int, length: int) -> bytes:
        assert offset >= 0 and offset + length <= len(self.data), (offset, length)
        self.reads.append((offset, length))
        return self.data[offset:offset + length]


@pytest.mark.parametrize("name", META_TABLES)
def test_hudis_hfiles_read_by_range_equal_their_reads_in_memory(tables: Tables, name: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hfile_module, "SCAN_READ_BYTES", 1024)  # many runs even in the fixtures' small files
    for source, data in hfiles_of(tables(name)):
        whole, ranged = open_hfile(data, source), open_hfile(CountingSource(data), source)
        cells = list(whole.cells())
        assert list(ranged.cells()) == cells, source
        keys = [key for key, _ in cells]
        assert ranged.get(keys[::3]) == whole.get(keys[::3])
        prefixes = sorted({key[:13] for key in keys})[::2]  # column hashes, partition names, record keys
        assert list(ranged.prefix_cells(prefixes)) == sorted(whole.with_prefixes(prefixes).items())
        assert list(ranged.selected_cells(keys[:2], prefixes)) == sorted(
            {**whole.get(keys[:2]), **whole.with_prefixes(prefixes)}.items())
        assert ranged.meta_block("bloomFilter") == whole.meta_block("bloomFilter")


def test_a_lookup_reads_only_the_index_and_its_blocks_and_a_scan_reads_in_bounded_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    cells = [(f"{column}{i:05d}".encode(), b"v" * 40) for column in "abcd" for i in range(2500)]
    data = encode_hfile(cells, cells_per_block=50)  # 200 blocks of about 3 KB
    block = len(data) // 200
    source = CountingSource(data)
    hfile = open_hfile(source, "synthetic")
    opening = sum(length for _, length in source.reads)
    assert opening < len(data) // 20  # the trailer and the load-on-open blocks only

    source.reads.clear()
    assert hfile.get([b"c01234"]) == {b"c01234": b"v" * 40}
    assert len(source.reads) == 1 and source.reads[0][1] < 2 * block  # one block

    source.reads.clear()
    monkeypatch.setattr(hfile_module, "SCAN_READ_BYTES", 10 * block)
    selected = dict(hfile.prefix_cells([b"b"]))
    assert selected == {row: value for row, value in cells if row.startswith(b"b")}
    read = sum(length for _, length in source.reads)
    assert len(data) // 4 <= read < len(data) // 4 + 12 * block  # b's quarter, and a run past its end at most
    assert max(length for _, length in source.reads) <= 10 * block

    source.reads.clear()
    assert list(hfile.cells()) == cells
    assert max(length for _, length in source.reads) <= 10 * block
    assert sum(length for _, length in source.reads) < len(data)  # each data block once, nothing else


def _random_entries(rng: random.Random, keys: list[str], count: int, instant: str) -> list[MetadataEntry]:
    entries: list[MetadataEntry] = []
    for _ in range(count):
        key = rng.choice(keys)
        kind = rng.random()
        if kind < 0.2:
            entries.append(MetadataDelete(key, instant))
            continue
        files = {f"f{rng.randrange(6)}": rng.randrange(1, 100) for _ in range(rng.randrange(3))}
        deleted = frozenset(f"f{rng.randrange(6)}" for _ in range(rng.randrange(2)))
        entries.append(MetadataRecord(key, MetadataRecordType.FILES, PartitionFiles(key, files, deleted), instant))
    return entries


def test_merging_in_key_order_equals_the_whole_merge() -> None:
    rng = random.Random(33)
    for _ in range(300):
        keys = sorted({"".join(rng.choices("abé€", k=rng.randrange(1, 4))) for _ in range(rng.randrange(1, 12))})
        base = [MetadataRecord(key, MetadataRecordType.FILES, PartitionFiles(key, {"f0": 1}), "001")
                for key in sorted(rng.sample(keys, rng.randrange(len(keys) + 1)))]
        later = _random_entries(rng, keys, rng.randrange(20), "002")
        streamed = list(merge_in_key_order(iter(base), later))
        assert [record.key for record in streamed] == sorted(record.key for record in streamed)
        assert {record.key: record for record in streamed} == merge_entries([*base, *later])


@pytest.mark.parametrize("name", META_TABLES)
def test_every_slice_merged_in_key_order_equals_its_whole_merge(tables: Tables, name: str) -> None:
    base = tables(name)
    metadata = metadata_view(base)
    valid = valid_log_instants(local_table_view(base), metadata)
    for file_slice in file_slices_at(metadata.files, metadata.timeline, table_version=9):
        entries = slice_entries(base, file_slice, valid)
        in_base = slice_entries(base, replace(file_slice, log_files=()), valid) if file_slice.base_file else []
        later = entries[len(in_base):]
        assert entries[:len(in_base)] == in_base
        streamed = list(merge_in_key_order(iter(in_base), later))
        assert {record.key: record for record in streamed} == merge_entries(entries), file_slice


@pytest.mark.parametrize("name", META_TABLES[:2])
def test_the_metadata_reader_reads_large_base_files_by_range_in_bounded_pieces(
        tables: Tables, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every base file read by range (as one over WHOLE_READ_BYTES is), in runs of 2 KiB, and batches of 7 rows:
    listings (whole and pruned), statistics matches and record locations equal the reads of whole files."""
    base = tables(name)
    source = metadata_source(base)
    keep = PartitionFilter(("region",), pa.schema([("region", pa.string())]), True, False, None)
    listing_trigger = [pa.record_batch({"base_uri": [source.base_uri]})]
    predicate = col("amount") > lit(decimal.Decimal("100.00"))
    stats_trigger = [pa.record_batch({"shard": [0], "shards": [1]}, schema=reader.STATS_SHARDS_SCHEMA)]
    keys = [*list(record_locations(merged_partition(base, "record_index")))[:40], "TXN-999"]
    keys_trigger = [pa.record_batch({"record_key": keys}, schema=reader.KEYS_SCHEMA)]

    def answers() -> tuple[list[dict[str, Any]], ...]:
        return tuple([row for batch in batches for row in batch.to_pylist()] for batches in (
            reader.list_through_metadata(source, keep, listing_trigger),
            reader.list_through_metadata(source, PartitionFilter(
                ("region",), pa.schema([("region", pa.string())]), True, False, col("region") == lit("us")),
                listing_trigger),
            reader.match_by_metadata_stats(source, keep, predicate, ("amount",), stats_trigger),
            reader.match_by_metadata_stats(source, replace(REGION, predicate=col("region") == lit("us")), predicate,
                                           ("amount",), stats_trigger),
            reader.match_by_metadata_stats(source, keep, col("amount") > lit(decimal.Decimal("100.00")) &
                                           (col("txn_id") < lit("TXN-050")), ("amount", "txn_id"), stats_trigger),
            reader.locate(source, keys_trigger)))

    whole = answers()
    reads: list[int] = []
    original_read = reader.RangedFile.read

    def counted(self: Any, offset: int, length: int) -> bytes:
        reads.append(length)
        return original_read(self, offset, length)

    monkeypatch.setattr(reader, "WHOLE_READ_BYTES", 0)
    monkeypatch.setattr(hfile_module, "SCAN_READ_BYTES", 2048)
    monkeypatch.setattr(slices_module, "LISTING_BATCH_ROWS", 7)
    monkeypatch.setattr(reader.RangedFile, "read", counted)
    ranged = answers()
    assert reads and max(reads) <= TRAILER_SIZE  # the trailer is the largest piece (4 KiB); runs stay at 2 KiB
    assert all(len(rows) > 0 for rows in whole[:1] + whole[2:])
    assert [sorted(map(str, rows)) for rows in ranged] == [sorted(map(str, rows)) for rows in whole]
    listing = ranged[0]
    assert [(r["partition"], r["name"]) for r in listing] == sorted((r["partition"], r["name"]) for r in listing)


def test_a_lookup_of_many_keys_reads_neighbouring_blocks_together(monkeypatch: pytest.MonkeyPatch) -> None:
    cells = [(f"k{i:05d}".encode(), b"v" * 40) for i in range(5000)]
    data = encode_hfile(cells, cells_per_block=50)  # 100 blocks
    source = CountingSource(data)
    hfile = open_hfile(source, "synthetic")
    block = len(data) // 100
    monkeypatch.setattr(hfile_module, "SCAN_READ_BYTES", 20 * block)
    source.reads.clear()
    keys = [row for row, _ in cells[::25]]  # two keys in every block
    assert hfile.get(keys) == {row: value for row, value in cells[::25]}
    assert 5 <= len(source.reads) <= 6 and max(length for _, length in source.reads) <= 20 * block
    source.reads.clear()
    far_apart = [row for row, _ in cells[::1000]]  # blocks 0, 20, 40, 60, 80: one request each
    assert hfile.get(far_apart) == {row: value for row, value in cells[::1000]}
    assert len(source.reads) == 5 and max(length for _, length in source.reads) < 2 * block
