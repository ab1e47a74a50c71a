"""Images rendered in a worker read as Spark renders them: :func:`images_json` against ``to_json`` itself.

Hypothesis draws an image type (the Spark types an image holds, nested in structs, arrays and maps, field
names that need escaping) and a few images of it, nulls anywhere; Spark (the plain server) makes a DataFrame of
them and renders each with ``to_json(image, JSON_OPTIONS)``; the oracle holds that ``images_json`` gives the
same text, character for character. Two more take many values of one kind at a time: doubles and floats of
any bit pattern (Java 17 prints a few otherwise than the shortest text), and dates and timestamps over Spark's
whole range (years before 1 and after 9999), which Python's datetime cannot carry into a DataFrame.
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import math
import struct
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from hudi_connect.core.errors import UnsupportedTableFeatureError
from hudi_connect.core.executor.image_json import JSON_OPTIONS, images_json

# the rendering serves the format("hudi") data source, on Spark 4's servers: CI runs it in the Spark 4 leg (each
# line with --full); in the Spark 3.5 environment (`-m ""`) it holds the plain 3.5 server's to_json
pytestmark = pytest.mark.spark4

UTC = dt.UTC
# values on the edge of a notation, and values Java 17 prints otherwise than the shortest text that reads back
EDGE_DOUBLES = [0.0, -0.0, 1.0, 0.1, 100.0, 1e7, 9999999.0, 1e-3, 9.999e-4, 1 / 3, 123456.789, 1.7976931348623157e308,
                2.2250738585072014e-308, 1e23, 2e23, 5e-324, 1e-323, 4e-320, 1.0864618449742e-311, math.nan, math.inf,
                -math.inf]
EDGE_FLOATS = [0.0, 1.0, 0.1, 1e10, 1e-5, 123456.79, 6e10, 33554432.0, 2.15162078e15, 3.4028234663852886e38,
               1.401298464324817e-45, 1e-44, math.nan, math.inf, -math.inf]
EDGE_STRINGS = ["", 'a"b', "back\\slash", "\b\f\n\r\t", "\x00\x01\x0b\x1f\x7f", "/", "ünï😀", "\u2028", "\\u00e9"]
# the ends of Python's range, the Julian calendar's last day and the Gregorian's first, before the epoch
EDGE_DATES = [dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1582, 10, 4), dt.date(1582, 10, 15),
              dt.date(1969, 12, 31)]
EDGE_TIMES = [dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
              dt.datetime(1500, 2, 28, 12, 0, 0, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 999999)]
NAMES = st.text(st.sampled_from('ab"\\/. é\x01\x1b😀'), min_size=1, max_size=3)

INTEGERS = {pa.int8(): 8, pa.int16(): 16, pa.int32(): 32, pa.int64(): 64}
KEY_TYPES = [pa.string(), *INTEGERS, pa.bool_(), pa.float32(), pa.float64(), pa.decimal128(7, 2), pa.date32(),
             pa.timestamp("us", "UTC"), pa.timestamp("us")]
DECIMAL_TYPES = st.integers(1, 38).flatmap(lambda precision: st.builds(pa.decimal128, st.just(precision),
                                                                        st.integers(0, precision)))
LEAF_TYPES = st.sampled_from([*KEY_TYPES, pa.binary(), pa.null(), None]).flatmap(  # None: a decimal of any size
    lambda kind: DECIMAL_TYPES if kind is None else st.just(kind))


def struct_types(fields: st.SearchStrategy[pa.DataType], most: int) -> st.SearchStrategy[pa.DataType]:
    named_fields = st.lists(st.tuples(NAMES, fields), min_size=1, max_size=most, unique_by=lambda field: field[0])
    return named_fields.map(pa.struct)


# many fields to an image: a server round trip costs the same whatever the image holds
IMAGE_TYPES = struct_types(st.recursive(LEAF_TYPES, lambda inner: st.one_of(
    st.builds(pa.list_, inner),
    st.builds(pa.map_, st.sampled_from(KEY_TYPES), inner),
    struct_types(inner, 3),
), max_leaves=4), 10)


def _decimals(kind: pa.Decimal128Type) -> st.SearchStrategy[decimal.Decimal]:
    largest = 10**kind.precision - 1
    unscaled = st.one_of(st.integers(-1000, 1000), st.integers(-largest, largest)).map(
        lambda value: max(-largest, min(largest, value)))
    return unscaled.map(lambda value: decimal.Decimal(f"{value}E-{kind.scale}"))


def values(kind: pa.DataType, *, nullable: bool = True) -> st.SearchStrategy[Any]:
    """Python values of ``kind`` as pyarrow takes them (a map as its list of pairs), one in four null where
    ``nullable``."""
    strategy: st.SearchStrategy[Any]
    if pa.types.is_struct(kind):
        strategy = st.fixed_dictionaries({field.name: values(field.type) for field in kind})
    elif pa.types.is_map(kind):
        strategy = st.lists(st.tuples(values(kind.key_type, nullable=False), values(kind.item_type)), max_size=3,
                            unique_by=lambda pair: pair[0])
    elif pa.types.is_list(kind):
        strategy = st.lists(values(kind.value_type), max_size=4)
    elif pa.types.is_null(kind):
        return st.none()
    elif pa.types.is_boolean(kind):
        strategy = st.booleans()
    elif kind in INTEGERS:
        half = 1 << (INTEGERS[kind] - 1)
        strategy = st.one_of(st.integers(-half, half - 1), st.sampled_from([-half, half - 1, 0]))
    elif pa.types.is_float64(kind):
        strategy = st.one_of(st.floats(allow_nan=nullable), st.sampled_from(EDGE_DOUBLES), st.integers(-10**18, 10**18)
                             .map(float), st.decimals(places=3, allow_nan=False, allow_infinity=False).map(float))
        strategy = strategy.filter(lambda value: nullable or not math.isnan(value))
    elif pa.types.is_float32(kind):
        strategy = st.one_of(st.floats(width=32, allow_nan=nullable), st.sampled_from(EDGE_FLOATS))
        strategy = strategy.filter(lambda value: nullable or not math.isnan(value))
    elif pa.types.is_decimal(kind):
        strategy = _decimals(kind)
    elif pa.types.is_string(kind):
        strategy = st.one_of(st.text(max_size=8), st.sampled_from(EDGE_STRINGS))
    elif pa.types.is_binary(kind):
        strategy = st.binary(max_size=8)
    elif pa.types.is_date32(kind):
        strategy = st.one_of(st.dates(), st.sampled_from(EDGE_DATES))
    else:  # tz-aware for TimestampType, naive for TimestampNTZType
        zone = UTC if kind.tz else None
        strategy = st.one_of(st.datetimes(timezones=st.just(zone) if zone else st.none()),
                             st.sampled_from(EDGE_TIMES).map(lambda value: value.replace(tzinfo=zone)))
    if not nullable:
        return strategy
    return st.integers(0, 3).flatmap(lambda case: st.none() if case == 0 else strategy)


def _as_spark_rows(value: Any, kind: pa.DataType) -> Any:
    """A value as pyspark's createDataFrame takes it: maps as dicts."""
    if value is None:
        return None
    if pa.types.is_struct(kind):
        return {field.name: _as_spark_rows(value[field.name], field.type) for field in kind}
    if pa.types.is_map(kind):
        return {key: _as_spark_rows(item, kind.item_type) for key, item in value}
    if pa.types.is_list(kind):
        return [_as_spark_rows(item, kind.value_type) for item in value]
    return value


def _spark_json(spark: SparkSession, image_type: pa.DataType, images: list[Any]) -> list[str | None]:
    schema = from_arrow_schema(pa.schema([("i", pa.int32()), ("image", image_type)]), prefer_timestamp_ntz=True)
    rows = [(i, _as_spark_rows(image, image_type)) for i, image in enumerate(images)]
    return _to_json(spark.createDataFrame(rows, schema), F.col("image"))


def _to_json(frame: DataFrame, image: Column) -> list[str | None]:
    """``to_json(image, JSON_OPTIONS)`` of each row of ``frame``, in the order of its column ``i``."""
    return [row.json for row in frame.orderBy("i").select(F.to_json(image, JSON_OPTIONS).alias("json")).collect()]


def _padded(*columns: list[Any]) -> list[tuple[Any, ...]]:
    """Rows of the columns side by side, the shorter ones padded with nulls."""
    return list(itertools.zip_longest(*columns))


@pytest.fixture(scope="module")
def session(request: pytest.FixtureRequest) -> SparkSession:
    """The plain Spark 3.5 server, or in a Spark 4 environment the plain server of its line."""
    import pyspark

    spark: SparkSession = request.getfixturevalue("spark4" if pyspark.__version__ >= "4" else "plain_spark")
    return spark


@seed(20260519)  # CI's draws are fixed; a long run changes the seed and the count
@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_images_render_as_sparks_to_json(session: SparkSession, data: st.DataObject) -> None:
    image_type = data.draw(IMAGE_TYPES, "image type")
    images = data.draw(st.lists(values(image_type, nullable=False) | st.none(), min_size=1, max_size=8)
                       .filter(lambda drawn: any(image is not None for image in drawn)), "images")
    assert images_json(pa.array(images, image_type)).to_pylist() == _spark_json(session, image_type, images)


def _double(bits: int) -> float:
    return float(struct.unpack("<d", struct.pack("<Q", bits))[0])


def _single(bits: int) -> float:
    return float(struct.unpack("<f", struct.pack("<I", bits))[0])


@seed(20260520)
@settings(max_examples=5, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(doubles=st.lists(st.floats() | st.integers(0, 2**64 - 1).map(_double), max_size=300),
       floats=st.lists(st.floats(width=32) | st.integers(0, 2**32 - 1).map(_single), max_size=300))
def test_doubles_and_floats_print_as_java_does(session: SparkSession, doubles: list[float],
                                               floats: list[float]) -> None:
    """Many values at once, all bit patterns alike: the digits differ from Python's shortest only now and then."""
    rows = _padded([*EDGE_DOUBLES, *doubles], [*EDGE_FLOATS, *floats])
    frame = session.createDataFrame([(i, row) for i, row in enumerate(rows)], "i int, v struct<d double, f float>")
    ours = pa.array([{"d": d, "f": f} for d, f in rows], pa.struct([("d", pa.float64()), ("f", pa.float32())]))
    assert images_json(ours).to_pylist() == _to_json(frame, F.col("v"))


@seed(20260521)
@settings(max_examples=5, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(days=st.lists(st.integers(-(2**31), 2**31 - 1) | st.integers(-800_000, 3_000_000), max_size=40),
       micros=st.lists(st.integers(-(2**63), 2**63 - 1) | st.integers(-(10**17), 3 * 10**17), max_size=40))
def test_dates_and_timestamps_over_sparks_whole_range(session: SparkSession, days: list[int],
                                                      micros: list[int]) -> None:
    """Years before 1 and after 9999, which Python's datetime cannot carry into a DataFrame: Spark makes them."""
    assert session.conf.get("spark.sql.session.timeZone") == "UTC", "timestamp_ntz is cast in the session's zone"
    rows = _padded([0, -719_163, 2_932_897, *days], [0, -62_135_596_800_000_001, 253_402_300_800_000_000, *micros])
    frame = session.createDataFrame([(i, *row) for i, row in enumerate(rows)], "i int, d int, t long")
    instant = F.expr("timestamp_micros(t)")
    image = F.struct(F.expr("date_from_unix_date(d)").alias("d"), instant.alias("t"),
                     instant.cast("timestamp_ntz").alias("n"))
    day_numbers, instants = pa.array([d for d, _ in rows], pa.int32()), pa.array([t for _, t in rows], pa.int64())
    ours = pa.StructArray.from_arrays([day_numbers.cast(pa.date32()), instants.cast(pa.timestamp("us", "UTC")),
                                       instants.cast(pa.timestamp("us"))], ["d", "t", "n"])
    assert images_json(ours).to_pylist() == _to_json(frame, image)


def test_refuses_what_spark_renders_by_object_identity() -> None:
    images = pa.array([{"m": [(b"k", 1)]}], pa.struct([("m", pa.map_(pa.binary(), pa.int32()))]))
    with pytest.raises(UnsupportedTableFeatureError, match=r"map image\.m's key type"):
        images_json(images)
