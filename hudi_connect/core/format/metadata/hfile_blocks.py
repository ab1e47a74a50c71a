"""The blocks of an HFile v3 and the structures in them: trailer, block indexes, file info.

The layout is described in :mod:`hudi_connect.core.format.metadata.hfile`, which opens
files with these readers. They mirror ``HFileTrailer``, ``HFileBlock``,
``HFileRootIndexBlock``, ``HFileLeafIndexBlock`` and ``HFileFileInfoBlock``
of hudi-io, and read big-endian Java integers, Hadoop vlongs and the few
protobuf messages (``HFile.proto``) with a small hand-written decoder.
Every read is bounds-checked and fails with :class:`HFileDecodeError` naming
the structure and its byte offset.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from types import MappingProxyType

from hudi_connect.core.errors import HFileDecodeError

TRAILER_SIZE = 4096
BLOCK_HEADER_SIZE = 33
SUPPORTED_MAJOR_VERSION = 3

DATA_MAGIC = b"DATABLK*"
ENCODED_DATA_MAGIC = b"DATABLKE"
LEAF_INDEX_MAGIC = b"IDXLEAF2"
INTERMEDIATE_INDEX_MAGIC = b"IDXINTE2"
ROOT_INDEX_MAGIC = b"IDXROOT2"
META_MAGIC = b"METABLKc"
FILE_INFO_MAGIC = b"FILEINF2"
TRAILER_MAGIC = b'TRABLK"$'
PROTOBUF_MAGIC = b"PBUF"

# File info keys (HFileInfo) that change how cells are laid out.
LAST_KEY = "hfile.LASTKEY"
KEY_VALUE_VERSION = "KEY_VALUE_VERSION"
MAX_TAGS_LEN = "MAX_TAGS_LEN"
KEY_VALUE_VERSION_WITH_MVCC = 1

HEADER = struct.Struct(">8siiqbii")
INT, SHORT, INDEX_ENTRY = struct.Struct(">i"), struct.Struct(">H"), struct.Struct(">qi")
CELL_LENGTHS = struct.Struct(">ii")


class HFileCompression(IntEnum):
    """``HFileCompressionCodec``: the trailer stores the ordinal, which can never change."""

    LZO = 0
    GZ = 1
    NONE = 2
    SNAPPY = 3
    LZ4 = 4
    BZIP2 = 5
    ZSTD = 6


READABLE_CODECS = (HFileCompression.NONE, HFileCompression.GZ)


@dataclass(frozen=True)
class HFileTrailer:
    """The fixed trailer (``HFileTrailer``, protobuf ``TrailerProto``): where the index and file info are."""

    major_version: int
    minor_version: int
    load_on_open_offset: int
    data_index_count: int
    data_index_levels: int
    meta_index_count: int
    entry_count: int
    compression: HFileCompression
    comparator: str


@dataclass(frozen=True)
class BlockIndexEntry:
    """One entry of a block index: a block's first key (the row for data blocks, the name for meta blocks),
    its offset and its on-disk size with header (``BlockIndexEntry``)."""

    first_key: bytes
    offset: int
    size: int


@dataclass(frozen=True)
class Block:
    """A block read: where it starts, its on-disk size with header, and its uncompressed payload."""

    magic: bytes
    offset: int
    size: int
    payload: bytes = field(repr=False)  # after the header, without checksums


class Cursor:
    """Big-endian reads within ``data[position:limit]``; any read past ``limit`` raises HFileDecodeError."""

    def __init__(self, data: bytes, position: int, limit: int, where: str) -> None:
        self.data, self.position, self.limit, self.where = data, position, limit, where

    def error(self, what: str) -> HFileDecodeError:
        """An HFileDecodeError saying ``what`` went wrong, prefixed with the file."""
        return HFileDecodeError(f"{self.where}: {what}")

    def need(self, count: int, what: str) -> None:
        """Raise HFileDecodeError unless ``count`` bytes are left before ``limit`` for reading ``what``."""
        if count < 0 or count > self.limit - self.position:
            raise self.error(f"{what} needs {count} bytes but only {self.limit - self.position} are left "
                             f"(at byte {self.position}); the file is truncated or corrupt")

    def unpack(self, layout: struct.Struct, what: str) -> tuple[int, ...]:
        """Read the integers of ``layout`` at the position and move past them."""
        self.need(layout.size, what)
        values = layout.unpack_from(self.data, self.position)
        self.position += layout.size
        return tuple(int(value) for value in values)

    def take(self, count: int, what: str) -> bytes:
        """Read ``count`` bytes at the position and move past them."""
        self.need(count, what)
        start = self.position
        self.position += count
        return self.data[start:self.position]

    def vlong(self, what: str) -> int:
        """Hadoop ``WritableUtils.readVLong``: one byte for -112..127, else a length byte and big-endian bytes."""
        (first,) = self.unpack(struct.Struct(">b"), what)
        if first >= -112:
            return first
        negative = first < -120
        size = (-119 - first) if negative else (-111 - first)
        value = int.from_bytes(self.take(size - 1, what), "big")
        return ~value if negative else value

    def varint(self, what: str) -> int:
        """A protobuf base-128 varint (at most 10 bytes)."""
        value = 0
        for shift in range(0, 70, 7):
            (byte,) = self.take(1, what)
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
        raise self.error(f"{what} is a varint longer than 10 bytes")


def protobuf_fields(data: bytes, where: str) -> list[tuple[int, int | bytes]]:
    """Field number and value of each field of a protobuf message: varints as int, length-delimited as bytes."""
    cursor = Cursor(data, 0, len(data), where)
    fields: list[tuple[int, int | bytes]] = []
    while cursor.position < cursor.limit:
        tag = cursor.varint("a protobuf field tag")
        number, wire_type = tag >> 3, tag & 7
        value: int | bytes
        if wire_type == 0:
            value = cursor.varint(f"protobuf field {number}")
        elif wire_type == 1:
            value = cursor.take(8, f"protobuf field {number}")
        elif wire_type == 2:
            value = cursor.take(cursor.varint(f"the length of protobuf field {number}"), f"protobuf field {number}")
        elif wire_type == 5:
            value = cursor.take(4, f"protobuf field {number}")
        else:
            raise cursor.error(f"protobuf field {number} has unsupported wire type {wire_type}")
        fields.append((number, value))
    return fields


def delimited_message(cursor: Cursor, what: str) -> bytes:
    """A varint-length-prefixed protobuf message (``parseDelimitedFrom``)."""
    return cursor.take(cursor.varint(f"the length of {what}"), what)


def row_of(key: bytes, where: str) -> bytes:
    """The row of an HBase KeyValue key: a short length, then the row bytes; anything after is ignored."""
    if len(key) < SHORT.size:
        raise HFileDecodeError(f"{where}: key of {len(key)} bytes is too short to hold its row length")
    (length,) = SHORT.unpack_from(key, 0)
    if length > len(key) - SHORT.size:
        raise HFileDecodeError(f"{where}: key claims a row of {length} bytes but holds {len(key) - 2}")
    return key[SHORT.size:SHORT.size + length]


def read_trailer(tail: bytes | memoryview, file_size: int, source: str) -> HFileTrailer:
    """The trailer from ``tail``, the file's last 4096 bytes (of ``file_size``), checked to point inside the file."""
    where = f"{source}: trailer"
    if file_size < TRAILER_SIZE or len(tail) != TRAILER_SIZE:
        raise HFileDecodeError(f"{where}: the file has {file_size} bytes, fewer than the {TRAILER_SIZE}-byte "
                               "HFile v3 trailer; it is truncated or not an HFile")
    (version,) = INT.unpack_from(tail, TRAILER_SIZE - INT.size)
    major, minor = version & 0x00FFFFFF, (version >> 24) & 0xFF
    if major != SUPPORTED_MAJOR_VERSION:
        raise HFileDecodeError(f"{where}: HFile major version {major} is not supported (only "
                               f"{SUPPORTED_MAJOR_VERSION}); the file may be truncated or not an HFile")
    start = file_size - TRAILER_SIZE
    cursor = Cursor(bytes(tail), 0, TRAILER_SIZE - INT.size, where)
    magic = cursor.take(len(TRAILER_MAGIC), "the trailer magic")
    if magic != TRAILER_MAGIC:
        raise cursor.error(f"expected the trailer magic {TRAILER_MAGIC!r} at byte {start}, found {magic!r}")
    fields = dict(protobuf_fields(delimited_message(cursor, "the TrailerProto"), where))

    def number(field_number: int, default: int = 0) -> int:
        value = fields.get(field_number, default)
        if not isinstance(value, int):
            raise cursor.error(f"TrailerProto field {field_number} is not a varint")
        return value

    codec = number(12, HFileCompression.NONE)
    try:
        compression = HFileCompression(codec)
    except ValueError:
        raise cursor.error(f"unknown compression codec ordinal {codec}") from None
    comparator = fields.get(11, b"")
    trailer = HFileTrailer(
        major_version=major, minor_version=minor, load_on_open_offset=number(2), data_index_count=number(5),
        data_index_levels=number(8, 1), meta_index_count=number(6), entry_count=number(7), compression=compression,
        comparator=comparator.decode("utf-8", "replace") if isinstance(comparator, bytes) else "")
    if not 0 <= trailer.load_on_open_offset < start:
        raise cursor.error(f"load-on-open offset {trailer.load_on_open_offset} is outside the file's "
                           f"{start} bytes before the trailer")
    if trailer.data_index_count and trailer.data_index_levels < 1:
        raise cursor.error(f"{trailer.data_index_count} data index entries but {trailer.data_index_levels} levels")
    return trailer


def read_block(data: bytes | memoryview, offset: int, limit: int, expected: tuple[bytes, ...],
               compression: HFileCompression, source: str, *, base: int = 0) -> Block:
    """The block at ``offset``, which must lie before ``limit`` and carry one of the ``expected`` magics.
    ``data`` holds the file's bytes from ``base`` on (the whole file, or the range read for the block)."""
    where = f"{source}: block at byte {offset}"
    start = offset - base
    if not 0 <= offset <= limit - BLOCK_HEADER_SIZE or not 0 <= start <= len(data) - BLOCK_HEADER_SIZE:
        raise HFileDecodeError(f"{where}: a {BLOCK_HEADER_SIZE}-byte block header does not fit before byte {limit}; "
                               "the file is truncated or its index is corrupt")
    magic, on_disk, uncompressed, _previous, _checksum_type, _per_checksum, data_with_header = HEADER.unpack_from(
        data, start)
    if magic not in expected:
        wanted = " or ".join(repr(m) for m in expected)
        if magic == ENCODED_DATA_MAGIC:
            raise HFileDecodeError(f"{where}: the data block uses a data block encoding (DATABLKE), which "
                                   "hudi-connect does not read; Hudi writes unencoded blocks")
        raise HFileDecodeError(f"{where}: expected a block magic {wanted}, found {magic!r}")
    if (on_disk < 0 or uncompressed < 0 or offset + BLOCK_HEADER_SIZE + on_disk > limit
            or start + BLOCK_HEADER_SIZE + on_disk > len(data)):
        raise HFileDecodeError(f"{where}: {magic.decode()} block of {on_disk} bytes on disk runs past byte {limit}; "
                               "the file is truncated or corrupt")
    if not BLOCK_HEADER_SIZE <= data_with_header <= BLOCK_HEADER_SIZE + on_disk:
        raise HFileDecodeError(f"{where}: data size with header {data_with_header} does not fit the block's "
                               f"{BLOCK_HEADER_SIZE + on_disk} bytes")
    stored = data[start + BLOCK_HEADER_SIZE:start + data_with_header]
    payload = _decompress(stored, uncompressed, compression, where)
    return Block(magic, offset, BLOCK_HEADER_SIZE + on_disk, payload)


def _decompress(stored: bytes | memoryview, size: int, compression: HFileCompression, where: str) -> bytes:
    if compression is HFileCompression.NONE:
        payload = bytes(stored)
    elif compression is HFileCompression.GZ:
        payload = _gunzip(stored, size, where)
    else:
        raise HFileDecodeError(f"{where}: compression {compression.name} is not supported (only NONE and GZ, "
                               "Hudi's default for the metadata table)")
    if len(payload) != size:
        raise HFileDecodeError(f"{where}: the block holds {len(payload)} bytes, its header says {size}")
    return payload


def _gunzip(stored: bytes | memoryview, size: int, where: str) -> bytes:
    """Hadoop's GzipCodec output: one or more gzip members, inflated to at most ``size`` bytes."""
    parts: list[bytes] = []
    remaining: bytes | memoryview = stored
    budget = size + 1  # one byte more than expected tells an oversized block
    while remaining:
        if budget <= 0:  # zlib reads a max_length of 0 as "no limit"
            raise HFileDecodeError(f"{where}: the GZ block inflates past its {size} bytes")
        inflater = zlib.decompressobj(wbits=31)
        try:
            parts.append(inflater.decompress(remaining, budget))
        except zlib.error as error:
            raise HFileDecodeError(f"{where}: the GZ block does not inflate: {error}") from None
        if not inflater.eof:
            raise HFileDecodeError(f"{where}: the GZ block is truncated or inflates past its {size} bytes")
        budget -= len(parts[-1])
        remaining = inflater.unused_data
    return b"".join(parts)


def root_index(block: Block, count: int, rows: bool, source: str) -> list[BlockIndexEntry]:
    """``HFileRootIndexBlock``: per entry a long offset, an int size, a vlong key length and the key."""
    where = f"{source}: root index block at byte {block.offset}"
    cursor = Cursor(block.payload, 0, len(block.payload), where)
    entries = []
    for index in range(count):
        offset, size = cursor.unpack(INDEX_ENTRY, f"index entry {index}")
        key = cursor.take(cursor.vlong(f"the key length of index entry {index}"), f"the key of index entry {index}")
        entries.append(BlockIndexEntry(row_of(key, where) if rows else key, offset, size))
    return entries


def non_root_index(block: Block, source: str) -> list[BlockIndexEntry]:
    """``HFileLeafIndexBlock`` (also intermediate levels): an entry count, count + 1 int offsets of the entries
    relative to the end of that list, then entries of a long offset, an int size and a key running to the next."""
    where = f"{source}: {block.magic.decode()} block at byte {block.offset}"
    cursor = Cursor(block.payload, 0, len(block.payload), where)
    (count,) = cursor.unpack(INT, "the entry count")
    if not 0 <= count <= len(block.payload) // INT.size:
        raise cursor.error(f"entry count {count} does not fit the block")
    relative = [cursor.unpack(INT, f"secondary index {index}")[0] for index in range(count + 1)]
    base = cursor.position
    entries = []
    for index in range(count):
        start, end = base + relative[index], base + relative[index + 1]
        if not base <= start <= end - INDEX_ENTRY.size <= len(block.payload) - INDEX_ENTRY.size:
            raise cursor.error(f"index entry {index} spans bytes {start}..{end}, outside the block")
        offset, size = INDEX_ENTRY.unpack_from(block.payload, start)
        entries.append(BlockIndexEntry(row_of(block.payload[start + INDEX_ENTRY.size:end], where), offset, size))
    return entries


def read_file_info(block: Block, source: str) -> Mapping[str, bytes]:
    """``HFileFileInfoBlock``: "PBUF", then a delimited InfoProto of BytesBytesPair entries."""
    where = f"{source}: file info block at byte {block.offset}"
    cursor = Cursor(block.payload, 0, len(block.payload), where)
    magic = cursor.take(len(PROTOBUF_MAGIC), "the protobuf magic")
    if magic != PROTOBUF_MAGIC:
        raise cursor.error(f"expected the protobuf magic {PROTOBUF_MAGIC!r}, found {magic!r}")
    info: dict[str, bytes] = {}
    for number, pair in protobuf_fields(delimited_message(cursor, "the InfoProto"), where):
        if number != 1 or not isinstance(pair, bytes):
            continue
        entry = dict(protobuf_fields(pair, where))
        name, value = entry.get(1), entry.get(2)
        if not isinstance(name, bytes) or not isinstance(value, bytes):
            raise cursor.error("a file info entry lacks its name or value")
        info[name.decode("utf-8", "replace")] = value
    return MappingProxyType(info)
