"""SQL predicates (``"city = 'paris' AND amount BETWEEN 10 AND 20"``) read with sqlglot's Spark dialect and
translated to our expression tree, and the rules all user predicates translate by
(:mod:`~hudi_connect.table_spec.user_predicates`, which Spark Connect Columns go through too).

A part that does not translate raises :class:`Untranslatable`; :func:`split` drops such a part only as a
conjunct of an AND. Literals are typed as Spark types them: ``1`` an integer, ``1.5`` a decimal, ``1e3`` a
double, ``DATE '2024-01-01'`` a date, a ``TIMESTAMP`` with a zone that instant. What Spark reads otherwise
than sqlglot, or reads by the session's settings, does not translate: a ``TIMESTAMP`` without a zone (the
session's time zone), ``1.5F`` (single precision), a cast that rounds, string literals in SQL with
backslashes (escapes to Spark, kept as written by sqlglot).
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections.abc import Callable, Sequence
from functools import reduce
from typing import TYPE_CHECKING, Any, TypeAlias

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

if TYPE_CHECKING:
    from sqlglot import exp


class Untranslatable(Exception):
    """A part of a predicate our tree cannot express (caught where an AND may drop it)."""


def joined(parts: Sequence[Expression]) -> Expression | None:
    """``parts`` joined by AND (None for none)."""
    return reduce(And, parts) if parts else None


# the functions of our tree (expressions.FUNCTIONS) and how many arguments each takes
ARITY = {"lower": 1, "upper": 1, "length": 1, "abs": 1, "year": 1, "substring": 3}
_DECIMAL_DIGITS = 38  # Spark's largest decimal precision; a longer number literal is not a decimal to Spark


def function_call(name: str, args: list[Expression]) -> Function:
    """A call of our tree's function ``name`` (:data:`ARITY`), if given as many arguments as it takes."""
    if ARITY[name] != len(args):
        raise Untranslatable(f"{name} with {len(args)} arguments")
    return Function(name, tuple(args))


Parts: TypeAlias = tuple[list[Expression], list[str]]  # translated conjuncts, and the others as text


def split(node: Any, conjuncts_of: Callable[[Any], list[Any] | None], leaf: Callable[[Any], Parts]) -> Parts:
    """``node`` split at its ANDs (``conjuncts_of``: an AND's operands, else None), each other part
    translated by ``leaf``: an AND may drop what does not translate."""
    parts = conjuncts_of(node)
    if parts is None:
        return leaf(node)
    kept: list[Expression] = []
    dropped: list[str] = []
    for part in parts:
        more_kept, more_dropped = split(part, conjuncts_of, leaf)
        kept.extend(more_kept)
        dropped.extend(more_dropped)
    return kept, dropped


def whole(node: Any, strict: Callable[[Any], Expression], text: Callable[[Any], str]) -> Parts:
    """``node`` translated whole by ``strict``, or else described by ``text``."""
    try:
        return [strict(node)], []
    except Untranslatable:
        return [], [text(node)]


# --- SQL strings -----------------------------------------------------------------------------

_DATE_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}")
_ZONED_TIMESTAMP_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:\d{2})")
_INTEGER_TEXT = re.compile(r"\d+")
_DECIMAL_TEXT = re.compile(r"\d+\.?\d*|\.\d+")
_DOUBLE_TEXT = re.compile(r"(?:\d+\.?\d*|\.\d+)[eE][+-]?\d+")
_INTEGER_RANGES = {"TINYINT": 2 ** 7, "SMALLINT": 2 ** 15, "INT": 2 ** 31, "BIGINT": 2 ** 63}


def split_sql(sql: str) -> tuple[Expression | None, tuple[str, ...]]:
    """A SQL predicate's pruning (its translated conjuncts) and its untranslated parts, as text; what sqlglot
    cannot parse is left to Spark whole."""
    try:
        tree = _parsed(sql)
    except Untranslatable:
        return None, (sql,)
    strings = _reads_strings(sql)
    kept, dropped = split(tree, _sql_conjuncts, lambda n: whole(n, lambda m: _sql_predicate(m, strings), _sql_text))
    return joined(kept), tuple(dropped)


def sql_predicate(sql: Any) -> Expression:
    """SQL text (a Connect Column's ``F.expr``) in a predicate's place, translated whole, else
    :class:`Untranslatable`."""
    return _sql_predicate(_parsed(sql), _reads_strings(sql))


def sql_value(sql: Any) -> Expression:
    """SQL text in a value's place (a column, a literal, a function of our tree), else :class:`Untranslatable`."""
    return _sql_value(_parsed(sql), _reads_strings(sql))


def _reads_strings(sql: Any) -> bool:
    """Whether sqlglot reads the string literals of ``sql`` as Spark does: not where backslashes are, which
    Spark reads as escapes ('\\n' is a newline) and sqlglot keeps as written."""
    return isinstance(sql, str) and "\\" not in sql


def _parsed(sql: Any) -> exp.Expr:
    import sqlglot
    from sqlglot import errors

    if not isinstance(sql, str):
        raise Untranslatable("no SQL text")
    try:
        return sqlglot.parse_one(sql, dialect="spark")
    except errors.SqlglotError as error:
        raise Untranslatable(str(error)) from error


def _sql_text(node: exp.Expr) -> str:
    return node.sql(dialect="spark")


def _unwrapped(node: exp.Expr) -> exp.Expr:
    from sqlglot import exp

    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _only(node: exp.Expr, *allowed: str) -> None:
    """Refuses a node with arguments beyond ``allowed`` (SYMMETRIC, a subquery, a qualifier...)."""
    extra = [key for key, value in node.args.items() if key not in allowed and value not in (None, False, [])]
    if extra:
        raise Untranslatable(f"{type(node).__name__} with {', '.join(extra)}")


def _sql_conjuncts(node: exp.Expr) -> list[exp.Expr] | None:
    from sqlglot import exp

    node = _unwrapped(node)
    return [node.this, node.expression] if isinstance(node, exp.And) else None


def _sql_predicate(node: exp.Expr, strings: bool = True) -> Expression:
    """A SQL expression in a predicate's place (all of it translated, or :class:`Untranslatable`)."""
    from sqlglot import exp

    node = _unwrapped(node)
    comparisons: dict[type[exp.Expr], str] = {
        exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=",
    }
    if isinstance(node, exp.And | exp.Or):
        _only(node, "this", "expression")
        left, right = _sql_predicate(node.this, strings), _sql_predicate(node.expression, strings)
        return And(left, right) if isinstance(node, exp.And) else Or(left, right)
    if isinstance(node, exp.Not):
        _only(node, "this")
        return Not(_sql_predicate(node.this, strings))
    if type(node) in comparisons:
        _only(node, "this", "expression")
        return Comparison(comparisons[type(node)], _sql_value(node.this, strings), _sql_value(node.expression, strings))
    if isinstance(node, exp.Is) and isinstance(_unwrapped(node.expression), exp.Null):
        _only(node, "this", "expression")
        return IsNull(_sql_value(node.this, strings))
    if isinstance(node, exp.In):
        _only(node, "this", "expressions")
        return In(_sql_value(node.this, strings), tuple(_sql_literal(o, strings) for o in node.expressions))
    if isinstance(node, exp.Between):
        _only(node, "this", "low", "high")
        value = _sql_value(node.this, strings)
        return And(Comparison(">=", value, _sql_value(node.args["low"], strings)),
                   Comparison("<=", value, _sql_value(node.args["high"], strings)))
    if isinstance(node, exp.Column):
        return Comparison("=", _sql_value(node, strings), Literal(True))  # a boolean column
    if isinstance(node, exp.Boolean | exp.Null):
        return Literal(_sql_literal(node, strings))
    raise Untranslatable(type(node).__name__)


def _sql_value(node: exp.Expr, strings: bool = True) -> Expression:
    """A SQL expression in a value's place: a column, a literal or a function of our tree."""
    from sqlglot import exp

    node = _unwrapped(node)
    if isinstance(node, exp.Column):
        _only(node, "this")
        identifier = node.this
        if not isinstance(identifier, exp.Identifier) or not isinstance(identifier.this, str):
            raise Untranslatable("a column that is not a name")
        return Column(identifier.this)
    functions: dict[type[exp.Expr], str] = {exp.Lower: "lower", exp.Upper: "upper", exp.Length: "length",
                                            exp.Abs: "abs"}
    if type(node) in functions:
        _only(node, "this")
        return function_call(functions[type(node)], [_sql_value(node.this, strings)])
    if isinstance(node, exp.Substring):
        _only(node, "this", "start", "length")
        args = [node.this, node.args.get("start"), node.args.get("length")]
        return function_call("substring", [_sql_value(a, strings) for a in args if a is not None])
    if isinstance(node, exp.Year):
        _only(node, "this")
        inner = node.this
        if isinstance(inner, exp.TsOrDsToDate):  # sqlglot's mark of year()'s argument read as a date
            _only(inner, "this")
            inner = inner.this
        return function_call("year", [_sql_value(inner, strings)])
    return Literal(_sql_literal(node, strings))


def _sql_literal(node: exp.Expr, strings: bool = True) -> Any:
    """A SQL literal's Python value, typed as Spark types it."""
    from sqlglot import exp

    node = _unwrapped(node)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Neg):
        value = _sql_literal(node.this, strings)
        if isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool):
            return -value
        raise Untranslatable("a negated non-number")
    if isinstance(node, exp.Literal):
        text = node.this
        if not isinstance(text, str):
            raise Untranslatable("a literal without text")
        if node.is_string:
            if not strings:
                raise Untranslatable("a string literal beside backslash escapes")
            return text
        return _number(text)
    if isinstance(node, exp.Cast):  # typed literals: DATE '...', 10L, 1.5BD, and casts of literals
        return _typed_literal(node, strings)
    raise Untranslatable(type(node).__name__)


def _number(text: str) -> int | float | decimal.Decimal:
    """A SQL number as Spark types it: digits an integer, with a point a decimal, with an exponent a double."""
    if len(text.replace(".", "").lstrip("0")) > _DECIMAL_DIGITS:
        raise Untranslatable(f"the number {text}")
    if _INTEGER_TEXT.fullmatch(text):
        return int(text)  # beyond bigint, Literal types it a decimal (spark_literal)
    if _DECIMAL_TEXT.fullmatch(text):
        return decimal.Decimal(text)
    if _DOUBLE_TEXT.fullmatch(text):
        return float(text)
    raise Untranslatable(f"the number {text}")


def _typed_literal(node: exp.Cast, strings: bool) -> Any:
    """A literal cast to a type, where the value is exactly the literal's (no rounding, no session zone)."""
    from sqlglot import exp

    _only(node, "this", "to", "_type")
    literal, target = _unwrapped(node.this), node.to
    if not (isinstance(literal, exp.Literal) and isinstance(literal.this, str) and isinstance(target, exp.DataType)):
        raise Untranslatable("a cast of a non-literal")
    text, type_name = literal.this, target.this.name
    if literal.is_string and not strings:
        raise Untranslatable("a string literal beside backslash escapes")
    if type_name == "DATE" and literal.is_string and _DATE_TEXT.fullmatch(text):
        return _parsed_date(text)
    if type_name in ("TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMPLTZ") and literal.is_string \
            and _ZONED_TIMESTAMP_TEXT.fullmatch(text):
        # Spark reads a TIMESTAMP literal with a zone as that instant (whatever spark.sql.timestampType says);
        # without one, in the session's time zone, which is not known here
        return dt.datetime.fromisoformat(text).astimezone(dt.UTC)
    if type_name in _INTEGER_RANGES and not literal.is_string and _INTEGER_TEXT.fullmatch(text):
        value = int(text)
        if value < _INTEGER_RANGES[type_name]:
            return value
    if type_name == "DOUBLE" and not literal.is_string:
        number = _number(text)
        return float(number)
    if type_name == "DECIMAL":
        return _exact_decimal(text, target)
    raise Untranslatable(f"a {type_name} literal {text!r}")


def _parsed_date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError as error:
        raise Untranslatable(f"the date {text}") from error


def _exact_decimal(text: str, target: exp.DataType) -> decimal.Decimal:
    """``text`` as a DECIMAL(p, s) that holds it exactly (Spark would round or overflow otherwise)."""
    texts = [str(param.this.this) for param in target.expressions]  # DataTypeParam(Literal)
    precision, scale = (10, 0) if not texts else (int(texts[0]), int(texts[1]) if len(texts) > 1 else 0)
    if not (_DECIMAL_TEXT.fullmatch(text) or _INTEGER_TEXT.fullmatch(text)):
        raise Untranslatable(f"the decimal {text}")
    value = decimal.Decimal(text)
    exponent = value.as_tuple().exponent
    if not isinstance(exponent, int) or -exponent > scale:
        raise Untranslatable(f"the decimal {text} in scale {scale}")
    integer_digits = len(str(abs(int(value)))) if int(value) else 0
    if integer_digits > precision - scale:
        raise Untranslatable(f"the decimal {text} in precision {precision}")
    return value


__all__ = ["ARITY", "Parts", "Untranslatable", "function_call", "joined", "split", "split_sql", "sql_predicate",
           "sql_value", "whole"]
