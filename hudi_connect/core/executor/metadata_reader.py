"""Listing, column statistics and record locations from the metadata table, inside a worker.

One task does everything a listing needs, so that the metadata table costs
one Spark job, as a storage listing does: it lists the metadata table's
timeline and partition directory itself, picks each file group's latest
slice, reads the HFile base file and the log blocks, and merges the records.

HUDI-2285's reader side: a log block counts only if its instant is a completed
data-table instant, or a completed metadata deltacommit that stands for no
pending data-table instant (initialization and indexing write such). A crashed
write leaves its metadata deltacommit completed and its data instant pending:
its files stay invisible. When the metadata table has not caught up with the
data table's latest completed instant, the task lists storage instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.fs as pafs

from hudi_connect.core.executor.contracts import LOCATIONS, MATCHES, FileMatch, RecordLocation
from hudi_connect.core.executor.listing import PartitionFilter, list_storage
from hudi_connect.core.executor.refusals import planned_file, worker_body
from hudi_connect.core.executor.slices import listing_batch
from hudi_connect.core.executor.storage import join, list_directory, read_many
from hudi_connect.core.format.expressions import ColumnRange, Expression, stats_may_match
from hudi_connect.core.format.fs_view import FileSlice, StoredFile, file_slices_at
from hudi_connect.core.format.log.format import LogBlock, read_log_blocks
from hudi_connect.core.format.metadata import (
    ALL_PARTITIONS_KEY,
    ColumnStats,
    KeySelection,
    MetadataEntry,
    PartitionFiles,
    column_stats,
    column_stats_prefix,
    file_group_id,
    file_group_index,
    hfile_records,
    log_entries,
    merge_entries,
    partition_files,
    record_locations,
)
from hudi_connect.core.format.metadata.keys import data_partition
from hudi_connect.core.format.timeline import Action, Timeline, parse_instant_file_name

METADATA_DIR = ".hoodie/metadata"
# data-table actions that write a metadata deltacommit of the same instant time
TRACKED_ACTIONS = frozenset({Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.CLEAN, Action.ROLLBACK})
KEYS_SCHEMA = pa.schema([("record_key", pa.string())])  # the input of locate


@dataclass(frozen=True)
class DataTimeline:
    """What the metadata reader needs of the data table's timeline (small: instant times only)."""

    completed: frozenset[str]  # requested times of completed instants, every action
    pending: frozenset[str]
    latest_tracked: str | None  # the last completed instant the metadata table must have

    @classmethod
    def of(cls, timeline: Timeline) -> DataTimeline:
        """The instant times of the data table's timeline, built on the client and shipped to the tasks."""
        tracked = [i.requested_time for i in timeline if i.is_completed and i.action in TRACKED_ACTIONS]
        return cls(frozenset(i.requested_time for i in timeline if i.is_completed),
                   frozenset(i.requested_time for i in timeline if not i.is_completed), max(tracked, default=None))


@dataclass(frozen=True)
class MetadataSource:
    """The data table whose metadata table a task reads: its base path, its timeline and table version."""

    base_uri: str  # the data table
    data: DataTimeline
    table_version: int

    @property
    def metadata_uri(self) -> str:
        """The metadata table's base path, ``.hoodie/metadata`` below the data table's."""
        return join(self.base_uri, METADATA_DIR)


# where the metadata table's timeline may be, below its .hoodie: layout 2 (versions 8 and 9), then layout 1
METADATA_TIMELINE_DIRS = ("timeline", "")


def metadata_timeline_of(listings: Iterable[Iterable[tuple[str, int | None]]]) -> Timeline | None:
    """The metadata table's timeline from the (name, modification ms) of the files of each of
    :data:`METADATA_TIMELINE_DIRS`, in order: the first holding instant files is the timeline."""
    for listing in listings:
        files = [p for p in (parse_instant_file_name(name, mtime) for name, mtime in listing) if p is not None]
        if files:
            return Timeline.from_files(files)
    return None


@dataclass(frozen=True)
class MetadataTimeline:
    """The metadata table's timeline, and the table version its files follow, told by where its timeline is:
    8+ where it has a directory of its own (layout 2), else 6; not assumed to be the data table's."""

    timeline: Timeline
    version: int


def _metadata_timeline(source: MetadataSource) -> MetadataTimeline | None:
    for directory in METADATA_TIMELINE_DIRS:
        infos = list_directory(join(source.metadata_uri, ".hoodie", directory))
        timeline = metadata_timeline_of([[(i.base_name, int(i.mtime.timestamp() * 1000) if i.mtime else None)
                                          for i in infos if i.type == pafs.FileType.File]])
        if timeline is not None:
            return MetadataTimeline(timeline, 8 if directory else 6)
    return None


def valid_block_instants(source: MetadataSource, metadata_timeline: Timeline) -> frozenset[str]:
    """Instants whose metadata log blocks a reader may merge (HUDI-2285)."""
    own = {i.requested_time for i in metadata_timeline
           if i.is_completed and i.action is Action.DELTA_COMMIT and i.requested_time not in source.data.pending}
    return frozenset(source.data.completed | own)


def caught_up(source: MetadataSource, metadata_timeline: Timeline | None) -> bool:
    """Whether the metadata table has completed the deltacommit of the data table's latest completed instant
    that writes one, so that its listing and statistics are current (False without a metadata timeline)."""
    if metadata_timeline is None:
        return False
    if source.data.latest_tracked is None:
        return True
    return any(i.requested_time == source.data.latest_tracked and i.is_completed for i in metadata_timeline)


def partition_slices(source: MetadataSource, metadata: MetadataTimeline, partition: str) -> list[FileSlice]:
    """The latest slice of each file group of one metadata partition."""
    stored = [StoredFile(partition, info.base_name, info.size or 0)
              for info in list_directory(join(source.metadata_uri, partition))
              if info.type == pafs.FileType.File]
    return file_slices_at(stored, metadata.timeline, table_version=metadata.version)


@dataclass(frozen=True)
class FetchedSlice:
    """A metadata file slice's files, read once (base file first, then its log files), so that one slice can
    answer several lookups."""

    file_slice: FileSlice
    uris: tuple[str, ...]
    contents: tuple[bytes, ...] = field(repr=False)

    def entries(self, valid: frozenset[str], select: KeySelection | None = None) -> list[MetadataEntry]:
        """The slice's records in merge order, of valid log blocks only; only those ``select`` selects
        when given (found through the HFiles' block indexes)."""
        entries: list[MetadataEntry] = []
        logs_from = 0
        if self.file_slice.base_file is not None:
            entries.extend(hfile_records(self.contents[0], instant_time=self.file_slice.base_instant,
                                         select=select, source=self.uris[0]))
            logs_from = 1
        blocks: list[LogBlock] = []
        for uri, content in zip(self.uris[logs_from:], self.contents[logs_from:], strict=True):
            blocks.extend(read_log_blocks(content, source=uri))
        entries.extend(e for e in log_entries(blocks, select) if e.instant_time in valid)
        return entries


def fetch_slice(source: MetadataSource, file_slice: FileSlice) -> FetchedSlice:
    """Read a metadata file slice's files, in parallel."""
    names = [f.name for f in file_slice.log_files]
    if file_slice.base_file is not None:
        names.insert(0, file_slice.base_file.name)
    uris = tuple(join(source.metadata_uri, file_slice.partition, name) for name in names)
    with planned_file(*uris, planned_at=None):  # the metadata table's cleaner removed a slice just listed
        contents = tuple(read_many(list(uris)))
    return FetchedSlice(file_slice, uris, contents)


def slice_entries(source: MetadataSource, file_slice: FileSlice, valid: frozenset[str],
                  select: KeySelection | None = None) -> list[MetadataEntry]:
    """A metadata file slice's records in merge order: base file, then valid log blocks."""
    return fetch_slice(source, file_slice).entries(valid, select)


def _kept_partition_files(fetched: FetchedSlice, valid: frozenset[str],
                          keep: PartitionFilter) -> dict[str, PartitionFiles]:
    """The files of the kept partitions a files-partition slice lists. Without a predicate every record is
    decoded; with one, only the records of the partitions it keeps, chosen by their keys. Not through the
    partition list: a partition deleted later (``delete_partition``) leaves that list, while its files, which a
    time travel before the deletion reads, stay until the cleaner takes them."""
    if keep.predicate is None and keep.paths is None:
        return partition_files(merge_entries(fetched.entries(valid)))
    select = KeySelection.of(where=lambda key: key != ALL_PARTITIONS_KEY and keep.keeps(data_partition(key)))
    return partition_files(merge_entries(fetched.entries(valid, select)))


def _metadata_listing(source: MetadataSource, metadata: MetadataTimeline, keep: PartitionFilter) -> pa.RecordBatch:
    valid = valid_block_instants(source, metadata.timeline)
    rows: list[tuple[str, str, int]] = []
    for file_slice in partition_slices(source, metadata, "files"):
        for partition, files in _kept_partition_files(fetch_slice(source, file_slice), valid, keep).items():
            if keep.keeps(partition):
                rows.extend((partition, name, size) for name, size in files.files.items() if name not in files.deleted)
    return listing_batch(rows)


@worker_body
def list_through_metadata(source: MetadataSource, keep: PartitionFilter,
                          batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: the data files of kept partitions, from the metadata table's files
    partition when it has caught up, else from a storage listing."""
    for batch in batches:
        for _ in range(batch.num_rows):
            metadata = _metadata_timeline(source)
            if metadata is not None and caught_up(source, metadata.timeline):
                listing = _metadata_listing(source, metadata, keep)
                yield listing.append_column("source", pa.array(["metadata"] * listing.num_rows, pa.string()))
            else:
                base = pa.record_batch({"base_uri": [source.base_uri]})
                for listing in list_storage(keep, [base]):
                    yield listing.append_column("source", pa.array(["storage"] * listing.num_rows, pa.string()))


def _ranges(stats: Iterable[ColumnStats], columns: tuple[str, ...]) -> dict[str, dict[str, ColumnRange]]:
    by_file: dict[str, dict[str, ColumnRange]] = {}
    for entry in stats:
        if entry.file_name is not None and entry.column in columns:
            by_file.setdefault(entry.file_name, {})[entry.column] = ColumnRange(
                entry.min_value, entry.max_value, entry.null_count, entry.value_count)
    return by_file


STATS_TASKS = 2
"""Tasks a column-statistics lookup spreads over: Hudi writes the column_stats partition in two file groups by
default (``hoodie.metadata.index.column.stats.file.group.count``), and each task reads its share of them."""
STATS_SHARDS_SCHEMA = pa.schema([("shard", pa.int32()), ("shards", pa.int32())])  # the input of the lookup


def stats_shards(tasks: int = STATS_TASKS) -> list[tuple[int, int]]:
    """The task rows of a column-statistics lookup: (shard, shards) for each task."""
    return [(shard, tasks) for shard in range(tasks)]


@worker_body
def match_by_metadata_stats(source: MetadataSource, predicate: Expression, columns: tuple[str, ...],
                            batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: (file name, may_match) for every data file the column_stats partition covers.
    Each (shard, shards) row reads the file groups whose position is ``shard`` modulo ``shards``, and only the
    statistics of ``columns``, by key prefix."""
    select = KeySelection.of(prefixes=[column_stats_prefix(column) for column in columns])
    for batch in batches:
        for shard, shards in zip(batch.column("shard").to_pylist(), batch.column("shards").to_pylist(), strict=True):
            metadata = _metadata_timeline(source)
            if metadata is None or not caught_up(source, metadata.timeline):
                continue  # no statistics: nothing is pruned
            valid = valid_block_instants(source, metadata.timeline)
            names, matches = [], []
            for file_slice in partition_slices(source, metadata, "column_stats")[shard::shards]:
                merged = merge_entries(slice_entries(source, file_slice, valid, select))
                for name, ranges in _ranges(column_stats(merged), columns).items():
                    names.append(name)
                    matches.append(stats_may_match(predicate, ranges))
            # no partition: the client joins the matches on the (unique) file name
            yield MATCHES.batch(FileMatch(None, name, match) for name, match in zip(names, matches, strict=True))


@worker_body
def locate(source: MetadataSource, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: record keys in, their record-index locations out (absent keys: no row)."""
    for batch in batches:
        keys = [k for k in batch.column("record_key").to_pylist() if k is not None]
        if not keys:
            continue
        metadata = _metadata_timeline(source)
        if metadata is None:
            continue
        valid = valid_block_instants(source, metadata.timeline)
        groups = {s.file_id: s for s in partition_slices(source, metadata, "record_index")}
        wanted: dict[str, list[str]] = {}
        for key in keys:
            wanted.setdefault(file_group_id("record_index", file_group_index(key, len(groups))), []).append(key)
        found = {}
        for file_id, group_keys in wanted.items():
            if file_id in groups:
                selected = KeySelection.of(keys=group_keys)
                found.update(record_locations(merge_entries(slice_entries(source, groups[file_id], valid, selected))))
        yield LOCATIONS.batch(RecordLocation(key, v.partition, v.file_id, v.instant_millis)
                              for key, v in found.items())
