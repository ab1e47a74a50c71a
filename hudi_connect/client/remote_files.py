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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_connect.client.artifacts import ship_package
from hudi_connect.client.task_rows import map_task_rows, task_rows
from hudi_connect.core.executor.object_store import (
    OPS_SCHEMA,
    RESULTS_SCHEMA,
    StorageOp,
    StorageResult,
    execute_ops,
    ops_request,
)
from hudi_connect.core.executor.storage import location_of
from hudi_connect.core.format.fs_view import StoredFile


@dataclass(frozen=True)
class RemoteFile:
    """A file listed through the server: its path, name, size in bytes and modification time (ms, to the
    second)."""

    path: str  # as Spark reports it, e.g. file:/tmp/t/.hoodie/timeline/x.commit
    name: str
    size: int
    modification_time_ms: int


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


def listed_files(directory: str, listed: StorageResult) -> list[RemoteFile]:
    """The files of a ``list`` op's result (for callers batching it with other ops in one task)."""
    directory = directory.rstrip("/")
    # whole seconds, as binaryFile reports them: completion times derived from them (tables before version 8)
    # stay the same whichever way a file was listed
    return [RemoteFile(f"{directory}/{name}", name, size, mtime // 1000 * 1000) for name, size, mtime in listed.files]


# A listing batched with other ops comes back whole, in one row, and the client holds it. Above this many files
# it is not sent: the caller's listing plan streams it instead (one partition at a time in the client).
MAX_BATCHED_FILES = 20_000


def data_files_op(base_path: str) -> StorageOp:
    """The op listing a table's data files from storage, for a caller batching it with other ops in one task."""
    return StorageOp.data_files(base_path, MAX_BATCHED_FILES)


def stored_files(listed: StorageResult) -> tuple[StoredFile, ...] | None:
    """The files of a :func:`data_files_op`'s result, sorted by partition and name (None: too many)."""
    if not listed.ok:
        return None
    return tuple(StoredFile(partition, name, size) for partition, _, name, size
                 in sorted((*path.rpartition("/"), size) for path, size, _ in listed.files))


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
