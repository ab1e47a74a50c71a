"""``FileIndex`` (RFC-64): a table's file slices at an instant or between two, pruned by predicates.

    index = FileIndex(spark, "s3a://lake/trips")
    for snapshot in index.list_files_at(predicates=[col("city") == "paris", "fare > 20"]):
        ...  # one PartitionSnapshot at a time

Listing runs on the executors, which drop pruned partitions before anything
reaches the client and send the rest sorted by partition; the client streams
them (``client/result_rows.py``) and keeps one partition's files at a time, so its
memory stays bounded however many files the table has. Files are pruned by
column statistics only where that is sound: a slice is dropped when the
statistics of every one of its files exclude the predicate (footers cover base
files only, so slices with log files are kept unless the metadata table has
statistics for their log files too).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial, reduce
from operator import attrgetter

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from hudi_connect.client.instants import InstantLike, resolve_instant, resolve_optional
from hudi_connect.client.remote_files import PlanningAccess, SparkFileAccess, access_of
from hudi_connect.client.server_loss import ensure_bounded, over_connect
from hudi_connect.client.task_rows import spark_schema
from hudi_connect.client.timeline_view import TimelineView
from hudi_connect.core.errors import UnsupportedOperationError
from hudi_connect.core.executor.contracts import GROUPED_FILES, SLICES
from hudi_connect.core.executor.file_access import (
    MAX_BATCHED_FILES,
    ListingRequest,
    LocalFileAccess,
    StatsLookup,
    read_file,
)
from hudi_connect.core.executor.listing import PartitionFilter
from hudi_connect.core.executor.metadata_reader import DataTimeline, MetadataSource
from hudi_connect.core.executor.slicing import ListingSlicing, file_groups_of_listing, slices_of_listing
from hudi_connect.core.executor.storage import join
from hudi_connect.core.format.bootstrap import Bootstrap, is_skeleton, skeleton_source
from hudi_connect.core.format.commit_metadata import CommitMetadata, latest_schema_json
from hudi_connect.core.format.expressions import And, Expression
from hudi_connect.core.format.fs_view import FileSlice, SliceChoice, StoredFile, replaced_file_groups
from hudi_connect.core.format.internal_schema import uses_schema_on_read
from hudi_connect.core.format.metadata.hfile import read_hfile
from hudi_connect.core.format.schema_evolution import schema_history_changes
from hudi_connect.core.format.spec_models import (
    PartitionIncrementalSnapshot,
    PartitionSnapshot,
    TableDefinition,
    slice_bytes,
)
from hudi_connect.core.format.table_config import TableProperties
from hudi_connect.core.format.table_features import (
    MergeMode,
    check_readable,
    check_timeline_readable,
    opaque_partition_fields,
    partial_updates,
    records_merge_columns,
)
from hudi_connect.core.format.table_schema import record_schema
from hudi_connect.core.format.timeline import Instant, Timeline, as_of_time
from hudi_connect.table_spec.user_predicates import UserPredicates, pruning_of


@dataclass
class ListingCounts:
    """What the last listing did: for tests, explain output and benchmarks."""

    source: str = ""
    partitions: int = 0
    file_slices: int = 0
    pruned_by_stats: int = 0
    files: int = 0


@dataclass(frozen=True)
class TableState:
    """The timeline, commit metadata and definition one listing (or read) works from."""

    timeline: Timeline
    metadata: dict[Instant, CommitMetadata]
    definition: TableDefinition
    # the data files listed from storage in the timeline's task (None: listed when the listing is planned)
    files: tuple[StoredFile, ...] | None = None


@dataclass
class _PartitionListing:
    """One partition's files of a listing, as the client slices them: names and sizes, the names whose column
    statistics exclude the predicate, and where the listing came from ("storage" or "metadata"). Not frozen: a
    partition continued in the server's next batch grows."""

    partition: str
    names: list[str]
    sizes: list[int]
    excluded: set[str]
    source: str


_LISTED_COLUMNS = ("partition", "name", "size", "source", "may_match")  # the listing plan's, by name


def _listed_partitions(tables: Iterable[pa.Table]) -> Iterator[_PartitionListing]:
    """A listing plan's result (sorted by partition), one partition at a time. Read column by column: each
    partition is a run of equal values in the partition column, and only names and sizes become Python
    values one by one (a million of each at 1M files; the partition, source and may_match columns would
    triple that)."""
    current: _PartitionListing | None = None
    for table in tables:
        for batch in table.select(list(_LISTED_COLUMNS)).to_batches():
            if not batch.num_rows:
                continue
            runs = pc.run_end_encode(batch.column("partition"))
            names, sizes = batch.column("name").to_pylist(), batch.column("size").to_pylist()
            source = pc.unique(batch.column("source")).to_pylist()
            excluded_mask = pc.invert(batch.column("may_match"))
            excluded = set(pc.filter(batch.column("name"), excluded_mask).to_pylist()) \
                if pc.any(excluded_mask).as_py() else set()
            start = 0
            for partition, end in zip(runs.values.to_pylist(), runs.run_ends.to_pylist(), strict=True):
                run_names = names[start:end]
                run_excluded = {n for n in run_names if n in excluded} if excluded else set()
                if current is not None and current.partition == partition:  # continued from the last batch
                    current.names += run_names
                    current.sizes += sizes[start:end]
                    current.excluded |= run_excluded
                else:
                    if current is not None:
                        yield current
                    current = _PartitionListing(partition, run_names, sizes[start:end], run_excluded,
                                                "+".join(source))
                start = end
    if current is not None:
        yield current


def _stored_partitions(files: Iterable[StoredFile], source: str) -> Iterator[_PartitionListing]:
    """Files in hand (sorted by partition), one partition at a time; nothing excluded by statistics."""
    for partition, group in itertools.groupby(files, key=attrgetter("partition")):
        stored = list(group)
        yield _PartitionListing(partition, [f.name for f in stored], [f.size for f in stored], set(), source)


def conjunction(predicates: Sequence[Expression]) -> Expression | None:
    """The predicates joined by ``And`` (None for none: nothing to prune by)."""
    return reduce(And, predicates) if predicates else None


def _stats_comparable(state: TableState, props: TableProperties, columns: Sequence[str]) -> bool:
    """Whether every file's statistics for ``columns`` describe the values readers return: not under schema
    on read (files name columns as they were written), nor for a column whose type changed (older files'
    statistics hold the old type's values, before Hudi's promotion)."""
    if uses_schema_on_read(m.extra_metadata for m in state.metadata.values()):
        return False
    changed = schema_history_changes(props, list(state.metadata.values()),
                                     state.definition.schema)
    return not {c.column for c in changed} & set(columns)


class FileIndex:
    """Lazy listings of one table's file slices.

    RFC-64's Table Spec API ``FileIndex``: the file slices a reader should read at an instant
    (:meth:`list_files_at`) or for Hudi's incremental range (:meth:`list_files_between`), one
    :class:`~hudi_connect.table_spec.PartitionSnapshot` per partition, pruned by partition values and by column
    statistics (the metadata table's ``column_stats``, else Parquet footers).

    Example::

        index = FileIndex(spark, "s3a://lake/trips")
        for snapshot in index.list_files_at(predicates=[col("city") == "paris"]):
            print(snapshot.partition, len(snapshot.file_slices))
    """

    def __init__(self, spark: PlanningAccess, base_path: str, view: TimelineView | None = None, *,
                 use_metadata: bool = True) -> None:
        """``spark``: the session to plan through (or a planner's own process, the data source's);
        ``use_metadata``: list through the metadata table when the table has one (and it is caught up)."""
        self._spark = spark if isinstance(spark, LocalFileAccess) else ensure_bounded(spark)
        self._access = access_of(spark)
        self._base_path = base_path.rstrip("/")
        self.view = view or TimelineView.open(spark, self._base_path)
        self.merge_mode  # noqa: B018 (refuses a table the readers do not implement now, not at its first read)
        self.use_metadata = use_metadata
        self.counts = ListingCounts()
        self._bootstrap_index: dict[bytes, bytes] | None = None  # a bootstrapped table's file-id index, once read

    # properties, not attributes: a table's hoodie.properties is read again when its timeline changes
    @property
    def merge_mode(self) -> MergeMode:
        """How records of one key merge (refused here if the readers do not implement the table's features)."""
        return check_readable(self.view.properties, where=f"the table at {self._base_path}")

    @property
    def partial_updates(self) -> bool:
        """Whether a newer record's null fields keep the older values (partial update mode
        ``IGNORE_DEFAULTS``, on version 9 tables)."""
        return partial_updates(self.view.properties)[0]

    def _metadata_has(self, partition: str) -> bool:
        return self.use_metadata and partition in self.view.properties.metadata_partitions

    def _metadata_source(self, timeline: Timeline) -> MetadataSource:
        return MetadataSource(self._base_path, DataTimeline.of(timeline), self.view.properties.version)

    # --- what the table is at a moment ---------------------------------------------------------

    def timeline_and_files(self, *, list_storage: bool | None = None) -> tuple[Timeline, tuple[StoredFile, ...] | None]:
        """The timeline (with the commit metadata not read yet) and the data files of a storage listing, in one
        task: a Spark job saved per read. ``list_storage``: whether to list them (by default, when this index
        lists storage rather than the metadata table). A pinned view answers what its caller listed."""
        if list_storage is None:
            list_storage = not self._metadata_has("files")
        if self.view.is_pinned or not list_storage:
            return self.view.timeline(with_metadata=True), self.view.pinned_files if list_storage else None
        cached = self.view.cached_timeline(with_metadata=True, with_files=True)
        if cached is not None:
            return cached, self.view.cached_files
        timeline, _ = self.view.list_with_files()
        return timeline, self.view.cached_files

    @over_connect("reading the table's state")
    def state(self, *, with_files: bool = True) -> TableState:
        """The table's state; ``with_files``: with its data files where this index lists storage."""
        timeline, files = self.timeline_and_files(list_storage=None if with_files else False)
        commits = list(timeline.write_commits())
        metadata = self.view.commit_metadata(commits)
        check_timeline_readable(timeline, metadata, where=f"the table at {self._base_path}", schema_on_read=True)
        schema_json = latest_schema_json(commits, metadata)
        props = self.view.properties
        schema = record_schema(schema_json, meta_fields=props.populate_meta_fields) if schema_json else pa.schema([])
        return TableState(timeline, metadata, TableDefinition.of(self._base_path, props, schema), files)

    def definition(self) -> TableDefinition:
        """RFC-64's table definition: identity, layout and the latest record schema."""
        return self.state(with_files=False).definition

    def partition_filter(self, schema: pa.Schema, predicate: Expression | None) -> PartitionFilter:
        """How partition paths are read for pruning by ``predicate`` (never from formatted timestamps)."""
        props = self.view.properties
        return PartitionFilter(props.partition_fields, schema, props.hive_style_partitioning,
                               props.url_encode_partitioning, predicate, opaque_partition_fields(props))

    # --- the listing ---------------------------------------------------------------------------

    def _listing_request(self, state: TableState, keep: PartitionFilter, predicate: Expression | None, *,
                         fan_out: bool = False) -> ListingRequest:
        """The listing of the partitions ``keep`` keeps, with ``may_match`` False where a file's column statistics
        exclude ``predicate`` (the metadata table's column_stats partition, else Parquet footers). ``fan_out``: a
        storage listing spread over several tasks by top-level directory (for tables too large for one)."""
        metadata = self._metadata_source(state.timeline) if self._metadata_has("files") else None
        columns = self._stats_columns(state, predicate)
        if predicate is None or not columns:
            return ListingRequest(self._base_path, keep, metadata, fan_out)
        if not self._metadata_has("column_stats"):
            return ListingRequest(self._base_path, keep, metadata, fan_out,
                                  StatsLookup(predicate, columns, None, keep, narrows=False))
        # a predicate on partition columns narrows the lookup to the kept partitions' statistics: one task
        # then finds them by key prefix in every file group; else each of two reads a column's whole
        narrows = keep.paths is not None or bool(predicate.columns() & set(state.definition.partition_fields))
        lookup_keep = keep if narrows else dataclasses.replace(keep, predicate=None)
        return ListingRequest(self._base_path, keep, metadata, fan_out,
                              StatsLookup(predicate, columns, self._metadata_source(state.timeline), lookup_keep,
                                          narrows))

    def _spark_access(self, doing: str) -> SparkFileAccess:
        """The Spark session's access, for what only a Spark plan does (``doing``)."""
        if not isinstance(self._access, SparkFileAccess):
            raise UnsupportedOperationError(
                f"{doing} of the table at {self._base_path} runs as a Spark plan, and this read was planned "
                "without a Spark session (the format('hudi') data source)")
        return self._access

    def stored_files(self, keep: PartitionFilter, *, fan_out: bool = False) -> Iterator[StoredFile]:
        """Every data file in kept partitions, hidden log files included, from a storage listing (streamed,
        sorted by partition and name)."""
        for table in self._access.listing_tables(ListingRequest(self._base_path, keep, fan_out=fan_out)):
            columns = (table[name].to_pylist() for name in ("partition", "name", "size"))
            yield from (StoredFile(*values) for values in zip(*columns, strict=True))

    def _stats_columns(self, state: TableState, predicate: Expression | None) -> tuple[str, ...]:
        """The columns whose statistics prune files for ``predicate`` (none: statistics prune nothing)."""
        columns = tuple(sorted((predicate.columns() if predicate else frozenset())
                               - set(state.definition.partition_fields)))
        if predicate is None or not columns or not _stats_comparable(state, self.view.properties, columns):
            return ()
        return columns

    def _merges_columns(self, columns: Sequence[str]) -> bool:
        """Whether a predicate over ``columns`` may hold for a merged record that no single file's statistics
        admit (:func:`records_merge_columns`): such slices are then not pruned by statistics."""
        return len(columns) > 1 and records_merge_columns(self.view.properties)

    def _keeping(self, listed: Iterable[_PartitionListing], timeline: Timeline) -> Iterator[_PartitionListing]:
        """``listed``, a whole listing through the metadata table, kept in the view for the next read at the same
        timeline once all were seen, unless there are more than a batched listing's limit (then streamed only)."""
        kept: list[StoredFile] | None = []
        sources = set()
        for partition in listed:
            if kept is not None:
                kept.extend(StoredFile(partition.partition, name, size)
                            for name, size in zip(partition.names, partition.sizes, strict=True))
                sources.add(partition.source)
                if len(kept) > MAX_BATCHED_FILES or len(sources) > 1:
                    kept = None
            yield partition
        if kept is not None and sources:
            self.view.keep_metadata_files(timeline, sources.pop(), tuple(kept))

    def slice_choice(self, state: TableState, predicate: Expression | None, as_of: str | None) -> SliceChoice:
        """Which file slices a read at ``as_of`` takes of listed files (pruned by ``predicate``'s statistics)."""
        return SliceChoice(state.timeline, self.view.properties.version, replaced_file_groups(state.metadata, as_of),
                           as_of, self._merges_columns(self._stats_columns(state, predicate)))

    def slice_rows(self, state: TableState, predicates: UserPredicates, as_of: str | None, *, tasks: int,
                   touched: frozenset[tuple[str, str]] | None = None, base_only: bool = False) -> DataFrame:
        """The file slices of a read as a Spark plan of :data:`~hudi_connect.core.executor.contracts.SLICES`
        rows, made on the executors from the listing (for a read of more slices than the client holds): the
        listing's files go to ``tasks`` tasks by file group, and each task makes its groups' slices.
        ``touched``: only these (partition, file id) groups; ``base_only``: base files only (read-optimized)."""
        predicate = conjunction(pruning_of(predicates))
        keep = self.partition_filter(state.definition.schema, predicate)
        request = self._listing_request(state, keep, predicate,
                                        fan_out=state.files is None and self.view.files_over_limit)
        listed = self._spark_access(f"a read of more than {MAX_BATCHED_FILES} file slices").listing_plan(request)
        grouped = listed.mapInArrow(file_groups_of_listing, spark_schema(GROUPED_FILES.schema))
        timeline_dir = self.view.properties.timeline_dir
        slicing = ListingSlicing(self.slice_choice(state, predicate, as_of), touched, base_only,
                                 join(self._base_path, ".hoodie", timeline_dir))
        return (grouped.repartition(tasks, "partition", "file_id").sortWithinPartitions("partition", "file_id")
                .mapInArrow(partial(slices_of_listing, slicing), spark_schema(SLICES.schema)))

    def _slices_by_partition(self, state: TableState, predicates: Sequence[Expression],
                             as_of: str | None) -> Iterator[tuple[str, list[FileSlice]]]:
        predicate = conjunction(predicates)
        keep = self.partition_filter(state.definition.schema, predicate)
        listed: Iterable[_PartitionListing]
        whole_metadata_listing = predicate is None and self._metadata_has("files")
        kept_listing = self.view.cached_metadata_files(state.timeline) if whole_metadata_listing else None
        if state.files is not None and not self._stats_columns(state, predicate):
            kept_partitions = {p for p in {f.partition for f in state.files} if keep.keeps(p)}
            listed = _stored_partitions((f for f in state.files if f.partition in kept_partitions), "storage")
        elif kept_listing is not None:
            source, kept_files = kept_listing
            listed = _stored_partitions(kept_files, source)
        else:
            # no listing in hand: beyond the batched listing's limit, or never listed (statistics to join)
            large = state.files is None and self.view.files_over_limit
            listed = _listed_partitions(self._access.listing_tables(
                self._listing_request(state, keep, predicate, fan_out=large)))
            if whole_metadata_listing:
                listed = self._keeping(listed, state.timeline)
        choice = self.slice_choice(state, predicate, as_of)
        self.counts = ListingCounts()
        for partition in listed:
            self.counts.source = partition.source
            self.counts.files += len(partition.names)
            kept, pruned = choice.named_slices(partition.partition, partition.names, partition.sizes,
                                               partition.excluded)
            self.counts.pruned_by_stats += pruned
            if kept:
                self.counts.partitions += 1
                self.counts.file_slices += len(kept)
                yield partition.partition, kept

    # --- RFC-64's listings --------------------------------------------------------------------

    @over_connect("listing file slices")
    def list_files_at(self, instant: InstantLike | None = None, predicates: UserPredicates = (),
                      *, state: TableState | None = None) -> Iterator[PartitionSnapshot]:
        """The file slices to read at ``instant`` (a requested time; default the latest), partition by partition.

        ``predicates``: our tree, Spark Connect Columns or SQL strings; what of them our tree expresses
        prunes (:func:`~hudi_connect.table_spec.user_predicates.translate`), and a reader filters the rows with them.
        ``state`` pins the timeline a caller already read, so that its read and this listing agree.
        """
        as_of = None if instant is None else as_of_time(resolve_instant(self._spark, self.view.properties, instant))
        pruning = pruning_of(predicates)
        state = state or self.state()
        keep = self.partition_filter(state.definition.schema, None)
        for partition, slices in self._slices_by_partition(state, pruning, as_of):
            yield PartitionSnapshot(keep.descriptor(partition), as_of, self._with_bootstrap_sources(slices))

    @over_connect("listing file slices")
    def list_files_between(self, begin: InstantLike, end: InstantLike | None = None,
                           predicates: UserPredicates = ()) -> Iterator[PartitionIncrementalSnapshot]:
        """Slices at ``end`` holding records written by commits in (begin, end], Hudi's incremental range
        (``predicates`` as :meth:`list_files_at` takes them)."""
        pruning = pruning_of(predicates)
        state = self.state()
        properties = self.view.properties
        commits = state.timeline.commits_between(resolve_instant(self._spark, properties, begin),
                                                 resolve_optional(self._spark, properties, end),
                                                 by_completion=properties.ranges_by_completion)
        if not commits:
            return
        touched = {(s.partition_path, s.file_id) for c in commits for s in state.metadata[c].write_stats}
        as_of = max(c.requested_time for c in commits)
        keep = self.partition_filter(state.definition.schema, None)
        times = tuple(c.requested_time for c in commits)
        for partition, slices in self._slices_by_partition(state, pruning, as_of):
            chosen = self._with_bootstrap_sources([s for s in slices if (s.partition, s.file_id) in touched])
            if chosen:
                yield PartitionIncrementalSnapshot(keep.descriptor(partition), times[0], as_of, chosen, times)


    def _with_bootstrap_sources(self, slices: Sequence[FileSlice]) -> tuple[FileSlice, ...]:
        """The slices, each skeleton base file naming the source file it joins (Hudi's bootstrap base file)."""
        bootstrap = Bootstrap.of(self._base_path, self.view.properties)
        skeletons = [s for s in slices if s.base_file is not None and is_skeleton(s.base_file.name)]
        if bootstrap is None or not skeletons:
            return tuple(slices)
        if self._bootstrap_index is None:
            content = read_file(self._access, bootstrap.index_uri)
            self._bootstrap_index = dict(read_hfile(content, source=bootstrap.index_uri)) if content else {}
        index = self._bootstrap_index

        def named(piece: FileSlice) -> FileSlice:
            base = piece.base_file
            if base is None or not is_skeleton(base.name):
                return piece
            source = skeleton_source(index, bootstrap, piece.partition, piece.file_id,
                                     where=join(self._base_path, piece.partition, base.name))
            return dataclasses.replace(piece, base_file=dataclasses.replace(base, bootstrap_source=source))

        return tuple(named(piece) for piece in slices)


def balanced_splits(slices: Iterable[FileSlice], count: int) -> list[list[FileSlice]]:
    """``count`` groups of slices with near-equal bytes (largest first into the lightest group)."""
    if count < 1:
        raise ValueError(f"a split count must be at least 1, not {count}")
    groups: list[list[FileSlice]] = [[] for _ in range(count)]
    sizes = [0] * count
    for file_slice in sorted(slices, key=slice_bytes, reverse=True):
        lightest = sizes.index(min(sizes))
        groups[lightest].append(file_slice)
        sizes[lightest] += slice_bytes(file_slice)
    return [g for g in groups if g]
