"""Our expression tree as Spark columns (kept apart: executors evaluate the tree without pyspark)."""

from __future__ import annotations

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
        return F.lit(expr.value)
    if isinstance(expr, Comparison):
        return _COMPARE[expr.op](to_spark(expr.left, qualifier), to_spark(expr.right, qualifier))
    if isinstance(expr, In):
        return to_spark(expr.value, qualifier).isin(*expr.options)
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


def all_of(predicates: Sequence[Expression], qualifier: str | None = None) -> Any:
    """The conjunction of ``predicates`` as one Spark column (None when there are none)."""
    return reduce(lambda a, b: a & b, (to_spark(p, qualifier) for p in predicates)) if predicates else None
