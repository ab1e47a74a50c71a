"""Table services as Hudi's SQL procedures: clustering, cleaning, compaction, and recovery after a dead writer.

Each runs on the server through ``CALL``; :class:`~hudi_connect.table.hudi_table.HudiTable` exposes them
(``table.cluster()``, ``table.clean()``, ``table.recover()``, ``table.compaction``).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from typing import Protocol

from pyspark.sql import SparkSession

from hudi_connect.client import catalog, remote_files
from hudi_connect.client.catalog import sql_string
from hudi_connect.client.server_loss import over_connect
from hudi_connect.client.timeline_view import TimelineView
from hudi_connect.core.errors import UnsupportedOperationError, WriteFailedError, WriterActiveError
from hudi_connect.core.format.table_config import TableProperties, TableType
from hudi_connect.core.format.timeline import Instant, Timeline
from hudi_connect.table.recovery import RecoveryReport, heartbeat_expiry_ms, live_heartbeats, plan_recovery


class ServiceTarget(Protocol):
    """What a table service needs of its table (a :class:`HudiTable`)."""

    @property
    def spark(self) -> SparkSession:
        """The session the procedures run in."""

    @property
    def base_path(self) -> str:
        """Where the table is."""

    @property
    def name(self) -> str | None:
        """Its catalog name; None when it was opened by path."""

    @property
    def properties(self) -> TableProperties:
        """Its ``hoodie.properties``."""

    @property
    def options(self) -> dict[str, str]:
        """Its writers' ``hoodie.*`` options (the heartbeat expiry among them)."""

    def timeline(self) -> Timeline:
        """Its active timeline, listed now."""

    def _call(self, sql: str) -> list[dict[str, object]]:
        """Run a procedure call on the server (refused by name on a server without Hudi)."""


def cluster(table: ServiceTarget) -> Instant | None:
    """Schedule and run clustering; the replace commit, None if there was nothing to cluster."""
    before = table.timeline()
    table._call(f"call run_clustering(path => {sql_string(table.base_path)})")
    return table.timeline().after(before).write_commits().first()


def clean(table: ServiceTarget, retain_commits: int | None = None) -> Instant | None:
    """Run Hudi's cleaner; the clean instant, None if nothing was cleaned."""
    with procedure_table(table, "clean") as name:
        arguments = f"table => '{name}'"
        if retain_commits is not None:
            arguments += f", retain_commits => {int(retain_commits)}"
        rows = table._call(f"call run_clean({arguments})")
    started = rows[0].get("start_clean_time") if rows else None
    return table.timeline().find(str(started)) if started is not None else None


@contextlib.contextmanager
def procedure_table(table: ServiceTarget, purpose: str) -> Iterator[str]:
    """The table's catalog name, for Hudi procedures that take only ``table`` (Hudi 1.2's ``run_clean`` and
    ``rollback_to_instant``). A table opened by path gets a transient name in a server's own in-memory
    catalog; in a shared Hive Metastore nothing is registered that the user did not ask for."""
    if table.name is not None:
        yield table.name
        return
    if catalog.uses_hive_catalog(table.spark):
        raise UnsupportedOperationError(
            f"{purpose} runs Hudi's procedure that takes a table's catalog name only; {table.base_path} was "
            "opened by path on a server whose catalog is a shared Hive Metastore, where hudi-connect registers "
            "nothing you did not ask for: open the table by name, or register it with table.register('db.name')")
    name = f"hudi_connect_{purpose}_{uuid.uuid4().hex[:12]}"
    table._call(f"create table {name} using hudi location {sql_string(table.base_path)}")
    try:
        yield name
    finally:
        table._call(f"drop table if exists {name}")  # an external table: the data stays


def recover(table: ServiceTarget, *, assume_no_writer: bool = False) -> RecoveryReport:
    """Roll back what a dead writer left pending and complete a pending clustering (``HudiTable.recover``)."""
    plan = plan_recovery(table.timeline())
    metadata_pending = metadata_table_pending(table)
    if (plan.rollback or plan.complete) and not assume_no_writer:
        refuse_if_writer_alive(table)
    with (procedure_table(table, "recover") if plan.rollback else contextlib.nullcontext("")) as name:
        for instant in plan.rollback:
            table._call(f"call rollback_to_instant(table => '{name}', instant_time => '{instant.requested_time}')")
    if plan.complete:
        instants = ",".join(i.requested_time for i in plan.complete)
        table._call(f"call run_clustering(path => {sql_string(table.base_path)}, op => 'execute', "
                    f"instants => '{instants}')")
    still = {i.requested_time for i in table.timeline().pending()}
    left_pending = [i.requested_time for i in (*plan.rollback, *plan.complete) if i.requested_time in still]
    if left_pending:
        raise WriteFailedError(f"recovery of {table.base_path} left {', '.join(left_pending)} pending")
    return RecoveryReport(plan.rollback, plan.complete, plan.left, metadata_pending)


def metadata_table_pending(table: ServiceTarget) -> tuple[Instant, ...]:
    """The metadata table's pending instants (reported by recovery; Hudi's next write settles them)."""
    base = table.base_path
    if not remote_files.list_files(table.spark, f"{base}/.hoodie/metadata/.hoodie/hoodie.properties"):
        return ()
    return TimelineView.open(table.spark, f"{base}/.hoodie/metadata").timeline().pending().instants


def refuse_if_writer_alive(table: ServiceTarget) -> None:
    """WriterActiveError while a heartbeat of the table (or its metadata table) is younger than Hudi's expiry."""
    expiry = heartbeat_expiry_ms(table.options)
    now_ms = int(time.time() * 1000)
    for directory in (".hoodie/.heartbeat", ".hoodie/metadata/.hoodie/.heartbeat"):
        files = remote_files.list_directory(table.spark, f"{table.base_path}/{directory}")  # heartbeats are empty
        alive = live_heartbeats(files, now_ms, expiry)
        if alive:
            raise WriterActiveError(
                f"a writer of {table.base_path} may be alive: {directory} has heartbeats younger than "
                f"{expiry / 1000:g}s for {', '.join(alive)}. Wait until they expire, or pass "
                "assume_no_writer=True if you know its server is gone")


class Compaction:
    """MOR compaction: ``table.compaction.schedule()`` then ``table.compaction.run()``."""

    def __init__(self, table: ServiceTarget) -> None:
        self._table = table

    def _require_mor(self) -> None:
        if self._table.properties.table_type is not TableType.MERGE_ON_READ:
            raise UnsupportedOperationError(
                f"compaction needs a MERGE_ON_READ table; {self._table.base_path} is COPY_ON_WRITE"
            )

    @over_connect("scheduling compaction")
    def schedule(self) -> Instant | None:
        """Plan a compaction of every file group with log files; None if there is nothing to compact."""
        self._require_mor()
        path = sql_string(self._table.base_path)
        rows = self._table._call(
            f"call run_compaction(op => 'schedule', path => {path}, "
            "options => 'hoodie.compact.inline.max.delta.commits=1')"
        )
        if not rows:
            return None
        return self._table.timeline().find(str(rows[0]["timestamp"]))

    @over_connect("running compaction")
    def run(self) -> list[Instant]:
        """Execute every pending compaction plan; returns the completed compaction instants."""
        self._require_mor()
        before = self._table.timeline()
        self._table._call(f"call run_compaction(op => 'run', path => {sql_string(self._table.base_path)})")
        return list(self._table.timeline().after(before).write_commits())
