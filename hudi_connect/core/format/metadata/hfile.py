"""HFile version 3, the format of the metadata table's base files and HFile log blocks.

Mirrors Hudi's own reader (``org.apache.hudi.io.hfile.HFileReaderImpl`` in
hudi-io), which reads what both its native writer (Hudi 1.x) and HBase's
writer (Hudi 0.x) produce. A file is, offsets from its start::

    data blocks       "DATABLK*" blocks of cells, sorted by row key (may be interleaved
                      with leaf index and bloom blocks, reached only through the index)
    meta blocks       "METABLKc" blocks named in the meta index (Hudi's "bloomFilter")
    load-on-open      root data index "IDXROOT2", meta index "IDXROOT2", file info "FILEINF2"
    trailer           the last 4096 bytes: "TRABLK\\"$", a varint-delimited protobuf
                      TrailerProto, zero padding, then int (minor << 24 | major version)

Every block starts with a 33-byte header: magic (8), on-disk size without
header (int, checksums included), uncompressed size without header (int),
previous block offset (long), checksum type (byte), bytes per checksum
(int), on-disk data size with header (int, checksums excluded). The payload
after the header is compressed with the file's codec (NONE or GZ here).

A cell is: key length (int), value length (int), key, value, then tags (short
length + bytes) when the file info has ``MAX_TAGS_LEN`` and the MVCC version
(Hadoop vlong) when ``KEY_VALUE_VERSION`` is 1. The key is HBase's KeyValue
key: row length (short), row, family length (byte), family, qualifier,
timestamp (long), type (byte); Hudi puts the record key in the row and leaves
the rest empty, so keys compare by row, bytewise (``HoodieHBaseKVComparator``).
Root index keys carry the same layout behind a Hadoop vlong length; Hudi's
native writer shortens them, and the file info's ``hfile.LASTKEY``, to row
length and row only.

Bytes come from a :class:`ByteSource`: a file in memory (:class:`InMemory`), or
one read by byte range, so that a large file is never held whole: the trailer,
the load-on-open blocks, then only the data blocks a read reaches (a scan reads
runs of consecutive blocks of up to :data:`SCAN_READ_BYTES`). :func:`lookup` and
:meth:`HFile.with_prefixes` decode just the data blocks that may hold the keys
or key prefixes asked for. Checksums are not verified (Hudi's reader does not
either); GZ payloads carry their own CRC.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from hudi_connect.core.errors import HFileDecodeError
from hudi_connect.core.format.metadata.hfile_blocks import (
    CELL_LENGTHS,
    DATA_MAGIC,
    FILE_INFO_MAGIC,
    INT,
    INTERMEDIATE_INDEX_MAGIC,
    KEY_VALUE_VERSION,
    KEY_VALUE_VERSION_WITH_MVCC,
    LAST_KEY,
    LEAF_INDEX_MAGIC,
    MAX_TAGS_LEN,
    META_MAGIC,
    READABLE_CODECS,
    ROOT_INDEX_MAGIC,
    SHORT,
    TRAILER_SIZE,
    Block,
    BlockIndexEntry,
    Cursor,
    HFileCompression,
    HFileTrailer,
    non_root_index,
    read_block,
    read_file_info,
    read_trailer,
    root_index,
    row_of,
)

SCAN_READ_BYTES = 8 << 20
"""The most a scan of consecutive data blocks reads in one request: large enough that an object store's round
trip per request does not dominate, small enough that a task holds little of a large file."""


class ByteSource(Protocol):
    """Where an HFile's bytes come from, by range: ``size`` bytes, of which ``read`` returns ``length`` from
    ``offset`` (fewer only at the end of the file)."""

    @property
    def size(self) -> int:
        """The file's size in bytes."""

    def read(self, offset: int, length: int) -> bytes | memoryview:
        """``length`` bytes from ``offset``."""


@dataclass(frozen=True)
class InMemory:
    """A file already in memory (a small base file, an HFile log block's content), read without copying."""

    data: bytes = field(repr=False)

    @property
    def size(self) -> int:
        """The file's size in bytes."""
        return len(self.data)

    def read(self, offset: int, length: int) -> memoryview:
        """A view of ``length`` bytes from ``offset``."""
        return memoryview(self.data)[offset:offset + length]


@dataclass(frozen=True)
class HFile:
    """An opened HFile: trailer, data and meta block indexes and file info; data blocks are read and their cells
    decoded on demand.

    Example::

        hfile = open_hfile(path.read_bytes(), source=str(path))
        schema_json = hfile.file_info["schema"].decode()
        for row, value in hfile.cells():
            ...
    """

    reader: ByteSource = field(repr=False, compare=False)
    source: str
    trailer: HFileTrailer
    data_index: tuple[BlockIndexEntry, ...]
    meta_index: tuple[BlockIndexEntry, ...]
    file_info: Mapping[str, bytes] = field(repr=False)

    @property
    def entry_count(self) -> int:
        """The number of cells in the file, from the trailer's ``entryCount``."""
        return self.trailer.entry_count

    @property
    def last_key(self) -> bytes | None:
        """The last row in the file (``hfile.LASTKEY``), or None for an empty file."""
        raw = self.file_info.get(LAST_KEY)
        # An empty file written by Hudi's native writer has an empty LASTKEY.
        return row_of(raw, f"{self.source}: {LAST_KEY}") if raw else None

    def cells(self) -> Iterator[tuple[bytes, bytes]]:
        """Every cell as (row, value), in key order."""
        count = 0
        for row, value in self._cells_from(0):
            count += 1
            yield row, value
        if count != self.trailer.entry_count:
            raise HFileDecodeError(f"{self.source}: the data blocks hold {count} cells, the trailer says "
                                   f"{self.trailer.entry_count}")

    def get(self, keys: Iterable[bytes]) -> dict[bytes, bytes]:
        """The values of those ``keys`` the file holds, decoding only the data blocks that may hold them."""
        first_rows = [entry.first_key for entry in self.data_index]
        by_block: dict[int, set[bytes]] = {}
        for key in keys:
            position = bisect.bisect_right(first_rows, key) - 1
            if position >= 0:
                by_block.setdefault(position, set()).add(key)
        found: dict[bytes, bytes] = {}
        for position, block in self._blocks_at(sorted(by_block)):
            wanted = by_block[position]
            largest = max(wanted)
            for row, value in self._block_cells(block):
                if row in wanted:
                    found[row] = value
                if row >= largest:
                    break
        return found

    def prefix_cells(self, prefixes: Iterable[bytes]) -> Iterator[tuple[bytes, bytes]]:
        """The cells whose row starts with one of ``prefixes``, in key order: rows sort bytewise, so each
        prefix's rows are contiguous, from the block the index places the prefix in to the first row past it."""
        first_rows = [entry.first_key for entry in self.data_index]
        widest: list[bytes] = []  # a prefix of another prefix covers its rows
        for prefix in sorted(set(prefixes)):
            if not widest or not prefix.startswith(widest[-1]):
                widest.append(prefix)
        for prefix in widest:
            for row, value in self._cells_from(max(bisect.bisect_right(first_rows, prefix) - 1, 0)):
                if row.startswith(prefix):
                    yield row, value
                elif row > prefix:
                    break

    def with_prefixes(self, prefixes: Iterable[bytes]) -> dict[bytes, bytes]:
        """The cells whose row starts with one of ``prefixes``, as a dict (see :meth:`prefix_cells`)."""
        return dict(self.prefix_cells(prefixes))

    def selected_cells(self, keys: Sequence[bytes], prefixes: Iterable[bytes]) -> Iterator[tuple[bytes, bytes]]:
        """The cells of ``keys`` and of rows starting with one of ``prefixes``, in key order, each once."""
        by_key = sorted(self.get(keys).items()) if keys else []
        previous = None
        for row, value in heapq.merge(by_key, self.prefix_cells(prefixes), key=lambda cell: cell[0]):
            if row != previous:
                yield row, value
            previous = row

    def meta_block(self, name: str) -> bytes | None:
        """The content of the meta block named ``name`` (``getMetaBlock``), or None."""
        for entry in self.meta_index:
            if entry.first_key == name.encode():
                return self._block(entry, (META_MAGIC,)).payload
        return None

    def _limit(self, entry: BlockIndexEntry) -> int:
        return min(entry.offset + entry.size, self.trailer.load_on_open_offset)

    def _block(self, entry: BlockIndexEntry, expected: tuple[bytes, ...]) -> Block:
        limit = self._limit(entry)
        window = self.reader.read(entry.offset, max(limit - entry.offset, 0))
        return read_block(window, entry.offset, limit, expected, self.trailer.compression, self.source,
                          base=entry.offset)

    def _blocks_at(self, positions: Sequence[int], *, first_alone: bool = False) -> Iterator[tuple[int, Block]]:
        """The data blocks at ``positions`` (sorted) of the index, with neighbours (next to each other, or one
        block apart) read together in runs of up to :data:`SCAN_READ_BYTES`: many blocks cost a request per run,
        not per block. ``first_alone``: the first block is read by itself (a scan from a lookup's block often
        needs no more)."""
        entries, index, budget = self.data_index, 0, 0 if first_alone else SCAN_READ_BYTES
        while index < len(positions):
            first = last = index
            run_start, run_end = entries[positions[first]].offset, self._limit(entries[positions[first]])
            while (last + 1 < len(positions) and positions[last + 1] - positions[last] <= 2
                   and entries[positions[last + 1]].offset >= run_end
                   and self._limit(entries[positions[last + 1]]) - run_start <= budget):
                last += 1
                run_end = self._limit(entries[positions[last]])
            window = self.reader.read(run_start, max(run_end - run_start, 0))
            for position in positions[first:last + 1]:
                entry = entries[position]
                yield position, read_block(window, entry.offset, self._limit(entry), (DATA_MAGIC,),
                                           self.trailer.compression, self.source, base=run_start)
            index, budget = last + 1, SCAN_READ_BYTES

    def _cells_from(self, position: int) -> Iterator[tuple[bytes, bytes]]:
        """The cells of the data blocks from ``data_index[position]`` on, read as :meth:`_blocks_at` reads."""
        for _, block in self._blocks_at(range(position, len(self.data_index)), first_alone=True):
            yield from self._block_cells(block)

    def _block_cells(self, block: Block) -> Iterator[tuple[bytes, bytes]]:
        """The cells of one data block (``HFileDataBlock``), as (row, value)."""
        where = f"{self.source}: data block at byte {block.offset}"
        payload = block.payload
        cursor = Cursor(payload, 0, len(payload), where)
        tags = MAX_TAGS_LEN in self.file_info
        mvcc = _int_info(self.file_info, KEY_VALUE_VERSION, self.source) == KEY_VALUE_VERSION_WITH_MVCC
        unpack_lengths, end = CELL_LENGTHS.unpack_from, len(payload)
        while cursor.position < end:
            # The hot loop of full scans: plain slicing, with the same bounds checks as Cursor.take.
            start = cursor.position
            if end - start < CELL_LENGTHS.size:
                raise cursor.error(f"cell lengths need {CELL_LENGTHS.size} bytes but only {end - start} are left")
            key_length, value_length = unpack_lengths(payload, start)
            key_start = start + CELL_LENGTHS.size
            value_start = key_start + key_length
            value_end = value_start + value_length
            if key_length < 0 or value_length < 0 or value_end > end:
                raise cursor.error(f"a cell of a {key_length}-byte key and a {value_length}-byte value at byte "
                                   f"{start} runs past the block's {end} bytes; the file is truncated or corrupt")
            row = row_of(payload[key_start:value_start], where)
            cursor.position = value_end
            if tags:
                (tags_length,) = cursor.unpack(SHORT, "the cell tags length")
                cursor.take(tags_length, "the cell tags")
            if mvcc:
                cursor.vlong("the cell MVCC version")
            yield row, payload[value_start:value_end]


def _int_info(info: Mapping[str, bytes], name: str, source: str) -> int | None:
    raw = info.get(name)
    if raw is None:
        return None
    if len(raw) != INT.size:
        raise HFileDecodeError(f"{source}: file info {name} has {len(raw)} bytes, not an int")
    return int(INT.unpack(raw)[0])


def open_hfile(data: bytes | ByteSource, source: str = "HFile") -> HFile:
    """Read an HFile's trailer, block indexes and file info; raises HFileDecodeError naming what is wrong.

    ``data`` is the whole file, or a :class:`ByteSource` to read it by range. ``source`` names the file in
    error messages. Like ``HFileReaderImpl``, the whole data block index is loaded (all levels); data blocks
    are not.

    Example::

        hfile = open_hfile(data, source="files/files-0000-0_0-5-4_00000000000000000.hfile")
        values = hfile.get([b"region=us"])
    """
    if isinstance(data, bytes):
        data = InMemory(data)
    elif not hasattr(data, "read"):
        raise TypeError(f"open_hfile needs bytes or a ByteSource, not {type(data).__name__}")
    size = data.size
    tail = data.read(size - TRAILER_SIZE, TRAILER_SIZE) if size >= TRAILER_SIZE else b""
    trailer = read_trailer(tail, size, source)
    limit = size - TRAILER_SIZE
    codec = trailer.compression
    if codec not in READABLE_CODECS:
        raise HFileDecodeError(f"{source}: compression {codec.name} is not supported (only NONE and GZ, Hudi's "
                               "default for the metadata table)")
    # The load-on-open blocks follow one another up to the trailer: data index root, meta index, file info.
    opening = trailer.load_on_open_offset
    window = data.read(opening, limit - opening)
    root = read_block(window, opening, limit, (ROOT_INDEX_MAGIC,), codec, source, base=opening)
    data_index = root_index(root, trailer.data_index_count, True, source)
    for level in range(trailer.data_index_levels - 1, 0, -1):
        magic = LEAF_INDEX_MAGIC if level == 1 else INTERMEDIATE_INDEX_MAGIC
        data_index = [child for entry in data_index
                      for child in non_root_index(_index_block(data, entry, limit, magic, codec, source), source)]
    meta_root = read_block(window, root.offset + root.size, limit, (ROOT_INDEX_MAGIC,), codec, source, base=opening)
    meta_index = root_index(meta_root, trailer.meta_index_count, False, source)
    info = read_block(window, meta_root.offset + meta_root.size, limit, (FILE_INFO_MAGIC,), codec, source,
                      base=opening)
    file_info = read_file_info(info, source)
    return HFile(data, source, trailer, tuple(data_index), tuple(meta_index), file_info)


def _index_block(data: ByteSource, entry: BlockIndexEntry, limit: int, magic: bytes, codec: HFileCompression,
                 source: str) -> Block:
    end = min(entry.offset + entry.size, limit)
    return read_block(data.read(entry.offset, max(end - entry.offset, 0)), entry.offset, end, (magic,), codec, source,
                      base=entry.offset)


def read_hfile(data: bytes, source: str = "HFile") -> Iterator[tuple[bytes, bytes]]:
    """Every cell of an HFile as (row key, value) bytes, in key order.

    Example::

        for key, value in read_hfile(path.read_bytes(), source=str(path)):
            print(key.decode(), len(value))
    """
    return open_hfile(data, source).cells()


def lookup(data: bytes, keys: Iterable[bytes], source: str = "HFile") -> dict[bytes, bytes]:
    """The values of those ``keys`` an HFile holds; only the data blocks the index points to are decoded.

    Example::

        values = lookup(data, [b"TXN-001", b"TXN-009"])
    """
    return open_hfile(data, source).get(keys)
