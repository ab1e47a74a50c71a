"""Computing one split's change events inside a Python worker.

A split's events are the difference between its file group's records just
before the commit and just after it, each merged as a snapshot reader merges
them: a key only after is an insert, a key only before a delete, a key in
both whose record the commit wrote an update. This one rule gives what each
of RFC-51's inference cases yields: new base files (all inserts), emptied or
replaced file groups (all deletes), MOR log files against the previous slice,
and COW rewrites. AS_IS splits whose ``.cdc`` files hold images are read from
them instead (:mod:`hudi_connect.core.executor.cdc_as_is`).

Images leave the worker as Arrow structs of the record schema, never as Python
objects: Spark turns them into JSON or typed columns. Imports only pyarrow and
our worker-side modules.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_connect.core.executor.cdc_as_is import aligned_images, before_after_events, before_only_events, cdc_records
from hudi_connect.core.executor.refusals import worker_body
from hudi_connect.core.executor.slices import SliceReadConfig, read_slice, record_keys
from hudi_connect.core.format.schema_evolution import align
from hudi_connect.core.format.table_schema import COMMIT_TIME_COLUMN


def event_schema(record: pa.Schema) -> pa.Schema:
    """The worker's output: op, times, key, both images as structs, and whether each shows no meta columns."""
    image = pa.struct(list(record))
    return pa.schema([
        ("op", pa.string()), ("ts_ms", pa.string()), ("completion_time", pa.string()), ("record_key", pa.string()),
        ("before", image), ("after", image), ("before_without_meta", pa.bool_()), ("after_without_meta", pa.bool_()),
    ])


class _FileGroupStates:
    """The last file-group state a task merged, kept for the next split: one commit's after state is the next
    commit's before state where both splits read the same slice (consecutive commits to one file group, which
    the planner sends to a task in commit order), so it is read and merged once, not twice. One state is held."""

    def __init__(self) -> None:
        self._key: tuple[object, ...] | None = None
        self._table: pa.Table | None = None

    def state(self, config: SliceReadConfig, row: dict[str, Any], side: str) -> pa.Table:
        """The merged records of the split's file group on one side of the commit."""
        if not row[f"has_{side}"]:
            return config.output_schema.empty_table()
        valid = frozenset(row[f"{side}_valid"] or ())
        key = (row["partition"], row[f"{side}_base"], tuple(row[f"{side}_logs"] or ()), valid)
        if key != self._key or self._table is None:
            side_config = dataclasses.replace(
                config, valid_instants=dataclasses.replace(config.valid_instants, completed=valid))
            self._table = read_slice(side_config, row["partition"], row[f"{side}_base"], list(key[2]))
            self._key = key
        return self._table


def images(table: pa.Table, schema: pa.Schema) -> pa.StructArray:
    """Each record of ``table`` as one struct value of ``schema``."""
    aligned = align(table, schema)
    return pa.StructArray.from_arrays([c.combine_chunks() for c in aligned.columns], fields=list(schema))


def _array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def _by_key(table: pa.Table, keys: pa.Array) -> tuple[pa.Table, pa.Array]:
    order = pc.sort_indices(keys)
    return table.take(order), keys.take(order)


def _batch(config: SliceReadConfig, row: dict[str, Any], ops: pa.Array, keys: pa.Array, befores: pa.Array,
           afters: pa.Array) -> pa.RecordBatch:
    count = len(ops)
    return pa.RecordBatch.from_arrays(
        [ops, pa.array([row["instant"]] * count, pa.string()),
         pa.array([row["completion_time"]] * count, pa.string()), keys.cast(pa.string()), befores, afters,
         pa.array([bool(row["before_without_meta"])] * count, pa.bool_()),
         pa.array([bool(row["after_without_meta"])] * count, pa.bool_())],
        schema=event_schema(config.output_schema),
    )


def as_is_events(config: SliceReadConfig, row: dict[str, Any], states: _FileGroupStates) -> pa.RecordBatch:
    """AS_IS splits whose ``.cdc`` files hold the before images: no merge of the old slice."""
    image_type = pa.struct(list(config.output_schema))
    records = cdc_records(config, list(row["cdc_files"]), row["instant"])
    if records is None:
        empty = pa.array([], pa.string())
        return _batch(config, row, empty, empty, pa.array([], image_type), pa.array([], image_type))
    if row["cdc_mode"] == "DATA_BEFORE_AFTER":
        ops, keys, befores, afters = before_after_events(config, records)
    else:
        after = states.state(config, row, "after")
        ops, keys, befores, afters = before_only_events(records, images(after, config.output_schema),
                                                        record_keys(after, config))
    return _batch(config, row, ops, keys, aligned_images(befores, image_type), aligned_images(afters, image_type))


def split_events(config: SliceReadConfig, row: dict[str, Any], states: _FileGroupStates) -> pa.RecordBatch:
    """Set operations on record keys in Arrow; records stay columnar throughout."""
    if row["cdc_files"]:
        return as_is_events(config, row, states)
    schema = config.output_schema
    before = states.state(config, row, "before")  # before ``after``: it may be the last split's after state
    after = states.state(config, row, "after")
    before_keys, after_keys = record_keys(before, config), record_keys(after, config)
    if COMMIT_TIME_COLUMN in after.column_names:
        written = pc.equal(after[COMMIT_TIME_COLUMN], row["instant"])
    else:  # no meta fields: a record the commit wrote is one that changed
        written = _changed(before, before_keys, after, after_keys)
    was_there = pc.is_in(after_keys, value_set=before_keys)
    inserted_mask = pc.and_(written, pc.invert(was_there))
    inserted, inserted_keys = after.filter(inserted_mask), after_keys.filter(inserted_mask)
    updated_mask = pc.and_(written, was_there)
    updated_after, updated_keys = _by_key(after.filter(updated_mask), after_keys.filter(updated_mask))
    old_mask = pc.is_in(before_keys, value_set=updated_keys)
    updated_before, _ = _by_key(before.filter(old_mask), before_keys.filter(old_mask))
    gone = pc.invert(pc.is_in(before_keys, value_set=after_keys))
    deleted, deleted_keys = before.filter(gone), before_keys.filter(gone)
    image_type = pa.struct(list(schema))
    ops = pa.array(["i"] * inserted.num_rows + ["u"] * updated_after.num_rows + ["d"] * deleted.num_rows,
                   pa.string())
    keys = pa.concat_arrays([_array(k).cast(pa.string()) for k in (inserted_keys, updated_keys, deleted_keys)])
    befores = pa.concat_arrays([pa.nulls(inserted.num_rows, image_type), images(updated_before, schema),
                                images(deleted, schema)])
    afters = pa.concat_arrays([images(inserted, schema), images(updated_after, schema),
                               pa.nulls(deleted.num_rows, image_type)])
    return _batch(config, row, ops, keys, befores, afters)


def _changed(before: pa.Table, before_keys: pa.Array, after: pa.Table, after_keys: pa.Array) -> pa.Array:
    """Per after-record: whether it differs from the before-record of its key (or has none)."""
    old = dict(zip(before_keys.to_pylist(), before.to_pylist(), strict=True))
    return pa.array([old.get(k) != r for k, r in zip(after_keys.to_pylist(), after.to_pylist(), strict=True)])


@worker_body
def change_events(config: SliceReadConfig, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: rows of the :data:`~hudi_connect.core.executor.contracts.CDC_SPLITS` contract in (by column
    name), rows of :func:`event_schema` out."""
    states = _FileGroupStates()
    for batch in batches:
        for row in batch.to_pylist():
            yield split_events(config, row, states)
