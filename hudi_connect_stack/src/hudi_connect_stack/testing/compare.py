"""Comparing rows read by different readers (Spark, Arrow, hudi-rs) as multisets."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa


def normalise(value: Any) -> Any:
    """One comparable form for what Spark's collect() and Arrow's to_pylist() return."""
    if isinstance(value, dict):
        return tuple(sorted((normalise(k), normalise(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(normalise(v) for v in value)
    if isinstance(value, decimal.Decimal):
        return str(value.normalize())
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else round(value, 5)  # NaN is equal to itself, as Spark compares it
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value.isoformat()
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    return value


def row_multiset(records: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(normalise(r[c]) for c in columns) for r in records)


def arrow_multiset(table: pa.Table, columns: Sequence[str]) -> Counter[tuple[Any, ...]]:
    return row_multiset(table.select(list(columns)).to_pylist(maps_as_pydicts="strict"), columns)
