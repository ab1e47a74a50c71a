"""A change query planned: the commits of a range, their RFC-51 splits, and what a worker reads for each.

The planning of :class:`~hudi_connect.cdc.query.ChangeQuery` and of the ``format("hudi")`` data source's change
queries (``hoodie.datasource.query.incremental.format=cdc``): it reads the timeline and lists files through a
Spark session or in the planner's own process (a ``LocalFileAccess``), and never builds a DataFrame. Who decodes
``.cdc`` records, and the DataFrame of events, are the query's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from hudi_connect.cdc.cases import CdcInferenceCase, CdcSplit, infer_splits
from hudi_connect.client.instants import InstantLike, resolve_instant, resolve_optional
from hudi_connect.client.remote_files import PlanningAccess
from hudi_connect.client.server_loss import over_connect
from hudi_connect.client.timeline_view import TimelineView
from hudi_connect.core.errors import HistoryUnavailableError, InvalidInstantError, UnsupportedTableFeatureError
from hudi_connect.core.executor.contracts import CdcSplitRow
from hudi_connect.core.executor.slices import SliceReadConfig
from hudi_connect.core.format.commit_metadata import CommitMetadata, latest_schema_json
from hudi_connect.core.format.expressions import Expression
from hudi_connect.core.format.fs_view import (
    BlockValidity,
    FileSlice,
    StoredFile,
    file_slices_at,
    parse_data_file,
    replaced_file_groups,
    valid_block_instants,
)
from hudi_connect.core.format.schema_evolution import check_promotable, schema_history_changes
from hudi_connect.core.format.table_config import CdcLoggingMode, TableProperties
from hudi_connect.core.format.table_features import check_column_types, check_timeline_readable
from hudi_connect.core.format.table_schema import record_schema
from hudi_connect.core.format.timeline import Instant, Timeline, range_time
from hudi_connect.reader import TableReader
from hudi_connect.table_spec.file_index import conjunction


@dataclass(frozen=True)
class ChangePlan:
    """A change query's splits as worker rows (:data:`~hudi_connect.core.executor.contracts.CDC_SPLITS`), each
    file group's together in commit order: a task then merges the state between two commits once (one commit's
    after state is the next one's before state), not twice."""

    rows: tuple[CdcSplitRow, ...]
    whole_events: tuple[bool, ...]  # per row: its .cdc records hold whole events (AS_IS, DATA_BEFORE_AFTER)
    config: SliceReadConfig
    record_schema: pa.Schema  # the images' fields
    cdc_bytes: int  # of the .cdc files the whole-event rows read, as their commits recorded them


class ChangePlanner:
    """Plans the change queries of one table (see the module)."""

    def __init__(self, spark: PlanningAccess, base_path: str, view: TimelineView | None = None) -> None:
        """``spark``: the session to plan through, or a planner's own process (the data source's);
        ``view``: the table's timeline as its caller reads it already (else opened here)."""
        self._spark = spark
        self._base_path = base_path.rstrip("/")
        self.reader = TableReader(spark, self._base_path, view)
        if self.reader.index.partial_updates:
            # Hudi's CDC reports an update for a late record that changed nothing; which events a partial
            # update produces is not settled enough to reproduce, so none are guessed.
            raise UnsupportedTableFeatureError(
                "change queries of tables with partial updates", "hoodie.table.partial.update.mode",
                self.reader.properties.raw.get("hoodie.table.partial.update.mode", ""),
                where=f"the table at {self._base_path}", detail="snapshot, time travel and incremental reads work")

    def commit_range(self, begin: InstantLike, end: InstantLike | None,
                     timeline: Timeline | None = None) -> tuple[list[Instant], list[Instant]]:
        """The write commits (the last archived one first, where the range holds the active timeline's first
        commit and needs its predecessor) and those in (begin, end]. A range reaching archived commits is
        refused: their metadata is not read, and a change stream computed from part of the range is wrong."""
        properties = self.reader.properties
        begin = resolve_instant(self._spark, properties, begin)
        end = resolve_optional(self._spark, properties, end)
        view = self.reader.view
        timeline = timeline or view.timeline()
        by_completion = view.properties.ranges_by_completion
        in_range = timeline.commits_between(begin, end, by_completion=by_completion)
        commits = list(timeline.write_commits())
        if not commits or (commits[0] not in in_range
                           and not timeline.begins_before(begin, by_completion=by_completion)):
            return commits, in_range
        history = view.archived_timeline(timeline)
        last = history.last_write_commit()
        if last is None:
            return commits, in_range
        if history.commits_between(begin, end):
            last_time = range_time(last, by_completion=by_completion)
            raise HistoryUnavailableError(
                f"the change query of {self._base_path} from {range_time(begin, by_completion=by_completion)} "
                f"reaches commits Hudi archived (the last at {last_time}); changes are not computed from part "
                "of a range (Hudi's CDC query fails there too)", earliest_answerable=last_time)
        return [last, *commits], in_range

    def splits(self, begin: InstantLike, end: InstantLike | None = None) -> list[CdcSplit]:
        """The splits of the commits in (begin, end] that change data: one per file group per commit, each
        with its RFC-51 inference case."""
        commits, in_range = self.commit_range(begin, end)
        return infer_splits(commits, self.reader.view.commit_metadata(in_range), in_range)

    def _record_schema_json(self, commits: list[Instant]) -> str:
        metadata = self.reader.view.commit_metadata(commits)
        schema = latest_schema_json(commits, metadata)
        if schema is None:
            raise InvalidInstantError(f"{self._base_path} has no commit with a schema")
        return schema

    def plan(self, begin: InstantLike, end: InstantLike | None, predicates: Sequence[Expression]) -> ChangePlan:
        """The changes of the commits in (begin, end] in partitions where ``predicates`` may hold, planned."""
        view = self.reader.view
        props = view.properties
        # listed once: every step of the plan sees the same timeline; the table's files in the same task
        # where splits are likely to need file slices
        timeline, files = self.reader.index.timeline_and_files(list_storage=needs_file_slices(props))
        commits, in_range = self.commit_range(begin, end, timeline)
        metadata = view.commit_metadata(list(timeline.write_commits()))
        check_timeline_readable(timeline, metadata, where=f"the table at {self._base_path}")
        schema_json = self._record_schema_json(list(timeline.write_commits()))
        check_column_types(schema_json, where=f"the table at {self._base_path}")
        arrow_schema = record_schema(schema_json, meta_fields=props.populate_meta_fields)
        check_promotable(schema_history_changes(props, list(metadata.values()), arrow_schema),
                         where=f"the table at {self._base_path}")
        keep = self.reader.index.partition_filter(arrow_schema, conjunction(predicates))
        splits = [s for s in infer_splits(commits, metadata, in_range) if keep.keeps(s.partition)]
        # each side's completed writes: in its split's row
        config = self.reader.slice_read_config(arrow_schema, valid_block_instants(timeline),
                                               planned_at=timeline.planned_at())
        if not splits:
            return ChangePlan((), (), config, arrow_schema, 0)
        slices_at: dict[str, dict[tuple[str, str], FileSlice]] = {}
        # the files of the splits' file groups, listed (a Spark job) only if a split needs slices and the table's
        # files were not listed above: the client holds what the range touched, not the table
        listed: list[list[StoredFile]] = [] if files is None else [touched_files(files, splits)]

        def list_touched() -> None:
            if not listed:
                listed.append(self._touched_listing(splits, arrow_schema))

        def slices(as_of: str) -> dict[tuple[str, str], FileSlice]:
            if as_of not in slices_at:
                list_touched()
                found = file_slices_at(listed[0], timeline, table_version=props.version,
                                       replaced=replaced_file_groups(metadata, as_of), as_of=as_of)
                slices_at[as_of] = {(s.partition, s.file_id): s for s in found}
            return slices_at[as_of]

        bound = view.cleaned_bound(timeline)
        if bound is not None and bound.may_have_cleaned([*in_range, *(s.previous_commit for s in splits
                                                                      if s.previous_commit)]):
            list_touched()
            present = {f"{f.partition}/{f.name}" if f.partition else f.name for f in listed[0]}
            for split in splits:
                before, after = _sides(split, slices, props.cdc_logging_mode)
                gone = _cleaned_state(split, props.cdc_logging_mode, before, after, present)
                if gone is not None:
                    earliest = [c for c in timeline.write_commits() if c.requested_time < split.instant.requested_time]
                    raise HistoryUnavailableError(
                        f"the change query of {self._base_path} needs {gone} for the changes of "
                        f"{split.instant.requested_time} in {split.partition or '/'}:{split.file_id}, and the cleaner "
                        f"took it ({bound.reason}; Hudi's CDC query fails there too)",
                        earliest_answerable=range_time(earliest[-1], by_completion=props.ranges_by_completion)
                        if earliest else None)
        splits = sorted(splits, key=lambda split: (split.partition, split.file_id))
        rows = tuple(_split_row(split, slices, timeline, props.cdc_logging_mode) for split in splits)
        whole_events = tuple(split.case is CdcInferenceCase.AS_IS and props.cdc_logging_mode is
                             CdcLoggingMode.DATA_BEFORE_AFTER for split in splits)
        cdc_bytes = _cdc_bytes([s for s, whole in zip(splits, whole_events, strict=True) if whole], metadata)
        return ChangePlan(rows, whole_events, config, arrow_schema, cdc_bytes)

    @over_connect("listing the files a change query touches")
    def _touched_listing(self, splits: list[CdcSplit], schema: pa.Schema) -> list[StoredFile]:
        """The files of the splits' file groups, from a storage listing of their partitions, streamed."""
        index = self.reader.index
        keep = dataclasses.replace(index.partition_filter(schema, None), paths=frozenset(touched_partitions(splits)))
        return touched_files(index.stored_files(keep, fan_out=index.view.files_over_limit), splits)


def _cdc_bytes(splits: Sequence[CdcSplit], metadata: Mapping[Instant, CommitMetadata]) -> int:
    """Bytes of the .cdc files the splits read, as their commits recorded them."""
    wanted = {(s.instant, s.partition, s.file_id) for s in splits}
    return sum(size for instant in {s.instant for s in splits} for stat in metadata[instant].write_stats
               if (instant, stat.partition_path, stat.file_id) in wanted for size in stat.cdc_stats.values())


def needs_file_slices(props: TableProperties) -> bool:
    """Whether a change query on this table is likely to read file slices (and so to list the table's files):
    all but COW tables logging both images in .cdc files."""
    return props.is_merge_on_read or props.cdc_logging_mode is not CdcLoggingMode.DATA_BEFORE_AFTER


def images_without_meta(case: CdcInferenceCase, mode: CdcLoggingMode | None) -> tuple[bool, bool]:
    """Whether Hudi's CDC query shows (before, after) images without meta columns.

    Images Hudi reads from its CDC log files (AS_IS) carry only the data columns;
    images it fills in from file slices carry the meta columns too. Which images
    a CDC log file holds depends on the supplemental logging mode.
    """
    if case is not CdcInferenceCase.AS_IS or mode is None or mode is CdcLoggingMode.OP_KEY_ONLY:
        return (False, False)
    if mode is CdcLoggingMode.DATA_BEFORE:
        return (True, False)
    return (True, True)


def touched_partitions(splits: Iterable[CdcSplit]) -> set[str]:
    """The partitions of the splits' file groups and of the files their commits wrote."""
    return {s.partition for s in splits} | {path.rpartition("/")[0] for s in splits for path in s.files if path}


def touched_files(files: Iterable[StoredFile], splits: Sequence[CdcSplit]) -> list[StoredFile]:
    """Of ``files``, those of the splits' file groups and those their commits wrote: all a change query's
    slices and cleaner checks look at."""
    groups = {(s.partition, s.file_id) for s in splits}
    written = {path for s in splits for path in s.files if path}
    partitions = touched_partitions(splits)
    kept = []
    for stored in files:
        if stored.partition not in partitions:
            continue
        parsed = parse_data_file(stored)
        path = f"{stored.partition}/{stored.name}" if stored.partition else stored.name
        if (parsed is not None and (parsed.partition, parsed.file_id) in groups) or path in written:
            kept.append(stored)
    return kept


def _sides(split: CdcSplit, slices: Callable[[str], dict[tuple[str, str], FileSlice]],
           mode: CdcLoggingMode | None) -> tuple[FileSlice | None, FileSlice | None]:
    """The file slices a split reads before and after its commit (None where it reads none)."""
    key = (split.partition, split.file_id)
    before_as_of, after_as_of = _side_instants(split, mode)
    return (slices(before_as_of).get(key) if before_as_of else None,
            slices(after_as_of).get(key) if after_as_of else None)


def _side_instants(split: CdcSplit, mode: CdcLoggingMode | None) -> tuple[str | None, str | None]:
    """The instants of the states a split reads from file slices, before and after its commit."""
    from_cdc_files = _reads_cdc_files(split, mode)
    needs_after = not (from_cdc_files and mode is CdcLoggingMode.DATA_BEFORE_AFTER)
    before = None if from_cdc_files or not split.previous_commit else split.previous_commit.requested_time
    return before, split.instant.requested_time if needs_after else None


def _reads_cdc_files(split: CdcSplit, mode: CdcLoggingMode | None) -> bool:
    """Whether a split's images come from its ``.cdc`` files: holding before images, they spare merging the
    old slice; holding after images, the new one too."""
    return split.case is CdcInferenceCase.AS_IS and mode is not CdcLoggingMode.OP_KEY_ONLY


def _cleaned_state(split: CdcSplit, mode: CdcLoggingMode | None, before: FileSlice | None,
                   after: FileSlice | None, present: set[str]) -> str | None:
    """What a split needs that the cleaner took (None if all is there): a file its commit wrote, or the file
    slice its changes are relative to (the previous version of the base file, as Hudi's CDC query says)."""
    for path in split.files:
        if path and path not in present:
            return f"{path}, written by the commit"
    stat = split.stat
    before_as_of, after_as_of = _side_instants(split, mode)
    if after_as_of is not None and stat is not None and stat.path:
        name = stat.path.rsplit("/", 1)[-1]
        written = ([after.base_file.name] if after.base_file else []) if after is not None else []
        if name not in [*written, *(f.name for f in (after.log_files if after is not None else ()))]:
            return f"the file slice holding {stat.path}"
    if before_as_of is None:
        return None
    if before is None:
        existed = stat is None or stat.prev_commit is not None  # a replaced group, or one written before
        return f"the file group's state at {before_as_of}" if existed else None
    expected = stat.prev_commit if stat is not None and not stat.is_log_file else None
    if expected is not None and before.base_instant != expected:
        return f"the previous version of the base file (of {expected})"
    expected_base = stat.base_file.rsplit("/", 1)[-1] if stat is not None and stat.is_log_file and stat.base_file \
        else None
    if expected_base and (before.base_file is None or before.base_file.name != expected_base):
        return f"the base file {expected_base} the log file belongs to"
    return None


def _split_row(split: CdcSplit, slices: Callable[[str], dict[tuple[str, str], FileSlice]], timeline: Timeline,
               mode: CdcLoggingMode | None) -> CdcSplitRow:
    """One row of the :data:`~hudi_connect.core.executor.contracts.CDC_SPLITS` contract: the slices (or ``.cdc``
    files) a worker reads for the split."""
    before_as_of, after_as_of = _side_instants(split, mode)
    before, after = _sides(split, slices, mode)
    before_base, before_logs, before_valid, has_before = _slice_columns(
        before, valid_block_instants(timeline, before_as_of) if before_as_of else None)
    after_base, after_logs, after_valid, has_after = _slice_columns(
        after, valid_block_instants(timeline, after_as_of) if after_as_of is not None else None)
    before_without_meta, after_without_meta = images_without_meta(split.case, mode)
    return CdcSplitRow(
        instant=split.instant.requested_time, completion_time=split.instant.completion_time,
        partition=split.partition, file_id=split.file_id,
        before_base=before_base, before_logs=before_logs, before_valid=before_valid, has_before=has_before,
        after_base=after_base, after_logs=after_logs, after_valid=after_valid, has_after=has_after,
        before_without_meta=before_without_meta, after_without_meta=after_without_meta,
        cdc_files=list(split.files) if _reads_cdc_files(split, mode) else [], cdc_mode=mode.value if mode else None,
    )


def _slice_columns(file_slice: FileSlice | None,
                   valid: BlockValidity | None) -> tuple[str | None, list[str], list[str], bool]:
    """(base file name, log file names, valid instants, whether the side exists) of one side of a split."""
    if file_slice is None:
        return (None, [], [], False)
    base = file_slice.base_file.name if file_slice.base_file else None
    return (base, [f.name for f in file_slice.log_files], sorted(valid.completed) if valid else [], True)
