"""Predicates as users write them (Spark Connect Columns, SQL strings) translated to our tree.

Soundness oracle: for random rows and random predicates built three ways (our tree directly, a SQL
string, a Connect Column), the translation's pruning predicate evaluates as the tree built directly does;
where a part cannot be translated (LIKE, standing for any such part, modelled in the direct tree by a
column holding its truth), pruning never says False or NULL where the whole predicate holds. Plus cases
pinning what translates to which tree, and what only filters rows.
"""

from __future__ import annotations

import datetime as dt
import decimal
import operator
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.connect import functions as CF
from pyspark.sql.connect.column import Column as ConnectColumn
from pyspark.sql.connect.expressions import LiteralExpression
from pyspark.sql.types import FloatType, StructType, TimestampNTZType

from hudi_connect.core.format.expressions import Expression, col, evaluate, fn, lit
from hudi_connect.core.format.fs_view import BaseFile, FileSlice
from hudi_connect.reader import ReadPlan
from hudi_connect.table_spec.user_predicates import Translation, describe, pruning_of, translate, translate_all

UTC = dt.UTC


@pytest.fixture(autouse=True)
def _connect_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """pyspark.sql.functions builds Connect columns, as in a process that opened a Connect session."""
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")


def tree(expr: Expression | None) -> str:
    """Trees compare by their structure, literal types included (``==`` builds a comparison)."""
    return repr(expr)


def assert_translates(predicate: Any, expected: Expression | None, *untranslated: str) -> Translation:
    translation = translate(predicate)
    assert tree(translation.pruning) == tree(expected)
    assert translation.untranslated == untranslated
    return translation


# --- Spark Connect columns ------------------------------------------------------------------

def test_connect_comparisons_translate_either_way_round() -> None:
    a = CF.col("a")
    assert_translates(a == 5, col("a") == 5)
    assert_translates(5 == a, col("a") == 5)  # noqa: SIM300 (Python reflects it: a == 5)
    assert_translates(a != 5, ~(col("a") == 5))  # pyspark builds not(==)
    assert_translates(a < 5, col("a") < 5)
    assert_translates(a <= 5, col("a") <= 5)
    assert_translates(a > 5, col("a") > 5)
    assert_translates(a >= 5, col("a") >= 5)
    assert_translates(3 < a, col("a") > 3)  # noqa: SIM300 (reflected: a > 3)
    assert_translates(CF.lit(3) < a, lit(3) < col("a"))
    assert_translates(a == CF.col("b"), col("a") == col("b"))


def test_connect_boolean_logic_in_and_null_tests_translate() -> None:
    a, b = CF.col("a"), CF.col("b")
    assert_translates((a == 1) & (b > 2), (col("a") == 1) & (col("b") > 2))
    assert_translates((a == 1) | ~(b > 2), (col("a") == 1) | ~(col("b") > 2))
    assert_translates(a.isin(1, 2, None), col("a").isin(1, 2, None))
    assert_translates(a.isin([1, 2]), col("a").isin(1, 2))
    assert_translates(a.isNull(), col("a").is_null())
    assert_translates(a.isNotNull(), col("a").is_not_null())
    assert_translates(a.between(1, 9), col("a").between(1, 9))
    assert_translates(CF.col("flag"), col("flag") == True)  # noqa: E712 (a boolean column, as a predicate)
    assert_translates(CF.col("`odd.name`") == 1, col("odd.name") == 1)


def test_connect_functions_of_our_tree_translate() -> None:
    assert_translates(CF.lower(CF.col("city")) == "paris", fn("lower", col("city")) == "paris")
    assert_translates(CF.upper("city") == "PARIS", fn("upper", col("city")) == "PARIS")
    assert_translates(CF.length("city") > 3, fn("length", col("city")) > 3)
    assert_translates(CF.abs("x") < 3, fn("abs", col("x")) < 3)
    assert_translates(CF.year("d") == 2024, fn("year", col("d")) == 2024)
    assert_translates(CF.substring("s", 1, 2) == "ab", fn("substring", col("s"), 1, 2) == "ab")
    assert_translates(CF.col("s").substr(1, 2) == "ab", fn("substring", col("s"), 1, 2) == "ab")


def test_connect_literals_keep_their_python_values() -> None:
    d = CF.col("d")
    assert_translates(d == dt.date(2024, 2, 29), col("d") == dt.date(2024, 2, 29))
    aware = dt.datetime(2024, 1, 1, 12, 30, 15, 250, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    translation = translate(d > aware)
    literal = translation.pruning.right  # type: ignore[union-attr]
    assert literal.value == aware and literal.value.tzinfo == UTC  # the instant, from its microseconds
    naive = dt.datetime(2024, 1, 1, 12)  # pyspark sends the client's local time: that instant
    assert translate(d > naive).pruning.right.value == naive.astimezone()  # type: ignore[union-attr]
    assert_translates(d == decimal.Decimal("1.50"), col("d") == decimal.Decimal("1.50"))
    assert_translates(d == 1.5, col("d") == 1.5)
    assert_translates(d == True, col("d") == True)  # noqa: E712
    assert_translates(d == None, col("d") == None)  # noqa: E711 (SQL: never true)
    assert type(translate(d == decimal.Decimal("1.50")).pruning.right.value) is decimal.Decimal  # type: ignore[union-attr]


def test_connect_literals_our_tree_cannot_hold_do_not_translate() -> None:
    single = ConnectColumn(LiteralExpression(1.5, FloatType()))  # compared in single precision
    assert_translates(CF.col("x") == single, None, "==(x, 1.5)")
    wall_clock = ConnectColumn(LiteralExpression(dt.datetime(2024, 1, 1), TimestampNTZType()))
    assert translate(CF.col("t") == wall_clock).pruning is None


def test_untranslatable_connect_parts_are_dropped_only_from_an_and() -> None:
    def udf(column: Any) -> Any:  # a user's function by name (pyspark 4 builds a Python UDF only with a session)
        return CF.call_function("my_udf", column)

    a, s = CF.col("a"), CF.col("s")
    for opaque in (udf(a) == 1, a + 1 > 2, s.like("x%"), a.cast("int") == 1, a.eqNullSafe(1),
                   CF.when(a == 1, 2).otherwise(3) == 2, CF.col("st.field") == 1, s.getField("x") == 1,
                   a.isin(CF.col("b"))):
        translation = translate((a == 1) & opaque & (s.isNull()))
        assert tree(translation.pruning) == tree((col("a") == 1) & col("s").is_null())
        assert len(translation.untranslated) == 1
        assert_translates((a == 1) | opaque, None, translation.untranslated[0].join(["or(==(a, 1), ", ")"]))
        assert translate(~opaque).pruning is None
        assert translate(~((a == 1) & opaque)).pruning is None  # NOT of an AND: dropping would keep less
    assert_translates((a == 1) & s.like("x%"), col("a") == 1, "like(s, x%)")


def test_a_connect_columns_filter_is_the_users_own() -> None:
    column = (CF.col("a") == 1) & CF.col("s").like("x%")
    assert translate(column).filter is column


def test_sql_inside_a_connect_column_translates_and_splits() -> None:
    column = CF.expr("a = 1 AND s LIKE 'x%'") & CF.col("b").isNotNull()
    assert_translates(column, (col("a") == 1) & col("b").is_not_null(), "s LIKE 'x%'")
    assert_translates(CF.expr("a = 1 OR s LIKE 'x%'"), None, "a = 1 OR s LIKE 'x%'")
    assert_translates(~CF.expr("a = 1"), ~(col("a") == 1))


# --- SQL strings ----------------------------------------------------------------------------

def test_sql_comparisons_and_logic_translate() -> None:
    assert_translates("city = 'paris' AND amount BETWEEN 10 AND 20",
                      (col("city") == "paris") & ((col("amount") >= 10) & (col("amount") <= 20)))
    assert_translates("5 < a", lit(5) < col("a"))
    assert_translates("a <> 1 OR a != 2 OR a == 3", ((col("a") != 1) | (col("a") != 2)) | (col("a") == 3))
    assert_translates("a IN (1, -2, NULL) AND b NOT IN ('x')", col("a").isin(1, -2, None) & ~col("b").isin("x"))
    assert_translates("a IS NULL OR NOT (b IS NOT NULL)", col("a").is_null() | ~col("b").is_not_null())
    assert_translates("NOT (a = 1 OR b = 2)", ~((col("a") == 1) | (col("b") == 2)))
    assert_translates("a NOT BETWEEN 1 AND 2", ~((col("a") >= 1) & (col("a") <= 2)))
    assert_translates("flag AND NOT other", (col("flag") == True) & ~(col("other") == True))  # noqa: E712
    assert_translates("`odd col` = 1", col("odd col") == 1)
    assert_translates("lower(city) = 'paris' AND length(city) > 3 AND substring(s, 1, 2) = 'ab' AND abs(x) < 1"
                      " AND year(d) = 2024",
                      (fn("lower", col("city")) == "paris") & (fn("length", col("city")) > 3)
                      & (fn("substring", col("s"), 1, 2) == "ab") & (fn("abs", col("x")) < 1)
                      & (fn("year", col("d")) == 2024))


def test_sql_literals_are_typed_as_spark_types_them() -> None:
    values = {"1": 1, "-7": -7, "1.50": decimal.Decimal("1.50"), "1e3": 1000.0, "'2024-01-01'": "2024-01-01",
              "TRUE": True, "NULL": None, "DATE '2024-02-29'": dt.date(2024, 2, 29), "10L": 10, "7S": 7,
              "1.5BD": decimal.Decimal("1.5"), "1.5D": 1.5, "CAST('1.25' AS DECIMAL(4, 2))": decimal.Decimal("1.25"),
              "TIMESTAMP '2024-01-01 02:00:00+02:00'": dt.datetime(2024, 1, 1, tzinfo=UTC),
              "TIMESTAMP_LTZ '2024-01-01T00:00:00Z'": dt.datetime(2024, 1, 1, tzinfo=UTC)}
    for text, value in values.items():
        literal = translate(f"x = {text}").pruning.right  # type: ignore[union-attr]
        assert literal.value == value and type(literal.value) is type(value), text


def test_sql_literals_whose_value_is_not_certain_here_do_not_translate() -> None:
    for text in ("TIMESTAMP '2024-01-01 00:00:00'",  # the session's time zone decides its instant
                 "TIMESTAMP_NTZ '2024-01-01 00:00:00+02:00'", "1.5F", "CAST('1.255' AS DECIMAL(4, 2))",
                 "CAST(1.7 AS INT)", "DATE '2024'", "X'01'", "1234567890123456789012345678901234567890",
                 "'a\\nb'"):  # Spark reads the backslash as an escape, sqlglot keeps it
        assert_translates(f"a = 1 AND x = {text}", col("a") == 1, translate(f"x = {text}").untranslated[0])


def test_untranslatable_sql_parts_are_dropped_only_from_an_and() -> None:
    for opaque in ("my_udf(a) = 1", "a + 1 > 2", "s LIKE 'x%'", "CAST(a AS INT) = 1", "a <=> 1", "t.a = 1",
                   "CASE WHEN a = 1 THEN 2 END = 2", "a IN (SELECT 1)", "a IN (b)", "a BETWEEN SYMMETRIC 1 AND 2",
                   "substring(s, 2) = 'b'", "a IS TRUE"):
        translation = translate(f"a = 1 AND ({opaque}) AND s IS NULL")
        assert tree(translation.pruning) == tree((col("a") == 1) & col("s").is_null()), opaque
        assert len(translation.untranslated) == 1, opaque
        assert translate(f"a = 1 OR ({opaque})").pruning is None, opaque
        assert translate(f"NOT ({opaque})").pruning is None, opaque
        assert translate(f"NOT (a = 1 AND ({opaque}))").pruning is None, opaque
    assert_translates("a = 1 AND s LIKE 'x%'", col("a") == 1, "s LIKE 'x%'")


def test_sql_sqlglot_cannot_parse_is_left_to_spark_whole() -> None:
    for text in ("a = ", "a = 1; b = 2", "SELECT 1"):
        assert_translates(text, None, text)
    with pytest.raises(ValueError, match="empty SQL predicate"):
        translate("  ")


def test_a_sql_strings_filter_is_spark_reading_it() -> None:
    sql = "city = 'paris' AND s LIKE 'x%'"
    expression = translate(sql).filter._expr  # type: ignore[attr-defined]
    assert type(expression).__name__ == "SQLExpression" and expression._expr == sql


def test_our_own_tree_prunes_whole_and_filters_as_itself() -> None:
    predicate = (col("a") == 1) | col("b").is_null()
    translation = translate(predicate)
    assert translation.pruning is predicate and translation.untranslated == ()
    assert isinstance(translation.filter, ConnectColumn)


def test_predicates_are_one_or_several_of_any_spelling() -> None:
    assert translate_all(None) == () and translate_all([]) == ()
    assert len(translate_all("a = 1")) == 1 and len(translate_all(CF.col("a") == 1)) == 1
    assert len(translate_all(col("a") == 1)) == 1
    mixed = translate_all([col("a") == 1, CF.col("b") > 2, "c IS NULL AND s LIKE 'x'"])
    assert [tree(t.pruning) for t in mixed] == [tree(col("a") == 1), tree(col("b") > 2), tree(col("c").is_null())]
    assert [tree(p) for p in pruning_of(["s LIKE 'x'", "a = 1"])] == [tree(col("a") == 1)]
    with pytest.raises(TypeError, match="a predicate is an Expression"):
        translate_all([42])  # type: ignore[list-item]


# --- explain ----------------------------------------------------------------------------------

def test_a_plan_explains_what_prunes_and_what_only_filters() -> None:
    slices = (FileSlice("p=1", "f1", BaseFile("p=1", "f1", "001", "f1_0-1-0_001.parquet", 10), ()),)
    plan = ReadPlan(slices, pa.schema([]), StructType([]),
                    predicates=((col("a") == 1) & (col("ts") == "2024"), col("b").isin("x", "y")),
                    string_columns=("ts",), untranslated=("like(s, x%)",))
    assert plan.explain().splitlines() == [
        "prunes partitions and files: a = 1",
        "prunes partitions and files: b IN ('x', 'y')",
        "filters rows only: ts = '2024' (on a partition column read as a string)",
        "filters rows only: like(s, x%) (not expressible as a pruning predicate)",
        "reads 1 file slices (1 base files, 0 log files)",
    ]
    assert [describe(p) for p in plan.pruning] == ["a = 1", "b IN ('x', 'y')"]
    assert ReadPlan((), pa.schema([]), StructType([])).explain().splitlines()[0] == \
        "no predicate: every partition and file is read"


def test_describe_parenthesises_as_sql_binds() -> None:
    assert describe(((col("a") == 1) | (col("b") > 2)) & ~(col("c") == "x")) == "(a = 1 OR b > 2) AND NOT c = 'x'"
    assert describe(col("c").is_not_null() & (col("d") == dt.date(2024, 1, 1))) == \
        "c IS NOT NULL AND d = DATE '2024-01-01'"
    assert describe(~((col("a") == 1) & (col("b") == 2))) == "NOT (a = 1 AND b = 2)"


# --- soundness, by Hypothesis -----------------------------------------------------------------

OPS: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}
COLUMN_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "a": st.integers(-4, 4),
    "b": st.sampled_from(["", "x", "X", "xy", "paris", "Paris"]),
    "d": st.dates(dt.date(2024, 1, 1), dt.date(2024, 1, 5)),
}
LIKES = 3  # untranslatable atoms (LIKE), each modelled in the direct tree by a column holding its truth


def sql_literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    return str(value)


Built = tuple[Expression, str, Any]  # the same predicate: our tree, SQL, a Connect Column


@st.composite
def leaves(draw: st.DrawFn) -> Built:
    name = draw(st.sampled_from(sorted(COLUMN_VALUES)))
    value = COLUMN_VALUES[name] | st.none()
    kind = draw(st.sampled_from(["compare", "flipped", "in", "null", "not null", "between", "function", "like"]))
    column = CF.col(name)
    if kind in ("compare", "flipped"):
        op, v = draw(st.sampled_from(sorted(OPS))), draw(value)
        if kind == "compare":
            return col(name)._compare(op, v), f"{name} {op} {sql_literal(v)}", OPS[op](column, CF.lit(v))
        return lit(v)._compare(op, col(name)), f"{sql_literal(v)} {op} {name}", OPS[op](CF.lit(v), column)
    if kind == "in":
        options = draw(st.lists(value, min_size=1, max_size=3))
        return (col(name).isin(*options), f"{name} IN ({', '.join(map(sql_literal, options))})",
                column.isin(*options))
    if kind == "null":
        return col(name).is_null(), f"{name} IS NULL", column.isNull()
    if kind == "not null":
        return col(name).is_not_null(), f"{name} IS NOT NULL", column.isNotNull()
    if kind == "between":
        low, high = draw(COLUMN_VALUES[name]), draw(COLUMN_VALUES[name])
        return (col(name).between(low, high), f"{name} BETWEEN {sql_literal(low)} AND {sql_literal(high)}",
                column.between(low, high))
    if kind == "function":
        function, argument, v = draw(st.sampled_from([("lower", "b", "x"), ("upper", "b", "X"), ("length", "b", 1),
                                                       ("abs", "a", 2)]))
        op = draw(st.sampled_from(sorted(OPS)))
        spark = {"lower": CF.lower, "upper": CF.upper, "length": CF.length, "abs": CF.abs}[function]
        return (fn(function, col(argument))._compare(op, v), f"{function}({argument}) {op} {sql_literal(v)}",
                OPS[op](spark(CF.col(argument)), CF.lit(v)))
    return draw(likes())


@st.composite
def likes(draw: st.DrawFn) -> Built:
    k = draw(st.integers(0, LIKES - 1))
    return col(f"like{k}") == True, f"b LIKE 'x{k}%'", CF.col("b").like(f"x{k}%")  # noqa: E712


def anded(x: Built, y: Built) -> Built:
    return x[0] & y[0], f"({x[1]}) AND ({y[1]})", x[2] & y[2]


def combined(inner: st.SearchStrategy[Built]) -> st.SearchStrategy[Built]:
    return st.one_of(
        st.builds(anded, inner, inner),
        st.builds(lambda x, y: (x[0] | y[0], f"({x[1]}) OR ({y[1]})", x[2] | y[2]), inner, inner),
        st.builds(lambda x: (~x[0], f"NOT ({x[1]})", ~x[2]), inner),
    )


predicates = st.recursive(leaves(), combined, max_leaves=6)
# an untranslatable part beside translatable ones in an AND, where pruning keeps the rest
partly_translatable = st.one_of(st.builds(anded, predicates, likes()), st.builds(anded, likes(), predicates),
                                st.builds(lambda x, y, z: anded(anded(x, y), z), predicates, likes(), predicates))
rows = st.fixed_dictionaries({
    **{name: values | st.none() for name, values in COLUMN_VALUES.items()},
    **{f"like{k}": st.sampled_from([True, False, None]) for k in range(LIKES)},
})


@settings(max_examples=400, deadline=None, derandomize=True)
@given(predicates, rows)
def test_translations_never_prune_what_the_predicate_keeps(built: Built, row: dict[str, Any]) -> None:
    direct, sql, column = built
    expected = evaluate(direct, row)
    exact = not any(name.startswith("like") for name in direct.columns())
    for spelling in (sql, column):
        translation = translate(spelling)
        if exact:  # all of it translates: it is the same predicate
            assert translation.untranslated == () and translation.pruning is not None, sql
            assert evaluate(translation.pruning, row) == expected, sql
        elif translation.pruning is not None and expected is True:  # part of it: it never prunes a match
            assert evaluate(translation.pruning, row) not in (False, None), sql


@settings(max_examples=400, deadline=None, derandomize=True)
@given(partly_translatable, rows)
def test_pruning_by_the_translatable_conjuncts_never_drops_a_match(built: Built, row: dict[str, Any]) -> None:
    direct, sql, column = built
    for spelling in (sql, column):
        translation = translate(spelling)
        assert translation.untranslated, sql  # the LIKE, at least
        if translation.pruning is not None and evaluate(direct, row) is True:
            assert evaluate(translation.pruning, row) not in (False, None), sql
