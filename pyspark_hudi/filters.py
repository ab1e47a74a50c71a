"""Spark's pushed filters (Spark 4.1+) as our predicates, for pruning partitions only.

Spark applies every filter again to the rows the scan returns, so a filter this module cannot express, or one on
a column the pruning must not judge, is simply not used: pruning may only keep too much, never too little.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hudi_connect.core.format.expressions import Comparison, Expression, col, lit


def expression_of(pushed: Any) -> Expression | None:
    """A pushed filter as our predicate, or None where it names a nested field or is of a kind ours lacks (the
    string matches); ``NOT`` of an expressible filter is expressible."""
    from pyspark.sql import datasource as ds  # the filter classes exist from Spark 4.1

    if isinstance(pushed, ds.Not):
        inner = expression_of(pushed.child)
        return ~inner if inner is not None else None
    attribute: tuple[str, ...] = getattr(pushed, "attribute", ())
    if len(attribute) != 1:
        return None
    column = col(attribute[0])
    for kind, op in _COMPARISONS:
        if isinstance(pushed, getattr(ds, kind)):
            return Comparison(op, column, lit(pushed.value))
    if isinstance(pushed, ds.In):
        return column.isin(*pushed.value)
    if isinstance(pushed, ds.IsNull):
        return column.is_null()
    if isinstance(pushed, ds.IsNotNull):
        return ~column.is_null()
    return None


_COMPARISONS = (("EqualTo", "="), ("GreaterThan", ">"), ("GreaterThanOrEqual", ">="), ("LessThan", "<"),
                ("LessThanOrEqual", "<="))


def pruning_predicates(pushed: Iterable[Any], columns: Iterable[str]) -> list[Expression]:
    """The pushed filters on ``columns`` (the partition columns pruning may judge) as our predicates."""
    judged = set(columns)
    found = (expression_of(f) for f in pushed)
    return [e for e in found if e is not None and e.columns() <= judged]
