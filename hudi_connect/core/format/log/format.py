"""The framing of a Hudi log file: a sequence of log blocks, each behind the magic ``#HUDI#``.

Mirrors Hudi's ``HoodieLogFileReader`` for log format version 1, the version
Hudi writes (``HoodieLogFormatVersion``). A block is, in big-endian Java
``DataOutputStream`` encoding::

    magic      6 bytes  "#HUDI#"
    size       long     bytes after this field up to the end of the block
    version    int      log format version (1)
    type       int      ordinal of HoodieLogBlockType
    header     int count, then per entry: int key ordinal, int length, UTF-8 value
    length     long     content length
    content    bytes    Avro records, a Parquet file, an HFile, delete keys ...
    footer     same layout as the header (empty in practice)
    reverse    long     size + 6: lets a reader walk the file backwards

Like Hudi, a block whose size runs past the end of the file, disagrees with
its reverse pointer or is not followed by another magic (or the end of the
file) is a partial write: it is reported as a ``CORRUPT`` block spanning up to
the next magic, and reading goes on from there. Only ``bytes`` are read here;
the content is decoded on demand by :mod:`hudi_connect.core.format.log.blocks`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from hudi_connect.core.errors import LogDecodeError

MAGIC = b"#HUDI#"
LOG_FORMAT_VERSION = 1

_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
# version, type, header count, content length, footer count, reverse pointer
_SMALLEST_BLOCK = 4 + 4 + 4 + 8 + 4 + 8


class LogBlockType(StrEnum):
    """``HoodieLogBlock.HoodieLogBlockType``; values are Hudi's ids, declaration order is the on-disk ordinal."""

    COMMAND = ":command"
    DELETE = ":delete"
    CORRUPT = ":corrupted"
    AVRO_DATA = "avro"
    HFILE_DATA = "hfile"
    PARQUET_DATA = "parquet"
    CDC_DATA = "cdc"


class HeaderKey(StrEnum):
    """``HoodieLogBlock.HeaderMetadataType``, keys of block headers and footers; declaration order is the ordinal."""

    INSTANT_TIME = "INSTANT_TIME"
    TARGET_INSTANT_TIME = "TARGET_INSTANT_TIME"
    SCHEMA = "SCHEMA"
    COMMAND_BLOCK_TYPE = "COMMAND_BLOCK_TYPE"
    COMPACTED_BLOCK_TIMES = "COMPACTED_BLOCK_TIMES"
    RECORD_POSITIONS = "RECORD_POSITIONS"
    BLOCK_IDENTIFIER = "BLOCK_IDENTIFIER"
    IS_PARTIAL = "IS_PARTIAL"
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = "BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS"


_BLOCK_TYPES = tuple(LogBlockType)
_HEADER_KEYS = tuple(HeaderKey)
_DATA_BLOCK_TYPES = frozenset({LogBlockType.AVRO_DATA, LogBlockType.PARQUET_DATA, LogBlockType.CDC_DATA,
                               LogBlockType.HFILE_DATA})


@dataclass(frozen=True)
class LogBlock:
    """One block of a log file, its content still undecoded.

    ``offset`` is the byte offset of the block's magic in the file and
    ``size`` the number of bytes the block spans from there, so the next block
    starts at ``offset + size``. A ``CORRUPT`` block has no version, headers or
    footers; its content is the bytes after its magic up to the next magic, and
    ``corruption`` says why it was set aside.

    Example::

        for block in read_log_blocks(path.read_bytes()):
            print(block.block_type, block.instant_time)
    """

    block_type: LogBlockType
    format_version: int | None
    headers: Mapping[HeaderKey, str]
    footers: Mapping[HeaderKey, str]
    offset: int
    size: int
    content: bytes = field(repr=False)
    corruption: str | None = None

    @property
    def instant_time(self) -> str | None:
        """The instant that wrote this block (for a rollback command block: the rollback's instant)."""
        return self.headers.get(HeaderKey.INSTANT_TIME)

    @property
    def target_instant_time(self) -> str | None:
        """The instant a command block acts on, such as the instant a rollback undoes."""
        return self.headers.get(HeaderKey.TARGET_INSTANT_TIME)

    @property
    def schema_json(self) -> str | None:
        """The Avro schema (JSON) the block's records were written with."""
        return self.headers.get(HeaderKey.SCHEMA)

    @property
    def is_data_block(self) -> bool:
        """Whether the block holds records (``HoodieDataBlock``): Avro, Parquet, HFile or CDC."""
        return self.block_type in _DATA_BLOCK_TYPES


def read_log_blocks(data: bytes, *, source: str = "log file") -> Iterator[LogBlock]:
    """Yield the blocks of a log file in file order, partial writes as ``CORRUPT`` blocks.

    ``source`` names the file in error messages. Raises :class:`LogDecodeError`
    for a block that is framed correctly but cannot be parsed (an unknown
    version, block type or header key, or inconsistent lengths), where Hudi's
    reader fails too.

    Example::

        path = Path(".8a6f-0_20250101000000000.log.1_0-1-1")
        blocks = list(read_log_blocks(path.read_bytes(), source=str(path)))
    """
    if not isinstance(data, bytes):
        raise TypeError(f"read_log_blocks needs bytes, not {type(data).__name__}")
    position = 0
    # Fewer bytes than a magic left: Hudi's readMagic meets the end of the file and stops.
    while len(data) - position >= len(MAGIC):
        if not data.startswith(MAGIC, position):
            # Only possible at the start of the file: every block read below ends at a magic or EOF.
            block = _corrupt_block(data, position, position, "the file does not start with the magic #HUDI#")
        else:
            size_at = position + len(MAGIC)
            reason = _framing_error(data, size_at)
            if reason is None:
                block = _parse_block(data, position, source)
            else:
                block = _corrupt_block(data, position, size_at, reason)
        yield block
        position = block.offset + block.size


def _framing_error(data: bytes, size_at: int) -> str | None:
    """Why the block whose size field is at ``size_at`` is a partial write, or None (``isBlockCorrupt``)."""
    if size_at + _LONG.size > len(data):
        return "the file ends inside the block size field"
    (size,) = _LONG.unpack_from(data, size_at)
    end = size_at + _LONG.size + size
    if size < _SMALLEST_BLOCK:
        return f"block size {size} is smaller than the smallest block ({_SMALLEST_BLOCK} bytes)"
    if end > len(data):
        return f"block size {size} runs {end - len(data)} bytes past the end of the file"
    (reverse,) = _LONG.unpack_from(data, end - _LONG.size)
    if reverse - len(MAGIC) != size:
        return f"block size {size} does not match the block length {reverse} at the end of the block"
    if len(data) - end >= len(MAGIC) and not data.startswith(MAGIC, end):
        return "the block is not followed by the magic of another block"
    return None


def _corrupt_block(data: bytes, offset: int, scan_from: int, reason: str) -> LogBlock:
    """A corrupt block from ``offset`` up to the next magic after ``scan_from`` (``createCorruptBlock``)."""
    next_magic = data.find(MAGIC, scan_from)
    end = len(data) if next_magic < 0 else next_magic
    return LogBlock(LogBlockType.CORRUPT, None, MappingProxyType({}), MappingProxyType({}), offset,
                    end - offset, data[scan_from:end], reason)


class _Cursor:
    """Reads big-endian values within ``[position, limit)``, refusing any read past ``limit``."""

    def __init__(self, data: bytes, position: int, limit: int, where: str) -> None:
        self.data = data
        self.position = position
        self.limit = limit
        self.where = where

    def error(self, what: str) -> LogDecodeError:
        return LogDecodeError(f"{self.where}: {what}")

    def _need(self, count: int, what: str) -> None:
        if count < 0 or count > self.limit - self.position:
            raise self.error(f"{what} needs {count} bytes but only {self.limit - self.position} are left")

    def int32(self, what: str) -> int:
        self._need(_INT.size, what)
        (value,) = _INT.unpack_from(self.data, self.position)
        self.position += _INT.size
        return int(value)

    def int64(self, what: str) -> int:
        self._need(_LONG.size, what)
        (value,) = _LONG.unpack_from(self.data, self.position)
        self.position += _LONG.size
        return int(value)

    def take(self, count: int, what: str) -> bytes:
        self._need(count, what)
        start = self.position
        self.position += count
        return self.data[start:self.position]


def _parse_block(data: bytes, offset: int, source: str) -> LogBlock:
    """Parse a block whose framing was checked: version, type, header, content, footer."""
    size_at = offset + len(MAGIC)
    (size,) = _LONG.unpack_from(data, size_at)
    end = size_at + _LONG.size + size
    cursor = _Cursor(data, size_at + _LONG.size, end - _LONG.size, f"{source}: block at byte {offset}")
    version = cursor.int32("the log format version")
    if version != LOG_FORMAT_VERSION:
        raise cursor.error(f"log format version {version} is not supported; Hudi writes version "
                           f"{LOG_FORMAT_VERSION}")
    ordinal = cursor.int32("the block type")
    if not 0 <= ordinal < len(_BLOCK_TYPES):
        raise cursor.error(f"unknown block type ordinal {ordinal} (known: 0-{len(_BLOCK_TYPES) - 1}); "
                           "it may have been written by a newer Hudi")
    block_type = _BLOCK_TYPES[ordinal]
    headers = _read_metadata(cursor, "header")
    content_length = cursor.int64("the content length")
    content = cursor.take(content_length, f"content of {content_length} bytes")
    footers = _read_metadata(cursor, "footer")
    if cursor.position != cursor.limit:
        raise cursor.error(f"{cursor.limit - cursor.position} bytes left between the footer and the block length")
    return LogBlock(block_type, version, headers, footers, offset, end - offset, content)


def _read_metadata(cursor: _Cursor, kind: str) -> Mapping[HeaderKey, str]:
    """A header or footer map (``HoodieLogBlock.getLogMetadata``); a repeated key keeps its last value, as in Java."""
    count = cursor.int32(f"the {kind} entry count")
    if count < 0 or count * 8 > cursor.limit - cursor.position:
        raise cursor.error(f"{kind} entry count {count} does not fit in the block")
    entries: dict[HeaderKey, str] = {}
    for index in range(count):
        ordinal = cursor.int32(f"{kind} entry {index} key")
        if not 0 <= ordinal < len(_HEADER_KEYS):
            raise cursor.error(f"{kind} entry {index} has unknown key ordinal {ordinal} "
                               f"(known: 0-{len(_HEADER_KEYS) - 1}); it may have been written by a newer Hudi")
        length = cursor.int32(f"{kind} entry {index} length")
        raw = cursor.take(length, f"{kind} entry {index} value of {length} bytes")
        try:
            entries[_HEADER_KEYS[ordinal]] = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise cursor.error(f"{kind} entry {_HEADER_KEYS[ordinal].value} is not UTF-8: {error}") from None
    return MappingProxyType(entries)
