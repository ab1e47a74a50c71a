"""A Hudi table's configuration: ``.hoodie/hoodie.properties`` as typed values.

Mirrors Hudi's ``HoodieTableConfig``. Keys changed names across table
versions (the ordering field was ``hoodie.table.precombine.field`` before
version 8 and ``hoodie.table.ordering.fields`` since), so every reader goes
through :class:`TableProperties` rather than raw keys.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from hudi_connect.core.errors import UnsupportedTableVersionError

SUPPORTED_TABLE_VERSIONS = (6, 8, 9)
# Hudi 1.x's layout begins at table version 8: instant files name their completion time (before, the completed
# file's modification time stood for it), incremental ranges and file slices go by completion time, the
# timeline moves to .hoodie/timeline (layout 2) and the archive becomes an LSM tree of Parquet files.
HUDI_1_TABLE_VERSION = 8


def hudi_1_layout(table_version: int) -> bool:
    """Whether a table of ``table_version`` has Hudi 1.x's layout (version 8 and later): the one place that rule
    is written."""
    return table_version >= HUDI_1_TABLE_VERSION


class TableType(StrEnum):
    """A table's ``hoodie.table.type`` (Hudi's ``HoodieTableType``)."""

    COPY_ON_WRITE = "COPY_ON_WRITE"
    MERGE_ON_READ = "MERGE_ON_READ"


class CdcLoggingMode(StrEnum):
    """What a CDC log file keeps per change (RFC-51, ``HoodieCDCSupplementalLoggingMode``)."""

    OP_KEY_ONLY = "OP_KEY_ONLY"
    DATA_BEFORE = "DATA_BEFORE"
    DATA_BEFORE_AFTER = "DATA_BEFORE_AFTER"


class MetadataPartition(StrEnum):
    """Partitions of the metadata table (``MetadataPartitionType``)."""

    FILES = "files"
    COLUMN_STATS = "column_stats"
    RECORD_INDEX = "record_index"
    BLOOM_FILTERS = "bloom_filters"
    PARTITION_STATS = "partition_stats"


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_java_properties(text: str) -> dict[str, str]:
    """Parse the ``java.util.Properties`` text format (comments, escapes, continuations)."""
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:  # an odd number of backslashes continues the line
            pending += line[:-1]
            continue
        logical.append(pending + line)
        pending = ""
    if pending:
        logical.append(pending)
    result = {}
    for line in logical:
        match = re.match(r"((?:\\.|[^=:\s\\])*)\s*[=:\s]?\s*(.*)$", line)
        if match is None:
            continue
        result[_unescape(match.group(1))] = _unescape(match.group(2))
    return result


def _unescape(value: str) -> str:
    out = []
    i = 0
    while i < len(value):
        char = value[i]
        if char == "\\" and i + 1 < len(value):
            nxt = value[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", value[i + 2 : i + 6]):
                out.append(chr(int(value[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(char)
        i += 1
    return "".join(out)


PROPERTIES_FILE = "hoodie.properties"
# Hudi rewrites hoodie.properties in place: it copies it here, deletes it, writes the new one, then deletes this
PROPERTIES_BACKUP_FILE = "hoodie.properties.backup"
CHECKSUM_KEY = "hoodie.table.checksum"


def properties_checksum(properties: Mapping[str, str]) -> int:
    """Hudi's ``hoodie.table.checksum``: CRC32 of ``<database>.<table name>`` (``HoodieTableConfig``)."""
    name = f"{properties.get('hoodie.database.name', '')}.{properties.get('hoodie.table.name', '')}"
    return zlib.crc32(name.encode("utf-8"))


def properties_are_whole(text: str) -> bool:
    """Whether a read of ``hoodie.properties`` is the whole file, not one met while Hudi rewrote it (empty or
    half-written): it ends a line (Java's ``Properties.store`` ends each), names the table, its version and type,
    and its checksum is there and holds, as in every table version since 4 (Hudi checks it too). A table older
    than that carries none and is refused by its version."""
    if not text.endswith("\n"):
        return False
    properties = parse_java_properties(text)
    if not {"hoodie.table.name", "hoodie.table.version", "hoodie.table.type"} <= properties.keys():
        return False  # what every table's file names (an empty one, met between Hudi's delete and write, does not)
    checksum = properties.get(CHECKSUM_KEY)
    if checksum is None:
        version = properties.get("hoodie.table.version", "")
        return version.isdigit() and 0 < int(version) < 4
    return checksum.strip() == str(properties_checksum(properties))


def _fields(value: str | None) -> tuple[str, ...]:
    return tuple(f.strip() for f in value.split(",") if f.strip()) if value else ()


@dataclass(frozen=True)
class TableProperties:
    """The typed content of ``hoodie.properties``."""

    name: str
    table_type: TableType
    version: int
    record_key_fields: tuple[str, ...]
    ordering_fields: tuple[str, ...]
    partition_fields: tuple[str, ...]
    timeline_layout_version: int
    hive_style_partitioning: bool
    url_encode_partitioning: bool
    populate_meta_fields: bool
    cdc_enabled: bool
    cdc_logging_mode: CdcLoggingMode | None
    metadata_partitions: tuple[str, ...]
    base_file_format: str
    record_merge_mode: str | None
    raw: Mapping[str, str] = field(repr=False, compare=False)

    @property
    def is_merge_on_read(self) -> bool:
        """Whether the table is MERGE_ON_READ (file slices may have log files to merge)."""
        return self.table_type is TableType.MERGE_ON_READ

    @property
    def hudi_1_layout(self) -> bool:
        """Whether the table has Hudi 1.x's layout (version 8+; :func:`hudi_1_layout`)."""
        return hudi_1_layout(self.version)

    @property
    def ranges_by_completion(self) -> bool:
        """Whether incremental ranges compare completion times (Hudi 1.x's layout), not requested times
        (version 6); :func:`~hudi_connect.core.format.timeline.range_time` applies it."""
        return self.hudi_1_layout

    @property
    def timeline_dir(self) -> str:
        """Where active instants live relative to ``.hoodie``: '' (layout 1) or 'timeline' (layout 2)."""
        if self.timeline_layout_version >= 2 and self.hudi_1_layout:
            return self.raw.get("hoodie.timeline.path", "timeline")
        return ""

    @property
    def archive_dir(self) -> str:
        """Where archived instants live relative to ``.hoodie``: the LSM timeline of versions 8 and 9
        (``hoodie.timeline.history.path`` under the timeline), or version 6's log files
        (``hoodie.archivelog.folder``: ``archived`` by default, ``history`` where Hudi 1.x wrote the table)."""
        if self.hudi_1_layout:
            history = self.raw.get("hoodie.timeline.history.path") or "history"
            return f"{self.timeline_dir}/{history}" if self.timeline_dir else history
        return self.raw.get("hoodie.archivelog.folder") or "archived"

    @property
    def partitioned(self) -> bool:
        """Whether the table has partition fields (``hoodie.table.partition.fields``)."""
        return bool(self.partition_fields)

    @classmethod
    def from_properties(cls, raw: Mapping[str, str], *, where: str = "the table") -> TableProperties:
        """Type the raw ``hoodie.properties`` entries, reading each key under its name in any supported
        table version; raises UnsupportedTableVersionError for another ``hoodie.table.version``."""
        version = int(raw.get("hoodie.table.version", "0"))
        if version not in SUPPORTED_TABLE_VERSIONS:
            raise UnsupportedTableVersionError(
                f"{where} has hoodie.table.version={version}; hudi-connect reads versions "
                f"{', '.join(map(str, SUPPORTED_TABLE_VERSIONS))}. Upgrade the table with Hudi first."
            )
        ordering = raw.get("hoodie.table.ordering.fields") or raw.get("hoodie.table.precombine.field")
        # Partition fields may carry a key generator type suffix: "city:SIMPLE" (custom key generator).
        partitions = tuple(f.split(":", 1)[0] for f in _fields(raw.get("hoodie.table.partition.fields")))
        cdc_enabled = raw.get("hoodie.table.cdc.enabled", "false").lower() == "true"
        cdc_mode = raw.get("hoodie.table.cdc.supplemental.logging.mode")
        return cls(
            name=raw.get("hoodie.table.name", ""),
            table_type=TableType(raw.get("hoodie.table.type", "COPY_ON_WRITE")),
            version=version,
            record_key_fields=_fields(raw.get("hoodie.table.recordkey.fields")),
            ordering_fields=_fields(ordering),
            partition_fields=partitions,
            timeline_layout_version=int(raw.get("hoodie.timeline.layout.version", "1")),
            hive_style_partitioning=raw.get("hoodie.datasource.write.hive_style_partitioning", "false") == "true",
            url_encode_partitioning=raw.get("hoodie.datasource.write.partitionpath.urlencode", "false") == "true",
            populate_meta_fields=raw.get("hoodie.populate.meta.fields", "true").lower() == "true",
            cdc_enabled=cdc_enabled,
            cdc_logging_mode=_cdc_mode(cdc_mode) if cdc_enabled else None,
            metadata_partitions=_fields(raw.get("hoodie.table.metadata.partitions")),
            base_file_format=raw.get("hoodie.table.base.file.format", "PARQUET"),
            record_merge_mode=raw.get("hoodie.record.merge.mode"),
            raw=dict(raw),
        )


def _cdc_mode(value: str | None) -> CdcLoggingMode:
    if value is None:
        return CdcLoggingMode.DATA_BEFORE_AFTER  # Hudi's default
    # Hudi before 0.14 spelled the modes in lower camel case (op_key, cdc_data_before, ...).
    legacy = {"op_key": "OP_KEY_ONLY", "cdc_data_before": "DATA_BEFORE", "cdc_data_before_after": "DATA_BEFORE_AFTER"}
    return CdcLoggingMode(legacy.get(value, value.upper()))
