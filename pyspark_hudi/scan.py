"""A read of a Hudi table as the data source's scan: planned by hudi-connect's ``TableReader``, read in splits.

The planning is the DataFrame reads' own (``TableReader.planned_*``), run in the server's planning worker with
the storage credentials of its own process (``LocalFileAccess``). What reaches the executors is small and
picklable: the workers' read settings and the file slices of each split.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StringType, StructField, StructType

from hudi_connect.client.timeline_view import TimelineView
from hudi_connect.core.errors import UnsupportedOperationError
from hudi_connect.core.executor.contracts import SliceRow
from hudi_connect.core.executor.file_access import LocalFileAccess
from hudi_connect.core.executor.listing import PartitionFilter
from hudi_connect.core.executor.refusals import worker_body
from hudi_connect.core.executor.slices import SliceReadConfig, read_slice
from hudi_connect.core.format.expressions import Expression
from hudi_connect.core.format.read_options import QueryType, ReadQuery
from hudi_connect.core.format.table_schema import COMMIT_TIME_COLUMN, META_COLUMNS
from hudi_connect.reader.table_reader import PlannedRead, TableReader
from hudi_connect.table_spec.file_index import balanced_splits, conjunction
from pyspark_hudi.changes import ChangeScan, change_scan_of, read_change_split
from pyspark_hudi.filters import pruning_predicates

# splits per core of the planning worker's machine: enough for Spark to balance uneven slices
SPLITS_PER_CORE = 2


@dataclass(frozen=True)
class Scan:
    """What a planned read hands Spark: its schema, the workers' settings, and its file slices in splits."""

    schema: StructType
    config: SliceReadConfig
    splits: tuple[tuple[SliceRow, ...], ...]
    string_columns: tuple[str, ...] = ()  # read as strings of their stored values (Hudi's Spark reader does)
    commit_range: tuple[str, str | None] | None = None
    partitions: PartitionFilter | None = None  # how partition paths read, for pruning by pushed filters
    timeline_names: frozenset[str] | None = None  # the timeline it was planned on (its instant file names)
    query: ReadQuery | None = None  # what it plans, to plan again with pushed filters

    @property
    def stats_columns(self) -> tuple[str, ...]:
        """The data columns pushed filters may prune files by, through their column statistics: those whose
        pushed values compare as stored (integers, strings, dates, decimals; not timestamps, whose pushed values
        carry the session's zone, nor floats, whose NaN statistics do not order)."""
        skipped = {*self.string_columns, *(self.partitions.fields if self.partitions else ()), *META_COLUMNS}
        return tuple(f.name for f in self.config.output_schema if f.name not in skipped and _compares_as_stored(f.type))

    @property
    def prunable_columns(self) -> tuple[str, ...]:
        """The partition columns pushed filters may prune by: not those read as strings (compared as strings, an
        order their stored values do not keep), nor those whose path values are not column values."""
        if self.partitions is None:
            return ()
        return tuple(f for f in self.partitions.fields
                     if f not in self.string_columns and f not in self.partitions.opaque)

    def without_splits(self) -> Scan:
        """The scan's settings alone: what every task is shipped, beside its own split."""
        return dataclasses.replace(self, splits=())

    def narrowed(self, pushed: Sequence[Any]) -> Scan:
        """The scan without the slices Spark's pushed filters rule out: partitions by the filters on partition
        columns; files by their column statistics where a filter is on one of :attr:`stats_columns`, planned
        again with the filters (as ``TableReader`` prunes a read given them). Planned again on a table whose
        schema changed since, it prunes by partitions alone."""
        on_partitions = pruning_predicates(pushed, self.prunable_columns)
        on_any = pruning_predicates(pushed, (*self.prunable_columns, *self.stats_columns))
        if self.query is None or len(on_any) == len(on_partitions):
            return self.pruned(on_partitions)
        again = scan_of(self.query, predicates=on_any)
        return again if isinstance(again, Scan) and again.schema == self.schema else self.pruned(on_partitions)

    def pruned(self, predicates: Sequence[Expression]) -> Scan:
        """The scan without the slices of partitions where ``predicates`` hold for no row."""
        if not predicates or self.partitions is None:
            return self
        keep = dataclasses.replace(self.partitions, predicate=conjunction(predicates))
        splits = tuple(kept for kept in (tuple(r for r in split if keep.keeps(r.partition)) for split in self.splits)
                       if kept)
        return dataclasses.replace(self, splits=splits)


def scan_of(query: ReadQuery, *, splits: int | None = None,
            predicates: Sequence[Expression] = ()) -> Scan | ChangeScan:
    """The query planned and its slices split by bytes, or its change events' splits by file group (``splits``:
    how many at most; by default :data:`SPLITS_PER_CORE` per core); ``predicates`` prune partitions and files as
    they prune ``TableReader``'s reads (Spark applies the filters they came from to the rows)."""
    count = splits or max(1, (os.cpu_count() or 1) * SPLITS_PER_CORE)
    if query.changes:
        return change_scan_of(query, count)
    reader = TableReader(LocalFileAccess(), query.path)
    read = _planned_with(reader, query, predicates)
    plan = read.plan
    if plan.slices is None:
        raise AssertionError("a read planned without a session holds its slices (TableReader refuses more)")
    fields = {f.name: f for f in plan.record_schema}
    for name in plan.string_columns:
        if not (pa.types.is_integer(fields[name].type) or pa.types.is_string(fields[name].type)):
            raise UnsupportedOperationError(
                f"the partition column {name} of {query.path} is read as a string of its stored "
                f"{fields[name].type} values (a timestamp key generator's), whose text format('hudi') does not "
                "spell as Spark's cast does yet: read it through hudi_connect's DataFrame reads")
    schema = StructType([StructField(f.name, StringType(), f.nullable) if f.name in plan.string_columns else f
                         for f in plan.schema.fields])
    groups = balanced_splits(plan.slices, min(count, max(1, len(plan.slices))))
    rows = tuple(tuple(SliceRow(s.partition, s.file_id, s.base_file.name if s.base_file else None,
                                [f.name for f in s.log_files]) for s in group) for group in groups)
    partitions = reader.index.partition_filter(plan.record_schema, None)
    return Scan(schema, reader.read_config(read), rows, plan.string_columns, plan.commit_range, partitions,
                reader.view.listed_names, query)


def current_scan(query: ReadQuery, planned: Scan | ChangeScan | None) -> Scan | ChangeScan:
    """``planned`` (the scan Spark's ``schema()`` call made) while the table's timeline is as it was planned on;
    else the query planned again. A view or a plan Spark keeps is read again later: it reads the table as it is
    then, not as it was when the view was made."""
    unchanged = planned is not None and planned.timeline_names is not None and \
        TimelineView.open(LocalFileAccess(), query.path).names_now() == planned.timeline_names
    return planned if unchanged and planned is not None else scan_of(query)


def _planned_with(reader: TableReader, query: ReadQuery, predicates: Sequence[Expression]) -> PlannedRead:
    if query.query_type is QueryType.READ_OPTIMIZED:
        return reader.planned_read_optimized(predicates)
    if query.query_type is QueryType.INCREMENTAL:
        if query.begin is None:
            raise AssertionError("an incremental query has a begin (read_options)")
        return reader.planned_incremental(query.begin, query.end, predicates,
                                          fallback_to_full_scan=query.fallback_to_full_scan)
    if query.as_of is not None:
        return reader.planned_as_of(query.as_of, predicates)
    return reader.planned_snapshot(predicates)


def _compares_as_stored(kind: pa.DataType) -> bool:
    return any(check(kind) for check in (pa.types.is_integer, pa.types.is_string, pa.types.is_large_string,
                                         pa.types.is_date32, pa.types.is_decimal))


def read_split(scan: Scan | ChangeScan, rows: Sequence[Any], target: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The rows of one split, in ``target`` (the scan's schema as Spark takes Arrow): the merged records of its
    file slices, or its change events."""
    if isinstance(scan, ChangeScan):
        return read_change_split(scan, rows, target)
    return _read_slices(scan, rows, target)


@worker_body
def _read_slices(scan: Scan, rows: Sequence[SliceRow], target: pa.Schema) -> Iterator[pa.RecordBatch]:
    for row in rows:
        table = read_slice(scan.config, row.partition, row.base_file, list(row.log_files))
        for name in scan.string_columns:
            table = table.set_column(table.schema.get_field_index(name), name, pc.cast(table[name], pa.string()))
        if scan.commit_range is not None:
            begin, end = scan.commit_range
            kept = pc.greater(table[COMMIT_TIME_COLUMN], begin)
            if end is not None:
                kept = pc.and_(kept, pc.less_equal(table[COMMIT_TIME_COLUMN], end))
            table = table.filter(kept)
        yield from table.cast(target).to_batches()


def arrow_schema(schema: StructType) -> pa.Schema:
    """``schema`` in Arrow, exactly as this Spark line's worker checks a data source's batches against it."""
    if "timezone" in inspect.signature(to_arrow_schema).parameters:  # 4.1+ take the zone; 4.0 writes UTC
        return to_arrow_schema(schema, timezone="UTC")  # type: ignore[call-arg]
    return to_arrow_schema(schema)
