"""Hudi's change query through the data source (``hoodie.datasource.query.incremental.format=cdc``).

Planned by hudi-connect's change planner (:class:`~hudi_connect.cdc.plan.ChangePlanner`) in the planning worker,
without a session; each task computes its splits' events with the change queries' own worker
(:func:`~hudi_connect.core.executor.cdc_events.change_events`) and writes them in Hudi's CDC schema: op, ts_ms
(the commit's instant time), and the before and after images as JSON, rendered as ``ChangeQuery.changes()``
renders them (:mod:`hudi_connect.core.executor.image_json`).
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import StringType, StructField, StructType

from hudi_connect.cdc.plan import ChangePlanner
from hudi_connect.core.executor.cdc_events import change_events
from hudi_connect.core.executor.contracts import CDC_SPLITS, CdcSplitRow
from hudi_connect.core.executor.file_access import LocalFileAccess
from hudi_connect.core.executor.image_json import check_renderable, images_json
from hudi_connect.core.executor.refusals import worker_body
from hudi_connect.core.executor.slices import SliceReadConfig
from hudi_connect.core.format.read_options import ReadQuery
from hudi_connect.core.format.table_schema import META_COLUMNS

# Hudi's CDC query schema (HoodieCDCUtils): what code written for Hudi's ``incremental.format=cdc`` reads
CDC_SCHEMA = StructType([StructField(name, StringType()) for name in ("op", "ts_ms", "before", "after")])


@dataclass(frozen=True)
class ChangeScan:
    """A planned change query: the workers' read settings and its splits, each file group's in one task."""

    schema: StructType
    config: SliceReadConfig
    splits: tuple[tuple[CdcSplitRow, ...], ...]
    timeline_names: frozenset[str] | None = None  # the timeline it was planned on (its instant file names)

    def without_splits(self) -> ChangeScan:
        """The scan's settings alone: what every task is shipped, beside its own split."""
        return dataclasses.replace(self, splits=())

    def narrowed(self, pushed: Sequence[Any]) -> ChangeScan:
        """The same scan: no pushed filter prunes a change query's splits (Spark applies them to the events)."""
        return self


def change_scan_of(query: ReadQuery, tasks: int) -> ChangeScan:
    """The change query of ``query``'s range planned, in at most ``tasks`` splits."""
    if query.begin is None:
        raise AssertionError("a change query has a begin (read_options)")
    planner = ChangePlanner(LocalFileAccess(), query.path)
    planned = planner.plan(query.begin, query.end, ())
    check_renderable(planned.record_schema)  # refused here, not first in a worker
    return ChangeScan(CDC_SCHEMA, planned.config, file_group_splits(planned.rows, tasks),
                      planner.reader.view.listed_names)


def file_group_splits(rows: Sequence[CdcSplitRow], tasks: int) -> tuple[tuple[CdcSplitRow, ...], ...]:
    """``rows`` (each file group's together, in commit order) in at most ``tasks`` splits of about as many rows,
    a file group's rows in one split and in their order: its task merges each state between two commits once."""
    groups = [list(group) for _, group in groupby(rows, key=lambda row: (row.partition, row.file_id))]
    count = min(tasks, len(groups))
    if count == 0:
        return ()
    loads = [(0, n) for n in range(count)]  # (rows so far, split), the least loaded first
    splits: list[list[CdcSplitRow]] = [[] for _ in range(count)]
    for group in sorted(groups, key=len, reverse=True):
        load, n = heapq.heappop(loads)
        splits[n].extend(group)
        heapq.heappush(loads, (load + len(group), n))
    return tuple(tuple(split) for split in splits)


@worker_body
def read_change_split(scan: ChangeScan, rows: Sequence[CdcSplitRow], target: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The change events of one split's rows, in Hudi's CDC schema (``target``, as Spark takes Arrow)."""
    for events in change_events(scan.config, [CDC_SPLITS.batch(rows)]):
        yield pa.RecordBatch.from_arrays(
            [events.column("op"), events.column("ts_ms"), _image_json(events, "before"), _image_json(events, "after")],
            schema=target)


def _image_json(events: pa.RecordBatch, side: str) -> pa.Array:
    """An image as Hudi's CDC query shows it: JSON, without the meta columns where Hudi's comes from a .cdc file
    (the rule of ``ChangeQuery``'s ``_image_json``, over Arrow)."""
    image = events.column(side)
    whole = images_json(image)
    fields = [image.type.field(n) for n in range(image.type.num_fields)]
    data_fields = [f for f in fields if f.name not in META_COLUMNS]
    if len(data_fields) == len(fields):
        return whole
    data = pa.StructArray.from_arrays([image.field(f.name) for f in data_fields], fields=data_fields,
                                      mask=image.is_null())
    return pc.if_else(pc.fill_null(events.column(f"{side}_without_meta"), False), images_json(data), whole)
