"""Checks of data against a table before a write, so that errors name the problem.

Hudi's own failures for these cases are deep stack traces (or, for a missing
ordering field, silently wrong merges); these checks fail first and clearly.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ByteType,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StructType,
)

from hudi_connect.core.errors import SchemaMismatchError, WriteFailedError
from hudi_connect.core.format.table_schema import META_PREFIX

# Widening Hudi's schema evolution accepts on write (AvroSchemaCompatibility's promotions).
_WIDENS_TO: dict[type[DataType], tuple[type[DataType], ...]] = {
    ByteType: (ShortType, IntegerType, LongType, FloatType, DoubleType),
    ShortType: (IntegerType, LongType, FloatType, DoubleType),
    IntegerType: (LongType, FloatType, DoubleType),
    LongType: (FloatType, DoubleType),
    FloatType: (DoubleType,),
}


def ensure_columns(schema: StructType, required: Sequence[str], *, what: str) -> None:
    """SchemaMismatchError naming every column of ``required`` that ``schema`` lacks."""
    present = set(schema.fieldNames())
    missing = [c for c in dict.fromkeys(required) if c not in present]
    if missing:
        raise SchemaMismatchError(
            f"{what} lacks the column(s) {', '.join(missing)} (it has: {', '.join(schema.fieldNames()) or 'none'})"
        )


def ensure_no_null_keys(df: DataFrame, record_key_fields: Sequence[str]) -> None:
    """SchemaMismatchError if any record key column is null in any row (Hudi cannot key such a record)."""
    if not record_key_fields:
        return
    any_null = reduce(lambda a, b: a | b, [F.col(c).isNull() for c in record_key_fields])
    try:
        offending = df.where(any_null).select(*record_key_fields).limit(1).collect()
    except PySparkException as error:
        raise WriteFailedError(
            f"the data to write could not be computed, so it was not committed: {str(error).strip()[:500]}"
        ) from error
    if offending:
        raise SchemaMismatchError(
            f"the record key ({', '.join(record_key_fields)}) is null in at least one row, "
            f"e.g. {offending[0].asDict()}; every record needs a key"
        )


def _without_nullability(data_type: DataType) -> str:
    return data_type.simpleString()


def type_accepts(table_type: DataType, incoming: DataType) -> bool:
    """Whether a column of the table's type can take incoming values of ``incoming`` type."""
    if _without_nullability(table_type) == _without_nullability(incoming):
        return True
    if isinstance(table_type, DecimalType) and isinstance(incoming, DecimalType):
        return (
            incoming.scale <= table_type.scale
            and incoming.precision - incoming.scale <= table_type.precision - table_type.scale
        )
    return type(table_type) in _WIDENS_TO.get(type(incoming), ())


def check_write_schema(incoming: StructType, table_schema: StructType, *, table: str) -> None:
    """SchemaMismatchError unless ``incoming`` can be written into a table of ``table_schema``.

    New columns are allowed (Hudi evolves the schema); a table column the data
    lacks, or a type the table's column cannot take, is not.
    """
    table_fields = {f.name: f for f in table_schema.fields if not f.name.startswith(META_PREFIX)}
    incoming_fields = {f.name: f for f in incoming.fields if not f.name.startswith(META_PREFIX)}
    missing = [name for name in table_fields if name not in incoming_fields]
    if missing:
        raise SchemaMismatchError(
            f"the data lacks the column(s) {', '.join(missing)} of {table}; add them (null if unknown)"
        )
    clashes = [
        f"{name}: table has {table_fields[name].dataType.simpleString()}, data has {field.dataType.simpleString()}"
        for name, field in incoming_fields.items()
        if name in table_fields and not type_accepts(table_fields[name].dataType, field.dataType)
    ]
    if clashes:
        raise SchemaMismatchError(f"the data's types do not fit {table}: {'; '.join(clashes)}")
