"""``spark.readStream.format("hudi")``: a Hudi table's commits as a stream, each micro-batch an incremental read.

The offsets are range times of the table's write commits (completion times on tables of version 8 and later,
requested times before; :func:`~hudi_connect.core.format.timeline.range_time`), as JSON ``{"commit": time}``.
A micro-batch from offset ``start`` to ``end`` reads what hudi-connect's incremental read of (start, end] returns:
the latest state of the records its commits wrote, or with ``incremental.format=cdc`` their change events. Spark
checkpoints the offsets, so a query restarted on its checkpoint plans the same ranges again; into a file sink each
range lands exactly once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from hudi_connect.core.errors import SchemaMismatchError
from hudi_connect.core.format.read_options import QueryType, ReadQuery, StreamQuery
from hudi_connect.core.format.timeline import EARLIEST_TIME
from pyspark_hudi.offsets import latest_commit_time
from pyspark_hudi.scan import read_split, scan_of


class HudiStreamReader(DataSourceStreamReader):
    """The stream of one table's commits (see the module)."""

    def __init__(self, query: StreamQuery, schema: StructType, arrow_schema: pa.Schema) -> None:
        self._query = query
        self._schema = schema
        self._arrow_schema = arrow_schema

    def initialOffset(self) -> dict[str, str]:
        """Where a new query starts: before the first commit (``earliest``), at the last commit now (``latest``),
        or at the instant given (exclusive, as Hudi's range begins)."""
        start = self._query.start
        if start == "latest":
            return {"commit": latest_commit_time(self._query.path)}
        return {"commit": EARLIEST_TIME if start == "earliest" else start}

    def latestOffset(self, start: dict[str, str] | None = None, limit: Any = None) -> dict[str, str]:
        """The last completed write commit now; Spark 4.2+ passes the start and its read limit: under
        ``maxFilesPerTrigger`` (:meth:`getDefaultReadLimit`) the commits after the start whose files fit it."""
        max_files = getattr(limit, "max_files", None)
        if start is None or max_files is None:
            return {"commit": latest_commit_time(self._query.path)}
        return {"commit": latest_commit_time(self._query.path, start["commit"], max_files)}

    def partitions(self, start: dict[str, str], end: dict[str, str]) -> Sequence[InputPartition]:
        """The splits of the incremental read of (start, end]; none where no commit lies in it."""
        if end["commit"] <= start["commit"]:
            return []
        begin = "earliest" if start["commit"] == EARLIEST_TIME else start["commit"]
        scan = scan_of(ReadQuery(self._query.path, QueryType.INCREMENTAL, begin=begin, end=end["commit"],
                                 changes=self._query.changes))
        if scan.schema != self._schema:
            raise SchemaMismatchError(
                f"the table at {self._query.path} changed its schema since the stream started "
                f"({self._schema.simpleString()} then, {scan.schema.simpleString()} now): restart the query")
        settings = scan.without_splits()  # each split travels with its own task
        return [InputPartition((settings, rows)) for rows in scan.splits]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The merged records of one split."""
        scan, rows = partition.value
        yield from read_split(scan, rows, self._arrow_schema)

    def commit(self, end: dict[str, str]) -> None:
        """Nothing to release: the offsets live in Spark's checkpoint, the table is only read."""
