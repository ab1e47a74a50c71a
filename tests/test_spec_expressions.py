"""Our predicate tree: evaluation, partition pruning and statistics pruning.

Soundness oracle: for random rows and random predicates, a file whose rows
include one satisfying the predicate (evaluated row by row, SQL semantics) must
never be pruned by its min/max/null statistics. Plus cases where pruning must
happen, so the analysis is not trivially "keep everything".
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_connect.core.format.expressions import (
    ColumnRange,
    Expression,
    col,
    evaluate,
    fn,
    lit,
    partition_may_match,
    stats_may_match,
)
from hudi_connect.core.format.fs_view import BaseFile, FileSlice
from hudi_connect.core.format.spec_models import PartitionDescriptor
from hudi_connect.table_spec.file_index import balanced_splits

values = st.one_of(st.none(), st.integers(-5, 5))
rows = st.lists(st.fixed_dictionaries({"a": values, "b": values}), min_size=1, max_size=8)


def predicates() -> st.SearchStrategy[Expression]:
    column = st.sampled_from([col("a"), col("b")])
    constant = st.integers(-6, 6)
    leaf = st.one_of(
        st.builds(lambda c, op, v: c._compare(op, v), column, st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
                  constant),
        st.builds(lambda c, op, v: lit(v)._compare(op, c), column, st.sampled_from(["<", ">=", "="]), constant),
        st.builds(lambda c, vs: c.isin(*vs), column, st.lists(constant, max_size=3)),
        st.builds(lambda c: c.is_null(), column),
        st.builds(lambda c: c.is_not_null(), column),
    )
    return st.recursive(leaf, lambda inner: st.one_of(
        st.builds(lambda x, y: x & y, inner, inner), st.builds(lambda x, y: x | y, inner, inner),
        st.builds(lambda x: ~x, inner)), max_leaves=5)


def ranges(data: list[dict[str, int | None]]) -> dict[str, ColumnRange]:
    result = {}
    for name in ("a", "b"):
        present = [r[name] for r in data if r[name] is not None]
        result[name] = ColumnRange(min(present, default=None), max(present, default=None),
                                   len(data) - len(present), len(data))
    return result


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(rows, predicates())
def test_statistics_never_prune_a_file_holding_a_match(data: list[dict[str, int | None]],
                                                       predicate: Expression) -> None:
    if any(evaluate(predicate, row) is True for row in data):
        assert stats_may_match(predicate, ranges(data)), predicate


@settings(max_examples=500, deadline=None, derandomize=True)
@given(st.fixed_dictionaries({"a": values, "b": values}), predicates())
def test_partition_values_never_prune_a_matching_partition(row: dict[str, int | None], predicate: Expression) -> None:
    if evaluate(predicate, row) is True:
        assert partition_may_match(predicate, row)
    assert partition_may_match(predicate, {})  # nothing known: keep


def test_an_empty_in_list_of_a_null_value_decides_nothing() -> None:
    """``NULL IN ()`` is NULL on Spark 3.5 and false on Spark 4 (so ``NOT (p IN ())`` keeps a null partition
    there): undecided here, so no line's answer is pruned away; a value's ``IN ()`` is false on both."""
    assert partition_may_match(~col("a").isin(), {"a": None})
    assert stats_may_match(~col("a").isin(), {"a": ColumnRange(None, None, 3, 3)})
    assert not stats_may_match(col("a").isin(), {"a": ColumnRange(None, None, 3, 3)})  # no row on either line
    assert not partition_may_match(col("a").isin(), {"a": 1})
    assert partition_may_match(~col("a").isin(), {"a": 1})


def test_statistics_prune_what_cannot_match() -> None:
    stats = {"a": ColumnRange(1, 5, 0, 10), "n": ColumnRange(None, None, 3, 3)}
    assert not stats_may_match(col("a") > 5, stats)
    assert stats_may_match(col("a") >= 5, stats)
    assert not stats_may_match(lit(0) >= col("a"), stats)
    assert not stats_may_match(col("a").isin(0, 6, None), stats)
    assert not stats_may_match(col("a").is_null(), stats)
    assert not stats_may_match(col("n").is_not_null(), stats)
    assert not stats_may_match(col("n") == 1, stats)
    assert not stats_may_match(~(col("a") <= 5), stats)
    assert not stats_may_match((col("a") > 7) | (col("a") < 1), stats)
    assert stats_may_match(fn("abs", col("a")) > 100, stats)  # functions are not analysed
    assert stats_may_match(col("unknown") == 1, stats)
    assert not stats_may_match(col("a") != 3, {"a": ColumnRange(3, 3, 0, 4)})


def test_evaluation_follows_sql_null_semantics() -> None:
    assert evaluate(col("a") == 1, {"a": None}) is None
    assert evaluate((col("a") == 1) | (col("b") == 2), {"a": None, "b": 2}) is True
    assert evaluate((col("a") == 1) & (col("b") == 2), {"a": None, "b": 3}) is False
    assert evaluate(~(col("a") == 1), {"a": None}) is None
    assert evaluate(fn("lower", col("s")) == "paris", {"s": "PARIS"}) is True
    assert evaluate(fn("substring", col("s"), 2, 3) == "ari", {"s": "Paris"}) is True
    assert evaluate(fn("year", col("d")) == 2024, {"d": dt.date(2024, 5, 1)}) is True
    assert partition_may_match(col("city") == "paris", {"city": "paris", "day": 1})
    assert not partition_may_match((col("city") == "lyon") & (col("x") > 1), {"city": "paris"})
    with pytest.raises(ValueError, match="unknown function 'median'"):
        fn("median", col("a"))


def test_partition_paths_parse_to_typed_values() -> None:
    schema = pa.schema([("city", pa.string()), ("day", pa.date32()), ("n", pa.int32())])
    hive = PartitionDescriptor.parse("city=paris/day=2024-01-02/n=7", ("city", "day", "n"), schema,
                                     hive_style=True, url_encoded=False)
    assert hive.values == {"city": "paris", "day": dt.date(2024, 1, 2), "n": 7}
    plain = PartitionDescriptor.parse("san%20jose/__HIVE_DEFAULT_PARTITION__", ("city", "n"), schema,
                                      hive_style=False, url_encoded=True)
    assert plain.values == {"city": "san jose", "n": None}
    assert PartitionDescriptor.parse("a/b", ("city",), schema, hive_style=False, url_encoded=False).values == {}


def test_balanced_splits_even_out_bytes() -> None:
    slices = [FileSlice("p", f"f{i}", BaseFile("p", f"f{i}", "1", f"f{i}.parquet", size), ())
              for i, size in enumerate([90, 50, 40, 30, 20, 10, 10])]
    groups = balanced_splits(slices, 3)
    totals = sorted(sum(s.base_file.size for s in g if s.base_file) for g in groups)
    assert totals == [80, 80, 90] and sum(len(g) for g in groups) == len(slices)
    with pytest.raises(ValueError, match="at least 1"):
        balanced_splits(slices, 0)
