"""Rows the client hands to executor tasks, typed on the client.

Given a DDL string, ``createDataFrame`` asks the server to parse it: a round trip of tens of milliseconds
in every plan. The executors' row contracts are Arrow schemas instead, converted here once per process.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType


@cache
def spark_schema(schema: pa.Schema) -> StructType:
    return from_arrow_schema(schema)


def task_rows(spark: SparkSession, rows: Sequence[tuple[object, ...]], schema: pa.Schema) -> DataFrame:
    """``rows`` as a local relation of ``schema`` (sliced as Spark slices one: a task per core)."""
    return spark.createDataFrame(list(rows), spark_schema(schema))
