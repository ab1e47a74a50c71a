"""``TimelineView`` (RFC-64): a table's timeline and commit metadata, read through any
Spark Connect server (Hudi jar or not): the listing on an executor, the files with
Spark's ``binaryFile`` source.

Completed instant files never change, so their decoded metadata is cached and
read only once per view.
"""

from __future__ import annotations

import base64
import fnmatch
import json
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_connect.client import remote_files
from hudi_connect.client.artifacts import ship_package
from hudi_connect.client.remote_files import run_storage_ops
from hudi_connect.client.server_loss import over_connect
from hudi_connect.client.task_rows import spark_schema, task_rows
from hudi_connect.errors import InvalidInstantError, NotAHudiTableError, TableNotFoundError, UnsupportedStorageError
from hudi_connect.executor.archive_log import ARCHIVE_FILES, ARCHIVED_INSTANTS, decode_v6_archives
from hudi_connect.executor.object_store import StorageOp, StorageResult
from hudi_connect.executor.storage import location_of, supported_schemes
from hudi_connect.format import archived_timeline as archive
from hudi_connect.format.archived_timeline import ArchivedTimeline, archived_instant
from hudi_connect.format.commit_metadata import CommitMetadata, decode_commit_metadata
from hudi_connect.format.fs_view import StoredFile
from hudi_connect.format.history import HistoryEntry, history_entries
from hudi_connect.format.history_bounds import CleanedBound, cleaned_bound, earliest_commit_to_retain, latest_clean
from hudi_connect.format.internal_schema import HISTORY_DIR, SchemaVersion, latest_history_file, schema_history
from hudi_connect.format.table_config import TableProperties, parse_java_properties
from hudi_connect.format.timeline import Action, Instant, InstantFile, InstantState, Timeline, parse_instant_file_name


def load_properties(spark: SparkSession, path: str) -> TableProperties:
    """``hoodie.properties`` of the table at ``path``, with errors that say what is there instead."""
    location = location_of(path)  # a storage the workers have no client for is refused before any job runs
    base = path.rstrip("/")
    # by binaryFile, not an executor task (fewer requests to an object store): a session's first call must be
    # one pyspark retries, and shipping our code to the executors (addArtifacts) is not
    found = remote_files.read_file_where(spark, f"{base}/.hoodie/hoodie.properties")
    if found is None:
        if not remote_files.path_exists(spark, base):
            raise TableNotFoundError(f"no table at {path}: the path does not exist")
        raise NotAHudiTableError(f"{path} is not a Hudi table: it has no .hoodie/hoodie.properties")
    qualified, content = found
    if not location.scheme and not qualified.startswith("file:"):  # the workers would look on their local disk
        raise UnsupportedStorageError(
            "", path, supported_schemes(),
            detail=f"the server finds it at {qualified.rsplit('/.hoodie/', 1)[0]} (its default file system): give "
                   "the table's whole URI")
    raw = parse_java_properties(content.decode("utf-8", errors="replace"))
    return TableProperties.from_properties(raw, where=f"the table at {path}")


@dataclass
class _ArchiveCache:
    """The archived timeline once read, shared by a view and its pinned copies."""

    timeline: ArchivedTimeline | None = None
    files: tuple[str, ...] = ()  # the LSM's live Parquet files, or version 6's archive log files
    active_from: str = ""  # the first instant of the active timeline it was read beside


class TimelineView:
    """The timeline of one table as seen through a Spark session."""

    def __init__(self, spark: SparkSession, base_path: str, properties: TableProperties) -> None:
        self._spark = spark
        self._base_path = base_path.rstrip("/")
        self.properties = properties
        self._metadata_cache: dict[str, CommitMetadata] = {}
        self._pinned: Timeline | None = None
        self._archive = _ArchiveCache()
        self._clean_cache: dict[str, str | None] = {}
        self.pinned_files: tuple[StoredFile, ...] | None = None

    @classmethod
    def open(cls, spark: SparkSession, base_path: str) -> TimelineView:
        return cls(spark, base_path, load_properties(spark, base_path))

    @property
    def timeline_directory(self) -> str:
        directory = f"{self._base_path}/.hoodie"
        return f"{directory}/{self.properties.timeline_dir}" if self.properties.timeline_dir else directory

    def timeline(self, *, with_metadata: bool = False) -> Timeline:
        """The active timeline, listed afresh (unless pinned), as Hudi sees it (without reverse-stream
        checkpoints). ``with_metadata``: in the same task, read the commit metadata of its completed write
        commits this view has not read yet (for callers about to ask :meth:`commit_metadata` for them)."""
        if self._pinned is not None:
            return self._pinned
        return self.timeline_of(run_storage_ops(self._spark, [self.listing_op(with_metadata=with_metadata)])[0])

    @property
    def is_pinned(self) -> bool:
        """Whether :meth:`timeline` answers a timeline its caller listed (see :meth:`pinned`)."""
        return self._pinned is not None

    def listing_op(self, *, with_metadata: bool = False) -> StorageOp:
        """The storage op listing the timeline (see :meth:`timeline`), for a caller running it with other
        ops in one task; :meth:`timeline_of` reads its result."""
        if not with_metadata:
            return StorageOp("list", self.timeline_directory)
        known = sorted(path.rsplit("/", 1)[-1] for path in self._metadata_cache)
        return StorageOp("timeline", self.timeline_directory, json.dumps(known))

    def timeline_of(self, listed: StorageResult) -> Timeline:
        """The timeline of a :meth:`listing_op`'s result (its commit metadata cached)."""
        for name, content in listed.contents:
            path = f"{self.timeline_directory}/{name}"
            self._metadata_cache[path] = decode_commit_metadata(base64.b64decode(content), name=path)
        files = remote_files.listed_files(self.timeline_directory, listed)
        return Timeline.from_files(p for p in _instant_files(files) if p.action is not Action.REVERSE_COMMIT)

    def pinned(self, timeline: Timeline, files: tuple[StoredFile, ...] | None = None) -> TimelineView:
        """This view, answering ``timeline`` instead of listing: for a read planned on a timeline its caller
        listed already (a reverse-stream batch), so the two agree and nothing is listed twice. Commit
        metadata is cached for both. ``files``: the table's data files, if the caller listed them too."""
        view = TimelineView(self._spark, self._base_path, self.properties)
        view._metadata_cache = self._metadata_cache
        view._archive = self._archive
        view._pinned = timeline
        view.pinned_files = files
        return view

    def archived_timeline(self, timeline: Timeline) -> ArchivedTimeline:
        """The instants Hudi archived before the active ``timeline`` (read again only once archival moved its
        first instant on): the LSM timeline of versions 8 and 9, or the archive log files of version 6."""
        first = timeline.first()
        key = first.requested_time if first else ""
        if self._archive.timeline is not None and self._archive.active_from == key:
            return self._archive.timeline
        self._archive.timeline, self._archive.active_from = None, key
        directory = f"{self._base_path}/.hoodie/{self.properties.archive_dir}"
        by_completion = self.properties.version >= 8
        self._archive.files = self._lsm_files(directory) if by_completion else tuple(sorted(
            f.path for f in remote_files.list_directory(self._spark, directory)
            if f.name.startswith(archive.V6_ARCHIVE_PREFIX)))
        rows = (self._archived_rows().select(archive.INSTANT_TIME, archive.COMPLETION_TIME, archive.ACTION).collect()
                if self._archive.files else [])
        instants = {archived_instant(r[0], r[1], r[2]) for r in rows}
        # an archival that stopped before removing its instants from the active timeline leaves them in both
        self._archive.timeline = ArchivedTimeline(
            tuple(sorted(i for i in instants if i is not None and (not key or i.requested_time < key))),
            by_completion=by_completion)
        return self._archive.timeline

    def first_write_commit(self, timeline: Timeline, *, reaching: str) -> Instant | None:
        """The table's first write commit, for a read reaching back to ``reaching`` (a requested time): the active
        timeline's, or the archive's first where ``reaching`` is earlier (the archive is read only then)."""
        first = timeline.write_commits().first()
        if first is not None and reaching < first.requested_time:
            archived = self.archived_timeline(timeline).write_commits()
            first = archived[0] if archived else first
        return first

    def _lsm_files(self, directory: str) -> tuple[str, ...]:
        """The live Parquet files of the LSM timeline in ``directory`` (none if nothing was archived)."""
        where = f"the table at {self._base_path}"
        version = run_storage_ops(self._spark, [StorageOp("get", f"{directory}/{archive.VERSION_FILE}")])[0]
        if not version.ok:
            return ()
        manifest_path = f"{directory}/{archive.manifest_name(version.text, where=where)}"
        manifest = run_storage_ops(self._spark, [StorageOp("get", manifest_path)])[0]
        if not manifest.ok:
            raise InvalidInstantError(f"{where}: the archived timeline's {manifest_path} is missing")
        return tuple(f"{directory}/{name}" for name in archive.manifest_files(manifest.text, where=where))

    def _archived_rows(self) -> DataFrame:
        """The archive's completed instants, one row each in the LSM's columns (a plan): its Parquet files, or
        version 6's log files decoded on the executors."""
        if self.properties.version >= 8:
            return self._spark.read.parquet(*self._archive.files)
        ship_package(self._spark)
        return task_rows(self._spark, [(f,) for f in self._archive.files], ARCHIVE_FILES).mapInArrow(
            decode_v6_archives, spark_schema(ARCHIVED_INSTANTS))

    def archived_commit_metadata(self, instants: Sequence[Instant]) -> dict[Instant, CommitMetadata]:
        """Decoded metadata of archived write instants (after :meth:`archived_timeline`), each read once."""
        wanted = {f"archived:{i.requested_time}": i for i in instants if i.writes_data}
        missing = sorted(i.requested_time for key, i in wanted.items() if key not in self._metadata_cache)
        if missing and self._archive.files:
            rows = (self._archived_rows().where(F.col(archive.INSTANT_TIME).isin(missing))
                    .select(archive.INSTANT_TIME, archive.METADATA).collect())
            for time, data in rows:
                key = f"archived:{time}"
                if data is not None and key in wanted:
                    self._metadata_cache[key] = decode_commit_metadata(bytes(data), name=f"archived instant {time}")
        return {i: self._metadata_cache[key] for key, i in wanted.items() if key in self._metadata_cache}

    def cleaned_bound(self, timeline: Timeline) -> CleanedBound | None:
        """The cleaner's bound on ``timeline`` (see :mod:`~hudi_connect.format.history_bounds`): the latest
        completed clean's metadata, read once per view."""
        clean = latest_clean(timeline)
        if clean is None:
            return None
        path = self.instant_file(clean)
        if path not in self._clean_cache:
            content = remote_files.read_files(self._spark, [path])
            self._clean_cache[path] = earliest_commit_to_retain(next(iter(content.values()), b""))
        return cleaned_bound(timeline, self._clean_cache[path])

    def reverse_commits(self) -> dict[Instant, str]:
        """RFC-70 checkpoint instants (completed ``reversecommit`` files) and their paths."""
        found = [p for p in self._instant_files("*.reversecommit") if p.state is InstantState.COMPLETED]
        return {Instant(p.requested_time, p.action, p.state, p.completion_time): f"{self.timeline_directory}/{p.name}"
                for p in found}

    def _instant_files(self, pattern: str = "*") -> list[InstantFile]:
        # listed on an executor: a requested instant's file is empty, and Spark's sources skip empty files
        return _instant_files(remote_files.list_directory(self._spark, self.timeline_directory), pattern)

    def instant_file(self, instant: Instant) -> str:
        action = instant.action.value
        if self.properties.timeline_dir:
            return f"{self.timeline_directory}/{instant.requested_time}_{instant.completion_time}.{action}"
        return f"{self.timeline_directory}/{instant.requested_time}.{action}"

    def commit_metadata(self, instants: Sequence[Instant]) -> dict[Instant, CommitMetadata]:
        """Decoded metadata of completed write instants, each read once in the view's life."""
        wanted = {self.instant_file(i): i for i in instants if i.is_completed and i.writes_data}
        missing = [path for path in wanted if path not in self._metadata_cache]
        if missing:
            contents = remote_files.read_files(self._spark, missing)
            by_name = {uri.rsplit("/", 1)[-1]: data for uri, data in contents.items()}
            for path in missing:
                data = by_name.get(path.rsplit("/", 1)[-1])
                if data is not None:
                    self._metadata_cache[path] = decode_commit_metadata(data, name=path)
        return {i: self._metadata_cache[p] for p, i in wanted.items() if p in self._metadata_cache}

    @over_connect("reading the table's history")
    def history(self, limit: int | None = None) -> list[HistoryEntry]:
        """Instants newest first (the newest ``limit``), with operation type and write statistics; the
        archived ones after the active timeline's, marked ``archived``."""
        timeline = self.timeline()
        instants = list(reversed(timeline.instants))[:limit]
        entries = history_entries(instants, self.commit_metadata(instants))
        if limit is None or len(entries) < limit:
            archived = list(reversed(self.archived_timeline(timeline).instants))
            archived = archived[:limit - len(entries)] if limit is not None else archived
            entries += history_entries(archived, self.archived_commit_metadata(archived), archived=True)
        return entries

    def schema_history(self, timeline: Timeline) -> list[SchemaVersion]:
        """Schema-on-read versions, oldest first (none for tables without schema on read)."""
        directory = f"{self._base_path}/.hoodie/{HISTORY_DIR}"
        names = [f.name for f in remote_files.list_files(self._spark, f"{directory}/*.schemacommit")]
        completed = (i.requested_time for i in timeline if i.is_completed)
        name = latest_history_file(names, completed)
        content = remote_files.read_file(self._spark, f"{directory}/{name}") if name else None
        return schema_history(content.decode("utf-8")) if content else []

    def find_latest_completed_action_at(self, time: str) -> Instant | None:
        """The last completed instant requested at or before ``time`` (RFC-64)."""
        return self.timeline().latest_completed_at(time)


def _instant_files(files: list[remote_files.RemoteFile], pattern: str = "*") -> list[InstantFile]:
    parsed = (parse_instant_file_name(f.name, f.modification_time_ms) for f in files
              if fnmatch.fnmatchcase(f.name, f"[0-9]{pattern}"))
    return [p for p in parsed if p is not None]
