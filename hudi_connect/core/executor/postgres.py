"""The PostgreSQL sink's transaction, run by one task on the server (``mapInArrow``).

One transaction applies a batch: deletes and upserts by primary key, rows passed
as JSON documents typed by the target table (``json_populate_recordset``), and the
batch's end recorded in ``hudi_reverse_stream_progress`` only if no later end was
applied for the stream (a fence against late writes of a killed client). The SQL
is built on the client (:mod:`hudi_connect.reverse.sinks.postgres`); ``pg8000`` is
on the servers' worker Python only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

import pyarrow as pa

from hudi_connect.core.executor.refusals import worker_body

ROWS_PER_STATEMENT = 5000


def quote(identifier: str) -> str:
    """``identifier`` as a PostgreSQL quoted identifier (embedded double quotes doubled)."""
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
    def of(cls, table: str, columns: Sequence[tuple[str, str]], keys: tuple[str, ...]) -> MergeStatements:
        """For ``table`` with ``columns`` as (name, PostgreSQL type) and primary key ``keys``."""
        target = ".".join(quote(part) for part in table.split("."))
        column_list = ", ".join(f"{quote(name)} {pg_type}" for name, pg_type in columns)
        key_list = ", ".join(quote(k) for k in keys)
        rest = [name for name, _ in columns if name not in keys]
        on_conflict = ("DO UPDATE SET " + ", ".join(f"{quote(c)} = EXCLUDED.{quote(c)}" for c in rest)
                       if rest else "DO NOTHING")
        rows = f"json_populate_recordset(NULL::{target}, CAST(:rows AS json))"
        matches = " AND ".join(f"t.{quote(k)} = d.{quote(k)}" for k in keys)
        return cls(
            target=table,
            create=f"CREATE TABLE IF NOT EXISTS {target} ({column_list}, PRIMARY KEY ({key_list}))",
            upsert=f"INSERT INTO {target} SELECT * FROM {rows} ON CONFLICT ({key_list}) {on_conflict}",
            delete=f"DELETE FROM {target} AS t USING {rows} AS d WHERE {matches}",
        )


@dataclass(frozen=True)
class Connection:
    """Where the task connects to PostgreSQL; the password is kept out of the repr."""

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
    """The batch's place in its reverse stream: checkpoint ``sequence`` and the completion time of the last
    instant it covers, recorded in the progress table only if no later end was applied."""

    stream: str
    sequence: int
    end_completion_time: str


APPLIED = pa.schema([("upserted", pa.int64()), ("deleted", pa.int64())])  # what apply_batch returns


@worker_body
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
            yield pa.RecordBatch.from_pydict({"upserted": [-1], "deleted": [-1]}, schema=APPLIED)
            return
        for sql, rows in ((statements.delete, deletes), (statements.upsert, upserts)):
            for start in range(0, len(rows), ROWS_PER_STATEMENT):
                session.run(sql, rows="[" + ",".join(rows[start:start + ROWS_PER_STATEMENT]) + "]")
        session.run("COMMIT")
    finally:
        session.close()  # without COMMIT, PostgreSQL rolls the transaction back
    yield pa.RecordBatch.from_pydict({"upserted": [len(upserts)], "deleted": [len(deletes)]}, schema=APPLIED)
