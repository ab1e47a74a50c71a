"""Computing one split's change events inside a Python worker.

A split's events are the difference between its file group's records just
before the commit and just after it, each merged as a snapshot reader merges
them: a key only after is an insert, a key only before a delete, a key in
both whose record the commit wrote an update. This one rule gives what each
of RFC-51's inference cases yields: new base files (all inserts), emptied or
replaced file groups (all deletes), MOR log files against the previous slice,
and COW rewrites. Imports only pyarrow and our worker-side modules.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import json
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_connect.cdc.as_is import before_after_events, before_only_events, cdc_records
from hudi_connect.executor import COMMIT_TIME_COLUMN, SliceReadConfig, _record_keys, read_slice

EVENT_SCHEMA = pa.schema([
    ("op", pa.string()), ("ts_ms", pa.string()), ("completion_time", pa.string()), ("record_key", pa.string()),
    ("before", pa.string()), ("after", pa.string()),
])
SPLITS_DDL = (
    "instant string, completion_time string, partition string, file_id string, "
    "before_base string, before_logs array<string>, before_valid array<string>, has_before boolean, "
    "after_base string, after_logs array<string>, after_valid array<string>, has_after boolean, "
    "before_without_meta boolean, after_without_meta boolean, cdc_files array<string>, cdc_mode string"
)
META_PREFIX = "_hoodie_"


def _json_default(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    return str(value)


def to_json(record: dict[str, Any], without_meta: bool = False) -> str:
    if without_meta:
        record = {k: v for k, v in record.items() if not k.startswith(META_PREFIX)}
    return json.dumps(record, separators=(",", ":"), default=_json_default)


def _state(config: SliceReadConfig, row: dict[str, Any], side: str) -> pa.Table:
    """The merged records of the split's file group on one side of the commit."""
    if not row[f"has_{side}"]:
        return config.output_schema.empty_table()
    side_config = dataclasses.replace(config, valid_instants=frozenset(row[f"{side}_valid"] or ()))
    return read_slice(side_config, row["partition"], row[f"{side}_base"], list(row[f"{side}_logs"] or ()))


def _rows(table: pa.Table, without_meta: bool) -> list[str]:
    # maps as JSON objects, as Hudi's CDC images have them
    return [to_json(r, without_meta) for r in table.to_pylist(maps_as_pydicts="lossy")]


def _by_key(table: pa.Table, keys: pa.Array) -> tuple[pa.Table, pa.Array]:
    order = pc.sort_indices(keys)
    return table.take(order), keys.take(order)


def _batch(row: dict[str, Any], ops: list[str], keys: list[Any], befores: list[str | None],
           afters: list[str | None]) -> pa.RecordBatch:
    count = len(ops)
    return pa.RecordBatch.from_arrays(
        [pa.array(ops, pa.string()), pa.array([row["instant"]] * count, pa.string()),
         pa.array([row["completion_time"]] * count, pa.string()), pa.array(keys, pa.string()),
         pa.array(befores, pa.string()), pa.array(afters, pa.string())],
        schema=EVENT_SCHEMA,
    )


def as_is_events(config: SliceReadConfig, row: dict[str, Any]) -> pa.RecordBatch:
    """AS_IS splits whose ``.cdc`` files hold the before images: no merge of the old slice."""
    records = cdc_records(config, list(row["cdc_files"]), row["instant"])
    if records is None:
        return _batch(row, [], [], [], [])
    if row["cdc_mode"] == "DATA_BEFORE_AFTER":
        event = before_after_events(config, records)
    else:
        after = _state(config, row, "after")
        event = before_only_events(records, after, _record_keys(after, config))
    bare_before, bare_after = bool(row["before_without_meta"]), bool(row["after_without_meta"])
    befores = [None if r is None else to_json(r, bare_before) for r in event["before"]]
    afters = [None if r is None else to_json(r, bare_after) for r in event["after"]]
    return _batch(row, event["op"], event["record_key"], befores, afters)


def split_events(config: SliceReadConfig, row: dict[str, Any]) -> pa.RecordBatch:
    """Set operations on record keys in Arrow; only the changed records become JSON."""
    if row["cdc_files"]:
        return as_is_events(config, row)
    before, after = _state(config, row, "before"), _state(config, row, "after")
    instant = row["instant"]
    bare_before, bare_after = bool(row["before_without_meta"]), bool(row["after_without_meta"])
    before_keys, after_keys = _record_keys(before, config), _record_keys(after, config)
    if COMMIT_TIME_COLUMN in after.column_names:
        written = pc.equal(after[COMMIT_TIME_COLUMN], instant)
    else:  # no meta fields: a record the commit wrote is one that changed
        written = _changed(before, before_keys, after, after_keys)
    was_there = pc.is_in(after_keys, value_set=before_keys)
    inserted = after.filter(pc.and_(written, pc.invert(was_there)))
    updated_mask = pc.and_(written, was_there)
    updated_after, updated_keys = _by_key(after.filter(updated_mask), after_keys.filter(updated_mask))
    old_mask = pc.is_in(before_keys, value_set=updated_keys)
    updated_before, _ = _by_key(before.filter(old_mask), before_keys.filter(old_mask))
    gone = pc.invert(pc.is_in(before_keys, value_set=after_keys))
    deleted, deleted_keys = before.filter(gone), before_keys.filter(gone)
    ops = ["i"] * inserted.num_rows + ["u"] * updated_after.num_rows + ["d"] * deleted.num_rows
    keys = (_record_keys(inserted, config).to_pylist() + updated_keys.to_pylist()
            + deleted_keys.to_pylist())
    befores = [None] * inserted.num_rows + _rows(updated_before, bare_before) + _rows(deleted, bare_before)
    afters = _rows(inserted, bare_after) + _rows(updated_after, bare_after) + [None] * deleted.num_rows
    return _batch(row, ops, keys, befores, afters)


def _changed(before: pa.Table, before_keys: pa.Array, after: pa.Table, after_keys: pa.Array) -> pa.Array:
    """Per after-record: whether it differs from the before-record of its key (or has none)."""
    old = dict(zip(before_keys.to_pylist(), before.to_pylist(), strict=True))
    return pa.array([old.get(k) != r for k, r in zip(after_keys.to_pylist(), after.to_pylist(), strict=True)])


def change_events(config: SliceReadConfig, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: rows of :data:`SPLITS_DDL` in, change events out."""
    for batch in batches:
        for row in batch.to_pylist():
            yield split_events(config, row)
