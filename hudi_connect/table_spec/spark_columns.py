"""Our expression tree as Spark columns (kept apart: executors evaluate the tree without pyspark)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from functools import reduce
from typing import Any

from pyspark.sql import Column as SparkColumn
from pyspark.sql import functions as F

from hudi_connect.core.format.expressions import (
    And,
    Column,
    Comparison,
    Expression,
    Function,
    In,
    IsNull,
    Literal,
    Not,
    Or,
)

_COMPARE: Mapping[str, Callable[[SparkColumn, SparkColumn], SparkColumn]] = {
    "=": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}
_FUNCTIONS: Mapping[str, Callable[..., SparkColumn]] = {
    "lower": F.lower, "upper": F.upper, "length": F.length, "abs": F.abs, "year": F.year,
    "substring": lambda s, pos, length: s.substr(pos, length),
}


def to_spark(expr: Expression, qualifier: str | None = None) -> SparkColumn:
    """The Spark column computing ``expr`` (SQL semantics, as :func:`evaluate` mirrors).

    ``qualifier`` reads columns from a struct column instead (``after`` of a change event, say).
    """
    if isinstance(expr, Column):
        return F.col(f"{qualifier}.{expr.name}" if qualifier else expr.name)
    if isinstance(expr, Literal):
        return spark_literal(expr.value)
    if isinstance(expr, Comparison):
        return _COMPARE[expr.op](to_spark(expr.left, qualifier), to_spark(expr.right, qualifier))
    if isinstance(expr, In):
        return to_spark(expr.value, qualifier).isin(*(spark_literal(option) for option in expr.options))
    if isinstance(expr, IsNull):
        return to_spark(expr.value, qualifier).isNull()
    if isinstance(expr, And):
        return to_spark(expr.left, qualifier) & to_spark(expr.right, qualifier)
    if isinstance(expr, Or):
        return to_spark(expr.left, qualifier) | to_spark(expr.right, qualifier)
    if isinstance(expr, Not):
        return ~to_spark(expr.value, qualifier)
    if isinstance(expr, Function):
        return _FUNCTIONS[expr.name](*(to_spark(a, qualifier) for a in expr.args))
    raise TypeError(f"not an expression: {expr!r}")


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def spark_literal(value: Any) -> SparkColumn:
    """``value`` as a Spark literal. Our tree's datetimes are instants (a naive one the client's local time, as
    pyspark reads it) and go as TIMESTAMP microseconds: pyspark's ``lit`` would type a datetime by whichever
    session is active in the process (its ``spark.sql.timestampType``), asking that session's server, not the
    one the plan runs on; a session preferring TIMESTAMP_NTZ would turn the instant into its wall-clock time,
    and a dead one would fail the read."""
    if isinstance(value, dt.datetime):
        instant = value if value.tzinfo is not None else value.astimezone()
        return F.timestamp_micros(F.lit((instant - _EPOCH) // dt.timedelta(microseconds=1)))
    return F.lit(value)


def all_of(predicates: Sequence[Expression], qualifier: str | None = None) -> Any:
    """The conjunction of ``predicates`` as one Spark column (None when there are none)."""
    return reduce(lambda a, b: a & b, (to_spark(p, qualifier) for p in predicates)) if predicates else None
