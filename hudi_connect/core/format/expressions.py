"""Predicates of our own (RFC-64): an expression tree that becomes a Spark column and can
be analysed to skip partitions and files.

    from hudi_connect.core.format.expressions import col, lit
    predicate = (col("city") == "paris") & col("amount").between(10, 20) & ~col("name").is_null()
    df.where(to_spark(predicate))

The tree is pure Python (no pyspark) so that executors can evaluate it while they
list files. Analysis is conservative: ``may_match`` says False only when no row can
satisfy the predicate (SQL semantics: a comparison with NULL is not satisfied).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hudi_connect.core.format.spark_coercion import (
    UNDECIDED,
    folds_to_a_constant,
    in_mixes_strings,
    spark_compare,
    spark_literal,
)

COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
NEGATED = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


class Expression:
    """Operators build trees: ``==`` and friends compare, ``&``, ``|`` and ``~`` combine."""

    def _compare(self, op: str, other: Any) -> Comparison:
        return Comparison(op, self, _expr(other))

    def __eq__(self, other: Any) -> Comparison:  # type: ignore[override]
        return self._compare("=", other)

    def __ne__(self, other: Any) -> Comparison:  # type: ignore[override]
        return self._compare("!=", other)

    def __lt__(self, other: Any) -> Comparison:
        return self._compare("<", other)

    def __le__(self, other: Any) -> Comparison:
        return self._compare("<=", other)

    def __gt__(self, other: Any) -> Comparison:
        return self._compare(">", other)

    def __ge__(self, other: Any) -> Comparison:
        return self._compare(">=", other)

    def __and__(self, other: Expression) -> And:
        return And(self, other)

    def __or__(self, other: Expression) -> Or:
        return Or(self, other)

    def __invert__(self) -> Not:
        return Not(self)

    def isin(self, *values: Any) -> In:
        """``self IN (values...)``; the values are plain Python values."""
        return In(self, tuple(values))

    def is_null(self) -> IsNull:
        """``self IS NULL``."""
        return IsNull(self)

    def is_not_null(self) -> Not:
        """``self IS NOT NULL``, built as ``NOT (self IS NULL)``."""
        return Not(IsNull(self))

    def between(self, low: Any, high: Any) -> And:
        """``low <= self <= high`` (both bounds inclusive, as SQL's BETWEEN)."""
        return And(self >= low, self <= high)

    def columns(self) -> frozenset[str]:
        """The columns the expression reads."""
        found: set[str] = set()
        _walk(self, lambda e: found.add(e.name) if isinstance(e, Column) else None)
        return frozenset(found)


@dataclass(frozen=True, eq=False, repr=True)
class Column(Expression):
    """A column read by name (Hudi's ``NameReference``)."""

    name: str


@dataclass(frozen=True, eq=False, repr=True)
class Literal(Expression):
    """A constant value (Hudi's ``Literal``); a naive ``datetime`` is the client's local time, as pyspark
    reads one, and is kept as that instant (:func:`~hudi_connect.core.format.spark_coercion.spark_literal`)."""

    value: Any

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", spark_literal(self.value))


@dataclass(frozen=True, eq=False, repr=True)
class Comparison(Expression):
    """``left op right`` for one of :data:`COMPARISONS` (Hudi's ``Predicates.BinaryComparison``)."""

    op: str
    left: Expression
    right: Expression

    def __post_init__(self) -> None:
        if self.op not in COMPARISONS:
            raise ValueError(f"unknown comparison {self.op!r}: use one of {', '.join(COMPARISONS)}")


@dataclass(frozen=True, eq=False, repr=True)
class In(Expression):
    """``value IN options`` (Hudi's ``Predicates.In``); the options are plain Python values."""

    value: Expression
    options: tuple[Any, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", tuple(spark_literal(v) for v in self.options))


@dataclass(frozen=True, eq=False, repr=True)
class IsNull(Expression):
    """``value IS NULL``."""

    value: Expression


@dataclass(frozen=True, eq=False, repr=True)
class And(Expression):
    """``left AND right`` (Hudi's ``Predicates.And``), with SQL's three-valued logic."""

    left: Expression
    right: Expression


@dataclass(frozen=True, eq=False, repr=True)
class Or(Expression):
    """``left OR right`` (Hudi's ``Predicates.Or``), with SQL's three-valued logic."""

    left: Expression
    right: Expression


@dataclass(frozen=True, eq=False, repr=True)
class Not(Expression):
    """``NOT value`` (Hudi's ``Predicates.Not``); NOT of NULL stays NULL."""

    value: Expression


@dataclass(frozen=True, eq=False, repr=True)
class Function(Expression):
    """A call of one of the supported scalar functions (:data:`FUNCTIONS`) on argument expressions."""

    name: str
    args: tuple[Expression, ...]

    def __post_init__(self) -> None:
        if self.name not in FUNCTIONS:
            raise ValueError(f"unknown function {self.name!r}: supported are {', '.join(sorted(FUNCTIONS))}")


def col(name: str) -> Column:
    """The column ``name``, to build predicates on: ``col("city") == "paris"``."""
    return Column(name)


def lit(value: Any) -> Literal:
    """A literal ``value``; operators and :func:`fn` wrap plain values in one themselves."""
    return Literal(value)


def _expr(value: Any) -> Expression:
    return value if isinstance(value, Expression) else Literal(value)


def _year(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return UNKNOWN  # an instant's year is in the session's time zone
    return int(value.year)


def _substring(text: str, pos: int, length: int) -> str:
    """Spark's ``substring``: 1-based, 0 read as 1, a negative ``pos`` counted from the end."""
    start = pos - 1 if pos > 0 else len(text) + pos if pos < 0 else 0
    end = start + length
    start = max(start, 0)
    return text[start:end] if start < end else ""


# name -> (Python evaluation, arity); Spark's equivalents are in spark_columns.py
FUNCTIONS: Mapping[str, Callable[..., Any]] = {
    "lower": lambda s: s.lower(),
    "upper": lambda s: s.upper(),
    "length": len,
    "abs": abs,
    "substring": _substring,
    "year": _year,
}


def fn(name: str, *args: Any) -> Function:
    """A call of the function ``name`` (one of :data:`FUNCTIONS`): ``fn("lower", col("city")) == "paris"``."""
    return Function(name, tuple(_expr(a) for a in args))


def _walk(expr: Expression, visit: Callable[[Expression], object]) -> None:
    visit(expr)
    for child in _children(expr):
        _walk(child, visit)


def _children(expr: Expression) -> tuple[Expression, ...]:
    if isinstance(expr, Comparison | And | Or):
        return (expr.left, expr.right)
    if isinstance(expr, In | IsNull | Not):
        return (expr.value,)
    if isinstance(expr, Function):
        return expr.args
    return ()


# --- evaluation on partition values -------------------------------------------------------

UNKNOWN: Any = UNDECIDED  # a value not known here, or a comparison Spark's rules leave undecided here


def evaluate(expr: Expression, row: Mapping[str, Any]) -> Any:
    """SQL three-valued evaluation on ``row``; columns missing from it are UNKNOWN."""
    if isinstance(expr, Column):
        return row.get(expr.name, UNKNOWN)
    if isinstance(expr, Literal):
        return expr.value
    if isinstance(expr, And):
        left, right = evaluate(expr.left, row), evaluate(expr.right, row)
        if left is False or right is False:
            return False
        return True if left is True and right is True else _null_or_unknown(left, right)
    if isinstance(expr, Or):
        left, right = evaluate(expr.left, row), evaluate(expr.right, row)
        if left is True or right is True:
            return True
        return False if left is False and right is False else _null_or_unknown(left, right)
    if isinstance(expr, Not):
        value = evaluate(expr.value, row)
        return value if value is UNKNOWN or value is None else not value
    if isinstance(expr, IsNull):
        value = evaluate(expr.value, row)
        return value if value is UNKNOWN else value is None
    if isinstance(expr, In) and not expr.options:  # NULL IN (): NULL on Spark 3.5, false on 4 (SPARK-44431)
        value = evaluate(expr.value, row)
        return UNKNOWN if value is None or value is UNKNOWN else False
    values = [evaluate(child, row) for child in _children(expr)]
    if any(v is UNKNOWN for v in values):
        return UNKNOWN
    if any(v is None for v in values):
        if isinstance(expr, Comparison) and any(
                isinstance(child, Literal) and folds_to_a_constant(child.value) for child in _children(expr)):
            return UNKNOWN  # Spark may answer true or false for a NULL there, not NULL
        return None
    if isinstance(expr, Comparison):
        return spark_compare(expr.op, values[0], values[1])
    if isinstance(expr, In):
        return _is_in(values[0], expr.options)
    if isinstance(expr, Function):
        try:
            return FUNCTIONS[expr.name](*values)
        except (TypeError, AttributeError):
            return UNKNOWN  # a function of a value Spark would cast first: no conclusion
    raise TypeError(f"not an expression: {expr!r}")


def _null_or_unknown(left: Any, right: Any) -> Any:
    """What AND/OR give when neither side decides: NULL only if no side is unknown (an unknown side may be
    the value that decides, and NOT of the result would then differ)."""
    return UNKNOWN if UNKNOWN in (left, right) else None


def _is_in(value: Any, options: tuple[Any, ...]) -> Any:
    """SQL's ``value IN options``: true on a match, else NULL if an option is NULL, else false."""
    if any(in_mixes_strings(value, option) for option in options):
        return UNKNOWN
    answers = [spark_compare("=", value, option) for option in options if option is not None]
    if True in answers:
        return True
    if any(a is UNKNOWN for a in answers):
        return UNKNOWN
    return None if None in options else False


def partition_may_match(expr: Expression, values: Mapping[str, Any]) -> bool:
    """Whether rows of a partition with these column ``values`` may satisfy ``expr``."""
    return evaluate(expr, values) not in (False, None)


# --- analysis on column statistics --------------------------------------------------------

@dataclass(frozen=True)
class ColumnRange:
    """A file's statistics for one column (from Parquet footers or the metadata table)."""

    min_value: Any
    max_value: Any
    null_count: int | None
    value_count: int | None

    @property
    def all_null(self) -> bool:
        """Whether every value of the column in the file is null (known only when both counts are)."""
        return self.null_count is not None and self.value_count is not None and self.null_count >= self.value_count


@dataclass(frozen=True, eq=False, repr=True)
class _NotNull(Expression):
    """IS NOT NULL, which only the analysis needs (users write ``~col(x).is_null()``)."""

    value: Column


def stats_may_match(expr: Expression, stats: Mapping[str, ColumnRange]) -> bool:
    """Whether a file with these per-column ``stats`` may hold a row satisfying ``expr``.

    Columns without statistics, functions and shapes not analysed are assumed to match.
    """
    if isinstance(expr, And):
        return stats_may_match(expr.left, stats) and stats_may_match(expr.right, stats)
    if isinstance(expr, Or):
        return stats_may_match(expr.left, stats) or stats_may_match(expr.right, stats)
    if isinstance(expr, Not):
        pushed = _push_not(expr.value)
        return True if pushed is None else stats_may_match(pushed, stats)
    if isinstance(expr, _NotNull) and expr.value.name in stats:
        return not stats[expr.value.name].all_null
    if isinstance(expr, IsNull) and isinstance(expr.value, Column) and expr.value.name in stats:
        nulls = stats[expr.value.name].null_count
        return nulls is None or nulls > 0
    if isinstance(expr, In) and isinstance(expr.value, Column) and expr.value.name in stats:
        column = stats[expr.value.name]
        if any(in_mixes_strings(bound, v) for v in expr.options for bound in (column.min_value, column.max_value)):
            return True
        return any(_range_may_match("=", column, v) for v in expr.options if v is not None)
    if isinstance(expr, Comparison):
        if isinstance(expr.left, Column) and isinstance(expr.right, Literal) and expr.left.name in stats:
            return _range_may_match(expr.op, stats[expr.left.name], expr.right.value)
        if isinstance(expr.right, Column) and isinstance(expr.left, Literal) and expr.right.name in stats:
            return _range_may_match(FLIPPED[expr.op], stats[expr.right.name], expr.left.value)
    return True


def _push_not(expr: Expression) -> Expression | None:
    """``NOT expr`` without the NOT, where a rewrite keeps SQL's NULL semantics."""
    if isinstance(expr, Not):
        return expr.value
    if isinstance(expr, Comparison):
        return Comparison(NEGATED[expr.op], expr.left, expr.right)
    if isinstance(expr, And):
        return Or(Not(expr.left), Not(expr.right))
    if isinstance(expr, Or):
        return And(Not(expr.left), Not(expr.right))
    if isinstance(expr, IsNull) and isinstance(expr.value, Column):
        return _NotNull(expr.value)
    return None


def _range_may_match(op: str, stats: ColumnRange, value: Any) -> bool:
    if folds_to_a_constant(value) and (stats.null_count is None or stats.null_count > 0):
        return True  # Spark's constant answer may keep the file's NULLs (folds_to_a_constant)
    if value is None or stats.all_null:
        return False  # comparisons with NULL hold for no row
    low, high = stats.min_value, stats.max_value
    if (isinstance(low, str) or isinstance(high, str)) and not isinstance(value, str):
        return True  # Spark casts each string to the literal's type, an order its minimum and maximum do not keep
    if op == "=":
        return not _certain("<", value, low) and not _certain(">", value, high)
    if op == "!=":
        return not (_certain("=", low, value) and _certain("=", high, value))
    if op in ("<", "<="):
        return low is None or spark_compare(op, low, value) is not False
    return high is None or spark_compare(op, high, value) is not False


def _certain(op: str, a: Any, b: Any) -> bool:
    """Whether ``a op b`` surely holds under Spark's rules (a missing bound proves nothing)."""
    return a is not None and b is not None and spark_compare(op, a, b) is True
