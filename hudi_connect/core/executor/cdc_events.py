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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_connect.core.errors import UnsupportedTableFeatureError
from hudi_connect.core.executor.cdc_as_is import aligned_images, before_after_events, before_only_events, cdc_records
from hudi_connect.core.executor.refusals import worker_body
from hudi_connect.core.executor.slices import SliceReadConfig, read_slice, record_keys
from hudi_connect.core.format.schema_evolution import align
from hudi_connect.core.format.table_schema import COMMIT_SEQNO_COLUMN, COMMIT_TIME_COLUMN


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
        after = _written_first(states.state(config, row, "after"), row["instant"])
        ops, keys, befores, afters = before_only_events(records, images(after, config.output_schema),
                                                        record_keys(after, config))
    return _batch(config, row, ops, keys, aligned_images(befores, image_type), aligned_images(afters, image_type))


def _written_first(after: pa.Table, instant: str) -> pa.Table:
    """The after state with the rows the commit wrote first, so that a key the group holds twice takes the row
    the commit wrote as its after image (a lookup by key takes the first)."""
    if COMMIT_TIME_COLUMN not in after.column_names:
        return after
    return after.take(pc.sort_indices(pc.not_equal(after[COMMIT_TIME_COLUMN], instant)))  # stable: order kept


def split_events(config: SliceReadConfig, row: dict[str, Any], states: _FileGroupStates) -> pa.RecordBatch:
    """Rows the commit removed from the file group paired with rows it wrote, key by key, in Arrow; records stay
    columnar throughout."""
    if row["cdc_files"]:
        return as_is_events(config, row, states)
    schema = config.output_schema
    before = states.state(config, row, "before")  # before ``after``: it may be the last split's after state
    after = states.state(config, row, "after")
    before_keys, after_keys = record_keys(before, config), record_keys(after, config)
    removed, written = _removed_and_written(config, row, before, before_keys, after, after_keys)
    removed_at, written_at = _paired(before, before_keys, removed, after, after_keys, written)
    ops = pc.if_else(pc.is_null(removed_at), "i", pc.if_else(pc.is_null(written_at), "d", "u"))
    keys = pc.coalesce(before_keys.take(removed_at), after_keys.take(written_at))
    return _batch(config, row, ops, keys, images(before, schema).take(removed_at),
                  images(after, schema).take(written_at))


def _removed_and_written(config: SliceReadConfig, row: dict[str, Any], before: pa.Table, before_keys: pa.Array,
                         after: pa.Table, after_keys: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Masks of the rows the commit removed (of ``before``) and wrote (of ``after``).

    A row is known by its sequence number, so a key a file group holds twice (an ``insert``, which looks no key
    up, wrote it again) loses or gains just the row the commit touched. Without meta fields only keys tell rows
    apart: a commit writes a key's row if it changed, and removes the old row of a key it wrote or dropped."""
    if all(COMMIT_SEQNO_COLUMN in t.column_names and t[COMMIT_SEQNO_COLUMN].null_count == 0 for t in (before, after)):
        removed = pc.invert(pc.is_in(before[COMMIT_SEQNO_COLUMN], value_set=after[COMMIT_SEQNO_COLUMN]))
        # what the commit wrote, and what it brought back: a late record after a delete loses to the base
        # record, which comes back with its old commit time (Hudi's time travel shows the key again)
        written = pc.invert(pc.is_in(after[COMMIT_SEQNO_COLUMN], value_set=before[COMMIT_SEQNO_COLUMN]))
        return _array(removed), _array(written)
    for keys, side in ((before_keys, "before"), (after_keys, "after")):
        if pc.count_distinct(keys).as_py() < len(keys):
            raise UnsupportedTableFeatureError(
                "change events of a key a file group holds twice, on a table without meta fields",
                "hoodie.populate.meta.fields", "false", where=f"file group {row['file_id']} ({side} {row['instant']})")
    written = _changed(before, before_keys, after, after_keys)
    kept = pc.and_(pc.is_in(before_keys, value_set=after_keys),
                   pc.invert(pc.is_in(before_keys, value_set=after_keys.filter(written))))
    return _array(pc.invert(kept)), written


def _paired(before: pa.Table, before_keys: pa.Array, removed: pa.Array, after: pa.Table, after_keys: pa.Array,
            written: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Positions (in ``before``, in ``after``; null where a side has none) of each event: a key's n-th removed row
    by sequence number meets its n-th written row (an update), unmatched ones are deletes and inserts."""
    def ranked(table: pa.Table, keys: pa.Array, mask: pa.Array, side: str) -> pa.Table:
        positions = pc.indices_nonzero(mask)
        order = (table[COMMIT_SEQNO_COLUMN].take(positions) if COMMIT_SEQNO_COLUMN in table.column_names
                 else positions)
        rows = pa.table({"key": keys.take(positions), "order": order, side: positions.cast(pa.int64())})
        rows = rows.sort_by([("key", "ascending"), ("order", "ascending")])
        chosen, count = rows["key"].combine_chunks(), rows.num_rows
        first = pa.array([True] * min(count, 1), pa.bool_())
        if count > 1:
            first = pa.concat_arrays([first, _array(pc.not_equal(chosen[1:], chosen[:-1]))])
        index = pa.array(np.arange(count, dtype=np.int64))
        starts = pc.fill_null_forward(pc.if_else(first, index, pa.scalar(None, pa.int64())))
        return pa.table({"key": chosen, "rank": pc.subtract(index, starts), side: rows[side]})

    joined = ranked(before, before_keys, removed, "before").join(
        ranked(after, after_keys, written, "after"), keys=["key", "rank"], join_type="full outer")
    return _array(joined["before"]), _array(joined["after"])


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
