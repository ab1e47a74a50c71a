"""Predicates as users write them, translated to our expression tree so that they can prune.

A read takes a predicate in three spellings: our own tree (``col("city") == "paris"``), a Spark Connect
``Column`` (``F.col("city") == "paris"``) or a SQL string (``"city = 'paris' AND amount BETWEEN 10 AND 20"``,
read with sqlglot's Spark dialect: :mod:`~hudi_connect.table_spec.sql_predicates`). Spark filters the rows with
the predicate as the user wrote it (:attr:`Translation.filter`); pruning partitions and files needs our tree
(:attr:`Translation.pruning`), which the executors evaluate without pyspark.

    translation = translate("city = 'paris' AND my_udf(amount) > 3")
    translation.pruning        # col("city") == "paris": prunes partitions and files
    translation.untranslated   # ("my_udf(amount) > 3",): filters rows only

Pruning may keep more rows than the filter, never fewer. So a part the tree cannot express (a UDF, a cast,
arithmetic, LIKE, CASE, a subquery, a nested field, a literal whose value depends on the session, such as a
``TIMESTAMP`` without a zone) is dropped only as a conjunct of an AND, which drops a condition and keeps
more; under NOT or inside an OR, dropping it could keep less, so the whole NOT or OR stays untranslated.
Literals keep their Python values: a Connect date literal becomes a ``datetime.date``, a timestamp an aware
UTC ``datetime``, a SQL ``1.5`` a ``Decimal`` and ``1e3`` a float, as Spark types them.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeAlias, cast

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
from hudi_connect.table_spec.spark_columns import to_spark
from hudi_connect.table_spec.sql_predicates import (
    Parts,
    Untranslatable,
    function_call,
    joined,
    split,
    split_sql,
    sql_predicate,
    sql_value,
    whole,
)

UserPredicate: TypeAlias = Expression | SparkColumn | str
"""A predicate as a read takes it: our tree, a Spark Connect ``Column`` or a SQL string."""

UserPredicates: TypeAlias = UserPredicate | Sequence[UserPredicate] | None
"""One predicate or several (all must hold), as the reads' ``predicates`` argument takes them."""


@dataclass(frozen=True, eq=False)
class Translation:
    """A predicate as pruning and filtering use it.

    ``pruning``: what prunes partitions and files (the whole predicate, or for an AND its translatable
    conjuncts; None when no part translates); ``given``: the predicate as its user gave it; ``untranslated``:
    the parts that only filter rows, as text (for ``explain``).
    """

    pruning: Expression | None
    given: UserPredicate
    untranslated: tuple[str, ...] = ()

    @cached_property
    def filter(self) -> SparkColumn:
        """The column Spark filters the rows with: the user's own ``Column``, ``F.expr(sql)`` for a SQL string,
        :func:`~hudi_connect.table_spec.to_spark` of our tree. Made when first asked: a planner without a Spark
        session (the data source's) prunes with ``pruning`` and never asks."""
        if isinstance(self.given, Expression):
            return to_spark(self.given)
        if isinstance(self.given, str):
            return F.expr(self.given)
        return self.given


def translate(predicate: UserPredicate) -> Translation:
    """``predicate`` (our tree, a Spark Connect ``Column`` or a SQL string) as pruning and filtering use it.

        translate(F.col("city").isin("paris", "rome") & (F.col("amount") > 10)).pruning
        # col("city").isin("paris", "rome") & (col("amount") > 10)
    """
    if isinstance(predicate, Expression):
        return Translation(predicate, predicate)
    if isinstance(predicate, str):
        if not predicate.strip():
            raise ValueError("an empty SQL predicate: give a condition, such as \"city = 'paris'\"")
        pruning, untranslated = split_sql(predicate)
        return Translation(pruning, predicate, untranslated)
    node = _connect_expression(predicate)
    if node is None:
        raise TypeError(f"a predicate is an Expression (hudi_connect.col), a Spark Connect Column or a SQL string, "
                        f"not {type(predicate).__name__}: {predicate!r}")
    kept, dropped = _split_connect(node)
    return Translation(joined(kept), predicate, tuple(dropped))


def as_sequence(predicates: UserPredicates) -> tuple[UserPredicate, ...]:
    """``predicates`` as a tuple: one predicate alone, several (all must hold), or none for None."""
    if predicates is None:
        return ()
    if isinstance(predicates, Expression | str | SparkColumn):
        return (predicates,)
    if _connect_expression(predicates) is not None:  # pyspark 3.5's Connect Column is no pyspark.sql.Column
        return (cast(UserPredicate, predicates),)
    return tuple(predicates)


def translate_all(predicates: UserPredicates) -> tuple[Translation, ...]:
    """Each of ``predicates`` translated (:func:`translate`)."""
    return tuple(translate(p) for p in as_sequence(predicates))


def pruning_of(predicates: UserPredicates) -> list[Expression]:
    """What of ``predicates`` prunes partitions and files: their translations' pruning predicates."""
    return [t.pruning for t in translate_all(predicates) if t.pruning is not None]


def conjuncts(expr: Expression) -> list[Expression]:
    """``expr`` split at its top-level ANDs (each part holds wherever ``expr`` does)."""
    return [*conjuncts(expr.left), *conjuncts(expr.right)] if isinstance(expr, And) else [expr]


# --- describing our tree (for explain) -------------------------------------------------------

_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def describe(expr: Expression) -> str:
    """``expr`` as SQL-like text: ``city = 'paris' AND amount >= 10``."""
    if isinstance(expr, Column):
        return expr.name if _PLAIN_NAME.fullmatch(expr.name) else "`" + expr.name.replace("`", "``") + "`"
    if isinstance(expr, Literal):
        return _describe_value(expr.value)
    if isinstance(expr, Comparison):
        return f"{_operand(expr.left, expr)} {expr.op} {_operand(expr.right, expr)}"
    if isinstance(expr, In):
        return f"{_operand(expr.value, expr)} IN ({', '.join(_describe_value(v) for v in expr.options)})"
    if isinstance(expr, IsNull):
        return f"{_operand(expr.value, expr)} IS NULL"
    if isinstance(expr, Not) and isinstance(expr.value, IsNull):
        return f"{_operand(expr.value.value, expr.value)} IS NOT NULL"
    if isinstance(expr, Not):
        return f"NOT {_operand(expr.value, expr)}"
    if isinstance(expr, And | Or):
        word = "AND" if isinstance(expr, And) else "OR"
        return f"{_operand(expr.left, expr)} {word} {_operand(expr.right, expr)}"
    if isinstance(expr, Function):
        return f"{expr.name}({', '.join(describe(a) for a in expr.args)})"
    return repr(expr)


def _operand(expr: Expression, parent: Expression) -> str:
    """An operand's text, in parentheses where SQL would bind it otherwise (an OR in an AND, a predicate
    compared) or a reader might wonder (an AND in an OR)."""
    text = describe(expr)
    if isinstance(expr, And | Or):
        return text if type(expr) is type(parent) else f"({text})"
    if isinstance(parent, And | Or | Not) or isinstance(expr, Column | Literal | Function):
        return text
    return f"({text})"


def _describe_value(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "\\'") + "'"
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    return str(value)


# --- Spark Connect columns -------------------------------------------------------------------

_CONNECT_COMPARISONS = {"==": "=", "=": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_QUOTED_NAME = re.compile(r"`((?:[^`]|``)*)`")
_CONNECT_FUNCTIONS = {"lower": "lower", "upper": "upper", "length": "length", "abs": "abs", "year": "year",
                      "substring": "substring", "substr": "substring"}  # Spark's names of our tree's functions
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _connect_expression(value: Any) -> Any:
    """The expression tree of a Spark Connect ``Column`` (None for anything else)."""
    try:
        from pyspark.sql.connect.column import Column as ConnectColumn
    except ImportError:  # no Connect client: it cannot be one
        return None
    return getattr(value, "_expr", None) if isinstance(value, ConnectColumn) else None


def _kind(node: Any) -> str:
    """The Connect expression's class (by name: pyspark 3.5 and 4.x keep the names, not the modules)."""
    return type(node).__name__


def _call(node: Any) -> tuple[str, list[Any]] | None:
    """(lower-cased name, arguments) of an unresolved function call (Spark's names ignore case)."""
    if _kind(node) != "UnresolvedFunction" or getattr(node, "_is_distinct", False):
        return None
    name, args = getattr(node, "_name", None), getattr(node, "_args", None)
    if not isinstance(name, str) or not isinstance(args, list | tuple):
        return None
    return name.lower(), list(args)


def _connect_text(node: Any) -> str:
    """A Connect expression as text, as pyspark renders it: ``like(s, x%)``."""
    text = getattr(node, "_expr", None)
    if _kind(node) == "SQLExpression" and isinstance(text, str):
        return text  # pyspark 3.5 renders it as None, and a call of it fails to render
    name, args = getattr(node, "_name", None), getattr(node, "_args", None)
    if _kind(node) == "UnresolvedFunction" and isinstance(name, str) and isinstance(args, list | tuple):
        return f"{name}({', '.join(_connect_text(a) for a in args)})"
    try:
        return str(repr(node))
    except Exception:  # a rendering pyspark does not have: name the kind at least
        return _kind(node)


def _connect_conjuncts(node: Any) -> list[Any] | None:
    call = _call(node)
    if call is not None and call[0] == "and" and len(call[1]) == 2:
        return call[1]
    return None


def _split_connect(node: Any) -> Parts:
    """A Connect expression's conjuncts, each translated whole or else described (an AND may drop them);
    SQL text in it (``F.expr``) is split at its own ANDs."""
    return split(node, _connect_conjuncts, _connect_leaf)


def _connect_leaf(node: Any) -> Parts:
    text = getattr(node, "_expr", None)
    if _kind(node) == "SQLExpression" and isinstance(text, str):
        kept, dropped = split_sql(text)
        return conjuncts(kept) if kept is not None else [], list(dropped)
    return whole(node, _connect_predicate, _connect_text)


def _connect_predicate(node: Any) -> Expression:
    """A Connect expression in a predicate's place (all of it translated, or :class:`Untranslatable`)."""
    kind = _kind(node)
    if kind == "SQLExpression":
        return sql_predicate(getattr(node, "_expr", None))
    if kind == "ColumnReference":
        return Comparison("=", _connect_value(node), Literal(True))  # a boolean column
    if kind == "LiteralExpression":
        value = _connect_literal(node)
        if value is None or isinstance(value, bool):
            return Literal(value)
        raise Untranslatable("a non-boolean literal as a predicate")
    call = _call(node)
    if call is None:
        raise Untranslatable(kind)
    name, args = call
    if name in ("and", "or") and len(args) == 2:
        left, right = _connect_predicate(args[0]), _connect_predicate(args[1])
        return And(left, right) if name == "and" else Or(left, right)
    if name == "not" and len(args) == 1:
        return Not(_connect_predicate(args[0]))
    if name in _CONNECT_COMPARISONS and len(args) == 2:
        return Comparison(_CONNECT_COMPARISONS[name], _connect_value(args[0]), _connect_value(args[1]))
    if name in ("isnull", "isnotnull") and len(args) == 1:
        test = IsNull(_connect_value(args[0]))
        return test if name == "isnull" else Not(test)
    if name == "in" and args:
        return In(_connect_value(args[0]), tuple(_connect_option(a) for a in args[1:]))
    raise Untranslatable(name)


def _connect_value(node: Any) -> Expression:
    """A Connect expression in a value's place: a column, a literal or a function of our tree."""
    kind = _kind(node)
    if kind == "ColumnReference":
        if getattr(node, "_is_metadata_column", False):
            raise Untranslatable("a metadata column")
        return Column(_column_name(getattr(node, "_unparsed_identifier", None)))
    if kind == "LiteralExpression":
        return Literal(_connect_literal(node))
    if kind == "SQLExpression":
        return sql_value(getattr(node, "_expr", None))
    call = _call(node)
    if call is not None and call[0] in _CONNECT_FUNCTIONS:
        return function_call(_CONNECT_FUNCTIONS[call[0]], [_connect_value(a) for a in call[1]])
    raise Untranslatable(kind)


def _connect_option(node: Any) -> Any:
    """An IN list's option: a literal only."""
    if _kind(node) != "LiteralExpression":
        raise Untranslatable("an IN option that is not a literal")
    return _connect_literal(node)


def _column_name(identifier: Any) -> str:
    """A top-level column's name from Spark's unparsed identifier (a nested or qualified one does not translate)."""
    if not isinstance(identifier, str) or not identifier:
        raise Untranslatable("a column without a name")
    quoted = _QUOTED_NAME.fullmatch(identifier)
    if quoted is not None:
        return quoted.group(1).replace("``", "`")
    if "." in identifier or "`" in identifier or identifier == "*":
        raise Untranslatable(f"the column {identifier}")
    return identifier


def _connect_literal(node: Any) -> Any:
    """A Connect literal's Python value (a date from its days, a timestamp from its microseconds)."""
    value, data_type = getattr(node, "_value", None), type(getattr(node, "_dataType", None)).__name__
    if value is None:
        return None
    if data_type in ("BooleanType", "StringType") or (
            data_type in ("ByteType", "ShortType", "IntegerType", "LongType") and isinstance(value, int)):
        return value
    if data_type == "DoubleType" and isinstance(value, float):
        return value
    if data_type == "DecimalType" and isinstance(value, decimal.Decimal):
        return value
    if data_type == "DateType" and isinstance(value, int):
        return dt.date(1970, 1, 1) + dt.timedelta(days=value)
    if data_type == "TimestampType" and isinstance(value, int):
        return _EPOCH + dt.timedelta(microseconds=value)
    # FloatType: Spark compares in single precision; TimestampNTZType: a wall-clock time, which our tree's
    # datetimes (instants) cannot hold; binary, intervals, times and arrays: not in our tree
    raise Untranslatable(f"a literal of {data_type}")


__all__ = [
    "Translation", "UserPredicate", "UserPredicates", "as_sequence", "conjuncts", "describe", "pruning_of",
    "translate", "translate_all",
]
