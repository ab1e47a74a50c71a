"""AS_IS change records decoded in the JVM by Spark's own Avro module instead of in Python.

A DATA_BEFORE_AFTER ``.cdc`` record is a whole change event: op, commit time,
before and after images. Decoding them is most of a change query's time when
Python workers do it record by record. Where the server has ``spark-avro`` (a
module of Spark, not of Hudi), the workers only cut each record's bytes out of
its block (:func:`hudi_connect.core.executor.cdc_as_is.cdc_record_bytes`) and
``from_avro`` decodes them in the JVM, with the exact writer schema of the
block, which a first small job collects (``cdc_writer_schemas``).

The JVM path is taken only where it gives exactly the values the Python path
gives (:func:`unsupported_writer_schema`): images of primitive Avro types that
equal the table's column types or widen into them as Arrow would (int to long
or double, float to double), and record keys of strings or integers, which
both render as text the same way. Anything else (logical types, decimals,
nested types) is decoded in Python, and ``ChangeQuery.explain`` says which
path a query takes and why.

The JVM path costs a fixed extra job (collecting the writer schemas), so with
``avro_decoding="auto"`` it is taken only for enough ``.cdc`` bytes
(:data:`JVM_DECODING_MIN_BYTES`) that decoding in Python would cost more, or where the
session found the writer schemas of those commits' ``.cdc`` files before (a completed
commit's files never change): then there is no job, and the JVM path is the faster.
"""

from __future__ import annotations

import json
import weakref
from dataclasses import dataclass
from functools import reduce
from typing import Any, Literal

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    StructType,
)

AvroDecoding = Literal["auto", "jvm", "python"]

AVRO_PRIMITIVES: dict[str, DataType] = {
    "string": StringType(), "int": IntegerType(), "long": LongType(), "float": FloatType(),
    "double": DoubleType(), "boolean": BooleanType(), "bytes": BinaryType(),
}
# (written, read) pairs Spark's cast and Arrow's promotion turn into the same values
WIDENINGS = {("int", LongType()), ("int", DoubleType()), ("float", DoubleType())}
KEY_TYPES = ("string", "int", "long")
# Below this many bytes of DATA_BEFORE_AFTER .cdc files, decoding them in Python workers costs less than the
# JVM path with its extra job, the one that finds the files' writer schemas. Measured on 2 cores, a repeated
# query (benchmarks/cdc_query.py's tables, 2026-11-26): Python 0.45 s, the JVM with the job 0.58 s at 0.7 MiB;
# 0.60 and 0.61 s at 3.6 MiB; 1.23 and 0.99 s at 10.8 MiB. Once the session knows the writer schemas (kept
# per commit and file), the JVM path runs no job and was as fast or faster at every size (0.39, 0.44 and 0.88 s),
# so at a tie this picks the JVM: the session's next queries of those commits gain. (More cores decode more in
# parallel in Python and move the crossing up.)
JVM_DECODING_MIN_BYTES = 3 << 20

_availability: weakref.WeakKeyDictionary[SparkSession, bool] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class DecodingChoice:
    """Where a change query decodes its DATA_BEFORE_AFTER ``.cdc`` records, and why."""

    decoder: Literal["jvm", "python"]
    reason: str
    writer_schemas: tuple[str, ...] = ()

    def describe(self) -> str:
        """The choice as one line of ``ChangeQuery.explain``."""
        where = "in the JVM (spark-avro's from_avro)" if self.decoder == "jvm" else "in Python workers"
        return f".cdc records (DATA_BEFORE_AFTER) decoded {where}: {self.reason}"


def too_small_for_jvm(cdc_bytes: int) -> str | None:
    """Why ``auto`` decodes ``cdc_bytes`` of DATA_BEFORE_AFTER .cdc files in Python although the JVM could and
    must first find their writer schemas; None when there are enough for the JVM path to pay for that job."""
    if cdc_bytes >= JVM_DECODING_MIN_BYTES:
        return None
    return (f"the .cdc files are small ({cdc_bytes / (1 << 20):.1f} MiB, under "
            f"{JVM_DECODING_MIN_BYTES >> 20} MiB): decoding them in Python costs less than the JVM path's "
            "schema job")


def has_spark_avro(spark: SparkSession) -> bool:
    """Whether the server can run ``from_avro`` (spark-avro on its class path); asked once per session."""
    if spark not in _availability:
        try:
            from pyspark.sql.avro.functions import from_avro
        except ImportError:  # a client without Avro's functions cannot plan them either
            _availability[spark] = False
            return False
        try:  # the Avro encoding of the int 1 is the zig-zag varint 0x02
            decoded = spark.range(1).select(from_avro(F.lit(bytearray(b"\x02")), '"int"').alias("v")).collect()
            _availability[spark] = decoded[0].v == 1
        except Exception as error:  # the server names the missing Avro class; anything else is not ours to hide
            if "avro" not in str(error).lower():
                raise
            _availability[spark] = False
    return _availability[spark]


def _named_records(node: Any, found: dict[str, dict[str, Any]], namespace: str = "") -> None:
    """Every named record of an Avro schema by its name and its full name (later references use either)."""
    if isinstance(node, list):
        for branch in node:
            _named_records(branch, found, namespace)
    elif isinstance(node, dict) and node.get("type") == "record":
        namespace = node.get("namespace", namespace)
        found[node["name"]] = node
        found[f"{namespace}.{node['name']}" if namespace else node["name"]] = node
        for field in node.get("fields", ()):
            _named_records(field.get("type"), found, namespace)
    elif isinstance(node, dict):
        _named_records(node.get("type"), found, namespace)


def _nullable(avro_type: Any) -> Any:
    """The one non-null branch of a ``[null, T]`` union, or the type itself; None for wider unions."""
    if not isinstance(avro_type, list):
        return avro_type
    branches = [branch for branch in avro_type if branch != "null"]
    return branches[0] if len(branches) == 1 and len(avro_type) <= 2 else None


def _primitive(avro_type: Any) -> str | None:
    """The name of a plain primitive Avro type (nullable or not, no logical type); None for anything else."""
    avro_type = _nullable(avro_type)
    if isinstance(avro_type, dict):
        if "logicalType" in avro_type or not isinstance(avro_type.get("type"), str):
            return None
        avro_type = avro_type["type"]
    return avro_type if avro_type in AVRO_PRIMITIVES else None


def image_fields(writer_schema_json: str) -> dict[str, str] | str:
    """The image fields of a DATA_BEFORE_AFTER CDC record schema by name, as primitive type names; or
    the reason the schema is not one the JVM path decodes."""
    schema = json.loads(writer_schema_json)
    records: dict[str, dict[str, Any]] = {}
    _named_records(schema, records)
    fields = {field["name"]: field["type"] for field in schema.get("fields", ())} if isinstance(schema, dict) else {}
    if not {"op", "before", "after"} <= fields.keys() or _primitive(fields["op"]) != "string":
        return "the .cdc records are not DATA_BEFORE_AFTER records (op, before, after)"
    images = []
    for side in ("before", "after"):
        image = _nullable(fields[side])
        image = records.get(image, image) if isinstance(image, str) else image
        if not isinstance(image, dict) or image.get("type") != "record":
            return f"the {side} image is not an Avro record"
        images.append(image)
    if images[0] is not images[1] and images[0].get("fields") != images[1].get("fields"):
        return "the before and after images have different schemas"
    types = {}
    for field in images[0]["fields"]:
        primitive = _primitive(field["type"])
        if primitive is None:
            return f"column {field['name']} has the Avro type {json.dumps(field['type'])}, not a plain primitive"
        types[field["name"]] = primitive
    return types


def unsupported_writer_schema(writer_schema_json: str, image_type: StructType,
                              key_fields: tuple[str, ...]) -> str | None:
    """Why records of this writer schema would not decode in the JVM to exactly the Python path's values;
    None when they would."""
    fields = image_fields(writer_schema_json)
    if isinstance(fields, str):
        return fields
    for target in image_type.fields:
        written = fields.get(target.name)
        if written is not None and AVRO_PRIMITIVES[written] != target.dataType \
                and (written, target.dataType) not in WIDENINGS:
            return f"column {target.name} is written as Avro {written} and read as {target.dataType.simpleString()}"
    for name in key_fields:
        if fields.get(name) not in KEY_TYPES:
            return f"record key field {name} is not a string or an integer in the .cdc records"
    return None


def _aligned(image: Column, written: dict[str, str], image_type: StructType) -> Column:
    """A decoded image as a struct of ``image_type``: fields by name, cast where widened, missing ones
    (the meta columns, which .cdc images never hold) null."""
    fields = [(image[f.name].cast(f.dataType) if f.name in written else F.lit(None).cast(f.dataType)).alias(f.name)
              for f in image_type.fields]
    return F.when(image.isNull(), F.lit(None).cast(image_type)).otherwise(F.struct(*fields))


def _record_key(image: Column, key_fields: tuple[str, ...], field_prefixed: bool) -> Column:
    """The record key of an image as the key generator renders it (``record_keys`` on the worker side)."""
    if len(key_fields) == 1 and not field_prefixed:
        return image[key_fields[0]].cast("string")
    parts = []
    for name in key_fields:
        text = image[name].cast("string")
        parts.append(F.concat(F.lit(f"{name}:"),
                              F.coalesce(F.when(text == "", F.lit("__empty__")).otherwise(text), F.lit("__null__"))))
    return F.when(image.isNotNull(), F.concat_ws(",", *parts))


def decoded_events(record_bytes: DataFrame, choice: DecodingChoice, image_type: StructType,
                   key_fields: tuple[str, ...], field_prefixed: bool) -> DataFrame:
    """Change events (the worker's event schema) from rows of undecoded ``.cdc`` records."""
    from pyspark.sql.avro.functions import from_avro

    parts = []
    for number, schema in enumerate(choice.writer_schemas):
        written = image_fields(schema)
        assert isinstance(written, dict), "the choice admits only decodable schemas"
        decoded = record_bytes.where(F.col("writer_schema") == number).select(
            "ts_ms", "completion_time", from_avro(F.col("record"), schema).alias("r"))
        before, after = F.col("r.before"), F.col("r.after")
        parts.append(decoded.select(
            F.col("r.op").alias("op"), "ts_ms", "completion_time",
            F.coalesce(_record_key(after, key_fields, field_prefixed),
                       _record_key(before, key_fields, field_prefixed)).alias("record_key"),
            _aligned(before, written, image_type).alias("before"), _aligned(after, written, image_type).alias("after"),
            F.lit(True).alias("before_without_meta"), F.lit(True).alias("after_without_meta")))
    return reduce(lambda a, b: a.unionByName(b), parts)
