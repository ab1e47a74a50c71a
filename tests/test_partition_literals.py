"""Partition values and literals typed as Spark types them (issue #72), against a plain model of Spark's
comparison: a float partition is the float32 Spark reads (compared with a double literal as that float widened),
and an integer literal beyond bigint is a DECIMAL, compared with a string partition as doubles."""

from __future__ import annotations

import struct

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from hudi_connect.core.format.expressions import col, partition_may_match
from hudi_connect.core.format.spec_models import PartitionDescriptor

OPS = ["=", "!=", "<", "<=", ">", ">="]


def as_float32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


def spark_holds(op: str, a: float, b: float) -> bool:
    return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


@given(stored=st.floats(width=32, allow_nan=False, allow_infinity=False),
       literal=st.floats(allow_nan=False, allow_infinity=False), op=st.sampled_from(OPS))
def test_a_float_partition_compares_as_the_float_spark_reads(stored: float, literal: float, op: str) -> None:
    text = repr(stored)  # a text that reads back as the float (Java's Float.toString writes the shortest)
    partition = PartitionDescriptor.parse(f"p={text}", ("p",), pa.schema([("p", pa.float32())]), hive_style=True,
                                          url_encoded=False)
    assert partition.values["p"] == stored
    if spark_holds(op, stored, literal):  # pruning may keep more (undecided), never less
        assert partition_may_match(col("p")._compare(op, literal), partition.values)
    assert partition_may_match(col("p")._compare(op, 0.1), {"p": as_float32(0.1)}) == spark_holds(
        op, as_float32(0.1), 0.1)


@given(digits=st.integers(2**63, 10**25), text=st.sampled_from(["5", "1e19", "10000000000000000000", "9.9e18"]),
       op=st.sampled_from(OPS))
def test_an_integer_literal_beyond_bigint_prunes_a_string_partition_as_doubles(digits: int, text: str,
                                                                                op: str) -> None:
    partition = PartitionDescriptor.parse(f"s={text}", ("s",), pa.schema([("s", pa.string())]), hive_style=True,
                                          url_encoded=False)
    if spark_holds(op, float(text), float(digits)):
        assert partition_may_match(col("s")._compare(op, digits), partition.values)
