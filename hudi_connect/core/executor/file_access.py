"""How planning reaches a table's files: :class:`FileAccess`.

A client plans through its Spark session: listings and small files come from an executor task or Spark's
``binaryFile`` source, where the storage credentials are (``client.remote_files.SparkFileAccess``). A planner
without a session, the ``format("hudi")`` data source's planning worker on the server, reaches them from its
own process (:class:`LocalFileAccess`), with the same credentials the executors have. Both run the same bodies
of this package, and the planning above them (``TimelineView``, ``FileIndex``, ``TableReader``) is one.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_connect.core.executor.archive_log import ARCHIVE_FILES, decode_v6_archives
from hudi_connect.core.executor.contracts import LISTING
from hudi_connect.core.executor.listing import PartitionFilter, StatsConfig, list_storage, match_by_footer
from hudi_connect.core.executor.metadata_reader import (
    STATS_SHARDS_SCHEMA,
    STATS_TASKS,
    MetadataSource,
    list_through_metadata,
    match_by_metadata_stats,
    stats_shards,
)
from hudi_connect.core.executor.object_store import StorageOp, StorageResult, run_ops_here
from hudi_connect.core.executor.slices import BASE_URI_SCHEMA
from hudi_connect.core.executor.storage import filesystem_for, location_of, read_bytes, read_many, storage_access
from hudi_connect.core.format.archived_timeline import INSTANT_TIME
from hudi_connect.core.format.expressions import Expression
from hudi_connect.core.format.fs_view import StoredFile


@dataclass(frozen=True)
class RemoteFile:
    """A listed file: its path, name, size in bytes and modification time (ms, to the second)."""

    path: str  # as the lister reports it, e.g. file:/tmp/t/.hoodie/timeline/x.commit
    name: str
    size: int
    modification_time_ms: int


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


@dataclass(frozen=True)
class StatsLookup:
    """Which listed files' column statistics exclude ``predicate`` (on ``columns``): the metadata table's
    column_stats partition (``metadata``; of the partitions ``keep`` keeps, in one task where ``narrows``,
    else in :data:`STATS_TASKS`), else the base files' Parquet footers."""

    predicate: Expression
    columns: tuple[str, ...]
    metadata: MetadataSource | None
    keep: PartitionFilter
    narrows: bool


@dataclass(frozen=True)
class ListingRequest:
    """The data files of a table's partitions that ``keep`` keeps: through the metadata table (``metadata``),
    else from storage (``fan_out``: spread over several tasks); each with ``may_match`` from ``stats``."""

    base_path: str
    keep: PartitionFilter
    metadata: MetadataSource | None = None
    fan_out: bool = False
    stats: StatsLookup | None = None


LISTED_SCHEMA = LISTING.schema.append(pa.field("source", pa.string()))


class FileAccess(Protocol):
    """What planning reads of a table, wherever it runs."""

    def run_storage_ops(self, ops: Sequence[StorageOp]) -> list[StorageResult]:
        """Run ``ops`` in order (one task where that costs one); one result per op."""

    def read_files(self, paths: Iterable[str]) -> dict[str, bytes]:
        """The content of each path, by its URI; a missing file fails."""

    def read_file_where(self, path: str) -> tuple[str, bytes] | None:
        """One file's qualified URI and content; None when it does not exist."""

    def path_exists(self, path: str) -> bool:
        """Whether anything exists at ``path`` (for error messages)."""

    def driver_listing(self, directory: str, *, recursive: bool = False) -> list[str] | None:
        """The file paths under ``directory`` without a Spark job, where that is cheaper than a task; else None."""

    def list_files(self, pattern: str) -> list[RemoteFile]:
        """The files matching a glob in its last part (``dir/*.schemacommit``); [] if none."""

    def archived_rows(self, files: Sequence[str], *, lsm: bool, columns: Sequence[str],
                      instants: Sequence[str] | None = None) -> list[tuple[Any, ...]]:
        """``columns`` of the archived instants in ``files`` (the LSM timeline's Parquet files where ``lsm``,
        else version 6's archive logs), only ``instants`` where given."""

    def listing_tables(self, request: ListingRequest) -> Iterator[pa.Table]:
        """The request's files as :data:`LISTED_SCHEMA` columns and ``may_match``, sorted by partition and name."""


def list_directory(access: FileAccess, directory: str) -> list[RemoteFile]:
    """Every file directly under ``directory``, empty and hidden ones too; [] if it does not exist."""
    return listed_files(directory, access.run_storage_ops([StorageOp.list(directory.rstrip("/"))])[0])


def read_file(access: FileAccess, path: str) -> bytes | None:
    """One file's content, or None when it does not exist."""
    found = access.read_file_where(path)
    return found[1] if found else None


class LocalFileAccess:
    """A table's files read from this process, with its own storage credentials: for a planner that runs on the
    server without a Spark session (the data source's). A path without a scheme is this machine's disk."""

    def run_storage_ops(self, ops: Sequence[StorageOp]) -> list[StorageResult]:
        """Run the ops in this process."""
        return run_ops_here(ops)

    def read_files(self, paths: Iterable[str]) -> dict[str, bytes]:
        """The files' contents, read in this process."""
        wanted = sorted(set(paths))
        return dict(zip(wanted, read_many(wanted), strict=True))

    def read_file_where(self, path: str) -> tuple[str, bytes] | None:
        """One file's qualified URI and content, read in this process; None if it does not exist."""
        try:
            with storage_access(path, "reading"):
                content = read_bytes(path)
        except FileNotFoundError:
            return None
        return (path if location_of(path).scheme else f"file:{path}"), content

    def path_exists(self, path: str) -> bool:
        """Whether anything exists at the path, asked in this process."""
        filesystem, inner = filesystem_for(path)
        with storage_access(path, "reading"):
            return bool(filesystem.get_file_info(inner).type.name != "NotFound")

    def driver_listing(self, directory: str, *, recursive: bool = False) -> list[str] | None:
        """None: a listing here costs what the task's would."""
        return None

    def list_files(self, pattern: str) -> list[RemoteFile]:
        """The files matching the glob, listed in this process."""
        directory, _, glob = pattern.rpartition("/")
        return [f for f in list_directory(self, directory) if fnmatch.fnmatchcase(f.name, glob)]

    def archived_rows(self, files: Sequence[str], *, lsm: bool, columns: Sequence[str],
                      instants: Sequence[str] | None = None) -> list[tuple[Any, ...]]:
        """The archive's rows, read in this process."""
        if lsm:
            tables = []
            for uri in files:
                filesystem, path = filesystem_for(uri)
                with storage_access(uri, "reading"):
                    tables.append(pq.read_table(path, filesystem=filesystem, columns=list({*columns, INSTANT_TIME})))
            rows = pa.concat_tables(tables, promote_options="permissive") if tables else None
        else:
            batches = list(decode_v6_archives([pa.record_batch([pa.array(list(files), pa.string())],
                                                               schema=ARCHIVE_FILES)]))
            rows = pa.Table.from_batches(batches) if batches else None
        if rows is None:
            return []
        if instants is not None:
            rows = rows.filter(pc.is_in(rows[INSTANT_TIME], value_set=pa.array(list(instants), pa.string())))
        return list(zip(*(rows[c].to_pylist() for c in columns), strict=True)) if rows.num_rows else []

    def listing_tables(self, request: ListingRequest) -> Iterator[pa.Table]:
        """The listing, made in this process."""
        base = pa.record_batch([pa.array([request.base_path], pa.string())], schema=BASE_URI_SCHEMA)
        if request.metadata is not None:
            listed = pa.Table.from_batches(list(list_through_metadata(request.metadata, request.keep, [base])),
                                           schema=LISTED_SCHEMA)
        else:
            storage = pa.Table.from_batches(list(list_storage(request.keep, [base])), schema=LISTING.schema)
            listed = storage.append_column("source", pa.array(["storage"] * storage.num_rows, pa.string()))
        matches = _stats_matches(request, listed)
        may_match = pa.array([matches.get(name, True) for name in listed["name"].to_pylist()], pa.bool_())
        yield listed.append_column("may_match", may_match).sort_by([("partition", "ascending"),
                                                                   ("name", "ascending")])


def _stats_matches(request: ListingRequest, listed: pa.Table) -> dict[str, bool]:
    """Whether each listed file's statistics allow the request's predicate (absent: no statistics, kept). A file
    whose statistics sit in several file groups of the metadata table may match only if every one allows it."""
    lookup = request.stats
    if lookup is None:
        return {}
    if lookup.metadata is not None:
        shards = stats_shards(1 if lookup.narrows else STATS_TASKS)
        rows = pa.record_batch([pa.array([s for s, _ in shards], pa.int32()), pa.array([n for _, n in shards],
                                pa.int32())], schema=STATS_SHARDS_SCHEMA)
        batches = match_by_metadata_stats(lookup.metadata, lookup.keep, lookup.predicate, lookup.columns, [rows])
    else:
        parquet = listed.filter(pc.ends_with(listed["name"], ".parquet"))
        batches = match_by_footer(StatsConfig(request.base_path, lookup.predicate, lookup.columns),
                                  parquet.to_batches())
    matches: dict[str, bool] = {}
    for batch in batches:
        for name, may_match in zip(batch.column("name").to_pylist(), batch.column("may_match").to_pylist(),
                                   strict=True):
            matches[name] = matches.get(name, True) and bool(may_match)
    return matches
