"""The archived timeline: instants Hudi's archiver moved out of the active timeline.

Tables of version 8 and 9 keep it as an LSM tree (``LSMTimeline`` in Hudi) under
``.hoodie/timeline/history``: ``_version_`` holds the number N of the live
manifest, ``manifest_N`` lists the live Parquet files (compaction of the tree
leaves older files behind until they are cleaned, so only the manifest says what
is live), and each row of those files is one completed instant: ``instantTime``,
``completionTime``, ``action`` and ``metadata`` (the bytes of the instant's file
on the active timeline). Tables of version 6 keep Hudi log files
(``.commits_.archive.N_...``) in ``hoodie.archivelog.folder``: Avro data blocks
of ``HoodieArchivedMetaEntry`` records, one per state of each instant, whose
completed commits carry their metadata as an Avro record
(:func:`v6_archive_entries`). Where both live: ``TableProperties.archive_dir``.

Only completed instants are archived, oldest first: every archived instant was
requested before the active timeline's first instant.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import fastavro

from hudi_connect.core.errors import InvalidInstantError, LogDecodeError
from hudi_connect.core.format.log.blocks import data_block_record_bytes
from hudi_connect.core.format.log.format import LogBlockType, read_log_blocks
from hudi_connect.core.format.timeline import Action, Instant, InstantState, Timeline

VERSION_FILE = "_version_"
V6_ARCHIVE_PREFIX = ".commits_.archive."  # version 6's archive log files (their .crc files begin with "..")
# where a completed write instant of version 6's archive keeps its metadata (compaction completes as a commit)
_V6_METADATA_FIELDS = {"commit": "hoodieCommitMetadata", "deltacommit": "hoodieCommitMetadata",
                       "replacecommit": "hoodieReplaceCommitMetadata"}

# the LSM files' columns the readers use
INSTANT_TIME, COMPLETION_TIME, ACTION, METADATA = "instantTime", "completionTime", "action", "metadata"


def manifest_name(version_text: str, *, where: str) -> str:
    """The live manifest named by ``_version_``'s content."""
    text = version_text.strip()
    if not text.isdigit():
        raise InvalidInstantError(f"{where}: the archived timeline's {VERSION_FILE} holds {text[:40]!r}, "
                                  "not a manifest version")
    return f"manifest_{int(text)}"


def manifest_files(manifest_text: str, *, where: str) -> tuple[str, ...]:
    """The live Parquet files of the archived timeline, from its manifest (JSON)."""
    try:
        entries = json.loads(manifest_text)["files"]
        names = tuple(str(entry["fileName"]) for entry in entries)
    except (ValueError, KeyError, TypeError) as error:
        raise InvalidInstantError(f"{where}: the archived timeline's manifest is not readable ({error})") from error
    if any("/" in name or not name.endswith(".parquet") for name in names):
        raise InvalidInstantError(f"{where}: the archived timeline's manifest lists files other than Parquet")
    return names


def archived_instant(instant_time: str, completion_time: str | None, action: str) -> Instant | None:
    """One archived row as a completed instant; None for actions the timeline does not know."""
    try:
        kind = Action(action)
    except ValueError:
        return None
    return Instant(instant_time, kind, InstantState.COMPLETED, completion_time or instant_time)


@dataclass(frozen=True)
class V6ArchiveEntry:
    """One completed instant of a version-6 archive; ``metadata``: a write commit's metadata, as JSON bytes
    (what the LSM's ``metadata`` column holds for the readers: the bytes of the instant's file)."""

    instant_time: str
    action: str
    completion_time: str | None
    metadata: bytes | None


@lru_cache(maxsize=8)
def _parsed_schema(schema_json: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_json))


def v6_archive_entries(content: bytes, *, where: str) -> Iterator[V6ArchiveEntry]:
    """The completed instants of one archive log file of a version-6 table. As Hudi's reader of it, only Avro
    data blocks count: a corrupt block is the tail of an archival that failed before it removed the instants
    from the active timeline, where they still are."""
    for block in read_log_blocks(content, source=where):
        if block.block_type is not LogBlockType.AVRO_DATA:
            continue
        if block.schema_json is None:
            raise LogDecodeError(f"{where}: an archive block at byte {block.offset} has no SCHEMA header")
        try:
            schema = _parsed_schema(block.schema_json)
            records = [fastavro.schemaless_reader(io.BytesIO(raw), schema, None)
                       for raw in data_block_record_bytes(block)]
        except (ValueError, TypeError, KeyError, EOFError, fastavro.schema.SchemaParseException) as error:
            raise LogDecodeError(f"{where}: an archive block at byte {block.offset} does not decode as "
                                 f"HoodieArchivedMetaEntry records ({type(error).__name__}: {error})") from None
        for record in records:
            if not isinstance(record, dict) or (record.get("actionState") or "COMPLETED") != "COMPLETED":
                continue  # requested and inflight states of instants archived whole
            action = str(record.get("actionType") or "")
            metadata = record.get(_V6_METADATA_FIELDS.get(action, ""))
            yield V6ArchiveEntry(str(record.get("commitTime")), action, record.get("stateTransitionTime"),
                                 json.dumps(metadata, default=str).encode() if metadata is not None else None)


@dataclass(frozen=True)
class ArchivedTimeline:
    """The archived instants of a table, oldest first (empty when nothing was ever archived); ranges
    compare completion times (versions 8 and 9) or requested times (version 6)."""

    instants: tuple[Instant, ...] = ()
    by_completion: bool = True

    def write_commits(self) -> tuple[Instant, ...]:
        """The archived instants that wrote data (commit, deltacommit, replacecommit), oldest first."""
        return tuple(i for i in self.instants if i.writes_data)

    def commits_between(self, begin: Instant | str, end: Instant | str | None) -> list[Instant]:
        """Archived write commits in the range (begin, end], compared as the table's version compares them."""
        return Timeline(self.instants).commits_between(begin, end, by_completion=self.by_completion)

    def last_write_commit(self) -> Instant | None:
        """The newest archived write commit, or None when none was archived."""
        commits = self.write_commits()
        return commits[-1] if commits else None
