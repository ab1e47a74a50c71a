"""What one reverse-stream batch sends, as a DataFrame plan (pure functions over readers).

Every batch has one schema, whatever the sink:

    op               'r' (read by a full export), 'c' (insert), 'u' (update), 'd' (delete)
    record_key       Hudi's record key
    commit_time      the requested time of the commit that made the change
    completion_time  its completion time
    before, after    images as structs of the table's data columns (no Hudi meta columns)

A batch is either a full read of the table as of a commit (every record as 'r'),
or the changes of the commits in (begin, end] from the CDC engine, either
each change (``changes``) or only each key's last change (``latest``).
"""

from __future__ import annotations

from typing import Literal

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from hudi_connect.cdc.query import ChangeQuery, delete_first
from hudi_connect.client.timeline_view import TimelineView
from hudi_connect.core.format.table_config import TableProperties
from hudi_connect.core.format.table_schema import META_COLUMNS, RECORD_KEY_COLUMN
from hudi_connect.core.format.timeline import Instant
from hudi_connect.reader import TableReader

StreamMode = Literal["changes", "latest"]
BATCH_COLUMNS = ("op", "record_key", "commit_time", "completion_time", "before", "after")


def data_struct(image: Column, schema: StructType) -> Column:
    """An image without Hudi's meta columns (a null image stays null)."""
    fields = [f.name for f in schema.fields if f.name not in META_COLUMNS]
    return F.when(image.isNull(), F.lit(None)).otherwise(F.struct(*(image[f].alias(f) for f in fields)))


def row_image() -> Column:
    """The row a sink keeping one row per key shows for a change: the before image of a delete, else the after."""
    return F.when(F.col("op") == "d", F.col("before")).otherwise(F.col("after"))


def record_key_column(properties: TableProperties, columns: list[str]) -> Column:
    """Hudi's record key of a row: the meta column, else what the key generator builds."""
    if RECORD_KEY_COLUMN in columns:
        return F.col(RECORD_KEY_COLUMN)
    fields = properties.record_key_fields
    if len(fields) == 1:
        return F.col(fields[0]).cast("string")
    return F.concat_ws(",", *(F.concat(F.lit(f"{f}:"), F.col(f).cast("string")) for f in fields))


def full_batch(spark: SparkSession, base_path: str, properties: TableProperties, end: Instant,
               view: TimelineView | None = None) -> tuple[DataFrame, int | None]:
    """Every record of the table as of ``end``, as 'r' events (``view``: the timeline the caller read), and
    how many there are where the commits' write stats tell it (else None: the batch must be counted)."""
    snapshot, plan = TableReader(spark, base_path, view).as_of_completed(end)
    schema = plan.schema
    data = [f for f in schema.fields if f.name not in META_COLUMNS]
    return snapshot.select(
        F.lit("r").alias("op"), record_key_column(properties, schema.fieldNames()).alias("record_key"),
        F.lit(end.requested_time).alias("commit_time"), F.lit(end.completion_time).alias("completion_time"),
        F.lit(None).cast(StructType(data)).alias("before"),
        F.struct(*(F.col(f.name) for f in data)).alias("after"),
    ), plan.recorded_rows


def change_batch(spark: SparkSession, base_path: str, begin: str, end: Instant, mode: StreamMode,
                 view: TimelineView | None = None) -> DataFrame:
    """The changes of commits in (begin, end] (completion times on version 8+ tables, as Hudi's CDC;
    ``view``: the timeline the caller read)."""
    typed, image_schema = ChangeQuery(spark, base_path, view=view).typed_changes(begin, end)
    events = typed.select(
        F.when(F.col("op") == "i", "c").otherwise(F.col("op")).alias("op"), "record_key",
        F.col("requested_time").alias("commit_time"), "completion_time",
        data_struct(F.col("before"), image_schema).alias("before"),
        data_struct(F.col("after"), image_schema).alias("after"),
    )
    return latest_per_key(events) if mode == "latest" else events


def change_order() -> list[Column]:
    """The order a key's changes happened in: by commit (completion, then requested time), then
    :func:`~hudi_connect.cdc.query.delete_first`."""
    return [F.col("completion_time"), F.col("commit_time"), delete_first()]


def latest_per_key(events: DataFrame) -> DataFrame:
    """Each key's last change in the batch (:func:`change_order`)."""
    order = Window.partitionBy("record_key").orderBy(*(c.desc() for c in change_order()))
    return events.withColumn("_rank", F.row_number().over(order)).where("_rank = 1").drop("_rank")


def in_commit_order(batch: DataFrame) -> DataFrame:
    """One task per key range, each key's changes in :func:`change_order`: what per-key ordered sinks need."""
    return batch.repartition("record_key").sortWithinPartitions(*change_order())
