"""Partial-update merging (partial update mode IGNORE_DEFAULTS) against a plain-Python model: a key's
log records fold in arrival order; the one with the greater ordering value (the newer on a tie) wins,
meta columns included, and each of its null fields takes the other's value; a natural delete replaces
the record and a record after it replaces the delete. The folded log record then meets the base record
the same way. (The integration matrix holds the same rule to Hudi's own reads.)"""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

from hudi_connect.core.format.merge import KEY, ORD, SEQ, LogRecords, merge_slice_partial

FIELDS = ("a", "b", "_hoodie_commit_time")


def combine(current: dict[str, Any], incoming: dict[str, Any], event_time: bool) -> dict[str, Any]:
    keep_current = event_time and current["ord"] > incoming["ord"]
    winner, loser = (current, incoming) if keep_current else (incoming, current)
    merged = {f: winner[f] if winner[f] is not None else loser[f] for f in ("a", "b")}
    merged["ord"] = winner["ord"]
    merged["_hoodie_commit_time"] = winner["_hoodie_commit_time"]
    return merged


def model(base: dict[str, Any] | None, log: list[tuple[str, Any]], event_time: bool) -> dict[str, Any] | None:
    state: dict[str, Any] | None = None
    deleted = False
    for kind, record in log:
        if kind == "delete":
            state, deleted = None, True
        elif state is None:
            state, deleted = dict(record), False
        else:
            state = combine(state, record, event_time)
    if deleted:
        return None
    if state is None:
        return base
    if base is None:
        return state
    return combine(base, state, event_time)


def random_record(rng: random.Random, step: int) -> dict[str, Any]:
    return {"a": rng.choice([None, rng.randint(0, 9)]), "b": rng.choice([None, f"s{rng.randint(0, 9)}"]),
            "ord": rng.randint(0, 4), "_hoodie_commit_time": f"c{step}"}


SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.string()), ("_hoodie_commit_time", pa.string())])


def table(rows: list[dict[str, Any]], with_seq: bool) -> pa.Table:
    columns = {f: pa.array([r[f] for r in rows], SCHEMA.field(f).type) for f in FIELDS}
    columns[KEY] = pa.array([r["key"] for r in rows], pa.string())
    columns["_hoodie_record_key"] = columns[KEY]
    columns[ORD] = pa.array([r["ord"] for r in rows], pa.int64())
    if with_seq:
        columns[SEQ] = pa.array([r["seq"] for r in rows], pa.int64())
    return pa.table(columns)


@pytest.mark.parametrize("event_time", [True, False])
@pytest.mark.parametrize("seed", range(20))
def test_partial_merge_equals_the_payload_model(seed: int, event_time: bool) -> None:
    rng = random.Random(seed)
    base_rows, log_rows, deletes, expected = [], [], [], {}
    seq = 1
    for key in (f"k{i}" for i in range(12)):
        history: list[tuple[str, Any]] = []
        base_record = None
        if rng.random() < 0.7:
            base_record = random_record(rng, 0)
            base_rows.append({**base_record, "key": key})
        for step in range(1, rng.randint(1, 6)):
            if rng.random() < 0.15:
                deletes.append((key, seq))
                history.append(("delete", None))
            else:
                record = random_record(rng, step)
                log_rows.append({**record, "key": key, "seq": seq})
                history.append(("data", record))
            seq += 1
        final = model(base_record, history, event_time)
        if final is not None:
            expected[key] = tuple(final[f] for f in FIELDS)

    logs = LogRecords(table(log_rows, True), pa.table({
        KEY: pa.array([k for k, _ in deletes], pa.string()), ORD: pa.nulls(len(deletes), pa.int64()),
        SEQ: pa.array([s for _, s in deletes], pa.int64())}))
    merged = merge_slice_partial(table(base_rows, False) if base_rows else None, logs,
                                 event_time_ordering=event_time)
    # the merged rows carry no key column: recover it from the commit time and values via the model's order
    got = {r["_hoodie_record_key"]: tuple(r[f] for f in FIELDS) for r in merged.to_pylist()}
    assert got == expected
    assert merged.num_rows == len(expected)


def combine_present(current: dict[str, Any], incoming: dict[str, Any], event_time: bool) -> dict[str, Any]:
    """Hudi's ``partialMerge`` of two records of partial-update log blocks: the winner's columns over the
    loser's (a present null is a value), the winner's ordering value and meta columns."""
    keep_current = event_time and current["ord"] > incoming["ord"]
    winner, loser = (current, incoming) if keep_current else (incoming, current)
    merged = {f: winner[f] if f in winner["present"] else loser[f] for f in ("a", "b")}
    merged.update(ord=winner["ord"], _hoodie_commit_time=winner["_hoodie_commit_time"],
                  present=winner["present"] | loser["present"])
    return merged


@pytest.mark.parametrize("event_time", [True, False])
@pytest.mark.parametrize("seed", range(20))
def test_partial_blocks_merge_equals_hudis_partial_merge_model(seed: int, event_time: bool) -> None:
    """MERGE INTO's partial SET on MOR: each block's records set only the block's columns (IS_PARTIAL)."""
    rng = random.Random(seed)
    base_rows, log_rows, deletes, expected, blocks = [], [], [], {}, []
    seq = 1
    for key in (f"k{i}" for i in range(12)):
        state: dict[str, Any] | None = None
        deleted = False
        base_record = None
        if rng.random() < 0.7:
            base_record = {**random_record(rng, 0), "present": {"a", "b"}}
            base_rows.append({**base_record, "key": key})
        for step in range(1, rng.randint(1, 6)):
            if rng.random() < 0.15:
                deletes.append((key, seq))
                state, deleted = None, True
            else:
                present = rng.choice([{"a"}, {"b"}, {"a", "b"}])
                record = {**random_record(rng, step), "present": present}
                record.update({f: None for f in ("a", "b") if f not in present})
                if len(present) < 2:
                    blocks.append((seq, seq + 1, frozenset({"a", "b"} - present)))
                log_rows.append({**record, "key": key, "seq": seq})
                state = dict(record) if state is None else combine_present(state, record, event_time)
                deleted = False
            seq += 1
        final = None if deleted else (base_record if state is None else state if base_record is None
                                      else combine_present(base_record, state, event_time))
        if final is not None:
            expected[key] = tuple(final[f] for f in FIELDS)

    logs = LogRecords(table(log_rows, True), pa.table({
        KEY: pa.array([k for k, _ in deletes], pa.string()), ORD: pa.nulls(len(deletes), pa.int64()),
        SEQ: pa.array([s for _, s in deletes], pa.int64())}), tuple(blocks))
    merged = merge_slice_partial(table(base_rows, False) if base_rows else None, logs,
                                 event_time_ordering=event_time, nulls_keep_older=False)
    got = {r["_hoodie_record_key"]: tuple(r[f] for f in FIELDS) for r in merged.to_pylist()}
    assert got == expected
