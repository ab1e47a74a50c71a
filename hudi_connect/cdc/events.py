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

from hudi_connect.executor import COMMIT_TIME_COLUMN, SliceReadConfig, _record_keys, read_slice

EVENT_SCHEMA = pa.schema([
    ("op", pa.string()), ("ts_ms", pa.string()), ("completion_time", pa.string()), ("record_key", pa.string()),
    ("before", pa.string()), ("after", pa.string()),
])
SPLITS_DDL = (
    "instant string, completion_time string, partition string, file_id string, "
    "before_base string, before_logs array<string>, before_valid array<string>, has_before boolean, "
    "after_base string, after_logs array<string>, after_valid array<string>, has_after boolean, "
    "before_without_meta boolean, after_without_meta boolean"
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


def _state(config: SliceReadConfig, row: dict[str, Any], side: str) -> dict[str, dict[str, Any]]:
    if not row[f"has_{side}"]:
        return {}
    side_config = dataclasses.replace(config, valid_instants=frozenset(row[f"{side}_valid"] or ()))
    table = read_slice(side_config, row["partition"], row[f"{side}_base"], list(row[f"{side}_logs"] or ()))
    keys = _record_keys(table, config).to_pylist()
    # maps as JSON objects, as Hudi's CDC images have them
    return dict(zip(keys, table.to_pylist(maps_as_pydicts="lossy"), strict=True))


def split_events(config: SliceReadConfig, row: dict[str, Any]) -> pa.RecordBatch:
    before, after = _state(config, row, "before"), _state(config, row, "after")
    instant, completion = row["instant"], row["completion_time"]
    bare_before, bare_after = bool(row["before_without_meta"]), bool(row["after_without_meta"])
    events: list[tuple[str, str, str | None, str | None]] = []  # op, key, before, after
    for key, record in after.items():
        old = before.get(key)
        if old is None:
            events.append(("i", key, None, to_json(record, bare_after)))
        elif _written_by(record, old, instant):
            events.append(("u", key, to_json(old, bare_before), to_json(record, bare_after)))
    events.extend(
        ("d", key, to_json(old, bare_before), None) for key, old in before.items() if key not in after
    )
    ops, keys, befores, afters = (list(column) for column in zip(*events, strict=True)) if events else ([], [], [], [])
    count = len(events)
    return pa.RecordBatch.from_arrays(
        [pa.array(ops, pa.string()), pa.array([instant] * count, pa.string()),
         pa.array([completion] * count, pa.string()), pa.array(keys, pa.string()),
         pa.array(befores, pa.string()), pa.array(afters, pa.string())],
        schema=EVENT_SCHEMA,
    )


def _written_by(record: dict[str, Any], old: dict[str, Any], instant: str) -> bool:
    """Whether the commit wrote this key's record: by its commit time, or (no meta fields) by a change."""
    if COMMIT_TIME_COLUMN in record:
        return bool(record[COMMIT_TIME_COLUMN] == instant)
    return record != old


def change_events(config: SliceReadConfig, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: rows of :data:`SPLITS_DDL` in, change events out."""
    for batch in batches:
        for row in batch.to_pylist():
            yield split_events(config, row)
