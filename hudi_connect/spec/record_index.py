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

from hudi_connect.client.artifacts import ship_package
from hudi_connect.client.server_loss import ensure_bounded, over_connect
from hudi_connect.client.task_rows import task_rows
from hudi_connect.client.timeline_view import TimelineView
from hudi_connect.errors import UnsupportedOperationError
from hudi_connect.executor.metadata_reader import KEYS_SCHEMA, LOCATION_DDL, DataTimeline, MetadataSource, locate
from hudi_connect.format.metadata import RecordLocation
from hudi_connect.format.table_features import check_readable


class RecordIndex:
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
        ship_package(self._spark)
        source = MetadataSource(self._base_path, DataTimeline.of(self.view.timeline()), self.view.properties.version)
        rows = (task_rows(self._spark, [(k,) for k in wanted], KEYS_SCHEMA).coalesce(1)
                .mapInArrow(partial(locate, source), LOCATION_DDL).collect())
        found = {r.record_key: RecordLocation(r.partition, r.file_id, r.instant_millis) for r in rows}
        return {key: found.get(key) for key in wanted}
