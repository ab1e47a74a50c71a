"""``RecordIndex``: where each record key lives, from the metadata table's record_index partition.

    locations = RecordIndex(spark, path).tag(["TXN-001", "TXN-404"])
    # {'TXN-001': RecordLocation(partition='region=us', file_id='...-0', ...), 'TXN-404': None}

Read on an executor like every metadata-table read (HUDI-2285's rules apply);
only the file groups the keys hash to are opened, and only the keys' cells decoded.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from pyspark.sql import SparkSession

from hudi_connect.client.remote_files import run_storage_ops
from hudi_connect.client.server_loss import ensure_bounded, over_connect
from hudi_connect.client.task_rows import map_task_rows, task_rows
from hudi_connect.client.timeline_view import TimelineView
from hudi_connect.core.errors import MetadataTableError, UnsupportedOperationError
from hudi_connect.core.executor.contracts import LOCATIONS
from hudi_connect.core.executor.metadata_reader import (
    KEYS_SCHEMA,
    METADATA_ARCHIVE_DIRS,
    METADATA_DIR,
    METADATA_TIMELINE_DIRS,
    DataTimeline,
    MetadataSource,
    locate,
    metadata_timeline_of,
    missing_instants,
)
from hudi_connect.core.executor.object_store import StorageOp
from hudi_connect.core.format.metadata import RecordLocation
from hudi_connect.core.format.table_features import check_readable


class RecordIndex:
    """Record key lookups in the metadata table's ``record_index`` partition, without Hudi's jars.

    Mirrors Hudi's record-level index (index type ``RECORD_INDEX``): :meth:`tag` maps each key to the
    partition and file group holding it, as Hudi's index tags records with their locations, read from the
    metadata table only once it has caught up with the data table. Refused
    (:class:`~hudi_connect.core.errors.UnsupportedOperationError`) on tables written without
    ``hoodie.metadata.record.index.enable``.

    Example::

        index = RecordIndex(spark, "s3a://lake/trips")
        index.tag(["TXN-001", "TXN-404"])  # {'TXN-001': RecordLocation(...), 'TXN-404': None}
    """

    @over_connect("opening the record index")
    def __init__(self, spark: SparkSession, base_path: str, view: TimelineView | None = None) -> None:
        self._spark = ensure_bounded(spark)
        self._base_path = base_path.rstrip("/")
        self.view = view or TimelineView.open(spark, self._base_path)
        check_readable(self.view.properties, where=f"the table at {self._base_path}")
        if "record_index" not in self.view.properties.metadata_partitions:
            raise UnsupportedOperationError(
                f"{base_path} has no record index: write it with hoodie.metadata.record.index.enable=true")

    @over_connect("looking up record keys")
    def tag(self, keys: Iterable[str]) -> dict[str, RecordLocation | None]:
        """Each key's location (partition, file id, instant), or None where the table has no such record."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        source = self._caught_up_source()
        key_rows = task_rows(self._spark, [(k,) for k in wanted], KEYS_SCHEMA).coalesce(1)
        rows = map_task_rows(key_rows, KEYS_SCHEMA, partial(locate, source), LOCATIONS.schema).collect()
        found = {r.record_key: RecordLocation(r.partition, r.file_id, r.instant_millis) for r in rows}
        return {key: found.get(key) for key in wanted}

    def _caught_up_source(self) -> MetadataSource:
        """The metadata table to look keys up in, refused when it has not caught up with the data table's
        latest commit (it would answer for an older state: a key written since would be absent). The data
        table's and the metadata table's timelines are listed in one task."""
        metadata = f"{self._base_path}/{METADATA_DIR}/.hoodie"
        listing, properties, *metadata_listings = run_storage_ops(self._spark, [*self.view.listing_ops(), *(
            StorageOp.list(f"{metadata}/{d}" if d else metadata)
            for d in (*METADATA_TIMELINE_DIRS, *METADATA_ARCHIVE_DIRS.values()))])
        source = MetadataSource(self._base_path, DataTimeline.of(self.view.timeline_of(listing, properties)),
                                self.view.properties.version)
        timelines, archives = metadata_listings[:len(METADATA_TIMELINE_DIRS)], metadata_listings[len(
            METADATA_TIMELINE_DIRS):]
        metadata_timeline = metadata_timeline_of([(name, mtime) for name, _, mtime in result.files]
                                                 for result in timelines)
        missing = missing_instants(source, metadata_timeline, lambda: any(result.files for result in archives))
        if missing:
            raise MetadataTableError(
                f"the metadata table of {self._base_path} has not caught up with the data table (it does not "
                f"reflect {', '.join(missing[:3])}{' and more' if len(missing) > 3 else ''}: a writer committed "
                "without updating it, or it is being rebuilt), so its record index would answer for an older state; "
                "look the keys up once a write has brought it up to date, or read the table")
        return source
