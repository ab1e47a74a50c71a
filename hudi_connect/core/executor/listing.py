"""File listing and statistics-based pruning inside Spark's Python workers (``mapInArrow``).

Partition pruning happens here, where the files are listed, so that files of
pruned partitions never reach the client; rows leave sorted by partition, so
that the client can build one partition's file slices at a time.
Imports only pyarrow and our worker-side modules.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from hudi_connect.core.executor import slices
from hudi_connect.core.executor.contracts import LISTING_PARTS, MATCHES, FileMatch, ListingPart
from hudi_connect.core.executor.refusals import planned_file, worker_body
from hudi_connect.core.executor.storage import data_files, filesystem_for, join, list_directory, storage_access
from hudi_connect.core.format.expressions import ColumnRange, Expression, partition_may_match, stats_may_match
from hudi_connect.core.format.spec_models import PartitionDescriptor


@dataclass(frozen=True)
class PartitionFilter:
    """How to read partition values from paths, and the predicate they must allow."""

    fields: tuple[str, ...]
    schema: pa.Schema
    hive_style: bool
    url_encoded: bool
    predicate: Expression | None
    opaque: frozenset[str] = frozenset()  # fields whose path values are not column values
    paths: frozenset[str] | None = None  # only these partition paths (a change query's touched partitions)

    def descriptor(self, path: str) -> PartitionDescriptor:
        """The partition values the partition path encodes (as its Hudi key generator wrote them)."""
        return PartitionDescriptor.parse(path, self.fields, self.schema, hive_style=self.hive_style,
                                         url_encoded=self.url_encoded, opaque=self.opaque)

    def keeps(self, path: str) -> bool:
        """Whether the partition at ``path`` may hold matching rows (always, without a predicate or paths)."""
        if self.paths is not None and path not in self.paths:
            return False
        return self.predicate is None or partition_may_match(self.predicate, self.descriptor(path).values)


@worker_body
def list_storage(keep: PartitionFilter, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """For each ``base_uri``: the data files of kept partitions, from a storage listing."""
    for batch in batches:
        for base_uri in batch.column("base_uri").to_pylist():
            kept: dict[str, bool] = {}
            rows = []
            for partition, name, size in data_files(base_uri):
                if partition not in kept:
                    kept[partition] = keep.keeps(partition)
                if kept[partition]:
                    rows.append((partition, name, size))
            yield slices.listing_batch(rows)


FAN_OUT_TASKS = 8
"""Tasks a storage listing fans out over, by top-level directory, when the table is too large for one task to
list (more files than a batched listing holds): what Hudi's file-system-backed listing does with its engine
context, so that a table of a million files is listed by several executors rather than one."""


@worker_body
def list_top_level(keep: PartitionFilter, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """For each ``base_uri``: the kept data files right below it (a non-partitioned table's), and every
    top-level directory but ``.hoodie``, for :func:`list_subtrees` to list in other tasks."""
    for batch in batches:
        for base_uri in batch.column("base_uri").to_pylist():
            parts: list[ListingPart] = []
            for info in list_directory(base_uri):
                name = info.base_name
                if info.type == pafs.FileType.Directory and name != ".hoodie":
                    parts.append(ListingPart(None, None, None, name))
                elif info.type == pafs.FileType.File and keep.keeps(""):
                    parts.append(ListingPart("", name, info.size or 0, None))
            yield LISTING_PARTS.batch(parts)


@worker_body
def list_subtrees(keep: PartitionFilter, base_uri: str, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The second step of a fanned-out listing: files of :func:`list_top_level` pass through, and each
    top-level directory is listed whole, keeping the files of kept partitions. Rows leave in batches of at most
    about :data:`~hudi_connect.core.executor.slices.LISTING_BATCH_ROWS` (after the directory that passes it),
    each sorted; the plan sorts the whole listing afterwards."""
    for batch in batches:
        rows: list[tuple[str, str, int]] = []
        for part in LISTING_PARTS.rows(batch):
            if part.subtree is None:
                rows.append((part.partition or "", part.name or "", part.size or 0))
            else:
                kept: dict[str, bool] = {}
                for partition, name, size in data_files(base_uri, part.subtree):
                    if partition not in kept:
                        kept[partition] = keep.keeps(partition)
                    if kept[partition]:
                        rows.append((partition, name, size))
            if len(rows) >= slices.LISTING_BATCH_ROWS:
                yield slices.listing_batch(rows)
                rows = []
        yield slices.listing_batch(rows)


@dataclass(frozen=True)
class StatsConfig:
    """What :func:`match_by_footer` needs on the executor: the table's base path, the predicate and the
    columns whose Parquet footer statistics it reads."""

    base_uri: str
    predicate: Expression
    columns: tuple[str, ...]  # the data columns the predicate reads


def parquet_ranges(metadata: pq.FileMetaData, columns: tuple[str, ...]) -> dict[str, ColumnRange]:
    """Per top-level column: min, max and null count over all row groups of a Parquet footer."""
    ranges: dict[str, ColumnRange] = {}
    names = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    for name in columns:
        index = names.get(name)
        if index is None:
            continue
        low: Any = None
        high: Any = None
        nulls = 0
        known = True
        for group in range(metadata.num_row_groups):
            stats = metadata.row_group(group).column(index).statistics
            if stats is None or not stats.has_null_count:
                known = False
                break
            nulls += stats.null_count
            if stats.has_min_max:
                low = stats.min if low is None else min(low, stats.min)
                high = stats.max if high is None else max(high, stats.max)
            elif stats.null_count < metadata.row_group(group).num_rows:
                known = False  # values without bounds: nothing to conclude
                break
        if known:
            ranges[name] = ColumnRange(low, high, nulls, metadata.num_rows)
    return ranges


@worker_body
def match_by_footer(config: StatsConfig, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """For each (partition, name) base file: whether its Parquet statistics allow the predicate."""
    for batch in batches:
        partitions, names, matches = [], [], []
        for row in batch.to_pylist():
            if not row["name"].endswith(".parquet"):
                continue
            uri = join(config.base_uri, row["partition"], row["name"])
            filesystem, path = filesystem_for(uri)
            with planned_file(uri, planned_at=None), storage_access(uri), filesystem.open_input_file(path) as handle:
                ranges = parquet_ranges(pq.ParquetFile(handle).metadata, config.columns)
            partitions.append(row["partition"])
            names.append(row["name"])
            matches.append(stats_may_match(config.predicate, ranges))
        yield MATCHES.batch(FileMatch(*row) for row in zip(partitions, names, matches, strict=True))
