"""Listing, column statistics and record locations from the metadata table, inside a worker.

One task does everything a listing needs, so that the metadata table costs
one Spark job, as a storage listing does: it lists the metadata table's
timeline and partition directory itself, picks each file group's latest
slice, reads the HFile base file and the log blocks, and merges the records.

HUDI-2285's reader side: a log block counts only if its instant is a completed
data-table instant, or a completed metadata deltacommit that stands for no
pending data-table instant (initialization and indexing write such). A crashed
write leaves its metadata deltacommit completed and its data instant pending:
its files stay invisible. When the metadata table lacks a completed data-table
instant (:func:`caught_up`), the task lists storage instead.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from itertools import repeat

import pyarrow as pa
import pyarrow.fs as pafs

from hudi_connect.core.executor import slices
from hudi_connect.core.executor.contracts import LOCATIONS, MATCHES, FileMatch, RecordLocation
from hudi_connect.core.executor.listing import PartitionFilter, list_storage
from hudi_connect.core.executor.refusals import planned_file, worker_body
from hudi_connect.core.executor.storage import RangedFile, join, list_directory, read_many
from hudi_connect.core.format.expressions import ColumnRange, Expression, stats_may_match
from hudi_connect.core.format.fs_view import FileSlice, StoredFile, file_slices_at
from hudi_connect.core.format.log.format import LogBlock, read_log_blocks
from hudi_connect.core.format.metadata import (
    ALL_PARTITIONS_KEY,
    ByteSource,
    ColumnStats,
    InMemory,
    KeySelection,
    MetadataRecord,
    PartitionFiles,
    column_stats_prefix,
    file_group_id,
    file_group_index,
    hfile_records,
    log_entries,
    merge_in_key_order,
    record_locations,
)
from hudi_connect.core.format.metadata.keys import COLUMN_HASH_LENGTH, data_partition, partition_hash
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
    # the completed instants the metadata table must have, as (requested, completion) times, in requested order
    tracked: tuple[tuple[str, str | None], ...]

    @classmethod
    def of(cls, timeline: Timeline) -> DataTimeline:
        """The instant times of the data table's timeline, built on the client and shipped to the tasks."""
        tracked = sorted((i.requested_time, i.completion_time) for i in timeline
                         if i.is_completed and i.action in TRACKED_ACTIONS)
        return cls(frozenset(i.requested_time for i in timeline if i.is_completed),
                   frozenset(i.requested_time for i in timeline if not i.is_completed), tuple(tracked))


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


@dataclass(frozen=True)
class MetadataTimeline:
    """The metadata table's timeline, and the table version its files follow, told by where its timeline is:
    8+ where it has a directory of its own (layout 2), else 6; not assumed to be the data table's."""

    timeline: Timeline
    version: int


def metadata_timeline_of(listings: Iterable[Iterable[tuple[str, int | None]]]) -> MetadataTimeline | None:
    """The metadata table's timeline from the (name, modification ms) of the files of each of
    :data:`METADATA_TIMELINE_DIRS`, in order: the first holding instant files is the timeline."""
    for directory, listing in zip(METADATA_TIMELINE_DIRS, listings, strict=False):
        files = [p for p in (parse_instant_file_name(name, mtime) for name, mtime in listing) if p is not None]
        if files:
            return MetadataTimeline(Timeline.from_files(files), 8 if directory else 6)
    return None


def _metadata_timeline(source: MetadataSource) -> MetadataTimeline | None:
    def listing(directory: str) -> list[tuple[str, int | None]]:
        infos = list_directory(join(source.metadata_uri, ".hoodie", directory))
        return [(i.base_name, int(i.mtime.timestamp() * 1000) if i.mtime else None)
                for i in infos if i.type == pafs.FileType.File]

    return metadata_timeline_of(listing(directory) for directory in METADATA_TIMELINE_DIRS)


def valid_block_instants(source: MetadataSource, metadata_timeline: Timeline) -> frozenset[str]:
    """Instants whose metadata log blocks a reader may merge (HUDI-2285)."""
    own = {i.requested_time for i in metadata_timeline
           if i.is_completed and i.action is Action.DELTA_COMMIT and i.requested_time not in source.data.pending}
    return frozenset(source.data.completed | own)


# where the metadata table keeps the instants it archived, below its .hoodie, by the version its files follow
METADATA_ARCHIVE_DIRS = {6: "archived", 8: "timeline/history"}


def missing_instants(source: MetadataSource, metadata: MetadataTimeline | None,
                     archived: Callable[[], bool]) -> list[str]:
    """The completed data-table instants the metadata table does not reflect (all of them without a metadata
    timeline). An instant is reflected by a completed metadata instant of its own time, or by the files
    partition's initialization when it completed before that (the initialization listed storage): on version 6
    a requested time up to the initialization's (``<latest completed>010``), on 8 and later a completion time up
    to its completion (it is named ``00000000000000000``). The initialization is the metadata table's first
    instant, a deltacommit of no data-table instant, while the metadata table has archived nothing
    (``archived``, asked only when an instant has no deltacommit of its own); once it is archived, so are the
    data-table instants it covered, as the metadata table archives nothing newer than the data table's first.

    The latest instant alone is not enough: a writer that cannot initialize a new metadata partition while
    another writer is pending (Hudi 1.2, version 6) completes its commit without a deltacommit, and the other
    writer's deltacommit lands after it. The metadata table then lacks the first commit's files, and Hudi's own
    read through it loses committed rows (the differential tester's seed 70072)."""
    if metadata is None:
        return [requested for requested, _ in source.data.tracked]
    # a deltacommit; for a data-table rollback on version 8+, the metadata table's rollback of the same time
    own = {i.requested_time for i in metadata.timeline if i.is_completed}
    lacking = [(requested, completion) for requested, completion in source.data.tracked if requested not in own]
    first = next(iter(metadata.timeline), None)
    if not lacking or first is None or not first.is_completed or first.action is not Action.DELTA_COMMIT \
            or first.requested_time in source.data.completed | source.data.pending or archived():
        return [requested for requested, _ in lacking]

    def initialized_before(requested: str, completion: str | None) -> bool:
        if metadata.version < 8:
            return requested <= first.requested_time
        return completion is not None and first.completion_time is not None and completion <= first.completion_time

    return [requested for requested, completion in lacking if not initialized_before(requested, completion)]


def _archived(source: MetadataSource, metadata: MetadataTimeline) -> bool:
    """Whether the metadata table has archived instants."""
    directory = join(source.metadata_uri, ".hoodie", METADATA_ARCHIVE_DIRS[6 if metadata.version < 8 else 8])
    return any(info.type == pafs.FileType.File for info in list_directory(directory))


def caught_up(source: MetadataSource, metadata: MetadataTimeline | None) -> bool:
    """Whether the metadata table reflects every completed data-table instant that writes to it, so that its
    listing and statistics are current (:func:`missing_instants`); inside a worker."""
    return metadata is not None and not missing_instants(source, metadata, partial(_archived, source, metadata))


def partition_slices(source: MetadataSource, metadata: MetadataTimeline, partition: str) -> list[FileSlice]:
    """The latest slice of each file group of one metadata partition."""
    stored = [StoredFile(partition, info.base_name, info.size or 0)
              for info in list_directory(join(source.metadata_uri, partition))
              if info.type == pafs.FileType.File]
    return file_slices_at(stored, metadata.timeline, table_version=metadata.version)


WHOLE_READ_BYTES = 8 << 20
"""A metadata base file up to this size is read whole, in one request beside its log files; a larger one by
range (:class:`~hudi_connect.core.executor.storage.RangedFile`): its index, then the data blocks a read reaches,
so that a task's memory does not grow with the metadata table."""


@dataclass(frozen=True)
class OpenedSlice:
    """A metadata file slice opened for reading: its base file (in memory, or read by range while open) and the
    blocks of its log files (read whole: they hold the writes since the metadata table's last compaction)."""

    file_slice: FileSlice
    base_uri: str | None
    base: ByteSource | None
    log_blocks: tuple[LogBlock, ...] = field(repr=False)

    def records(self, valid: frozenset[str], select: KeySelection | None = None) -> Iterator[MetadataRecord]:
        """The slice's live merged records in key order, of valid log blocks only; only those ``select`` selects
        when given (found through the base file's block index). The base file's records stream through."""
        later = [e for e in log_entries(self.log_blocks, select) if e.instant_time in valid]
        if self.base is None:
            return merge_in_key_order((), later)
        base = hfile_records(self.base, instant_time=self.file_slice.base_instant, select=select,
                             source=self.base_uri or "metadata base file")
        return merge_in_key_order(base, later)


@contextmanager
def opened_slice(source: MetadataSource, file_slice: FileSlice) -> Iterator[OpenedSlice]:
    """A metadata file slice opened for reading; a file of it that has gone (the metadata table's cleaner removed
    a slice just listed) is refused by name, while the slice is open as well as here."""
    base = file_slice.base_file
    base_uri = join(source.metadata_uri, file_slice.partition, base.name) if base is not None else None
    log_uris = [join(source.metadata_uri, file_slice.partition, f.name) for f in file_slice.log_files]
    ranged = base is not None and base.size > WHOLE_READ_BYTES
    with planned_file(*([base_uri] if base_uri else []), *log_uris, planned_at=None):
        contents = read_many(([] if ranged or base_uri is None else [base_uri]) + log_uris)
        if base_uri is not None and not ranged:
            base_content: ByteSource | None = InMemory(contents.pop(0))
        blocks = tuple(block for uri, content in zip(log_uris, contents, strict=True)
                       for block in read_log_blocks(content, source=uri))
        if base_uri is None:
            yield OpenedSlice(file_slice, None, None, blocks)
        elif not ranged:
            yield OpenedSlice(file_slice, base_uri, base_content, blocks)
        else:
            assert base is not None
            with RangedFile(base_uri, base.size) as ranged_base:
                yield OpenedSlice(file_slice, base_uri, ranged_base, blocks)


def _kept_partition_files(opened: OpenedSlice, valid: frozenset[str],
                          keep: PartitionFilter) -> Iterator[PartitionFiles]:
    """The files of the kept partitions a files-partition slice lists, in partition order. Without a predicate
    every record is decoded; with one, only the records of the partitions it keeps, chosen by their keys. Not
    through the partition list: a partition deleted later (``delete_partition``) leaves that list, while its
    files, which a time travel before the deletion reads, stay until the cleaner takes them."""
    select = None
    if keep.predicate is not None or keep.paths is not None:
        select = KeySelection.of(where=lambda key: key != ALL_PARTITIONS_KEY and keep.keeps(data_partition(key)))
    for record in opened.records(valid, select):
        if isinstance(record.payload, PartitionFiles) and keep.keeps(record.payload.partition):
            yield record.payload


def _metadata_listing(source: MetadataSource, metadata: MetadataTimeline,
                      keep: PartitionFilter) -> Iterator[pa.RecordBatch]:
    """The listing in batches of whole partitions, in partition order: the files partition's records stream
    in key order (its one file group; more would each be in order, so they are gathered and sorted)."""
    valid = valid_block_instants(source, metadata.timeline)
    files_slices = partition_slices(source, metadata, "files")
    partitions: list[str] = []
    names: list[str] = []
    sizes: list[int] = []
    sent = False
    for file_slice in files_slices:
        with opened_slice(source, file_slice) as opened:
            for files in _kept_partition_files(opened, valid, keep):
                live = {n: s for n, s in files.files.items() if n not in files.deleted} if files.deleted \
                    else files.files
                partitions.extend(repeat(files.partition, len(live)))
                names.extend(live)
                sizes.extend(live.values())
                if len(files_slices) == 1 and len(names) >= slices.LISTING_BATCH_ROWS:
                    yield slices.listing_columns(partitions, names, sizes)
                    partitions, names, sizes, sent = [], [], [], True
    if names or not sent:
        yield slices.listing_columns(partitions, names, sizes)


@worker_body
def list_through_metadata(source: MetadataSource, keep: PartitionFilter,
                          batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: the data files of kept partitions, from the metadata table's files
    partition when it has caught up, else from a storage listing."""
    for batch in batches:
        for _ in range(batch.num_rows):
            metadata = _metadata_timeline(source)
            if metadata is not None and caught_up(source, metadata):
                for listing in _metadata_listing(source, metadata, keep):
                    yield listing.append_column("source", pa.array(["metadata"] * listing.num_rows, pa.string()))
            else:
                base = pa.record_batch({"base_uri": [source.base_uri]})
                for listing in list_storage(keep, [base]):
                    yield listing.append_column("source", pa.array(["storage"] * listing.num_rows, pa.string()))


PREFIXED_PARTITIONS = 256
"""The most kept partitions whose statistics a lookup finds by a key prefix each; more, and it reads each
column's statistics whole, keeping the kept partitions' (each prefix costs a seek into the block index)."""


def _file_ranges(opened: OpenedSlice, valid: frozenset[str], columns: tuple[str, ...],
                 partitions: Collection[str] | None = None) -> Iterator[tuple[str, dict[str, ColumnRange]]]:
    """(data file name, its ``columns``' ranges) for each file a column_stats slice covers (in ``partitions``
    only, when given). A key is the column's hash, then the partition's and the file's: each column's records
    stream in key order through the base file's index (up to :data:`PREFIXED_PARTITIONS` partitions, by a
    prefix each, as Hudi's data skipping looks up a partition-pruned read's; more, the column's whole, keeping
    theirs), and a merge on what follows the column's hash joins one file's columns, one file at a time."""
    hashes = None if partitions is None else {partition_hash(p) for p in partitions}
    by_prefix = hashes is not None and len(hashes) <= PREFIXED_PARTITIONS

    def stream(column: str) -> Iterator[tuple[str, str, ColumnStats]]:
        prefix = column_stats_prefix(column)
        prefixes = [prefix + h for h in sorted(hashes)] if by_prefix and hashes is not None else [prefix]
        for record in opened.records(valid, KeySelection.of(prefixes=prefixes)):
            stats = record.payload
            suffix = record.key[len(prefix):]
            if isinstance(stats, ColumnStats) and not stats.is_deleted and stats.file_name is not None \
                    and stats.column == column and (hashes is None or suffix[:COLUMN_HASH_LENGTH] in hashes):
                yield suffix, column, stats

    current: str | None = None
    name, ranges = "", dict[str, ColumnRange]()
    for suffix, column, stats in heapq.merge(*(stream(c) for c in columns), key=lambda item: item[0]):
        if suffix != current:
            if ranges:
                yield name, ranges
            current, name, ranges = suffix, stats.file_name or "", dict[str, ColumnRange]()
        ranges[column] = ColumnRange(stats.min_value, stats.max_value, stats.null_count, stats.value_count)
    if ranges:
        yield name, ranges


STATS_TASKS = 2
"""Tasks a column-statistics lookup spreads over: Hudi writes the column_stats partition in two file groups by
default (``hoodie.metadata.index.column.stats.file.group.count``), and each task reads its share of them."""
STATS_SHARDS_SCHEMA = pa.schema([("shard", pa.int32()), ("shards", pa.int32())])  # the input of the lookup


def stats_shards(tasks: int = STATS_TASKS) -> list[tuple[int, int]]:
    """The task rows of a column-statistics lookup: (shard, shards) for each task."""
    return [(shard, tasks) for shard in range(tasks)]


def _kept_partitions(source: MetadataSource, metadata: MetadataTimeline, valid: frozenset[str],
                     keep: PartitionFilter) -> list[str] | None:
    """The partitions the files partition lists that ``keep`` keeps (the listing's own), or None without a
    predicate or paths to keep them by (every partition)."""
    if keep.predicate is None and keep.paths is None:
        return None
    kept: list[str] = []
    for file_slice in partition_slices(source, metadata, "files"):
        with opened_slice(source, file_slice) as opened:
            kept.extend(files.partition for files in _kept_partition_files(opened, valid, keep))
    return kept


@worker_body
def match_by_metadata_stats(source: MetadataSource, keep: PartitionFilter, predicate: Expression,
                            columns: tuple[str, ...], batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: (file name, may_match) for the data files of partitions ``keep`` keeps that the
    column_stats partition covers. Each (shard, shards) row reads the file groups whose position is ``shard``
    modulo ``shards``, and only the statistics of ``columns`` in the kept partitions, by key prefix."""
    for batch in batches:
        for shard, shards in zip(batch.column("shard").to_pylist(), batch.column("shards").to_pylist(), strict=True):
            metadata = _metadata_timeline(source)
            if metadata is None or not caught_up(source, metadata):
                continue  # no statistics: nothing is pruned
            valid = valid_block_instants(source, metadata.timeline)
            partitions = _kept_partitions(source, metadata, valid, keep)
            if partitions == []:
                continue  # no partition kept: no file to judge
            matches: list[FileMatch] = []
            for file_slice in partition_slices(source, metadata, "column_stats")[shard::shards]:
                with opened_slice(source, file_slice) as opened:
                    for name, ranges in _file_ranges(opened, valid, columns, partitions):
                        # no partition: the client joins the matches on the (unique) file name
                        matches.append(FileMatch(None, name, stats_may_match(predicate, ranges)))
                        if len(matches) >= slices.LISTING_BATCH_ROWS:
                            yield MATCHES.batch(matches)
                            matches = []
            yield MATCHES.batch(matches)


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
                with opened_slice(source, groups[file_id]) as opened:
                    selected = opened.records(valid, KeySelection.of(keys=group_keys))
                    found.update(record_locations({record.key: record for record in selected}))
        yield LOCATIONS.batch(RecordLocation(key, v.partition, v.file_id, v.instant_millis)
                              for key, v in found.items())
