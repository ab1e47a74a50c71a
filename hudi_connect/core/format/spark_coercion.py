"""Comparisons of Python values as Spark compares them, for pruning that never drops a row Spark would keep.

Spark does not compare values of different types as Python does: ``date_col = '2024-01-01'`` casts the
string to a date, ``int_col = '2024'`` casts it to the column's number, ``string_col = 5`` casts the
column to a number (``TypeCoercion.findCommonTypeForBinaryComparison``), and NaN equals NaN and is greater
than any other double. Python answers ``False`` to all of these, which pruning reads as "no row can
match". So every comparison the pruner makes goes through :func:`spark_compare`, which answers
``True``/``False`` only where Spark's answer is certain and :data:`UNDECIDED` elsewhere: a string that
Spark's cast might read differently, a timestamp string (parsed in the session's time zone, which a
worker does not know), a date against a timestamp, a timestamp without a zone against one with a zone.
An undecided comparison keeps the partition or file; Spark's own filter, applied to every read's rows
after pruning, then decides each row.

Literals built on the client are normalised once (:func:`spark_literal`): a naive ``datetime`` means
the client's local time, as pyspark sends it (``TimestampType.toInternal``), so it becomes an aware
instant before it is shipped to a worker whose zone may differ.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import operator
import re
import struct
from collections.abc import Callable, Mapping
from typing import Any, Final

OPERATORS: Mapping[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}


class _Undecided:
    def __repr__(self) -> str:
        return "UNDECIDED"


UNDECIDED: Final[Any] = _Undecided()
"""The answer of a comparison whose outcome under Spark's rules is not certain here."""

# Spark's string-to-date cast (DateTimeUtils.stringToDate): yyyy, yyyy-[m]m, yyyy-[m]m-[d]d, then a space or
# 'T' and anything. Signed and five-digit years are left undecided.
_DATE = re.compile(r"\s*(\d{4})(?:-(\d{1,2})(?:-(\d{1,2})(?:[ T].*)?)?)?\s*", re.DOTALL)
# Integers and decimals as both Spark's casts and Python read them; other spellings stay undecided.
_INTEGER = re.compile(r"\s*[+-]?\d+\s*")
_FRACTIONAL = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*")
_TRUE, _FALSE = {"t", "true", "y", "yes", "1"}, {"f", "false", "n", "no", "0"}  # Spark's StringUtils
_EXACT_DOUBLE = 2 ** 53  # integers beyond it may compare equal to a double Spark rounds them to


_BIGINT = range(-2**63, 2**63)


def spark_literal(value: Any) -> Any:
    """A literal as Spark types it: a naive ``datetime`` is local time, made aware (as pyspark sends it); an
    integer beyond bigint is a DECIMAL(n, 0), as Spark's parser types such a literal (pyspark refuses it)."""
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.astimezone()  # the local zone's offset at that time, as time.mktime reads it
    if isinstance(value, int) and not isinstance(value, bool) and value not in _BIGINT:
        return decimal.Decimal(value)
    return value


def folds_to_a_constant(literal: Any) -> bool:
    """Whether Spark's analyzer may replace a comparison with this literal by a constant true or false: against
    an integral column, a decimal literal beyond bigint's range compares so (``DecimalPrecision``, Spark 3.5: ``int_col
    >= 10000000000000000000`` is ``false``), and a NULL of the column does not make it NULL. Whether the column is
    integral is not known where values are compared, so a NULL against such a literal decides nothing."""
    return isinstance(literal, decimal.Decimal) and literal.is_finite() and not -2**63 <= literal <= 2**63 - 1


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool)


def _parse_date(text: str) -> Any:
    match = _DATE.fullmatch(text)
    if match is None:
        return UNDECIDED
    year, month, day = match.group(1), match.group(2) or "1", match.group(3) or "1"
    try:
        return dt.date(int(year), int(month), int(day))
    except ValueError:
        return UNDECIDED  # Spark's cast gives NULL (or an error under ANSI): no certain answer to give


def _as_float(value: float) -> float:
    """A double rounded to the nearest float (32 bits), as Spark's cast of a string to a float rounds it."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def _parse_number_like(text: str, other: Any) -> Any:
    """``text`` cast to the type of the number ``other``, as Spark casts a string compared with a number."""
    if isinstance(other, int) and _INTEGER.fullmatch(text):
        return int(text)
    if isinstance(other, float | decimal.Decimal) and _FRACTIONAL.fullmatch(text):
        value = float(text)  # Spark compares a string with a decimal as doubles, and with a double as one
        if isinstance(other, float) and _as_float(value) != value and _as_float(other) == other:
            # a float column's value (a double here) casts the string to a float, a double column's to a
            # double, and '0.1' is 0.1 as the one and not as the other: the value does not say which it is
            return UNDECIDED
        return value
    return UNDECIDED


def _parse_boolean(text: str) -> Any:
    lowered = text.strip().lower()
    return True if lowered in _TRUE else False if lowered in _FALSE else UNDECIDED


def _coerce_string(text: str, other: Any) -> Any:
    """``text`` as Spark reads a string compared with ``other``'s type (the string side is cast)."""
    if isinstance(other, bool):
        return _parse_boolean(text)
    if _is_number(other):
        return _parse_number_like(text, other)
    if isinstance(other, dt.datetime):
        return UNDECIDED  # parsed in the session's time zone, unknown here
    if isinstance(other, dt.date):
        return _parse_date(text)
    return UNDECIDED


def _coerce_numbers(a: Any, b: Any) -> tuple[Any, Any]:
    if isinstance(a, float) or isinstance(b, float):
        if any(isinstance(v, float) and math.isnan(v) for v in (a, b)):
            return UNDECIDED, UNDECIDED  # Spark: NaN = NaN, and NaN is greater than every other double
        if any(isinstance(v, int) and abs(v) > _EXACT_DOUBLE for v in (a, b)):
            return UNDECIDED, UNDECIDED
        return float(a), float(b)  # Spark widens to double (a decimal too)
    return a, b  # integers and decimals compare exactly, as Spark's widened decimal does


def comparable(a: Any, b: Any) -> tuple[Any, Any]:
    """Both values as Spark compares them, or ``(UNDECIDED, UNDECIDED)``; neither may be None."""
    if isinstance(a, str) and isinstance(b, str):
        return a, b
    if isinstance(a, str):
        a = _coerce_string(a, b)
    elif isinstance(b, str):
        b = _coerce_string(b, a)
    if a is UNDECIDED or b is UNDECIDED:
        return UNDECIDED, UNDECIDED
    if isinstance(a, bool) or isinstance(b, bool):
        return (a, b) if isinstance(a, bool) and isinstance(b, bool) else (UNDECIDED, UNDECIDED)
    if _is_number(a) and _is_number(b):
        return _coerce_numbers(a, b)
    if isinstance(a, dt.datetime) and isinstance(b, dt.datetime):
        if (a.tzinfo is None) != (b.tzinfo is None):
            return UNDECIDED, UNDECIDED  # a local timestamp against an instant: the session's zone decides
        return a, b
    if isinstance(a, dt.datetime) or isinstance(b, dt.datetime):
        return UNDECIDED, UNDECIDED  # a date at midnight in the session's zone
    if type(a) is type(b) or (isinstance(a, bytes | bytearray) and isinstance(b, bytes | bytearray)):
        return a, b
    return UNDECIDED, UNDECIDED


def in_mixes_strings(value: Any, option: Any) -> bool:
    """Whether ``value IN (..., option, ...)`` compares as strings where ``=`` would not: Spark's
    ``InConversion`` widens a string and another type to a string (so decimal ``5.00 IN ('5')`` is false
    while ``5.00 = '5'`` is true), in renderings (doubles, timestamps) this module does not reproduce."""
    return value is not None and option is not None and isinstance(value, str) != isinstance(option, str)


def spark_compare(op: str, a: Any, b: Any) -> Any:
    """``a op b`` under Spark's coercion (both non-null): True, False or :data:`UNDECIDED`."""
    a, b = comparable(a, b)
    if a is UNDECIDED:
        return UNDECIDED
    try:
        return bool(OPERATORS[op](a, b))
    except TypeError:
        return UNDECIDED
