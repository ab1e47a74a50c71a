"""The file-system view: file groups and the file slice to read in each, at an instant.

Mirrors Hudi's ``HoodieTableFileSystemView`` for readers, with HUDI-2285's
rules: a base file or log file counts only if the instant that wrote it is
completed at the read instant (instants older than the active timeline are
archived, hence completed); file groups replaced by a completed replacecommit
(insert_overwrite, delete_partition, clustering) drop out.

Which log files follow a base file depends on the table version:

- version 6 names a log file after its file slice's base instant; the slice
  read is the latest base file plus every log file whose base instant is the
  same or later (later ones belong to a compaction still pending at the read
  instant);
- versions 8 and 9 name a log file after the deltacommit that wrote it, and a
  log file follows a base file when that deltacommit completed after the base
  file's instant (RFC-66 slicing by completion time).

Log blocks inside the chosen files are filtered again by their own instant
(see :class:`BlockValidity`), because a version-6 log file can hold blocks of
failed or rolled-back writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from functools import cached_property
from itertools import repeat

from hudi_connect.core.errors import UnsupportedTableFeatureError
from hudi_connect.core.format.commit_metadata import CommitMetadata
from hudi_connect.core.format.table_config import hudi_1_layout
from hudi_connect.core.format.timeline import INSTANT_TIME_PATTERN, Instant, Timeline

# hfile: the metadata table's base files (a data table of HFile base files is refused by its properties);
# lance: Hudi 1.2's Lance base files
_BASE_FILE = re.compile(
    rf"^(?P<file_id>[^.][^_]*)_(?P<token>[^_]+)_(?P<instant>{INSTANT_TIME_PATTERN})\.(?P<ext>parquet|hfile|lance)$")
# Named like a base file but of another format (orc, ...), or an RFC-103 native log file.
_OTHER_BASE_FILE = re.compile(rf"^[^.][^_]*_[^_]+_{INSTANT_TIME_PATTERN}\.(?P<ext>[A-Za-z0-9]+)$")
_NATIVE_LOG_FILE = re.compile(r"\.(?P<kind>log|deletes)\.(?P<ext>parquet)$")
_LOG_FILE = re.compile(
    rf"^\.(?P<file_id>.+)_(?P<instant>{INSTANT_TIME_PATTERN})\.log\.(?P<version>\d+)(?:_(?P<token>[^.]+))?"
    r"(?P<cdc>\.cdc)?$"
)


@dataclass(frozen=True, order=True)
class BaseFile:
    """A base file of a file group (``HoodieBaseFile``): ``<file id>_<write token>_<instant>.<ext>``."""

    partition: str
    file_id: str
    instant_time: str
    name: str
    size: int = 0
    # a metadata-only bootstrap's skeleton (meta columns only): the source file its rows join, by position
    bootstrap_source: str | None = None


@dataclass(frozen=True, order=True)
class LogFile:
    """A log file of a file group (``HoodieLogFile``): ``.<file id>_<instant>.log.<version>_<write token>``,
    with ``.cdc`` appended for a CDC log file."""

    partition: str
    file_id: str
    instant_time: str  # v6: the slice's base instant; v8+: the deltacommit that wrote it
    version: int
    write_token: str
    name: str
    size: int = 0
    is_cdc: bool = False


@dataclass(frozen=True)
class FileSlice:
    """What to read of one file group: an optional base file and the log files after it, in order."""

    partition: str
    file_id: str
    base_file: BaseFile | None
    log_files: tuple[LogFile, ...]

    @property
    def base_instant(self) -> str | None:
        """The instant that wrote the slice's base file; None for a slice of log files only."""
        return self.base_file.instant_time if self.base_file else None


@dataclass(frozen=True)
class StoredFile:
    """A file found in a partition directory (from a storage listing or commit metadata)."""

    partition: str  # relative partition path, '' for a non-partitioned table
    name: str
    size: int = 0


def is_data_file_name(name: str) -> bool:
    """Whether ``name`` is named as a base or log file of a file group."""
    return bool(_BASE_FILE.match(name) or _LOG_FILE.match(name))


def base_file_instant(name: str) -> str:
    """The instant that wrote the base file ``name``."""
    match = _BASE_FILE.match(name)
    if match is None:
        raise ValueError(f"{name!r} is not a base file name")
    return match["instant"]


def parse_data_file(file: StoredFile) -> BaseFile | LogFile | None:
    """A base or log file of a file group; None for anything else (partition metadata, crc files).
    A data file of a format the readers do not read is refused, never skipped."""
    return parse_file_name(file.partition, file.name, file.size)


def parse_file_name(partition: str, name: str, size: int = 0) -> BaseFile | LogFile | None:
    """:func:`parse_data_file` of the file ``name`` in ``partition`` (for listings of a million names, which
    are not made into :class:`StoredFile` first)."""
    base = _BASE_FILE.match(name)
    if base is not None:
        return BaseFile(partition, base["file_id"], base["instant"], name, size)
    log = _LOG_FILE.match(name)
    if log is not None:
        return LogFile(partition, log["file_id"], log["instant"], int(log["version"]), log["token"] or "", name, size,
                       bool(log["cdc"]))
    other = _OTHER_BASE_FILE.match(name)
    if other is not None and other["ext"].lower() != "crc":  # Hadoop checksums of base files
        raise UnsupportedTableFeatureError(f"{other['ext'].title()} base files", "base file", name,
                                           where=f"partition '{partition}'", detail="only Parquet base files are read")
    native = _NATIVE_LOG_FILE.search(name)
    if native is not None and not name.endswith(".crc"):
        raise UnsupportedTableFeatureError("native Parquet log files (RFC-103)", "log file", name,
                                           where=f"partition '{partition}'")
    return None


def committed_instants(timeline: Timeline, as_of: str | None = None) -> frozenset[str]:
    """Requested times of completed instants at ``as_of`` (by requested time), every action."""
    return frozenset(
        i.requested_time for i in timeline if i.is_completed and (as_of is None or i.requested_time <= as_of)
    )


@dataclass(frozen=True)
class BlockValidity:
    """Which log blocks a reader merges (HUDI-2285): those of writes completed at the read instant, and
    those of instants requested before the active timeline's first one, which Hudi archived and so were
    completed (its log reader's ``containsOrBeforeTimelineStarts``): compaction may skip a file group for
    longer than archival keeps the deltacommits that wrote its log blocks."""

    completed: frozenset[str]
    archived_before: str | None = None  # the active timeline's first requested time
    as_of: str | None = None  # a time travel's instant: later blocks are not merged, archived or not

    def __contains__(self, instant: object) -> bool:
        if instant in self.completed:
            return True
        return (isinstance(instant, str) and self.archived_before is not None and instant < self.archived_before
                and (self.as_of is None or instant <= self.as_of))


def valid_block_instants(timeline: Timeline, as_of: str | None = None) -> BlockValidity:
    """The log blocks a reader at ``as_of`` may merge: of completed writes, and of archived instants."""
    first = timeline.first()
    return BlockValidity(
        frozenset(i.requested_time for i in timeline.write_commits() if as_of is None or i.requested_time <= as_of),
        first.requested_time if first else None, as_of)


def replaced_file_groups(
    metadata: Mapping[Instant, CommitMetadata], as_of: str | None = None
) -> frozenset[tuple[str, str]]:
    """(partition, file id) of file groups replaced by completed replacecommits at ``as_of``."""
    return frozenset(
        (partition, file_id)
        for instant, meta in metadata.items()
        if instant.is_completed and (as_of is None or instant.requested_time <= as_of)
        for partition, file_ids in meta.replaced_file_ids.items()
        for file_id in file_ids
    )


def recorded_rows(slices: Iterable[FileSlice], metadata: Mapping[Instant, CommitMetadata]) -> int | None:
    """The rows a read of ``slices`` returns, as the commits that wrote their base files recorded them (the
    ``numWrites`` of each base file's write stat: the whole file's records, as Hudi's CDC inference reads it
    too); None where that is not known: a slice with log files (merging decides), or a base file no write stat
    of ``metadata`` names (its commit archived, say)."""
    written = {(meta_instant.requested_time, stat.partition_path, stat.path.rsplit("/", 1)[-1]): stat.num_writes
               for meta_instant, meta in metadata.items() for stat in meta.write_stats if not stat.is_log_file}
    rows = 0
    for file_slice in slices:
        base = file_slice.base_file
        if file_slice.log_files or base is None:
            return None
        count = written.get((base.instant_time, file_slice.partition, base.name))
        if count is None:
            return None
        rows += count
    return rows


def file_slices_at(
    files: Iterable[StoredFile],
    timeline: Timeline,
    *,
    table_version: int,
    replaced: frozenset[tuple[str, str]] = frozenset(),
    as_of: str | None = None,
) -> list[FileSlice]:
    """The file slice of every live file group at ``as_of`` (default: the latest completed instant)."""
    return SliceChoice(timeline, table_version, replaced, as_of).all_slices(files)


@dataclass(frozen=True)
class SliceChoice:
    """Which file slices a read takes of listed files: the slice of every live file group at ``as_of``
    (default: the latest completed instant), except those whose every file's column statistics exclude the
    predicate (given as the names ``excluded``), unless ``keep_logged`` and the slice has log files (a merged
    record may match where no single file's statistics do). The one rule of the client's listing and of the
    executors that make the file slices of a read too large for the client to hold.

    Example::

        choice = SliceChoice(timeline, table_version=9, as_of="20260307162434124")
        slices, pruned = choice.slices(files, excluded={"f1-0_0-1-1_20260307162434124.parquet"})
    """

    timeline: Timeline
    table_version: int
    replaced: frozenset[tuple[str, str]] = frozenset()
    as_of: str | None = None
    keep_logged: bool = False

    @cached_property
    def _committed(self) -> BlockValidity:
        first_active = self.timeline.first()
        return BlockValidity(committed_instants(self.timeline, self.as_of),
                             first_active.requested_time if first_active else None, self.as_of)

    @cached_property
    def _completion_of(self) -> dict[str, str | None]:
        return {i.requested_time: i.completion_time for i in self.timeline if i.is_completed}

    def slices(self, files: Iterable[StoredFile], excluded: Set[str] = frozenset()) -> tuple[list[FileSlice], int]:
        """The slices of ``files`` the read takes, and how many more the statistics pruned."""
        return self._pruned(self.all_slices(files), excluded)

    def named_slices(self, partition: str, names: Sequence[str], sizes: Sequence[int],
                     excluded: Set[str] = frozenset()) -> tuple[list[FileSlice], int]:
        """:meth:`slices` of the files ``names`` (of ``sizes``) in one partition, as a listing streams them."""
        return self._pruned(self._slices_of(map(parse_file_name, repeat(partition), names, sizes)), excluded)

    def _pruned(self, slices: list[FileSlice], excluded: Set[str]) -> tuple[list[FileSlice], int]:
        if not excluded:  # nothing pruned (no predicate's statistics): a listing of every file
            return slices, 0
        kept = [s for s in slices if not _excluded(s, excluded) or (self.keep_logged and s.log_files)]
        return kept, len(slices) - len(kept)

    def all_slices(self, files: Iterable[StoredFile]) -> list[FileSlice]:
        """The file slice of every live file group of ``files``, unpruned."""
        return self._slices_of(map(parse_data_file, files))

    def _slices_of(self, parsed_files: Iterable[BaseFile | LogFile | None]) -> list[FileSlice]:
        committed, completion_of, replaced = self._committed.__contains__, self._completion_of, self.replaced
        by_completion = hudi_1_layout(self.table_version)  # log files join a slice by completion time
        bases: dict[tuple[str, str], list[BaseFile]] = {}
        logs: dict[tuple[str, str], list[LogFile]] = {}
        for parsed in parsed_files:
            if parsed is None:
                continue
            key = (parsed.partition, parsed.file_id)
            if key in replaced:
                continue
            if isinstance(parsed, BaseFile):
                if committed(parsed.instant_time):
                    bases.setdefault(key, []).append(parsed)
            elif not parsed.is_cdc:
                logs.setdefault(key, []).append(parsed)

        slices = []
        for key in sorted(bases.keys() | logs.keys() if logs else bases):
            versions = bases.get(key)
            base = (versions[0] if len(versions) == 1 else max(versions, key=lambda b: b.instant_time)) \
                if versions else None
            base_instant = base.instant_time if base else ""
            chosen = []
            for log in logs.get(key, []):
                if by_completion:
                    completion = completion_of.get(log.instant_time)
                    if not committed(log.instant_time) or (completion is not None and completion <= base_instant):
                        continue
                    if completion is None and log.instant_time < base_instant:
                        continue  # archived deltacommit before the base file: already compacted
                    # (one named after the base file's own instant was written before an upgrade from version 6,
                    # which named log files after their slice's base instant: its blocks belong to this slice)
                elif log.instant_time < base_instant:
                    continue
                chosen.append(log)
            if base is None and not chosen:
                continue
            chosen.sort(key=lambda f: (f.instant_time, f.version, f.write_token))
            slices.append(FileSlice(key[0], key[1], base, tuple(chosen)))
        return slices


def _excluded(file_slice: FileSlice, excluded: Set[str]) -> bool:
    """Whether every file of the slice has statistics that exclude the predicate."""
    names = [f.name for f in file_slice.log_files] + ([file_slice.base_file.name] if file_slice.base_file else [])
    return bool(names) and all(name in excluded for name in names)
