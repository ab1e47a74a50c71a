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

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from urllib.parse import unquote, urlparse

import pyarrow as pa
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from hudi_connect.reverse.changes import latest_per_key, row_image
from hudi_connect.reverse.sink import BatchContext, sink_failure

JSON_OPTIONS = {"ignoreNullFields": "false"}
ROWS_PER_STATEMENT = 5000
_SIMPLE_TYPES: dict[type[T.DataType], str] = {
    T.BooleanType: "boolean", T.ByteType: "smallint", T.ShortType: "smallint", T.IntegerType: "integer",
    T.LongType: "bigint", T.FloatType: "real", T.DoubleType: "double precision", T.StringType: "text",
    T.DateType: "date", T.TimestampType: "timestamptz", T.TimestampNTZType: "timestamp", T.BinaryType: "text",
}


def postgres_type(data_type: T.DataType) -> str:
    """The column type for a Spark type; nested values become jsonb."""
    if isinstance(data_type, T.DecimalType):
        return f"numeric({data_type.precision},{data_type.scale})"
    return _SIMPLE_TYPES.get(type(data_type), "jsonb")


def quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


PROGRESS_TABLE = "hudi_reverse_stream_progress"
CREATE_PROGRESS = (f"CREATE TABLE IF NOT EXISTS {PROGRESS_TABLE} (stream text, target text, sequence bigint, "
                   "end_completion_time text, PRIMARY KEY (stream, target))")
# a row comes back only when this batch's end is not older than the applied one
ADVANCE_PROGRESS = (f"INSERT INTO {PROGRESS_TABLE} AS p "
                    "VALUES (:stream_name, :target_table, :batch_sequence, :batch_end) "
                    "ON CONFLICT (stream, target) DO UPDATE SET sequence = EXCLUDED.sequence, "
                    "end_completion_time = EXCLUDED.end_completion_time "
                    "WHERE p.end_completion_time <= EXCLUDED.end_completion_time RETURNING 1")


@dataclass(frozen=True)
class MergeStatements:
    """The SQL of one batch, built on the client from the image schema (pure)."""

    create: str
    upsert: str
    delete: str
    target: str = ""

    @classmethod
    def of(cls, table: str, schema: T.StructType, keys: tuple[str, ...]) -> MergeStatements:
        target = ".".join(quote(part) for part in table.split("."))
        columns = ", ".join(f"{quote(f.name)} {postgres_type(f.dataType)}" for f in schema.fields)
        key_list = ", ".join(quote(k) for k in keys)
        rest = [f.name for f in schema.fields if f.name not in keys]
        on_conflict = ("DO UPDATE SET " + ", ".join(f"{quote(c)} = EXCLUDED.{quote(c)}" for c in rest)
                       if rest else "DO NOTHING")
        rows = f"json_populate_recordset(NULL::{target}, CAST(:rows AS json))"
        matches = " AND ".join(f"t.{quote(k)} = d.{quote(k)}" for k in keys)
        return cls(
            target=table,
            create=f"CREATE TABLE IF NOT EXISTS {target} ({columns}, PRIMARY KEY ({key_list}))",
            upsert=f"INSERT INTO {target} SELECT * FROM {rows} ON CONFLICT ({key_list}) {on_conflict}",
            delete=f"DELETE FROM {target} AS t USING {rows} AS d WHERE {matches}",
        )


@dataclass(frozen=True)
class Connection:
    host: str
    port: int
    database: str
    user: str
    password: str = field(repr=False)

    @classmethod
    def from_dsn(cls, dsn: str) -> Connection:
        """From ``postgresql://user:password@host:port/database``."""
        parsed = urlparse(dsn)
        if parsed.scheme not in ("postgresql", "postgres") or not parsed.hostname or not parsed.path.strip("/"):
            raise ValueError("a PostgreSQL DSN looks like postgresql://user:password@host:port/database")
        return cls(parsed.hostname, parsed.port or 5432, parsed.path.strip("/"), unquote(parsed.username or ""),
                   unquote(parsed.password or ""))


@dataclass(frozen=True)
class BatchFence:
    stream: str
    sequence: int
    end_completion_time: str


def apply_batch(connection: Connection, statements: MergeStatements, fence: BatchFence,
                batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: (op, row JSON) in, the batch applied in one transaction, counts out
    (-1, -1 when a later batch of the stream was applied already)."""
    import pg8000.native  # on the servers' worker Python only

    upserts: list[str] = []
    deletes: list[str] = []
    for batch in batches:
        for op, row in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True):
            (deletes if op == "d" else upserts).append(row)
    session = pg8000.native.Connection(connection.user, host=connection.host, port=connection.port,
                                       database=connection.database, password=connection.password, timeout=60)
    try:
        session.run("BEGIN")
        session.run(CREATE_PROGRESS)
        session.run(statements.create)
        if not session.run(ADVANCE_PROGRESS, stream_name=fence.stream, target_table=statements.target,
                           batch_sequence=fence.sequence, batch_end=fence.end_completion_time):
            session.run("ROLLBACK")
            yield pa.RecordBatch.from_pydict({"upserted": [-1], "deleted": [-1]})
            return
        for sql, rows in ((statements.delete, deletes), (statements.upsert, upserts)):
            for start in range(0, len(rows), ROWS_PER_STATEMENT):
                session.run(sql, rows="[" + ",".join(rows[start:start + ROWS_PER_STATEMENT]) + "]")
        session.run("COMMIT")
    finally:
        session.close()  # without COMMIT, PostgreSQL rolls the transaction back
    yield pa.RecordBatch.from_pydict({"upserted": [len(upserts)], "deleted": [len(deletes)]})


@dataclass(frozen=True)
class PostgresSink:
    dsn: str = field(repr=False)
    table: str
    key_columns: tuple[str, ...] = ()  # default: the Hudi table's record key fields

    def __post_init__(self) -> None:
        object.__setattr__(self, "_connection", Connection.from_dsn(self.dsn))

    @property
    def connection(self) -> Connection:
        return self._connection  # type: ignore[attr-defined,no-any-return]

    def describe(self) -> str:
        c = self.connection
        return f"postgresql://{c.host}:{c.port}/{c.database}/{self.table}"

    def published_end(self, sequence: int) -> str | None:
        return None  # applying a batch again is a no-op, so any range may be re-sent

    def write(self, batch: DataFrame, context: BatchContext) -> None:
        image = batch.schema["after"].dataType
        assert isinstance(image, T.StructType)
        keys = self.key_columns or tuple(context.record_key_fields)
        missing = [k for k in keys if k not in image.fieldNames()]
        if missing:
            raise ValueError(f"key columns {missing} are not columns of {context.base_path}")
        statements = MergeStatements.of(self.table, image, keys)
        rows = latest_per_key(batch).select(
            "op", F.to_json(row_image(),
                            JSON_OPTIONS).alias("row"))
        try:
            fence = BatchFence(context.stream, context.sequence, context.end_completion_time)
            rows.repartition(1).mapInArrow(partial(apply_batch, self.connection, statements, fence),
                                           "upserted long, deleted long").collect()
        except PySparkException as error:
            raise sink_failure(self, context, error, "PostgreSQL rolled the batch back",
                               secrets=(self.connection.password,)) from error
