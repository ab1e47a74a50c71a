"""Type changes across a table's history, held against a plain-Python model of Hudi's promotion rules
(``HoodieAvroUtils.rewritePrimaryTypeWithDiffSchemaType``: a float reaches a double through its decimal
text, a number reaches a string through ``String.valueOf``), and the refusal of what the model leaves out."""

from __future__ import annotations

import decimal
import struct

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_connect.core.errors import UnsupportedTableFeatureError
from hudi_connect.core.format.schema_evolution import (
    TypeChange,
    align,
    check_promotable,
    history_type_changes,
    promote,
    type_changes,
)


def as_float32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


def shortest_float32_text(value: float) -> str:
    """The shortest decimal that reads back as the same float32 (what Java's Float.toString gives here)."""
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if as_float32(float(text)) == value:
            return text
    return repr(value)


@settings(deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(width=32, allow_nan=False, allow_infinity=False)), max_size=20))
def test_float_to_double_goes_through_the_decimal_text(values: list[float | None]) -> None:
    promoted = promote(pa.array(values, pa.float32()), pa.float64()).to_pylist()
    assert promoted == [None if v is None else float(shortest_float32_text(v)) for v in values]


def test_the_float_to_double_of_a_plain_cast_is_not_hudis() -> None:
    # why the rule matters: 1.1f widened by value is 1.100000023841858; Hudi reads 1.1
    assert pa.array([1.1], pa.float32()).cast(pa.float64()).to_pylist() != [1.1]
    assert promote(pa.array([1.1], pa.float32()), pa.float64()).to_pylist() == [1.1]


@settings(deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)), max_size=20))
def test_ints_widen_to_long_and_to_string_by_value(values: list[int | None]) -> None:
    column = pa.array(values, pa.int32())
    assert promote(column, pa.int64()).to_pylist() == values
    assert promote(column, pa.string()).to_pylist() == [None if v is None else str(v) for v in values]


def test_nested_values_are_promoted_and_new_fields_read_null() -> None:
    old = pa.table({
        "info": pa.array([{"a": 1, "f": 0.1}, None], pa.struct([("a", pa.int32()), ("f", pa.float32())])),
        "scores": pa.array([[1.1, None], None], pa.list_(pa.float32())),
        "price": pa.array([decimal.Decimal("1.50"), None], pa.decimal128(5, 2)),
    }).slice(0)
    new_schema = pa.schema([
        ("info", pa.struct([("a", pa.int64()), ("f", pa.float64()), ("added", pa.string())])),
        ("scores", pa.list_(pa.float64())),
        ("price", pa.decimal128(12, 4)),
        ("extra", pa.string()),
    ])
    assert align(old, new_schema).to_pylist() == [
        {"info": {"a": 1, "f": 0.1, "added": None}, "scores": [1.1, None], "price": decimal.Decimal("1.5000"),
         "extra": None},
        {"info": None, "scores": None, "price": None, "extra": None},
    ]
    # a slice of a list column (offsets not starting at zero) promotes the same rows
    assert align(old.slice(1), new_schema).to_pylist()[0]["scores"] is None
    assert align(old.slice(0, 1), new_schema).to_pylist()[0]["scores"] == [1.1, None]


@pytest.mark.parametrize(("old", "new"), [
    (pa.float64(), pa.string()),  # Java's Double.toString ("1.0E20"), not reproduced
    (pa.float32(), pa.string()),
    (pa.int64(), pa.int32()),  # narrowing
    (pa.decimal128(10, 4), pa.decimal128(10, 2)),  # scale lost
    (pa.string(), pa.int64()),
    (pa.map_(pa.string(), pa.int32()), pa.map_(pa.string(), pa.int64())),
])
def test_changes_without_a_rule_are_refused_by_name(old: pa.DataType, new: pa.DataType) -> None:
    latest = pa.schema([("id", pa.int32()), ("v", new)])
    changes = history_type_changes([pa.schema([("id", pa.int32()), ("v", old)])], latest)
    assert changes == [TypeChange("v", old, new)]
    with pytest.raises(UnsupportedTableFeatureError) as caught:
        check_promotable(changes, where="t")
    assert caught.value.property == "column type" and f"v: {old} -> {new}" in caught.value.value
    with pytest.raises(UnsupportedTableFeatureError):
        promote(pa.nulls(1, old), new, "v")


def test_added_struct_fields_are_not_type_changes() -> None:
    old = pa.schema([("info", pa.struct([("a", pa.int32())]))])
    new = pa.schema([("info", pa.struct([("a", pa.int32()), ("b", pa.string())])), ("extra", pa.string())])
    assert type_changes(old, new) == []
    assert history_type_changes([old, new], new) == []
    check_promotable([])


def test_layouts_of_the_same_values_are_cast_not_refused() -> None:
    # what a file may hold beside the table's Avro-derived schema, without any type change
    old = pa.table({
        "t": pa.array([1_700_000_000_123], pa.timestamp("ms", tz="UTC")),
        "s": pa.array(["a"]).dictionary_encode(),
        "m": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.field("v", pa.int32(), nullable=False))),
        "l": pa.array([[1]], pa.list_(pa.field("item", pa.int32(), nullable=False))),
    })
    new = pa.schema([("t", pa.timestamp("us", tz="UTC")), ("s", pa.string()),
                     ("m", pa.map_(pa.string(), pa.int32())), ("l", pa.list_(pa.int32()))])
    assert type_changes(old.schema, new) == []
    assert align(old, new).to_pylist() == [{
        "t": old["t"][0].as_py(), "s": "a", "m": [("k", 1)], "l": [1]}]
