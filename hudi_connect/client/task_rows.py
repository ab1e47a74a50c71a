"""Rows the client hands to executor tasks, typed on the client, and the Python functions run over them.

Given a DDL string, ``createDataFrame`` asks the server to parse it: a round trip of tens of milliseconds
in every plan. The executors' row contracts are Arrow schemas instead, converted here once per process. And
``createDataFrame`` asks the server for its local-relation settings in every call (another round trip) and
converts the rows value by value: :func:`task_rows` builds the local relation from Arrow itself.
And pyspark 3.5's ``mapInArrow`` asks the server for its input's columns (another round trip) even when the
client built that input from a schema it holds: :func:`map_task_rows` names them itself, and takes its output
as an Arrow schema converted here (a DDL string would be parsed by the server, a round trip per plan).

A local relation sent with a declared schema costs the server a cast projection, analysed and compiled in every
plan that holds it: 0.1-0.3 s for the 16 columns of a change query's splits, every time a batch is persisted,
counted or written. Rows whose Arrow types Spark maps one way only are sent without one: the server reads the
same schema from the Arrow data itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cache
from typing import Any, cast

import pyarrow as pa
import pyspark
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from hudi_connect.core.executor.contracts import rows_batch

ArrowFunction = Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]


@cache
def spark_schema(schema: pa.Schema) -> StructType:
    """``schema`` as Spark's StructType, converted on the client once per process (no server round trip)."""
    return from_arrow_schema(schema)


# Below this size rows go into the plan as they are. Larger ones take createDataFrame's way, which may upload them
# as an artifact first (``spark.sql.session.localRelationCacheThreshold``, 64 MiB by default).
INLINE_ROWS_LIMIT = 4 << 20


# Arrow types Spark's server reads as exactly the Spark type the client declares (``spark_schema``)
_UNAMBIGUOUS = (pa.types.is_string, pa.types.is_int64, pa.types.is_int32, pa.types.is_boolean, pa.types.is_binary,
                pa.types.is_float64)


def _maps_one_way(arrow_type: pa.DataType) -> bool:
    """Whether the server reads ``arrow_type`` from Arrow data as the type the client would declare for it."""
    if pa.types.is_list(arrow_type):
        return _maps_one_way(arrow_type.value_type)
    if pa.types.is_struct(arrow_type):
        return all(_maps_one_way(field.type) for field in arrow_type)
    return any(is_type(arrow_type) for is_type in _UNAMBIGUOUS)


@cache
def declared_schema(schema: pa.Schema) -> str | None:
    """The schema a local relation of ``schema`` declares to the server: None where the Arrow data says it."""
    return None if all(_maps_one_way(f.type) for f in schema) else spark_schema(schema).json()


def task_rows(spark: SparkSession, rows: Sequence[tuple[object, ...]], schema: pa.Schema) -> DataFrame:
    """``rows`` as a local relation of ``schema`` (sliced as Spark slices one: a task per core)."""
    table = pa.Table.from_batches([rows_batch(rows, schema)])
    if table.nbytes >= INLINE_ROWS_LIMIT:
        return spark.createDataFrame(list(rows), spark_schema(schema))
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
    from pyspark.sql.connect.plan import LocalRelation

    relation = LocalRelation(table, schema=declared_schema(schema))
    if pyspark.__version__.startswith("3.5"):
        return ConnectDataFrame.withPlan(relation, session=spark)  # type: ignore[arg-type,return-value]
    return ConnectDataFrame(relation, spark)  # type: ignore[arg-type,return-value]  # Spark 4: the constructor


def map_task_rows(rows: DataFrame, schema: pa.Schema, function: ArrowFunction,
                  output: StructType | pa.Schema) -> DataFrame:
    """``rows.mapInArrow(function, output)`` for ``rows`` of ``schema`` (made by :func:`task_rows`, perhaps
    repartitioned), without asking the server for their columns (nor to parse ``output``)."""
    if isinstance(output, pa.Schema):
        output = spark_schema(output)
    if not pyspark.__version__.startswith("3.5"):  # Spark 4 clients keep the schema they were given
        return rows.mapInArrow(function, output)
    from pyspark.rdd import PythonEvalType
    from pyspark.sql.connect import plan
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
    from pyspark.sql.connect.udf import UserDefinedFunction

    udf = UserDefinedFunction(function, returnType=output, evalType=PythonEvalType.SQL_MAP_ARROW_ITER_UDF)
    child = cast(Any, rows)._plan  # a Connect DataFrame's plan (typed as the classic DataFrame)
    mapped = plan.MapPartitions(child=child, function=udf, cols=schema.names, is_barrier=False)
    return ConnectDataFrame.withPlan(mapped, session=rows.sparkSession)  # type: ignore[arg-type,return-value]
