"""Ordering values compared as Hudi's event-time merger compares them, against a plain-Python model of Java's
``Comparable.compareTo`` on the boxed values (issue #72): a double by ``Double.compareTo`` (NaN above every
number and equal to itself, -0.0 below 0.0), a null ordering value as Hudi's default, the Integer 0, which an
int or a date compares with and a long cannot (Hudi's read fails; ours refuses the key by name).

Each drawn key has a base record and log records in order; the model folds them as Hudi's merger does: the
incoming record wins unless the current one is greater, so a tie goes to the later record."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_connect.core.errors import UnsupportedTableFeatureError
from hudi_connect.core.format.merge import KEY, ORD, SEQ, LogRecords, merge_slice, merge_slice_partial

DOUBLES = st.sampled_from([math.nan, -0.0, 0.0, 1.0, -1.0, math.inf, -math.inf, 2.5])


def java_order(value: Any) -> tuple[Any, ...]:
    """A sort key in the order of Java's compareTo on the boxed value (a null already made Hudi's default)."""
    if isinstance(value, float):
        if math.isnan(value):
            return (1,)
        return (0, value, math.copysign(1.0, value))  # -0.0 below 0.0
    return (0, value)


def model(records: list[tuple[Any, str]], default: Any) -> str:
    """The surviving record's label: each record meets the current one, the later winning unless the current
    ordering value is greater; a null ordering value is ``default``."""
    current_value, current_label = records[0]
    for value, label in records[1:]:
        a = java_order(default if current_value is None else current_value)
        b = java_order(default if value is None else value)
        if not a > b:
            current_value, current_label = value, label
    return current_label


def slice_of(keys: list[list[Any]], ordering_type: pa.DataType) -> tuple[pa.Table, LogRecords]:
    """Key i's first value in the base file, the rest in the log in order; ``v`` labels each record."""
    base_rows = [(f"k{i}", values[0], f"k{i}@0") for i, values in enumerate(keys)]
    log_rows = [(f"k{i}", value, f"k{i}@{n}") for i, values in enumerate(keys) for n, value in enumerate(values[1:], 1)]

    def table(rows: list[tuple[str, Any, str]], seq: bool) -> pa.Table:
        columns = {"v": pa.array([r[2] for r in rows], pa.string()), KEY: pa.array([r[0] for r in rows], pa.string()),
                   ORD: pa.array([r[1] for r in rows], ordering_type)}
        if seq:
            columns[SEQ] = pa.array(range(len(rows)), pa.int64())
        return pa.table(columns)

    deletes = pa.table({KEY: pa.array([], pa.string()), ORD: pa.array([], ordering_type),
                        SEQ: pa.array([], pa.int64())})
    return table(base_rows, False), LogRecords(table(log_rows, True), deletes)


MERGES = [merge_slice, merge_slice_partial]


@pytest.mark.parametrize("merge", MERGES, ids=["full", "partial"])
@settings(max_examples=60, deadline=None)
@given(keys=st.lists(st.lists(st.one_of(st.none(), DOUBLES), min_size=2, max_size=4), min_size=1, max_size=6))
def test_double_orderings_merge_as_double_compare_to(merge: Any, keys: list[list[Any]]) -> None:
    keys = [[0.0 if v is None else v for v in values] for values in keys]  # nulls: the int test below
    base, logs = slice_of(keys, pa.float64())
    got = sorted(r["v"] for r in merge(base, logs).to_pylist())
    assert got == sorted(model([(v, f"k{i}@{n}") for n, v in enumerate(values)], 0)
                         for i, values in enumerate(keys))


@pytest.mark.parametrize("merge", MERGES, ids=["full", "partial"])
@settings(max_examples=60, deadline=None)
@given(keys=st.lists(st.lists(st.one_of(st.none(), st.integers(-3, 3)), min_size=2, max_size=4), min_size=1,
                     max_size=6))
def test_a_null_int_ordering_value_merges_as_hudis_default_zero(merge: Any, keys: list[list[Any]]) -> None:
    base, logs = slice_of(keys, pa.int32())
    got = sorted(r["v"] for r in merge(base, logs).to_pylist())
    assert got == sorted(model([(v, f"k{i}@{n}") for n, v in enumerate(values)], 0)
                         for i, values in enumerate(keys))


@pytest.mark.parametrize("merge", MERGES, ids=["full", "partial"])
def test_a_null_date_ordering_value_is_the_epoch(merge: Any) -> None:
    base, logs = slice_of([[dt.date(2024, 1, 1), None], [dt.date(1969, 12, 1), None]], pa.date32())
    assert sorted(r["v"] for r in merge(base, logs).to_pylist()) == ["k0@0", "k1@1"]


@pytest.mark.parametrize("merge", MERGES, ids=["full", "partial"])
@pytest.mark.parametrize("ordering_type", [pa.int64(), pa.float64(), pa.string()], ids=str)
def test_a_null_ordering_value_hudi_cannot_compare_is_refused_where_records_meet(merge: Any,
                                                                                  ordering_type: pa.DataType) -> None:
    value = {"int64": 5, "double": 5.0, "string": "5"}[str(ordering_type)]
    base, logs = slice_of([[value, None]], ordering_type)
    with pytest.raises(UnsupportedTableFeatureError, match="null ordering value"):
        merge(base, logs)
    alone_base, alone_logs = slice_of([[value, value]], ordering_type)
    lone = pa.table({"v": ["k9@1"], KEY: ["k9"], ORD: pa.array([None], ordering_type), SEQ: pa.array([7], pa.int64())})
    both = LogRecords(pa.concat_tables([alone_logs.data, lone]), alone_logs.deletes)
    assert sorted(r["v"] for r in merge(alone_base, both).to_pylist()) == ["k0@1", "k9@1"]  # the null met none


def several_fields_slice(keys: list[list[tuple[Any, Any]]], types: tuple[pa.DataType, pa.DataType],
                         deletes: list[tuple[int, int, tuple[Any, Any] | None]] = ()) -> tuple[pa.Table, LogRecords]:
    """As :func:`slice_of`, each ordering value a pair of fields (``ORD`` a struct); ``deletes``: (key, after
    which of its log records, the delete's pair or None for a natural delete)."""
    struct = pa.struct([("major", types[0]), ("minor", types[1])])

    def pairs(values: list[tuple[Any, Any]]) -> pa.Array:
        return pa.array([{"major": a, "minor": b} for a, b in values], struct)

    base = pa.table({"v": [f"k{i}@0" for i in range(len(keys))], KEY: [f"k{i}" for i in range(len(keys))],
                     ORD: pairs([values[0] for values in keys])})
    log = [(f"k{i}", value, f"k{i}@{n}") for i, values in enumerate(keys) for n, value in enumerate(values[1:], 1)]
    seqs = {(r[0], r[2]): 10 * n for n, r in enumerate(log)}
    data = pa.table({"v": [r[2] for r in log], KEY: [r[0] for r in log], ORD: pairs([r[1] for r in log]),
                     SEQ: pa.array([seqs[(r[0], r[2])] for r in log], pa.int64())})
    marks = pa.table({KEY: pa.array([f"k{k}" for k, _, _ in deletes], pa.string()),
                      ORD: pa.array([None if p is None else {"major": p[0], "minor": p[1]} for _, _, p in deletes],
                                    struct),
                      SEQ: pa.array([seqs[(f"k{k}", f"k{k}@{n}")] + 5 for k, n, _ in deletes], pa.int64())})
    return base, LogRecords(data, marks)


def several_fields_model(values: list[tuple[Any, Any]], deleted: dict[int, tuple[Any, Any] | None], key: int
                         ) -> str | None:
    """Hudi's fold of one key's records with two ordering fields compared field by field, a null field its
    default 0: the incoming record wins unless the current one is greater. A delete after log record n is an
    incoming record that leaves no row; a natural delete (None) always wins, and a later record replaces it."""
    def order(pair: tuple[Any, Any]) -> tuple[Any, Any]:
        return tuple(java_order(0 if v is None else v) for v in pair)  # type: ignore[return-value]

    current: tuple[tuple[Any, Any] | None, str | None] = (values[0], f"k{key}@0")
    # log records fold among themselves first, then meet the base record (Hudi's file group reader)
    log: tuple[tuple[Any, Any] | None, str | None] | None = None
    events: list[tuple[tuple[Any, Any] | None, str | None, bool]] = []
    for n, value in enumerate(values[1:], 1):
        events.append((value, f"k{key}@{n}", False))
        if n in deleted:
            events.append((deleted[n], None, True))
    for value, label, is_delete in events:
        if log is None:
            log = (value, label)
            continue
        if is_delete and value is None:
            log = (None, None)  # natural
            continue
        if log[0] is None and log[1] is None:  # after a natural delete, the next record replaces it; an
            if not is_delete:                    # ordered delete before it leaves the key naturally deleted
                log = (value, label)
            continue
        if not order(log[0]) > order(value):  # type: ignore[arg-type]
            log = (value, label)
    if log is None:
        return current[1]
    if log[0] is None and log[1] is None:
        return None  # naturally deleted: the base record goes too
    if order(current[0]) > order(log[0]):  # type: ignore[arg-type]
        return current[1]
    return log[1]


PAIR = st.tuples(st.one_of(st.none(), st.integers(0, 2)), st.one_of(st.none(), st.integers(0, 2)))


@pytest.mark.parametrize("merge", MERGES, ids=["full", "partial"])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_several_ordering_fields_compare_field_by_field(merge: Any, data: st.DataObject) -> None:
    keys = data.draw(st.lists(st.lists(PAIR, min_size=2, max_size=4), min_size=1, max_size=5))
    deletes = [(k, n, data.draw(st.one_of(st.none(), PAIR.filter(lambda p: p[0] is not None))))
               for k, values in enumerate(keys) for n in range(1, len(values)) if data.draw(st.integers(0, 2)) == 0]
    deletes = [(k, n, p if p is None else (p[0], p[1] if p[1] is not None else 0)) for k, n, p in deletes]
    base, logs = several_fields_slice(keys, (pa.int32(), pa.int32()), deletes)
    got = sorted(r["v"] for r in merge(base, logs).to_pylist())
    by_key: dict[int, dict[int, tuple[Any, Any] | None]] = {}
    for k, n, p in deletes:
        by_key.setdefault(k, {})[n] = p
    expected = [several_fields_model(values, by_key.get(k, {}), k) for k, values in enumerate(keys)]
    assert got == sorted(v for v in expected if v is not None)


@pytest.mark.parametrize("merge", MERGES, ids=["full", "partial"])
def test_several_ordering_fields_refuse_a_null_hudi_cannot_compare_where_records_meet(merge: Any) -> None:
    base, logs = several_fields_slice([[(1, "a"), (1, None)]], (pa.int32(), pa.string()))
    with pytest.raises(UnsupportedTableFeatureError, match="null ordering value"):
        merge(base, logs)
    base, logs = several_fields_slice([[(1, "a"), (2, "b")], [(3, "b"), (3, "a")]], (pa.int32(), pa.string()))
    assert sorted(r["v"] for r in merge(base, logs).to_pylist()) == ["k0@1", "k1@0"]


EVENT = st.tuples(st.sampled_from(["data", "data", "delete", "natural"]), st.one_of(st.none(), st.integers(-2, 2)))


@pytest.mark.parametrize("event_time", [True, False], ids=["event-time", "commit-time"])
@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.tuples(st.integers(0, 2), st.lists(EVENT, max_size=4)), min_size=1, max_size=8),
       base_orderings=st.lists(st.one_of(st.none(), st.integers(-2, 2)), min_size=8, max_size=8),
       chunk=st.integers(1, 3), dictionary=st.booleans())
def test_the_vectorised_merge_equals_the_sequential_fold(event_time: bool, keys: list[tuple[int, list[Any]]],
                                                         base_orderings: list[Any], chunk: int,
                                                         dictionary: bool) -> None:
    """``merge_slice`` (Arrow, vectorised) against ``merge_slice_partial``'s record-by-record fold of the same
    rules with every record complete: keys with no base record, one, or two (an ``insert`` skips the index),
    data records, ordered and natural deletes, null ordering values (an int: Hudi's default 0), a base file
    read in several batches, its data column plain or dictionary-encoded (both merges return it plain); both
    merge modes."""
    base_rows, log_rows, deletes, seq = [], [], [], 1
    for i, (copies, events) in enumerate(keys):
        base_rows += [(f"k{i}", base_orderings[i], f"k{i}@base{c}") for c in range(copies)]
        for n, (kind, ordering) in enumerate(events):
            if kind == "data":
                log_rows.append((f"k{i}", ordering, f"k{i}@{n}", seq))
            else:
                deletes.append((f"k{i}", None if kind == "natural" else (ordering or 0), seq))
            seq += 1
    base = pa.table({"v": pa.array([r[2] for r in base_rows], pa.string()),
                     KEY: pa.array([r[0] for r in base_rows], pa.string()),
                     ORD: pa.array([r[1] for r in base_rows], pa.int32())})
    if dictionary:
        base = base.set_column(0, "v", base["v"].dictionary_encode())
    base = pa.Table.from_batches(base.to_batches(max_chunksize=chunk), base.schema)
    logs = LogRecords(
        pa.table({"v": pa.array([r[2] for r in log_rows], pa.string()),
                  KEY: pa.array([r[0] for r in log_rows], pa.string()),
                  ORD: pa.array([r[1] for r in log_rows], pa.int32()),
                  SEQ: pa.array([r[3] for r in log_rows], pa.int64())}),
        pa.table({KEY: pa.array([d[0] for d in deletes], pa.string()),
                  ORD: pa.array([d[1] for d in deletes], pa.int32()),
                  SEQ: pa.array([d[2] for d in deletes], pa.int64())}))
    vectorised = merge_slice(base, logs, event_time_ordering=event_time)
    folded = merge_slice_partial(base, logs, event_time_ordering=event_time, nulls_keep_older=False)
    assert vectorised.schema.field("v").type == folded.schema.field("v").type == pa.string()
    assert sorted(vectorised["v"].to_pylist()) == sorted(folded["v"].to_pylist())
