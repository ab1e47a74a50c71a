"""The ``hudi`` Python data source (Spark 4.0+): Hudi's read options in, hudi-connect's scan out.

Spark calls :meth:`HudiDataSource.schema` in one planning worker and :meth:`HudiDataSource.reader` in another,
the data source pickled between them: the scan is planned in ``schema()`` and taken in ``reader()`` while the
table's timeline is unchanged (one listing), else planned again there; it leaves the data source in
``reader()`` (Spark ships the data source and the reader to every task; each split travels with its own task).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyspark
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from hudi_connect.core.errors import InvalidOptionError, SchemaMismatchError, UnsupportedOperationError
from hudi_connect.core.format.read_options import MAX_FILES_PER_TRIGGER, ReadQuery, read_query, stream_query
from pyspark_hudi.changes import CDC_SCHEMA, ChangeScan
from pyspark_hudi.scan import Scan, arrow_schema, current_scan, read_split, scan_of
from pyspark_hudi.stream import HudiStreamReader


class HudiDataSource(DataSource):
    """``spark.read.format("hudi")``: snapshot, read-optimized, time travel and incremental reads of a Hudi table,
    with Hudi's own read options (:mod:`hudi_connect.core.format.read_options`); ``spark.readStream.format("hudi")``:
    its commits as a stream."""

    @classmethod
    def name(cls) -> str:
        """The format's name: ``hudi``, Hudi's own."""
        return "hudi"

    def schema(self) -> StructType:
        """The read's schema, the scan planned with it (the table's latest, as of the time travel's instant, or
        Hudi's CDC schema). Spark asks a stream too: options only a stream takes (an incremental query without
        a begin instant) give the schema of what it streams, and a batch read of them fails in ``reader()``."""
        try:
            query = read_query(self.options)
        except InvalidOptionError:
            stream = stream_query(self.options)  # not a stream's options either: its refusal
            return CDC_SCHEMA if stream.changes else scan_of(ReadQuery(stream.path)).schema
        self._scan = scan_of(query)
        return self._scan.schema

    def reader(self, schema: StructType) -> DataSourceReader:
        """The scan's reader (planned here where Spark was given a schema and never asked for one)."""
        scan = current_scan(read_query(self.options), self.__dict__.pop("_scan", None))
        if schema != scan.schema:  # a schema the user gave (schema() then never ran), or the table's changed since
            raise SchemaMismatchError(f"format('hudi') was given the schema {schema.simpleString()}, and the table's "
                                      f"is now {scan.schema.simpleString()}: leave the schema out, or read again")
        return (HudiPushdownReader if filter_pushdown() else HudiReader)(scan)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """The stream of the table's commits (:mod:`pyspark_hudi.stream`), in the schema ``schema()`` read."""
        self.__dict__.pop("_scan", None)  # the batch scan planned for the schema: not shipped with the stream
        query = stream_query(self.options)
        if read_limits():
            from pyspark_hudi.stream_limits import HudiLimitedStreamReader

            return HudiLimitedStreamReader(query, schema, arrow_schema(schema))
        if query.max_files is not None:
            raise UnsupportedOperationError(
                f"{MAX_FILES_PER_TRIGGER} needs Spark 4.2 or later, whose Python streaming sources take read "
                f"limits; this server runs Spark {pyspark.__version__}")
        return HudiStreamReader(query, schema, arrow_schema(schema))


class Split(InputPartition):
    """One task's file slices."""


class HudiReader(DataSourceReader):
    """Reads a :class:`~pyspark_hudi.scan.Scan`'s or a :class:`~pyspark_hudi.changes.ChangeScan`'s splits, one task
    each."""

    def __init__(self, scan: Scan | ChangeScan) -> None:
        self._scan = scan

    def __getstate__(self) -> dict[str, object]:
        # Spark pickles the reader into the read function before it asks for the partitions: each split
        # travels with its own task only
        return {**self.__dict__, "_scan": self._scan.without_splits()}

    def partitions(self) -> list[InputPartition]:
        """One split of file slices per task."""
        return [Split(rows) for rows in self._scan.splits] or [Split(())]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The merged records of one split's file slices, or its change events."""
        target = arrow_schema(self._scan.schema)
        yield from read_split(self._scan, partition.value, target)


class HudiPushdownReader(HudiReader):
    """:class:`HudiReader` that prunes partitions and files by the filters Spark pushes (Spark 4.1+, where the
    server enables ``spark.sql.python.filterPushdown.enabled``: see :func:`filter_pushdown`)."""

    def pushFilters(self, filters: list[Any]) -> Iterable[Any]:
        """Prune partitions, and files by their column statistics (:meth:`~pyspark_hudi.scan.Scan.narrowed`);
        every filter is returned, so Spark applies it to the rows."""
        self._scan = self._scan.narrowed(filters)
        return filters


def read_limits() -> bool:
    """Whether this Spark's Python streaming sources take read limits (4.2+: ``latestOffset(start, limit)``)."""
    return importlib.util.find_spec("pyspark.sql.streaming.datasource") is not None


PUSHDOWN_ENV = "HUDI_CONNECT_FILTER_PUSHDOWN"


def filter_pushdown() -> bool:
    """Whether the server enabled pushdown for this data source: ``HUDI_CONNECT_FILTER_PUSHDOWN=true`` in its
    environment, set beside ``spark.sql.python.filterPushdown.enabled=true`` (Spark refuses a reader that takes
    pushed filters when that conf is off, and a data source cannot read it)."""
    return os.environ.get(PUSHDOWN_ENV, "").strip().lower() == "true"
