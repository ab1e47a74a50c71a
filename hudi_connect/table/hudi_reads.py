"""Hudi's own reads of a table through its Spark datasource (a server with Hudi's bundle): ``table.hudi``.

The jar-free reads of :class:`~hudi_connect.table.HudiTable` are ours; these are Hudi's, with the options Hudi
needs to answer a table as it was written (schema on read, partial updates), kept for comparison and as a
fallback.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import DataFrame, SparkSession

from hudi_connect.client.instants import InstantLike, resolve_instant
from hudi_connect.client.server_loss import over_connect
from hudi_connect.client.timeline_view import TimelineView
from hudi_connect.core.errors import InvalidInstantError, UnsupportedOperationError
from hudi_connect.core.format.internal_schema import uses_schema_on_read
from hudi_connect.core.format.table_features import records_merge_columns
from hudi_connect.core.format.table_schema import META_COLUMNS
from hudi_connect.core.format.timeline import as_of_time, range_time
from hudi_connect.table import options as opts


def shown_columns(df: DataFrame, with_meta_columns: bool) -> DataFrame:
    """A read as the table object shows it: Hudi's meta columns only when asked for (ours and Hudi's reads)."""
    return df if with_meta_columns else df.drop(*META_COLUMNS)


class HudiReads:
    """Hudi's own query types through its Spark datasource: snapshot, read-optimized, time travel,
    incremental and CDC, each a DataFrame Hudi's bundle on the server plans."""

    def __init__(self, spark: SparkSession, base_path: str, view: TimelineView,
                 options: Mapping[str, str] | None = None) -> None:
        self._spark = spark
        self._base_path = base_path
        self._view = view
        self._options = dict(options or {})

    def listing_storage(self) -> HudiReads:
        """The same reads with Hudi listing the table's files on storage rather than in its metadata table
        (``hoodie.metadata.enable=false``): Hudi's answer where its metadata table misses a commit's files."""
        return HudiReads(self._spark, self._base_path, self._view, {**self._options, "hoodie.metadata.enable": "false"})

    def _read(self, options: dict[str, str]) -> DataFrame:
        options = {**options, **self._options}
        properties = self._view.properties
        if self._uses_schema_on_read():
            # Hudi matches columns by id only when the read asks for it; otherwise a renamed column reads null
            options = {**options, "hoodie.schema.on.read.enable": "true"}
        if records_merge_columns(properties):
            # Hudi 1.2's data skipping prunes a slice whose merged record matches a filter over several columns
            # that none of its files' statistics admit (partial-update log blocks): it would return no row
            options = {**options, "hoodie.enable.data.skipping": "false"}
        return self._spark.read.format("hudi").options(**options).load(self._base_path)

    def _uses_schema_on_read(self) -> bool:
        """Whether a commit recorded an InternalSchema (ALTER TABLE under schema on read, or writes after it)."""
        metadata = self._view.commit_metadata(list(self._view.timeline().write_commits()))
        return uses_schema_on_read(commit.extra_metadata for commit in metadata.values())

    @over_connect("planning Hudi's snapshot read")
    def snapshot(self, *, with_meta_columns: bool = False) -> DataFrame:
        """The latest state of every record."""
        df = self._read(opts.snapshot_options())
        return shown_columns(df, with_meta_columns)

    @over_connect("planning Hudi's read-optimized read")
    def read_optimized(self, *, with_meta_columns: bool = False) -> DataFrame:
        """Base files only: for MOR, the state as of the last compaction of each file group."""
        df = self._read(opts.read_optimized_options())
        return shown_columns(df, with_meta_columns)

    @over_connect("planning Hudi's time-travel read")
    def as_of(self, instant: InstantLike, *, with_meta_columns: bool = False) -> DataFrame:
        """Time travel: the table as of a completed instant (by requested time)."""
        requested = as_of_time(resolve_instant(self._spark, self._view.properties, instant))
        # archived commits too: Hudi answers them while the cleaner has not taken their files
        first = self._view.first_write_commit(self._view.timeline(), reaching=requested)
        if first is None or requested < first.requested_time:
            raise InvalidInstantError(
                f"cannot read {self._base_path} as of {requested}: its first commit is "
                f"{first.requested_time if first else 'not there yet'}"
            )
        df = self._read(opts.time_travel_options(requested))
        return shown_columns(df, with_meta_columns)

    def _range_time(self, instant: InstantLike) -> str:
        """The time Hudi compares in incremental ranges (:func:`~hudi_connect.core.format.timeline.range_time`)."""
        properties = self._view.properties
        return range_time(resolve_instant(self._spark, properties, instant),
                          by_completion=properties.ranges_by_completion)

    @over_connect("planning Hudi's incremental read")
    def incremental(
        self, begin: InstantLike, end: InstantLike | None = None, *, with_meta_columns: bool = False,
        fallback_to_full_scan: bool | None = None,
    ) -> DataFrame:
        """Latest state of the records changed by commits in (begin, end]; 'earliest' starts at the beginning.
        ``fallback_to_full_scan``: Hudi's ``hoodie.datasource.read.incr.fallback.fulltablescan.enable`` (unset:
        Hudi's default, on for tables of version 8+ and off for version 6, where a range reaching archived
        commits then reads the active timeline's part only)."""
        begin_time = self._range_time(begin)
        end_time = self._range_time(end) if end is not None else None
        if end_time is not None and end_time < begin_time:
            raise InvalidInstantError(f"the incremental range ({begin_time}, {end_time}] ends before it begins")
        options = opts.incremental_options(begin_time, end_time)
        if fallback_to_full_scan is not None:
            options["hoodie.datasource.read.incr.fallback.fulltablescan.enable"] = str(fallback_to_full_scan).lower()
        df = self._read(options)
        return shown_columns(df, with_meta_columns)

    @over_connect("planning Hudi's CDC query")
    def cdc(self, begin: InstantLike, end: InstantLike | None = None) -> DataFrame:
        """Hudi's own CDC query (needs ``hoodie.table.cdc.enabled``)."""
        if not self._view.properties.cdc_enabled:
            raise UnsupportedOperationError(
                f"the table at {self._base_path} was not created with CDC enabled (hoodie.table.cdc.enabled), "
                "so Hudi's CDC query refuses it"
            )
        begin_time = self._range_time(begin)
        end_time = self._range_time(end) if end is not None else None
        return self._read(opts.incremental_options(begin_time, end_time, cdc=True))
