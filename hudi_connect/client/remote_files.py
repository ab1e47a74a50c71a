"""Reading files of a table through the Spark Connect server.

The client has no storage credentials: listings and small files come back
through Spark's ``binaryFile`` source or from an executor task
(:func:`run_storage_ops`). Spark's file sources skip names that start with ``.``
or ``_``, and empty files (SPARK-26161): a requested instant and a heartbeat are
empty, so :func:`list_directory` lists on an executor instead. The timeline and
its commit files come from one such task (``TimelineView``): Spark's file index
asks an object store several times about each file before reading it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_connect.client.artifacts import ship_package
from hudi_connect.client.result_rows import result_tables
from hudi_connect.client.task_rows import map_task_rows, spark_schema, task_rows
from hudi_connect.core.executor.archive_log import ARCHIVE_FILES, ARCHIVED_INSTANTS, decode_v6_archives
from hudi_connect.core.executor.contracts import LISTING, LISTING_PARTS, MATCHES
from hudi_connect.core.executor.file_access import (
    LISTED_SCHEMA,
    MAX_BATCHED_FILES,
    FileAccess,
    ListingRequest,
    LocalFileAccess,
    RemoteFile,
    data_files_op,
    listed_files,
    stored_files,
)
from hudi_connect.core.executor.listing import (
    FAN_OUT_TASKS,
    StatsConfig,
    list_storage,
    list_subtrees,
    list_top_level,
    match_by_footer,
)
from hudi_connect.core.executor.metadata_reader import (
    STATS_SHARDS_SCHEMA,
    STATS_TASKS,
    list_through_metadata,
    match_by_metadata_stats,
    stats_shards,
)
from hudi_connect.core.executor.object_store import (
    OPS_SCHEMA,
    RESULTS_SCHEMA,
    StorageOp,
    StorageResult,
    execute_ops,
    ops_request,
)
from hudi_connect.core.executor.slices import BASE_URI_SCHEMA
from hudi_connect.core.executor.storage import location_of
from hudi_connect.core.format.archived_timeline import INSTANT_TIME


def _is_missing_path(error: AnalysisException) -> bool:
    text = str(error)
    return "PATH_NOT_FOUND" in text or "Path does not exist" in text


def list_files(spark: SparkSession, pattern: str) -> list[RemoteFile]:
    """Files matching a Hadoop glob (non-recursive patterns keep listings small); [] if none."""
    try:
        rows = (
            spark.read.format("binaryFile").load(pattern)
            .select("path", "length", F.col("modificationTime").cast("long").alias("mtime"))
            .collect()
        )
    except AnalysisException as error:
        if _is_missing_path(error):
            return []
        raise
    return [
        RemoteFile(r.path, r.path.rsplit("/", 1)[-1], int(r.length), int(r.mtime) * 1000)
        for r in rows
    ]


def driver_listing(spark: SparkSession, directory: str, *, recursive: bool = False) -> list[str] | None:
    """The paths of the files under ``directory`` as the server's driver lists them: an analysis call, no Spark
    job (names starting with ``.`` or ``_`` left out, empty files kept); None where it cannot be listed."""
    try:
        return (spark.read.format("binaryFile").option("recursiveFileLookup", str(recursive).lower())
                .load(directory).inputFiles())
    except AnalysisException:
        return None


def list_directory(spark: SparkSession, directory: str) -> list[RemoteFile]:
    """Every file directly under ``directory``, empty and hidden ones too; [] if it does not exist."""
    return listed_files(directory, run_storage_ops(spark, [StorageOp.list(directory.rstrip("/"))])[0])


__all__ = ["MAX_BATCHED_FILES", "RemoteFile", "SparkFileAccess", "data_files_op", "listed_files", "stored_files"]


def read_files(spark: SparkSession, paths: Iterable[str]) -> dict[str, bytes]:
    """The content of each path (as listed by :func:`list_files`), in one round trip."""
    wanted = sorted(set(paths))
    if not wanted:
        return {}
    # a file removed meanwhile fails the read, whatever spark.sql.files.ignoreMissingFiles says: its caller
    # would take the missing content for an instant without metadata
    rows = spark.read.format("binaryFile").option("ignoreMissingFiles", "false").load(wanted) \
        .select("path", "content").collect()
    return {r.path: bytes(r.content) for r in rows}


def read_file(spark: SparkSession, path: str) -> bytes | None:
    """One file's content, or None when it does not exist."""
    found = read_file_where(spark, path)
    return found[1] if found else None


def read_file_where(spark: SparkSession, path: str) -> tuple[str, bytes] | None:
    """One file's URI as the server's file system qualifies it (a path without a scheme on its default file
    system), and its content; None when it does not exist."""
    try:
        rows = spark.read.format("binaryFile").load(path).select("path", "content").collect()
    except AnalysisException as error:
        if _is_missing_path(error):
            return None
        raise
    return (str(rows[0].path), bytes(rows[0].content)) if rows else None


def path_exists(spark: SparkSession, path: str) -> bool:
    """Whether anything exists at ``path`` (lists it: use on error paths only)."""
    try:
        spark.read.format("binaryFile").option("pathGlobFilter", "\0").load(path).limit(1).collect()
    except AnalysisException as error:
        if _is_missing_path(error):
            return False
        raise
    return True


def run_storage_ops(spark: SparkSession, ops: Sequence[StorageOp], *,
                    counting: DataFrame | None = None) -> list[StorageResult]:
    """Run ``ops`` in order, in one task on the server; one result per op (skipped ops: not ok).

    With ``counting`` (best persisted: the task reads it again), the same task first counts its rows, which
    ``counted`` ops write into their content: one job where a count and the ops would take three."""
    for op in ops:
        location_of(op.uri)  # a storage the workers have no client for is refused before any job runs
    ship_package(spark)
    requests = task_rows(spark, [(ops_request(ops),)], OPS_SCHEMA)
    if counting is not None:  # its rows as nulls beside the request, all in one partition: one task sees them
        nulls = counting.select(F.lit(None).cast("string").alias(OPS_SCHEMA.names[0]))
        requests = nulls.unionAll(requests).coalesce(1)
    rows = map_task_rows(requests, OPS_SCHEMA, execute_ops, RESULTS_SCHEMA).collect()
    decoded = json.loads(next(row.result for row in rows if row.result is not None))
    contents: list[list[tuple[str, bytes]]] = [[] for _ in decoded]
    for row in rows:
        if row.result is None:
            contents[row.op].append((row.name, bytes(row.content)))
    return [StorageResult(r["ok"], r["text"], tuple(r["names"]), tuple(tuple(f) for f in r["files"]),
                          tuple(read), r["counted"]) for r, read in zip(decoded, contents, strict=True)]


PlanningAccess = SparkSession | LocalFileAccess
"""What a read plans through: a Spark session (the client's), or the planner's own process (the data source's)."""


def access_of(spark: PlanningAccess) -> FileAccess:
    """How planning through ``spark`` reaches a table's files."""
    return spark if isinstance(spark, LocalFileAccess) else SparkFileAccess(spark)


class SparkFileAccess:
    """A table's files reached through a Spark session: the storage ops and listings in executor tasks, files
    through Spark's ``binaryFile`` source (:class:`~hudi_connect.core.executor.file_access.FileAccess`)."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def run_storage_ops(self, ops: Sequence[StorageOp]) -> list[StorageResult]:
        """Run the ops through the session."""
        return run_storage_ops(self.spark, ops)

    def read_files(self, paths: Iterable[str]) -> dict[str, bytes]:
        """The files' contents, read through the session."""
        return read_files(self.spark, paths)

    def read_file_where(self, path: str) -> tuple[str, bytes] | None:
        """One file's qualified URI and content, read through the session; None if it does not exist."""
        return read_file_where(self.spark, path)

    def path_exists(self, path: str) -> bool:
        """Whether anything exists at the path, asked through the session."""
        return path_exists(self.spark, path)

    def driver_listing(self, directory: str, *, recursive: bool = False) -> list[str] | None:
        """The server driver's listing (an analysis call, no Spark job)."""
        return driver_listing(self.spark, directory, recursive=recursive)

    def list_files(self, pattern: str) -> list[RemoteFile]:
        """The files matching the glob, listed through the session."""
        return list_files(self.spark, pattern)

    def archived_rows(self, files: Sequence[str], *, lsm: bool, columns: Sequence[str],
                      instants: Sequence[str] | None = None) -> list[tuple[Any, ...]]:
        """The archive's rows, read through the session."""
        if lsm:
            rows = self.spark.read.option("ignoreMissingFiles", "false").parquet(*files)
        else:
            ship_package(self.spark)
            rows = task_rows(self.spark, [(f,) for f in files], ARCHIVE_FILES).mapInArrow(
                decode_v6_archives, spark_schema(ARCHIVED_INSTANTS))
        if instants is not None:
            rows = rows.where(F.col(INSTANT_TIME).isin(list(instants)))
        return [tuple(row) for row in rows.select(*columns).collect()]

    def listing_tables(self, request: ListingRequest) -> Iterator[pa.Table]:
        """The listing, made through the session."""
        return result_tables(self.listing_plan(request))

    def listing_plan(self, request: ListingRequest) -> DataFrame:
        """The request's listing as a Spark plan, sorted by partition and name: listed in one task (through the
        metadata table, or storage), or over :data:`FAN_OUT_TASKS` by top-level directory; the statistics'
        matches joined by file name."""
        keep = request.keep
        if request.metadata is not None:
            files = map_task_rows(self._one_task(request.base_path), BASE_URI_SCHEMA,
                                  partial(list_through_metadata, request.metadata, keep), LISTED_SCHEMA)
        elif not request.fan_out:
            files = map_task_rows(self._one_task(request.base_path), BASE_URI_SCHEMA, partial(list_storage, keep),
                                  LISTING.schema).withColumn("source", F.lit("storage"))
        else:
            top = map_task_rows(self._one_task(request.base_path), BASE_URI_SCHEMA, partial(list_top_level, keep),
                                LISTING_PARTS.schema)
            # round-robin, so that the directories spread evenly; then one sorted partition again for the client,
            # which builds one partition's file slices at a time (coalesce would pull the listing into one task)
            listed = top.repartition(FAN_OUT_TASKS).mapInArrow(partial(list_subtrees, keep, request.base_path),
                                                               spark_schema(LISTING.schema))
            files = (listed.repartition(1).sortWithinPartitions("partition", "name")
                     .withColumn("source", F.lit("storage")))
        lookup = request.stats
        # one listing task emits rows sorted by partition already
        if lookup is None:
            return files.withColumn("may_match", F.lit(True))
        if lookup.metadata is not None:
            ship_package(self.spark)
            shards = stats_shards(1 if lookup.narrows else STATS_TASKS)
            matches = map_task_rows(task_rows(self.spark, shards, STATS_SHARDS_SCHEMA), STATS_SHARDS_SCHEMA,
                                    partial(match_by_metadata_stats, lookup.metadata, lookup.keep, lookup.predicate,
                                            lookup.columns), MATCHES.schema)
            # a file's statistics of two columns may sit in two file groups (Hudi places each record by its
            # whole key), each judged alone: the file may match only if every one allows it
            matches = matches.groupBy("name").agg(F.min("may_match").alias("may_match"))
            if lookup.narrows:  # a few partitions' matches: sent to the listing's task, not shuffled with it
                matches = F.broadcast(matches)
        else:
            config = StatsConfig(request.base_path, lookup.predicate, lookup.columns)
            matches = (files.where(F.col("name").endswith(".parquet")).repartition(8)
                       .mapInArrow(partial(match_by_footer, config), spark_schema(MATCHES.schema)))
        # file names are unique in a table (file id, write token, instant)
        joined = (files.join(matches.drop("partition"), ["name"], "left")
                  .withColumn("may_match", F.coalesce(F.col("may_match"), F.lit(True))))
        # sorted again after the join, in one partition: no range-partitioning job as orderBy would run
        return joined.coalesce(1).sortWithinPartitions("partition", "name")

    def _one_task(self, base_path: str) -> DataFrame:
        ship_package(self.spark)
        return task_rows(self.spark, [(base_path,)], BASE_URI_SCHEMA)
