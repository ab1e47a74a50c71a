"""PostgreSQL sink: a serving table kept equal to the Hudi table by primary key (the record key).

Each batch is reduced to every key's last change, then applied by one task in
one transaction: upserts (``INSERT … ON CONFLICT DO UPDATE``) and deletes by
key, rows passed as one JSON document per statement and typed by the target
table itself (``json_populate_recordset``). A batch is all or nothing, and
applying it again changes nothing, so a retry after any failure is exact.
The table is created on first use with the record key as primary key.

The same transaction records the batch's end in ``hudi_reverse_stream_progress``
and goes on only if no later end was applied for the stream: a write that a
killed client left running on the server can finish late, but never puts older
images over newer ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from hudi_connect.client.task_rows import spark_schema
from hudi_connect.core.executor.image_json import JSON_OPTIONS
from hudi_connect.core.executor.postgres import APPLIED, BatchFence, Connection, MergeStatements, apply_batch
from hudi_connect.reverse.changes import latest_per_key, row_image
from hudi_connect.reverse.sink import BatchContext, sink_failure

_SIMPLE_TYPES: dict[type[T.DataType], str] = {
    T.BooleanType: "boolean", T.ByteType: "smallint", T.ShortType: "smallint", T.IntegerType: "integer",
    T.LongType: "bigint", T.FloatType: "real", T.DoubleType: "double precision", T.StringType: "text",
    T.DateType: "date", T.TimestampType: "timestamptz", T.TimestampNTZType: "timestamp", T.BinaryType: "text",
}


def merge_statements(table: str, schema: T.StructType, keys: tuple[str, ...]) -> MergeStatements:
    """The SQL that applies batches of images of ``schema`` to ``table`` (primary key ``keys``)."""
    return MergeStatements.of(table, [(f.name, postgres_type(f.dataType)) for f in schema.fields], keys)


def postgres_type(data_type: T.DataType) -> str:
    """The column type for a Spark type; nested values become jsonb."""
    if isinstance(data_type, T.DecimalType):
        return f"numeric({data_type.precision},{data_type.scale})"
    return _SIMPLE_TYPES.get(type(data_type), "jsonb")


@dataclass(frozen=True)
class PostgresSink:
    """A reverse-stream (RFC-70) sink keeping a PostgreSQL table equal to the Hudi table by primary key.

    Each batch, reduced to every key's last change, is applied in one transaction (upserts and deletes),
    fenced so that a late write never puts older images over newer ones: exactly once. ``dsn`` is
    ``postgresql://user:password@host:port/database``; its password is never shown.

    Example::

        sink = PostgresSink("postgresql://app:secret@db:5432/serving", "trips")
        ReverseStream(spark, "s3a://lake/trips", "trips-to-postgres", [sink]).run_once()
    """

    dsn: str = field(repr=False)
    table: str
    key_columns: tuple[str, ...] = ()  # default: the Hudi table's record key fields

    def __post_init__(self) -> None:
        object.__setattr__(self, "_connection", Connection.from_dsn(self.dsn))

    @property
    def connection(self) -> Connection:
        """The DSN's parts: host, port, database, user and password."""
        return self._connection  # type: ignore[attr-defined,no-any-return]

    def describe(self) -> str:
        """The server, database and table, without user or password."""
        c = self.connection
        return f"postgresql://{c.host}:{c.port}/{c.database}/{self.table}"

    def published_end(self, sequence: int) -> str | None:
        """Always None: applying a batch again changes nothing, so no range needs to be sent as it was."""
        return None  # applying a batch again is a no-op, so any range may be re-sent

    def write(self, batch: DataFrame, context: BatchContext) -> None:
        """Apply every key's last change of the batch to the table in one transaction (created on first use,
        keyed by ``key_columns`` or the record key fields); SinkError, the batch rolled back, if it fails."""
        image = batch.schema["after"].dataType
        assert isinstance(image, T.StructType)
        keys = self.key_columns or tuple(context.record_key_fields)
        missing = [k for k in keys if k not in image.fieldNames()]
        if missing:
            raise ValueError(f"key columns {missing} are not columns of {context.base_path}")
        statements = merge_statements(self.table, image, keys)
        rows = latest_per_key(batch).select(
            "op", F.to_json(row_image(),
                            JSON_OPTIONS).alias("row"))
        try:
            fence = BatchFence(context.stream, context.sequence, context.end_completion_time)
            rows.repartition(1).mapInArrow(partial(apply_batch, self.connection, statements, fence),
                                           spark_schema(APPLIED)).collect()
        except PySparkException as error:
            raise sink_failure(self, context, error, "PostgreSQL rolled the batch back",
                               secrets=(self.connection.password,)) from error
