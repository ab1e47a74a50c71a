"""Which .cdc writer schemas the JVM path decodes (hudi_connect.cdc.jvm_decoding), without a server.

The rule: only where Spark's ``from_avro`` and a cast give exactly what the Python
path gives; everything else is named as the reason for decoding in Python.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType

from hudi_connect.cdc.jvm_decoding import (
    JVM_DECODING_MIN_BYTES,
    image_fields,
    too_small_for_jvm,
    unsupported_writer_schema,
)


def cdc_schema(fields: list[dict[str, Any]], *, by_name: bool = True) -> str:
    """A DATA_BEFORE_AFTER CDC record schema as Hudi writes it: the after image may reference the
    before image's record by its full name."""
    image = {"type": "record", "name": "trips_record", "namespace": "hoodie.trips", "fields": fields}
    after: Any = "hoodie.trips.trips_record" if by_name else image
    return json.dumps({"type": "record", "name": "CDC", "fields": [
        {"name": "op", "type": "string"}, {"name": "ts_ms", "type": "string"},
        {"name": "before", "type": ["null", image], "default": None},
        {"name": "after", "type": ["null", after], "default": None}]})


FIELDS = [{"name": "id", "type": "int"}, {"name": "v", "type": ["null", "string"], "default": None},
          {"name": "ts", "type": "long"}, {"name": "part", "type": {"type": "string", "avro.java.string": "String"}}]
TABLE = StructType([StructField("_hoodie_commit_time", StringType()), StructField("id", IntegerType()),
                    StructField("v", StringType()), StructField("ts", LongType()), StructField("part", StringType())])


@pytest.mark.parametrize("by_name", [True, False])
def test_primitive_images_decode_in_the_jvm(by_name: bool) -> None:
    schema = cdc_schema(FIELDS, by_name=by_name)
    assert image_fields(schema) == {"id": "int", "v": "string", "ts": "long", "part": "string"}
    assert unsupported_writer_schema(schema, TABLE, ("id",)) is None


def test_widening_as_arrow_widens_is_allowed_and_other_type_changes_are_not() -> None:
    widened = StructType([StructField("id", LongType()), StructField("ts", LongType())])
    assert unsupported_writer_schema(cdc_schema(FIELDS), widened, ("id",)) is None
    assert unsupported_writer_schema(cdc_schema(FIELDS), StructType([StructField("id", DoubleType())]), ()) is None
    # Arrow refuses long to double where it loses precision; Spark's cast would round: not alike
    assert unsupported_writer_schema(cdc_schema(FIELDS), StructType([StructField("ts", DoubleType())]), ()) == \
        "column ts is written as Avro long and read as double"
    narrowed = StructType([StructField("ts", IntegerType())])
    assert unsupported_writer_schema(cdc_schema(FIELDS), narrowed, ("id",)) == \
        "column ts is written as Avro long and read as int"
    as_text = StructType([StructField("id", StringType())])
    assert "column id is written as Avro int" in str(unsupported_writer_schema(cdc_schema(FIELDS), as_text, ("id",)))


@pytest.mark.parametrize(("field_type", "reason"), [
    ({"type": "int", "logicalType": "date"}, "column x has the Avro type"),
    ({"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}, "column x has the Avro type"),
    (["null", "int", "string"], "column x has the Avro type"),
    ({"type": "array", "items": "int"}, "column x has the Avro type"),
    ({"type": "record", "name": "inner", "fields": [{"name": "a", "type": "int"}]}, "column x has the Avro type"),
])
def test_other_image_types_go_to_python_with_the_reason(field_type: Any, reason: str) -> None:
    schema = cdc_schema([*FIELDS, {"name": "x", "type": field_type}])
    assert str(unsupported_writer_schema(schema, TABLE, ("id",))).startswith(reason)


def test_keys_must_render_alike() -> None:
    schema = cdc_schema([*FIELDS, {"name": "score", "type": "double"}])
    table = StructType([*TABLE.fields, StructField("score", DoubleType())])
    assert unsupported_writer_schema(schema, table, ("id", "part")) is None
    assert unsupported_writer_schema(schema, table, ("score",)) == \
        "record key field score is not a string or an integer in the .cdc records"


def test_records_that_are_not_whole_events_are_named() -> None:
    before_only = json.dumps({"type": "record", "name": "CDC", "fields": [
        {"name": "op", "type": "string"}, {"name": "record_key", "type": "string"},
        {"name": "before", "type": ["null", {"type": "record", "name": "r", "fields": FIELDS}]}]})
    assert image_fields(before_only) == "the .cdc records are not DATA_BEFORE_AFTER records (op, before, after)"


def test_auto_decodes_few_cdc_bytes_in_python_and_says_how_few() -> None:
    reason = too_small_for_jvm(2 << 20)
    assert reason is not None and "(2.0 MiB, under 3 MiB)" in reason and "schema job" in reason
    assert too_small_for_jvm(JVM_DECODING_MIN_BYTES - 1) is not None
    assert too_small_for_jvm(JVM_DECODING_MIN_BYTES) is None
    assert too_small_for_jvm(90 << 20) is None
