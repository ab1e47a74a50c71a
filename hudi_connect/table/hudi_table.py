"""``HudiTable``: a typed Python API for one Hudi table over Spark Connect.

Every operation is a Spark plan or a Hudi SQL procedure executed by the
server; the client holds only the ``sc://`` session. Writes return the instant
they committed, reads return DataFrames.

    table = HudiTable.create(spark, "s3a://bucket/trips", "id int, city string, ts long",
                             record_key="id", ordering_field="ts", partition_by="city")
    instant = table.upsert(df)
    table.snapshot().show()
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import StructType

from hudi_connect.cdc import ChangeFormat, ChangeQuery
from hudi_connect.client import catalog, remote_files
from hudi_connect.client.catalog import CatalogTable
from hudi_connect.client.instants import InstantLike
from hudi_connect.client.server import require_hudi_server, server_confs_with_prefix
from hudi_connect.client.server_loss import ensure_bounded, is_server_lost, lost_server_error, over_connect
from hudi_connect.client.timeline_view import TimelineView, load_properties
from hudi_connect.core.errors import (
    ForwardingFailedError,
    ServerMisconfiguredError,
    ServerUnavailableError,
    SinkError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
    WriteConflictError,
    WriteFailedError,
)
from hudi_connect.core.format.commit_metadata import CommitMetadata
from hudi_connect.core.format.history import HistoryEntry
from hudi_connect.core.format.table_config import (
    CdcLoggingMode,
    MetadataPartition,
    TableProperties,
    TableType,
)
from hudi_connect.core.format.timeline import Instant, Timeline
from hudi_connect.reader import TableReader
from hudi_connect.table import concurrency, services
from hudi_connect.table import options as opts
from hudi_connect.table.hudi_reads import HudiReads, shown_columns
from hudi_connect.table.merge import (
    MergeBuilder,
    MergeClause,
    merge_statement,
    partial_update_loses_columns,
    update_statement,
)
from hudi_connect.table.options import TableSpec, WriteOperation
from hudi_connect.table.recovery import (
    RecoveryReport,
)
from hudi_connect.table.schema_check import check_write_schema, ensure_columns, ensure_no_null_keys
from hudi_connect.table.write_outcome import WRITE_ID_OPTION, WriteOutcome, WriteState, new_write_id, write_outcome
from hudi_connect.table_spec import FileIndex, RecordIndex
from hudi_connect.table_spec.user_predicates import UserPredicates

if TYPE_CHECKING:
    from hudi_connect.reverse.changes import StreamMode
    from hudi_connect.reverse.sink import Sink
    from hudi_connect.reverse.streamer import Progress, ReverseStream


log = logging.getLogger(__name__)


def _names(value: str | Sequence[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:500] if text else type(error).__name__


class HudiTable:
    """One Hudi table, addressed by its name in the server's catalog or by its base path on the server's storage.

    The Python face of Hudi's Spark datasource and SQL procedures on a server with Hudi's bundle: writes
    (Hudi's write operations: insert, upsert, delete...) each return the instant they committed, table
    services (compaction, clustering, cleaning) and recovery run as Hudi procedures, and Hudi's own query
    types (snapshot, read-optimized, time travel, incremental, CDC) return DataFrames.

    Example::

        table = HudiTable.open(spark, "lake.trips")  # or by path: "s3a://lake/trips"
        instant = table.upsert(updates_df)
        table.as_of(instant).show()
    """

    def __init__(
        self,
        spark: SparkSession,
        base_path: str,
        properties: TableProperties,
        write_options: dict[str, str] | None = None,
        progress: Progress | None = None,
        catalog_table: CatalogTable | None = None,
        single_writer: bool = False,
    ) -> None:
        self._spark = ensure_bounded(spark)
        self._single_writer = single_writer
        self._server_lock: dict[str, str] | None = None
        self._catalog_table = catalog_table
        self._progress = progress
        self._base_path = base_path.rstrip("/")
        self._properties = properties
        self._write_options = dict(write_options or {})
        self._view = TimelineView(spark, self._base_path, properties)
        self._reader: TableReader | None = None
        self._hudi_checked = False
        self.compaction = services.Compaction(self)
        self._forward: tuple[ReverseStream, ...] = ()

    def _report(self, message: str) -> None:
        log.info("%s", message)
        if self._progress is not None:
            self._progress(message)

    def _require_hudi(self, what: str) -> None:
        """Refuse ``what`` by name unless the server has Hudi's bundle (asked once per table object)."""
        if not self._hudi_checked:
            try:
                require_hudi_server(self._spark)
            except ServerMisconfiguredError as error:
                raise ServerMisconfiguredError(
                    f"{what} on {self._base_path} need Hudi on the server: {error}") from error
            self._hudi_checked = True

    def _concurrency_options(self) -> dict[str, str]:
        """The concurrency control of this object's writes (:mod:`hudi_connect.table.concurrency`); the server's
        declared lock is asked once per table object."""
        if self._server_lock is None and not self._single_writer:
            self._server_lock = concurrency.server_lock_options(
                server_confs_with_prefix(self._spark, concurrency.SERVER_LOCK_PREFIX))
        props = self._properties
        merge_on_read = props.table_type is TableType.MERGE_ON_READ
        non_blocking = concurrency.supports_non_blocking(
            merge_on_read=merge_on_read, table_version=props.version, settings={**props.raw, **self._write_options})
        return concurrency.concurrency_options(single_writer=self._single_writer, server_lock=self._server_lock or {},
                                               chosen=self._write_options, base_path=self._base_path,
                                               non_blocking=non_blocking, merge_on_read=merge_on_read)

    # --- opening and creating ---------------------------------------------------------

    @classmethod
    @over_connect("opening a table")
    def open(cls, spark: SparkSession, table: str, *, options: dict[str, str] | None = None,
             progress: Progress | None = None, single_writer: bool = False) -> HudiTable:
        """Open a table by its name in the server's catalog (``db.orders``: created by SQL, synced by Hudi's
        hive sync, or registered by :meth:`create` or :meth:`register`) or by its path (``s3a://lake/orders``),
        on any Spark Connect server; TableNotFoundError / NotAHudiTableError otherwise. Reads, change queries,
        history, files and reverse streams work everywhere (a named table is read from the location the catalog
        gives); writes, table services and :attr:`hudi` need Hudi's bundle on the server
        (:class:`ServerMisconfiguredError` says what it lacks). Writes to a table opened by name on a server
        whose catalog is a Hive Metastore keep the catalog's schema and partitions in step, as Hudi's SQL does.

        ``options`` (``hoodie.*`` writer settings) apply to every write through this object; ``progress``
        hears what its writes, table services and reverse streams are doing, one line at a time (the same
        lines are logged under ``hudi_connect``, INFO).

        Writes are safe beside other writers of the table by default: Hudi's optimistic concurrency control
        under a lock (the server's declared one, or Hudi's in-process lock for the sessions of one server), a
        conflict raised as :class:`WriteConflictError`. ``single_writer=True`` is Hudi's faster default, for a
        user who guarantees that nothing else writes the table meanwhile (:mod:`hudi_connect.table.concurrency`).
        """
        spark = ensure_bounded(spark)
        found = catalog.resolve_table(spark, table) if catalog.is_table_name(table) else None
        path = found.location if found is not None else table
        return cls(spark, path, load_properties(spark, path), options, progress, found, single_writer)

    @classmethod
    @over_connect("looking for a table")
    def exists(cls, spark: SparkSession, table: str) -> bool:
        """Whether a Hudi table is at ``table``: a name the catalog knows, or a path holding
        ``.hoodie/hoodie.properties``."""
        if catalog.is_table_name(table):
            try:
                catalog.describe(spark, table)
            except TableNotFoundError:
                return False
            return True
        return remote_files.read_file(spark, f"{table.rstrip('/')}/.hoodie/hoodie.properties") is not None

    @classmethod
    @over_connect("creating a table (it may or may not exist now: HudiTable.exists tells)")
    def create(
        cls,
        spark: SparkSession,
        table: str,
        schema: StructType | str,
        *,
        record_key: str | Sequence[str],
        ordering_field: str | None = None,
        partition_by: str | Sequence[str] = (),
        table_type: TableType | str = TableType.MERGE_ON_READ,
        cdc: CdcLoggingMode | str | None = None,
        metadata_table: bool = True,
        metadata_indexes: Sequence[MetadataPartition | str] = (),
        options: dict[str, str] | None = None,
        name: str | None = None,
        progress: Progress | None = None,
        single_writer: bool = False,
    ) -> HudiTable:
        """Create an empty table with its configuration fixed by a first, empty commit.

        ``table`` is a path, or a name (``db.orders``): the table then goes in the database's folder and is
        registered under that name. ``name`` registers a table created at a path under that name too.
        ``cdc`` turns on Hudi's CDC logging with the given supplemental logging mode; ``options`` passes any
        other ``hoodie.*`` setting through; ``single_writer`` is :meth:`open`'s. A MOR table's writes log their
        records in Parquet data blocks (``hoodie.logfile.data.block.format``, Avro by Hudi's default: a tenth of
        the bytes, faster writes and reads); ``options`` set it otherwise.
        """
        require_hudi_server(ensure_bounded(spark))
        if catalog.is_table_name(table):
            if name is not None and name != table:
                raise ValueError(f"a table created by name ({table}) takes no other name ({name})")
            name = table
            database = table.rsplit(".", 1)[0] if "." in table else spark.catalog.currentDatabase()
            path = f"{catalog.database_location(spark, database)}/{table.rsplit('.', 1)[-1]}"
        else:
            path = table
        if name is not None and catalog.is_table_name(name) and cls.exists(spark, name):
            raise TableExistsError(f"the catalog already has a table named {name}")
        empty = spark.createDataFrame([], schema)
        spec = TableSpec(
            name=(name.rsplit(".", 1)[-1] if name else path.rstrip("/").rsplit("/", 1)[-1]).replace("-", "_"),
            record_key=_names(record_key),
            ordering_field=ordering_field,
            partition_by=_names(partition_by),
            table_type=TableType(table_type),
            cdc=CdcLoggingMode(cdc) if cdc is not None else None,
            metadata_table=metadata_table,
            metadata_indexes=tuple(MetadataPartition(i) for i in metadata_indexes),
            options=dict(options or {}),
        )
        if not spec.record_key:
            raise ValueError("record_key must name at least one column")
        needed = [*spec.record_key, *spec.partition_by, *([ordering_field] if ordering_field else [])]
        ensure_columns(empty.schema, needed, what=f"the schema of the new table at {path}")
        if cls.exists(spark, path):
            raise TableExistsError(f"a Hudi table already exists at {path}; open it with HudiTable.open")
        write_options = opts.create_options(spec) | opts.operation_options(WriteOperation.INSERT)
        try:
            empty.write.format("hudi").options(**write_options).mode("append").save(path)
        except PySparkException as error:
            raise WriteFailedError(f"creating the table at {path} failed: {_first_line(error)}") from error
        created = cls(spark, path, load_properties(spark, path), options, progress, single_writer=single_writer)
        return created.register(name) if name is not None else created

    @over_connect("registering the table in the catalog")
    def register(self, name: str) -> HudiTable:
        """Register this table in the server's catalog as ``name`` (``db.orders``), and return it opened by that
        name: what :meth:`update`, :meth:`merge` (Hudi's SQL) need, and what other servers sharing the catalog
        open it by."""
        self._require_hudi("registering a table")
        if not catalog.is_table_name(name):
            raise ValueError(f"{name!r} is not a table name (db.table)")
        try:
            catalog.register(self._spark, name, self._base_path)
        except PySparkException as error:
            if "TABLE_OR_VIEW_ALREADY_EXISTS" in str(error):
                raise TableExistsError(f"the catalog already has a table named {name}") from error
            raise WriteFailedError(f"registering {self._base_path} as {name} failed: {_first_line(error)}") from error
        return HudiTable.open(self._spark, name, options=self._write_options, progress=self._progress,
                              single_writer=self._single_writer)

    # --- what the table is -------------------------------------------------------------

    @property
    def spark(self) -> SparkSession:
        """The Spark Connect session every operation runs through."""
        return self._spark

    @property
    def name(self) -> str | None:
        """``database.table`` when the table was opened by name (None when by path)."""
        return self._catalog_table.name if self._catalog_table is not None else None

    @property
    def base_path(self) -> str:
        """The table's base path on the server's storage, without a trailing slash."""
        return self._base_path

    @property
    def properties(self) -> TableProperties:
        """The table's ``hoodie.properties`` as last read (:meth:`refresh` reads them again)."""
        return self._properties

    @over_connect("reading hoodie.properties")
    def refresh(self) -> HudiTable:
        """Re-read ``hoodie.properties`` (after another writer changed the table)."""
        self._properties = load_properties(self._spark, self._base_path)
        self._view = TimelineView(self._spark, self._base_path, self._properties)
        self._reader = None
        return self

    @property
    @over_connect("reading the table's schema")
    def schema(self) -> StructType:
        """The table's data columns (no Hudi meta columns)."""
        return self.snapshot().schema

    def _hudi_schema(self) -> StructType:
        """The data columns as Hudi's own read gives them: what a write is checked against."""
        return self.hudi.snapshot().schema

    @over_connect("listing the timeline")
    def timeline(self) -> Timeline:
        """The active timeline, listed through the server."""
        return self._view.timeline()

    @over_connect("reading commit metadata")
    def commit_metadata(self, instants: Sequence[Instant]) -> dict[Instant, CommitMetadata]:
        """Decoded metadata of completed write instants, read once and cached (they never change)."""
        return self._view.commit_metadata(instants)

    @over_connect("reading the table's history")
    def history(self, limit: int | None = None) -> list[HistoryEntry]:
        """Instants newest first, with operation type and write statistics."""
        return self._view.history(limit)

    # --- reverse streams (RFC-70) -------------------------------------------------------------

    def reverse_stream(self, name: str, sinks: Sequence[Sink], *, mode: StreamMode = "changes",
                       max_commits: int | None = None, progress: Progress | None = None) -> ReverseStream:
        """The named reverse stream of this table to ``sinks`` (see :class:`~hudi_connect.reverse.ReverseStream`)."""
        from hudi_connect.reverse.streamer import ReverseStream

        return ReverseStream(self._spark, self._base_path, name, sinks, mode=mode, max_commits=max_commits,
                             progress=progress or self._progress)

    def forwarding_to(self, *streams: ReverseStream) -> HudiTable:
        """This table, whose writes forward their commit to ``streams`` right after it completes (inline mode).

            table.forwarding_to(table.reverse_stream("serving", [PostgresSink(dsn, "trips")])).upsert(df)
        """
        forwarding = HudiTable(self._spark, self._base_path, self._properties, self._write_options, self._progress,
                               self._catalog_table, self._single_writer)
        forwarding._forward = streams
        return forwarding

    def _forward_commit(self, instant: Instant) -> None:
        for stream in self._forward:
            try:
                stream.run_once(until=instant)
            except SinkError as error:
                raise ForwardingFailedError(
                    f"{instant.action.value} {instant.requested_time} on {self._base_path} is committed, but "
                    f"forwarding it failed; the next run of the stream sends it. {error}",
                    committed=instant.requested_time) from error

    # --- writes ----------------------------------------------------------------------------

    def insert(self, df: DataFrame, *, options: dict[str, str] | None = None) -> Instant:
        """Insert new records (no lookup of existing keys: inserting an existing key duplicates it)."""
        return self._write(df, WriteOperation.INSERT, extra_options=options)

    def bulk_insert(self, df: DataFrame, *, options: dict[str, str] | None = None) -> Instant:
        """Insert new records like :meth:`insert`, through Hudi's ``bulk_insert``: a sort-based writer for large
        (initial) loads, which sizes files only on a best-effort basis."""
        return self._write(df, WriteOperation.BULK_INSERT, extra_options=options)

    def upsert(self, df: DataFrame, *, options: dict[str, str] | None = None) -> Instant:
        """Insert new keys and update existing ones, ordered by the ordering field."""
        return self._write(df, WriteOperation.UPSERT, extra_options=options)

    def insert_overwrite(self, df: DataFrame, *, options: dict[str, str] | None = None) -> Instant:
        """Replace the partitions present in ``df`` with its rows."""
        return self._write(df, WriteOperation.INSERT_OVERWRITE, extra_options=options)

    def insert_overwrite_table(self, df: DataFrame, *, options: dict[str, str] | None = None) -> Instant:
        """Replace the whole table with ``df``."""
        return self._write(df, WriteOperation.INSERT_OVERWRITE_TABLE, extra_options=options)

    def delete(self, keys: DataFrame) -> Instant:
        """Delete the records whose keys are in ``keys`` (record key columns, partition columns optional)."""
        props = self._properties
        ensure_columns(keys.schema, props.record_key_fields, what="the DataFrame of keys to delete")
        missing_partition = [c for c in props.partition_fields if c not in keys.columns]
        if missing_partition:  # the simple index needs each key's partition: look it up
            located = self.hudi.snapshot().select(*props.record_key_fields, *props.partition_fields)
            keys = located.join(keys.select(*props.record_key_fields).distinct(), list(props.record_key_fields))
        return self._write(keys, WriteOperation.DELETE, check_schema=False)

    def delete_where(self, condition: str | Column) -> Instant:
        """Delete every record matching a SQL condition on the table's columns."""
        props = self._properties
        columns = [*props.record_key_fields, *props.partition_fields, *props.ordering_fields]
        matching = self.hudi.snapshot().where(condition).select(*dict.fromkeys(columns))
        return self._write(matching, WriteOperation.DELETE, check_schema=False)

    def delete_partitions(self, partitions: Sequence[str]) -> Instant:
        """Drop whole partitions, given as partition paths (``city=paris``, or ``paris`` for one field)."""
        if isinstance(partitions, str):
            raise TypeError("partitions must be a sequence of partition paths, not one string")
        props = self._properties
        if not props.partitioned:
            raise UnsupportedOperationError(f"the table at {self._base_path} is not partitioned")
        paths = [self._partition_path(p) for p in partitions]
        if not paths:
            raise ValueError("name at least one partition to delete")
        empty = self._spark.createDataFrame([], self._hudi_schema())
        return self._write(empty, WriteOperation.DELETE_PARTITION, partitions_to_delete=paths, check_schema=False)

    def _partition_path(self, partition: str) -> str:
        props = self._properties
        if "=" in partition or "/" in partition or not props.hive_style_partitioning:
            return partition.strip("/")
        if len(props.partition_fields) != 1:
            raise ValueError(f"give full partition paths for a table partitioned by {props.partition_fields}")
        return f"{props.partition_fields[0]}={partition}"

    @over_connect("preparing a write (nothing was written)")
    def _write(
        self,
        df: DataFrame,
        operation: WriteOperation,
        *,
        partitions_to_delete: Sequence[str] = (),
        check_schema: bool = True,
        extra_options: dict[str, str] | None = None,
    ) -> Instant:
        self._require_hudi("writes")
        props = self._properties
        required = [*props.record_key_fields, *props.partition_fields]
        if operation is not WriteOperation.DELETE and operation is not WriteOperation.DELETE_PARTITION:
            required += list(props.ordering_fields)
        if operation is not WriteOperation.DELETE_PARTITION:
            ensure_columns(df.schema, required, what=f"the DataFrame to {operation.value}")
            ensure_no_null_keys(df, props.record_key_fields)
        if check_schema:
            try:
                table_schema = self._hudi_schema()
            except PySparkException as error:  # Hudi's read of the table failed (a writer beside it mid-commit)
                if is_server_lost(error):
                    raise
                raise WriteFailedError(f"{operation.value} into {self._base_path} did not start: Hudi could not "
                                       "read the table's schema to check the write against (nothing was written; "
                                       f"running it again is safe). Cause: {_first_line(error)}") from error
            check_write_schema(df.schema, table_schema, table=self._base_path)
        write_options = (
            opts.table_write_options(props)
            | self._catalog_sync_options()
            | self._concurrency_options()
            | self._write_options
            | opts.operation_options(operation, partitions_to_delete)
            | (extra_options or {})
        )
        write_id = new_write_id()
        write_options[WRITE_ID_OPTION] = write_id
        what = f"{operation.value} into {self._base_path} (write id {write_id})"
        self._report(f"{what}: writing through Hudi")
        try:
            df.write.format("hudi").options(**write_options).mode("append").save(self._base_path)
        except Exception as error:
            if is_server_lost(error):
                raise lost_server_error(
                    self._spark, f"writing: {what}", write_id=write_id,
                    outcome=("Whether the write committed is unknown: it may have completed just before the server "
                             f"died. On a new session, HudiTable.open(...).outcome_of('{write_id}') answers from "
                             "the timeline, and recover() rolls back a write a dead server left pending."),
                ) from error
            if not isinstance(error, PySparkException):
                raise
            failure = self._failed_write(what, write_id, error)
            if failure is not None:
                raise failure from error
        try:
            outcome = self.outcome_of(write_id)
            if outcome.instant is None:
                raise WriteFailedError(f"{what} finished but no commit carries its write id: {outcome}")
            self._report(f"{what}: committed as {outcome.instant.action.value} {outcome.instant.requested_time}")
            self._forward_commit(outcome.instant)
        except ServerUnavailableError as lost:  # the write itself had been answered: say it committed
            forwarding = " Forwarding it to reverse streams did not finish: their next run sends it." \
                if self._forward else ""
            raise ServerUnavailableError(f"{lost} The {what} had committed: its server answered it.{forwarding}",
                                         doing=lost.doing, write_id=write_id) from lost
        return outcome.instant

    def _catalog_sync_options(self) -> dict[str, str]:
        found = self._catalog_table
        if found is None or not found.hive_catalog:
            return {}
        return opts.catalog_sync_options(found.database, found.table, self._properties)

    # --- Hudi's SQL writes: UPDATE and MERGE INTO (a table opened by name) ---------------------------

    def update(self, set: dict[str, str], condition: str | None = None) -> Instant | None:
        """Hudi's ``UPDATE``: set the columns of ``set`` (SQL expressions: ``{"amount": "amount * 2"}``) in every
        record matching the SQL ``condition`` (every record without one); a partial update keeps the other
        columns. Returns its commit, None if it matched nothing."""
        return self._sql_write("update", lambda name: update_statement(name, set, condition))

    def merge(self, source: DataFrame, condition: str, *, target_alias: str = "t",
              source_alias: str = "s") -> MergeBuilder:
        """Hudi's ``MERGE INTO`` of ``source`` on ``condition`` (over the aliases ``t`` and ``s``; Hudi requires
        it to equate the record keys), built clause by clause as delta-spark's::

            table.merge(updates, "t.id = s.id").when_matched_update(set={"amount": "s.amount"}) \
                 .when_matched_delete("s.deleted").when_not_matched_insert_all().execute()
        """
        def run(clauses: tuple[MergeClause, ...]) -> Instant | None:
            props = self._properties
            loss = partial_update_loses_columns(
                clauses, tuple(self._hudi_schema().fieldNames()),
                merge_on_read=props.table_type is TableType.MERGE_ON_READ, table_version=props.version,
                source_has_unmatched_rows=lambda: self._has_unmatched_rows(source))
            if loss is not None:
                raise UnsupportedOperationError(
                    f"this merge into {self.name or self._base_path} would lose data, so nothing was written: "
                    f"{loss}. Set every column in when_matched_update, or run the partial update as a merge of "
                    "its own whose source holds only rows of existing records")
            view = f"hudi_connect_merge_source_{uuid.uuid4().hex[:12]}"  # a temporary view: this session only
            source.createOrReplaceTempView(view)
            try:
                return self._sql_write("merge", lambda name: merge_statement(
                    name, view, condition, clauses, target_alias=target_alias, source_alias=source_alias))
            finally:
                self._spark.catalog.dropTempView(view)

        return MergeBuilder(run)

    def _has_unmatched_rows(self, source: DataFrame) -> bool:
        """Whether ``source`` holds a row whose record key no record of the table has (one that lacks the key
        columns counts as having one: Hudi would derive its keys from the merge condition)."""
        keys = list(self._properties.record_key_fields)
        if not set(keys) <= set(source.columns):
            return True
        existing = self.hudi.snapshot().select(*keys)
        return bool(source.select(*keys).join(existing, keys, "left_anti").limit(1).count())

    @over_connect("writing through Hudi's SQL")
    def _sql_write(self, what: str, statement: Callable[[str], str]) -> Instant | None:
        self._require_hudi(f"{what}s (Hudi's SQL)")
        if self._catalog_table is None:
            raise UnsupportedOperationError(
                f"{what} runs as Hudi's SQL, which addresses a table by its catalog name only; "
                f"{self._base_path} was opened by path: open it by name, or register it once with "
                "table.register('db.name')")
        sql = statement(self._catalog_table.name)
        before = self.timeline()
        self._report(f"{self._catalog_table.name}: {sql}")
        try:
            with self._session_options():
                self._spark.sql(sql).collect()
        except PySparkException as error:
            pending = [i.requested_time for i in self.timeline().after(before).pending()]
            left = (f"; it left pending writes ({', '.join(pending)}): table.recover() rolls them back"
                    if pending else "; readers see the table's previous state")
            raise WriteFailedError(f"{what} of {self._catalog_table.name} failed{left}. Cause: "
                                   f"{_first_line(error)}") from error
        self.refresh()
        committed = self.timeline().after(before).write_commits().first()
        if committed is not None:
            self._report(f"{what} of {self._catalog_table.name}: committed as {committed.action.value} "
                         f"{committed.requested_time}")
            self._forward_commit(committed)
        return committed

    @contextlib.contextmanager
    def _session_options(self) -> Iterator[None]:
        """This object's ``hoodie.*`` write options as session settings while a SQL write runs: Hudi's SQL
        commands take their settings from the session (and the table), not from options."""
        settings = self._concurrency_options() | self._write_options
        earlier: dict[str, str | None] = {key: self._spark.conf.get(key, None) for key in settings}
        for key, value in settings.items():
            self._spark.conf.set(key, value)
        try:
            yield
        finally:
            for key, before in earlier.items():
                if before is None:
                    self._spark.conf.unset(key)
                else:
                    self._spark.conf.set(key, before)

    def _failed_write(self, what: str, write_id: str, error: BaseException) -> WriteFailedError | None:
        """The error for a write the server refused, saying what the timeline shows of it; None when the write
        committed: the commit stands, and an error would invite a retry that inserts its rows twice. What failed
        after it (a table service raced by another writer, the metadata table rebuilt beside it) is logged as a
        warning; Hudi runs the service again after a later commit."""
        cause = _first_line(error)
        outcome = self.outcome_of(write_id)
        if outcome.state is WriteState.COMMITTED and outcome.instant is not None:
            message = (f"{what} committed as {outcome.instant.action.value} {outcome.instant.requested_time}; a "
                       f"step after the commit failed and was left to a later write: {cause}")
            log.warning("%s", message)
            if self._progress is not None:
                self._progress(message)
            return None
        text = str(error)
        if concurrency.is_write_conflict(text):
            met = concurrency.instants_named_in(text) or self._completed_since(write_id)
            named = ", ".join(met) or "no longer on the timeline"
            return WriteConflictError(
                f"{what} met a concurrent write to the same file groups (completed as {named}) and was aborted by "
                "Hudi's optimistic concurrency control: nothing of it is visible, and running it again is safe (or "
                f"set {concurrency.CONFLICT_RETRIES_KEY} for Hudi to retry). Cause: {cause}",
                conflicting_instants=met)
        message = f"{what} failed and did not commit; readers see the table's previous state. Cause: {cause}"
        if concurrency.is_lock_timeout(text):
            message += (". It could not take the table's lock in time: another writer held it (hoodie.write.lock."
                        "wait_time_ms and hoodie.write.lock.num_retries set how long a write waits)")
        if outcome.state is WriteState.PENDING:
            message += (". It left pending writes (" + ", ".join(i.requested_time for i in outcome.pending)
                        + "); table.recover() rolls them back now, and Hudi does after a later commit (at once "
                        "under single_writer, once their heartbeats expired otherwise); no reader sees them meanwhile")
        if concurrency.is_heartbeat_expired(text):
            message += (". Hudi aborted it before its commit because its heartbeat lapsed: Hudi 1.2.0 stops a "
                        "write's heartbeat after one late beat on a loaded server (apache/hudi#18903); running it "
                        "again is safe")
        if "HoodieClusteringUpdateException" in str(error):
            message += (". A pending clustering rejects updates to its file groups (a writer died during it?): "
                        "table.recover() completes it")
        return WriteFailedError(message)

    def _completed_since(self, write_id: str) -> tuple[str, ...]:
        """The write commits completed since the write ``write_id`` began (by its client's clock)."""
        started = write_id.split("-", 1)[0]
        met = [i for i in self.timeline().write_commits().completed()
               if (i.completion_time or i.requested_time) >= started]
        return tuple(i.requested_time for i in met)

    @over_connect("reading the timeline for a write's outcome")
    def outcome_of(self, write_id: str) -> WriteOutcome:
        """Whether the write with this id (from ``ServerUnavailableError.write_id``) committed, per the timeline."""
        timeline = self.timeline()
        metadata = self.commit_metadata(list(timeline.write_commits()))
        return write_outcome(write_id, timeline, metadata)

    # --- table services --------------------------------------------------------------------------

    @over_connect("clustering")
    def cluster(self) -> Instant | None:
        """Schedule and run clustering (rewrites files, changes no record); None if nothing to do."""
        return services.cluster(self)

    @over_connect("cleaning")
    def clean(self, retain_commits: int | None = None) -> Instant | None:
        """Remove file versions no longer needed (Hudi's cleaner); None if nothing was cleaned."""
        return services.clean(self, retain_commits)

    @over_connect("recovering the table")
    def recover(self, *, assume_no_writer: bool = False) -> RecoveryReport:
        """Roll back the writes a dead writer left pending, through Hudi's ``rollback_to_instant``, and complete
        a pending clustering (``run_clustering``), which would reject every update to its file groups.

        Idempotent: a clean table is left as it is. Refused with :class:`WriterActiveError` while a Hudi
        heartbeat of the table is younger than Hudi's expiry (two minutes by default), since the writer may be
        alive; pass ``assume_no_writer=True`` when you know its server is gone. Every write keeps a heartbeat for
        its whole run by default (lazy cleaning of failed writes, :mod:`hudi_connect.table.concurrency`); under
        ``single_writer=True`` only the metadata table's streaming write has one, for part of the write, and
        recover() relies there, as Hudi's own next write does, on there being one writer. Pending compaction and
        clean plans are left for Hudi's next run.
        """
        return services.recover(self, assume_no_writer=assume_no_writer)

    @property
    def options(self) -> dict[str, str]:
        """The ``hoodie.*`` options every write through this object takes (a copy)."""
        return dict(self._write_options)

    def _call(self, sql: str) -> list[dict[str, object]]:
        self._require_hudi("table services (Hudi's procedures)")
        self._report(f"{self._base_path}: {sql}")
        try:
            with self._session_options():  # procedures take Hudi's settings from the session
                return [row.asDict() for row in self._spark.sql(sql).collect()]
        except PySparkException as error:
            raise WriteFailedError(f"'{sql}' failed on {self._base_path}: {_first_line(error)}") from error

    # --- reads (jar-free: any Spark Connect server) -------------------------------------------------

    @property
    def reader(self) -> TableReader:
        """The jar-free reader beneath this table's reads, for :meth:`TableReader.plan` and its ``explain()``
        (it keeps Hudi's meta columns)."""
        if self._reader is None:
            self._reader = TableReader(self._spark, self._base_path, self._view)
        return self._reader

    def snapshot(self, predicates: UserPredicates = (), *, with_meta_columns: bool = False) -> DataFrame:
        """The latest state of every record. ``predicates`` (ours, ``F.col("city") == "paris"``, or SQL text,
        one or a list that must all hold) prune partitions and files, then filter rows."""
        return shown_columns(self.reader.snapshot(predicates), with_meta_columns)

    def read_optimized(self, predicates: UserPredicates = (), *, with_meta_columns: bool = False) -> DataFrame:
        """Base files only: for MOR, the state as of the last compaction of each file group."""
        return shown_columns(self.reader.read_optimized(predicates), with_meta_columns)

    def as_of(self, instant: InstantLike, predicates: UserPredicates = (), *,
              with_meta_columns: bool = False) -> DataFrame:
        """Time travel: the table as of a completed instant, as Hudi's ``as.of.instant`` (compared with requested
        times). Every call taking an instant takes an ``Instant``, instant-time text (17 or 14 digits,
        ``yyyy-MM-dd HH:mm:ss[.SSS]``, ``yyyy-MM-dd``, as Hudi reads them) or a ``datetime`` (a naive one is the
        client's local time, as pyspark reads it), resolved by :mod:`hudi_connect.client.instants`."""
        return shown_columns(self.reader.as_of(instant, predicates), with_meta_columns)

    def incremental(self, begin: InstantLike, end: InstantLike | None = None,
                    predicates: UserPredicates = (), *, with_meta_columns: bool = False,
                    fallback_to_full_scan: bool = True) -> DataFrame:
        """Latest state (as of ``end``) of the records written by commits in (begin, end]; ``'earliest'`` starts
        at the beginning (:meth:`TableReader.incremental` tells how ranges beyond the history are answered)."""
        return shown_columns(self.reader.incremental(begin, end, predicates,
                                                     fallback_to_full_scan=fallback_to_full_scan), with_meta_columns)

    def changes(self, begin: InstantLike, end: InstantLike | None = None, *, format: ChangeFormat = "hudi",
                predicates: UserPredicates = ()) -> DataFrame:
        """The changes of commits in (begin, end] (RFC-51 CDC, inferred where the table logs none), in Hudi's CDC
        schema or another ``format`` (:meth:`ChangeQuery.changes` has the formats and Spark's change options)."""
        return self.change_query.changes(begin, end, format=format, predicates=predicates)

    @property
    def change_query(self) -> ChangeQuery:
        """The change query beneath :meth:`changes`, for its ``explain()`` and Spark-shaped options."""
        return ChangeQuery(self._spark, self._base_path, view=self._view)

    @property
    def files(self) -> FileIndex:
        """The table's files as RFC-64's Table Spec API lists them, pruned by predicates."""
        return self.reader.index

    @property
    def record_index(self) -> RecordIndex:
        """Where records are, by key, from the metadata table's record index."""
        return RecordIndex(self._spark, self._base_path, self._view)

    # --- Hudi's own reads (a server with Hudi's bundle) -------------------------------------------

    @property
    def hudi(self) -> HudiReads:
        """Hudi's own Spark datasource reads of this table (a server with Hudi's bundle), kept for comparison
        and as a fallback: ``table.hudi.snapshot()``."""
        self._require_hudi("Hudi's own reads")
        return HudiReads(self._spark, self._base_path, self._view)
