"""Commit metadata of completed write instants, decoded into typed models.

Table version 6 stores ``HoodieCommitMetadata`` as JSON; versions 8 and 9
store it as an Avro container file (``HoodieCommitMetadata`` /
``HoodieReplaceCommitMetadata`` records). Both become :class:`CommitMetadata`.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hudi_connect.core.errors import HudiConnectError
from hudi_connect.core.format.timeline import Instant

AVRO_MAGIC = b"Obj\x01"


@dataclass(frozen=True)
class WriteStat:
    """One file written by a commit (``HoodieWriteStat``)."""

    partition_path: str
    file_id: str
    path: str
    prev_commit: str | None
    num_writes: int
    num_inserts: int
    num_updates: int
    num_deletes: int
    total_write_bytes: int
    file_size: int
    base_file: str | None = None  # MOR log writes: the base file the logs belong to
    log_files: tuple[str, ...] = ()
    cdc_stats: Mapping[str, int] = field(default_factory=dict)

    @property
    def is_log_file(self) -> bool:
        """Whether the file written is a log file (``.<file id>_<instant>.log.<version>_<token>``), not a base file."""
        return ".log." in self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class CommitMetadata:
    """A completed write instant's ``HoodieCommitMetadata`` (or ``HoodieReplaceCommitMetadata``): its
    ``partitionToWriteStats``, ``partitionToReplaceFileIds`` and ``extraMetadata``."""

    operation_type: str | None
    write_stats: tuple[WriteStat, ...]
    replaced_file_ids: Mapping[str, tuple[str, ...]]
    extra_metadata: Mapping[str, str]
    compacted: bool = False

    @property
    def schema_json(self) -> str | None:
        """The writer's Avro schema as JSON (``extraMetadata``'s ``schema``), if the commit recorded one."""
        return self.extra_metadata.get("schema")

    @property
    def records_written(self) -> int:
        """The records written over all write stats (sum of ``numWrites``)."""
        return sum(s.num_writes for s in self.write_stats)

    @property
    def partitions(self) -> tuple[str, ...]:
        """The partitions the commit wrote to or replaced file groups in, sorted."""
        return tuple(sorted({s.partition_path for s in self.write_stats} | set(self.replaced_file_ids)))


class CommitMetadataError(HudiConnectError):
    """Commit metadata that cannot be decoded."""


def _int(value: Any) -> int:
    return int(value) if value not in (None, "null") else 0


def _write_stat(partition: str, raw: Mapping[str, Any]) -> WriteStat:
    prev = raw.get("prevCommit")
    return WriteStat(
        partition_path=raw.get("partitionPath") or partition,
        file_id=raw.get("fileId") or "",
        path=raw.get("path") or "",
        prev_commit=None if prev in (None, "null") else str(prev),
        num_writes=_int(raw.get("numWrites")),
        num_inserts=_int(raw.get("numInserts")),
        num_updates=_int(raw.get("numUpdateWrites")),
        num_deletes=_int(raw.get("numDeletes")),
        total_write_bytes=_int(raw.get("totalWriteBytes")),
        file_size=_int(raw.get("fileSizeInBytes")),
        base_file=raw.get("baseFile") or None,
        log_files=tuple(raw.get("logFiles") or ()),
        cdc_stats={str(k): _int(v) for k, v in (raw.get("cdcStats") or {}).items()},
    )


def commit_metadata_from_mapping(raw: Mapping[str, Any]) -> CommitMetadata:
    """A decoded ``HoodieCommitMetadata`` record (from JSON or Avro) as :class:`CommitMetadata`; an
    ``UNKNOWN`` operation type becomes None."""
    stats = tuple(
        _write_stat(partition, stat)
        for partition, partition_stats in (raw.get("partitionToWriteStats") or {}).items()
        for stat in (partition_stats or ())
    )
    replaced = {p: tuple(ids or ()) for p, ids in (raw.get("partitionToReplaceFileIds") or {}).items()}
    operation = raw.get("operationType")
    return CommitMetadata(
        operation_type=None if operation in (None, "UNKNOWN") else str(operation),
        write_stats=stats,
        replaced_file_ids=replaced,
        extra_metadata={str(k): str(v) for k, v in (raw.get("extraMetadata") or {}).items()},
        compacted=bool(raw.get("compacted") or False),
    )


def decode_commit_metadata(content: bytes, *, name: str = "commit metadata") -> CommitMetadata:
    """Decode a completed commit/deltacommit/replacecommit file of any table version."""
    if not content.strip():
        return CommitMetadata(None, (), {}, {})
    try:
        if content.startswith(AVRO_MAGIC):
            import fastavro

            records = list(fastavro.reader(io.BytesIO(content)))
            first = records[0] if records else {}
            if not isinstance(first, dict):
                raise ValueError(f"the Avro record is a {type(first).__name__}, not a record")
            raw: Mapping[str, Any] = first
        else:
            raw = json.loads(content.decode("utf-8"))
    except Exception as error:  # any decoding failure of a foreign file
        raise CommitMetadataError(f"cannot decode {name}: {error}") from error
    return commit_metadata_from_mapping(raw)


def latest_schema_json(commits: Sequence[Instant], metadata: Mapping[Instant, CommitMetadata]) -> str | None:
    """The writer schema of the last of ``commits`` (in order) whose metadata records one."""
    return next((metadata[c].schema_json for c in reversed(commits) if metadata[c].schema_json), None)
