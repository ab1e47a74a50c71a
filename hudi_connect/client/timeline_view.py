"""``TimelineView`` (RFC-64): a table's timeline and commit metadata, read through any
Spark Connect server (Hudi jar or not): the listing on an executor, the files with
Spark's ``binaryFile`` source.

Completed instant files never change, so what is read of them is kept per Spark
session and table (:class:`_TableState`, the last few tables a session read): a
later read asks the server's driver for the timeline directory's names (one
analysis call, no Spark job) and, if they are the same, plans on the timeline it
listed before; otherwise one task lists the timeline, reads the commit metadata
not read yet and ``hoodie.properties`` again (a table upgraded, recreated, rolled
back or restored at the same path always changes the names).
"""

from __future__ import annotations

import fnmatch
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hudi_connect.client.remote_files import PlanningAccess, access_of
from hudi_connect.client.server_loss import over_connect
from hudi_connect.core.errors import (
    ConcurrentTableChangeError,
    InvalidInstantError,
    NotAHudiTableError,
    TableNotFoundError,
    UnsupportedStorageError,
)
from hudi_connect.core.executor.file_access import (
    FileAccess,
    RemoteFile,
    data_files_op,
    list_directory,
    listed_files,
    read_file,
    stored_files,
)
from hudi_connect.core.executor.object_store import StorageOp, StorageResult
from hudi_connect.core.executor.storage import location_of, supported_schemes
from hudi_connect.core.format import archived_timeline as archive
from hudi_connect.core.format.archived_timeline import ArchivedTimeline, archived_instant
from hudi_connect.core.format.commit_metadata import CommitMetadata, decode_commit_metadata
from hudi_connect.core.format.fs_view import StoredFile
from hudi_connect.core.format.history import HistoryEntry, history_entries
from hudi_connect.core.format.history_bounds import CleanedBound, cleaned_bound, earliest_commit_to_retain, latest_clean
from hudi_connect.core.format.internal_schema import HISTORY_DIR, SchemaVersion, latest_history_file, schema_history
from hudi_connect.core.format.table_config import (
    PROPERTIES_BACKUP_FILE,
    PROPERTIES_FILE,
    TableProperties,
    parse_java_properties,
    properties_are_whole,
)
from hudi_connect.core.format.timeline import (
    Action,
    Instant,
    InstantFile,
    InstantState,
    Timeline,
    file_removals_between,
    parse_instant_file_name,
)


def load_properties(spark: PlanningAccess, path: str) -> TableProperties:
    """``hoodie.properties`` of the table at ``path``, with errors that say what is there instead."""
    location = location_of(path)  # a storage the workers have no client for is refused before any job runs
    base = path.rstrip("/")
    access = access_of(spark)
    found = _whole_properties_file(access, base)
    if found is None:
        if not access.path_exists(base):
            raise TableNotFoundError(f"no table at {path}: the path does not exist")
        raise NotAHudiTableError(f"{path} is not a Hudi table: it has no .hoodie/hoodie.properties")
    qualified, content = found
    if not location.scheme and not qualified.startswith("file:"):  # the workers would look on their local disk
        raise UnsupportedStorageError(
            "", path, supported_schemes(),
            detail=f"the server finds it at {qualified.rsplit('/.hoodie/', 1)[0]} (its default file system): give "
                   "the table's whole URI")
    return _parsed_properties(content.decode("utf-8", errors="replace"), base)


def _properties_path(base: str, file: str = PROPERTIES_FILE) -> str:
    return f"{base}/.hoodie/{file}"


PROPERTIES_READS = 5  # Hudi's own reader tries as often (HoodieTableConfig.MAX_READ_RETRIES)
PROPERTIES_RETRY_SECONDS = 0.2


def _whole_properties_file(access: FileAccess, base: str) -> tuple[str, bytes] | None:
    """``hoodie.properties`` (its qualified URI and content), or its backup while a writer rewrites it, as Hudi's
    reader takes them: a read that is not whole (:func:`properties_are_whole`) tries the backup, then both again
    a moment later. None when neither exists; a file never whole is refused by name."""
    met_one = False
    for attempt in range(PROPERTIES_READS):
        for file in (PROPERTIES_FILE, PROPERTIES_BACKUP_FILE):
            # by binaryFile, not an executor task (fewer requests to an object store): a session's first call
            # must be one pyspark retries, and shipping our code to the executors (addArtifacts) is not
            found = access.read_file_where(_properties_path(base, file))
            if found is None:
                continue
            met_one = True
            if properties_are_whole(found[1].decode("utf-8", errors="replace")):
                return found
        if not met_one:
            return None
        time.sleep(PROPERTIES_RETRY_SECONDS * (attempt + 1))
    raise ConcurrentTableChangeError(_properties_path(base), None, rewritten=True)


def _parsed_properties(text: str, base: str) -> TableProperties:
    return TableProperties.from_properties(parse_java_properties(text), where=f"the table at {base}")


# (instant, .cdc file) keys of writer schemas a session keeps per table (each points to the set one job found)
MAX_CDC_SCHEMA_KEYS = 200_000


@dataclass
class _ArchiveCache:
    """The archived timeline once read, shared by a view and its pinned copies."""

    timeline: ArchivedTimeline | None = None
    files: tuple[str, ...] = ()  # the LSM's live Parquet files, or version 6's archive log files
    active_from: str = ""  # the first instant of the active timeline it was read beside


@dataclass
class _TableState:
    """What a session has read of one table: replaced whole when ``hoodie.properties`` changes."""

    properties: TableProperties
    metadata: dict[str, CommitMetadata] = field(default_factory=dict)  # by instant file path
    archive: _ArchiveCache = field(default_factory=_ArchiveCache)
    cleans: dict[str, str | None] = field(default_factory=dict)
    names: frozenset[str] | None = None  # the timeline's instant file names when last listed
    timeline: Timeline | None = None  # the timeline those names make
    files_listed: bool = False  # whether the table's data files were listed with them
    files: tuple[StoredFile, ...] | None = None  # those files (None: too many to send)
    # every data file a listing through the metadata table gave at a timeline (up to file_access.MAX_BATCHED_FILES),
    # and where it came from ("metadata", or "storage" where the metadata table had not caught up)
    metadata_files: tuple[Timeline, str, tuple[StoredFile, ...]] | None = None
    # the writer schemas of the .cdc blocks a commit wrote, by (instant, .cdc file): what a change query's schema
    # job found for the rows it read (the set found for all of them, shared: see TimelineView.keep_cdc_schemas)
    cdc_schemas: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)


class _SessionTables:
    """The :class:`_TableState` of the last :data:`MAX_TABLES` tables each session read (least recently
    used dropped first): bounded, and gone with the session."""

    MAX_TABLES = 32

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_session: weakref.WeakKeyDictionary[PlanningAccess, OrderedDict[str, _TableState]] = \
            weakref.WeakKeyDictionary()

    def get(self, spark: PlanningAccess, base_path: str) -> _TableState | None:
        with self._lock:
            tables = self._by_session.get(spark)
            state = tables.get(base_path) if tables is not None else None
            if state is not None and tables is not None:
                tables.move_to_end(base_path)
            return state

    def put(self, spark: PlanningAccess, base_path: str, state: _TableState) -> None:
        with self._lock:
            tables = self._by_session.setdefault(spark, OrderedDict())
            tables[base_path] = state
            tables.move_to_end(base_path)
            while len(tables) > self.MAX_TABLES:
                tables.popitem(last=False)

    def drop(self, spark: PlanningAccess, base_path: str) -> None:
        with self._lock:
            self._by_session.get(spark, {}).pop(base_path, None)  # type: ignore[call-overload]


_SESSION_TABLES = _SessionTables()


def forget_table(spark: PlanningAccess, base_path: str) -> None:
    """Drop what ``spark`` has cached of the table at ``base_path``: for a ``hoodie.properties`` rewritten
    without any instant (hudi-cli's ``table update-configs``), the one change the timeline does not show."""
    _SESSION_TABLES.drop(spark, base_path.rstrip("/"))


def _state_for(spark: PlanningAccess, base_path: str, properties: TableProperties) -> _TableState:
    """The session's state of the table if it was read with the same ``hoodie.properties``, else a new one."""
    state = _SESSION_TABLES.get(spark, base_path)
    if state is None or dict(state.properties.raw) != dict(properties.raw):
        state = _TableState(properties)
        _SESSION_TABLES.put(spark, base_path, state)
    return state


class TimelineView:
    """The timeline of one table as seen through a Spark session."""

    def __init__(self, spark: PlanningAccess, base_path: str, properties: TableProperties) -> None:
        self._spark = spark
        self._access = access_of(spark)
        self._base_path = base_path.rstrip("/")
        self._state = _state_for(spark, self._base_path, properties)
        self._pinned: Timeline | None = None
        self.pinned_files: tuple[StoredFile, ...] | None = None

    @property
    def properties(self) -> TableProperties:
        """The table's ``hoodie.properties``, as last read in this session."""
        return self._state.properties

    @property
    def _metadata_cache(self) -> dict[str, CommitMetadata]:
        return self._state.metadata

    @property
    def _archive(self) -> _ArchiveCache:
        return self._state.archive

    @classmethod
    def open(cls, spark: PlanningAccess, base_path: str) -> TimelineView:
        """The view of the table at ``base_path``: from what the session read of it before where its timeline
        has not changed since (no Spark job), else from ``hoodie.properties`` read now."""
        base = base_path.rstrip("/")
        state = _SESSION_TABLES.get(spark, base)
        if state is not None and state.names is not None:
            view = cls(spark, base, state.properties)
            if view._timeline_names() == state.names:
                return view
        return cls(spark, base, load_properties(spark, base))

    @property
    def timeline_directory(self) -> str:
        """Where the active timeline's instant files are: ``.hoodie/timeline`` (layout 2), else ``.hoodie``."""
        directory = f"{self._base_path}/.hoodie"
        return f"{directory}/{self.properties.timeline_dir}" if self.properties.timeline_dir else directory

    def timeline(self, *, with_metadata: bool = False) -> Timeline:
        """The active timeline (unless pinned), as Hudi sees it (without reverse-stream checkpoints): the one
        listed before if the timeline's names are the same, else listed afresh. ``with_metadata``: with the
        commit metadata of its completed write commits (read in the listing's task where not read yet, for
        callers about to ask :meth:`commit_metadata` for them)."""
        if self._pinned is not None:
            return self._pinned
        cached = self.cached_timeline(with_metadata=with_metadata)
        if cached is not None:
            return cached
        return self.timeline_of(*self._access.run_storage_ops(self.listing_ops(with_metadata=with_metadata)))

    @property
    def is_pinned(self) -> bool:
        """Whether :meth:`timeline` answers a timeline its caller listed (see :meth:`pinned`)."""
        return self._pinned is not None

    def cached_timeline(self, *, with_metadata: bool = False, with_files: bool = False) -> Timeline | None:
        """The timeline listed before (and, ``with_files``, the data files listed with it: :attr:`cached_files`)
        if the timeline's names are still the same, asked of the server's driver (no Spark job); None where
        it must be listed. Tables before version 8 are always listed: their completion times are the instant
        files' modification times, which the driver's listing does not give."""
        state = self._state
        if state.timeline is None or state.names is None or not self.properties.hudi_1_layout:
            return None
        if with_files and not state.files_listed:
            return None
        if with_metadata and any(self.instant_file(i) not in state.metadata
                                 for i in state.timeline.write_commits() if i.is_completed):
            return None
        return state.timeline if self._timeline_names() == state.names else None

    @property
    def cached_files(self) -> tuple[StoredFile, ...] | None:
        """The data files listed with the timeline :meth:`cached_timeline` answers (None: too many to send)."""
        return self._state.files

    @property
    def files_over_limit(self) -> bool:
        """Whether the last storage listing with the timeline found more data files than a batched listing
        sends (:data:`~hudi_connect.core.executor.file_access.MAX_BATCHED_FILES`): a table to list by a plan
        that fans out."""
        return self._state.files_listed and self._state.files is None

    def cached_metadata_files(self, timeline: Timeline) -> tuple[str, tuple[StoredFile, ...]] | None:
        """Where a listing through the metadata table at ``timeline`` came from, and every data file it gave, if
        kept (see :meth:`keep_metadata_files`)."""
        kept = self._state.metadata_files
        return kept[1:] if kept is not None and kept[0] == timeline else None

    def keep_metadata_files(self, timeline: Timeline, source: str, files: tuple[StoredFile, ...]) -> None:
        """Keep a caller's whole, unpruned listing through the metadata table at ``timeline`` (at most
        :data:`~hudi_connect.core.executor.file_access.MAX_BATCHED_FILES` files, all from ``source``) for later
        reads."""
        self._state.metadata_files = (timeline, source, files)

    def known_cdc_schemas(self, keys: Iterable[tuple[str, str]]) -> frozenset[str] | None:
        """The writer schemas of the .cdc blocks of each (commit instant, .cdc file) in ``keys``, if all were
        found before (:meth:`keep_cdc_schemas`), else None. A completed commit's blocks never change."""
        known = self._state.cdc_schemas
        found: set[str] = set()
        for key in keys:
            schemas = known.get(key)
            if schemas is None:
                return None
            found |= schemas
        return frozenset(found)

    def keep_cdc_schemas(self, keys: Iterable[tuple[str, str]], schemas: frozenset[str]) -> None:
        """Keep ``schemas``, the writer schemas found in the .cdc blocks of ``keys`` together, for each key: a
        superset of one key's own, which only widens what a decoder is prepared for (and a schema it cannot
        decode exactly sends the query to Python's decoder). At most :data:`MAX_CDC_SCHEMA_KEYS` keys are kept."""
        known = self._state.cdc_schemas
        keys = list(keys)
        if len(known) + len(keys) > MAX_CDC_SCHEMA_KEYS:
            known.clear()
        known.update(dict.fromkeys(keys[:MAX_CDC_SCHEMA_KEYS], schemas))

    def _timeline_names(self) -> frozenset[str] | None:
        """The instant file names in the timeline directory, as the server's driver lists them (an analysis
        call, no Spark job); None if it cannot be listed (the caller lists it in a task, which says why)."""
        directory = self.timeline_directory
        # recursive: the LSM timeline's directory below is no partition of this one
        paths = self._access.driver_listing(directory, recursive=True)
        if paths is None:
            return None
        leaf = directory.rsplit("/", 1)[-1]
        return _timeline_key(path.rsplit("/", 1)[-1] for path in paths if path.rsplit("/", 2)[-2] == leaf)

    @property
    def listed_names(self) -> frozenset[str] | None:
        """The timeline's instant file names when it was last listed (None: not listed yet)."""
        return self._state.names

    def names_now(self) -> frozenset[str]:
        """The timeline's instant file names now, listed in a task (one LIST): equal to :attr:`listed_names` where
        nothing completed, began or was removed since."""
        listed = self._access.run_storage_ops([StorageOp.list(self.timeline_directory)])[0]
        return _timeline_key(f.name for f in listed_files(self.timeline_directory, listed))

    def listing_ops(self, *, with_metadata: bool = False) -> list[StorageOp]:
        """The storage ops listing the timeline and reading ``hoodie.properties`` (see :meth:`timeline`), for a
        caller running them with other ops in one task; :meth:`timeline_of` reads their results."""
        properties = StorageOp.get(_properties_path(self._base_path))
        if not with_metadata:
            return [StorageOp.list(self.timeline_directory), properties]
        known = sorted(path.rsplit("/", 1)[-1] for path in self._metadata_cache)
        return [StorageOp.timeline(self.timeline_directory, known), properties]

    def timeline_of(self, listed: StorageResult, properties: StorageResult,
                    data_files: StorageResult | None = None) -> Timeline:
        """The timeline of :meth:`listing_ops`' results (its commit metadata cached), kept for later calls with
        the table's files if a :func:`~hudi_connect.core.executor.file_access.data_files_op` listed them in the same
        task (then :attr:`cached_files`). A changed ``hoodie.properties`` starts the table's state anew (a
        table upgraded or recreated here)."""
        if not properties.ok or not properties_are_whole(properties.text):
            # gone, or met while a writer rewrote it: read as Hudi does (its backup), and list again
            _SESSION_TABLES.drop(self._spark, self._base_path)
            self._state = _TableState(load_properties(self._spark, self._base_path))  # says what is there now
            return self.timeline(with_metadata=bool(listed.contents))
        read = _parsed_properties(properties.text, self._base_path)
        if dict(read.raw) != dict(self.properties.raw):
            listed_directory = self.timeline_directory
            self._state = _state_for(self._spark, self._base_path, read)
            if self.timeline_directory != listed_directory:  # upgraded to the layout with a timeline directory
                return self.timeline(with_metadata=bool(listed.contents))
        for name, content in listed.contents:
            path = f"{self.timeline_directory}/{name}"
            self._metadata_cache[path] = decode_commit_metadata(content, name=path)
        instant_files = _instant_files(listed_files(self.timeline_directory, listed))
        timeline = Timeline.from_files(p for p in instant_files if p.action is not Action.REVERSE_COMMIT)
        state = self._state
        state.names, state.timeline = _timeline_key(p.name for p in instant_files), timeline
        state.files_listed = data_files is not None
        state.files = stored_files(data_files) if data_files is not None else None
        return timeline

    def list_with_files(self, leading: Sequence[StorageOp] = (), *,
                        files: bool = True) -> tuple[Timeline, list[StorageResult]]:
        """The timeline (with commit metadata) and, ``files``, the table's data files (then :attr:`cached_files`),
        listed in one task after ``leading`` ops; the timeline, and the leading ops' results.

        With the files, the timeline is listed again after them in the same task: a clean, rollback or restore
        begun between the two may have deleted files the listing missed, and a read of an older instant would
        silently lack them. Everything is listed again then, up to :data:`LISTING_ATTEMPTS` times, before
        :class:`ConcurrentTableChangeError`."""
        ops = [*leading, *self.listing_ops(with_metadata=True)]
        if not files:
            *ahead, listing, properties = self._access.run_storage_ops(ops)
            return self.timeline_of(listing, properties), ahead
        removals: list[str] = []
        for _ in range(LISTING_ATTEMPTS):
            *ahead, listing, properties, data_files, after = self._access.run_storage_ops([
                *ops, data_files_op(self._base_path), StorageOp.list(self.timeline_directory)])
            removals = file_removals_between(listing.names, after.names)
            if not removals:
                return self.timeline_of(listing, properties, data_files), ahead
        raise ConcurrentTableChangeError(self._base_path, None, listing_removals=removals)

    def pinned(self, timeline: Timeline, files: tuple[StoredFile, ...] | None = None) -> TimelineView:
        """This view, answering ``timeline`` instead of listing: for a read planned on a timeline its caller
        listed already (a reverse-stream batch), so the two agree and nothing is listed twice. What is read of
        the table is shared. ``files``: the table's data files, if the caller listed them too."""
        view = TimelineView(self._spark, self._base_path, self.properties)
        view._state = self._state
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
        by_completion = self.properties.ranges_by_completion
        self._archive.files = self._lsm_files(directory) if by_completion else tuple(sorted(
            f.path for f in list_directory(self._access, directory)
            if f.name.startswith(archive.V6_ARCHIVE_PREFIX)))
        rows = self._archived_rows([archive.INSTANT_TIME, archive.COMPLETION_TIME, archive.ACTION])
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
        version = self._access.run_storage_ops([StorageOp.get(f"{directory}/{archive.VERSION_FILE}")])[0]
        if not version.ok:
            return ()
        manifest_path = f"{directory}/{archive.manifest_name(version.text, where=where)}"
        manifest = self._access.run_storage_ops([StorageOp.get(manifest_path)])[0]
        if not manifest.ok:
            raise InvalidInstantError(f"{where}: the archived timeline's {manifest_path} is missing")
        return tuple(f"{directory}/{name}" for name in archive.manifest_files(manifest.text, where=where))

    def _archived_rows(self, columns: Sequence[str],
                       instants: Sequence[str] | None = None) -> list[tuple[Any, ...]]:
        """``columns`` of the archive's completed instants (``instants`` only, where given): the LSM's Parquet files,
        or version 6's log files decoded."""
        if not self._archive.files:
            return []
        return self._access.archived_rows(self._archive.files, lsm=self.properties.hudi_1_layout, columns=columns,
                                          instants=instants)

    def archived_commit_metadata(self, instants: Sequence[Instant]) -> dict[Instant, CommitMetadata]:
        """Decoded metadata of archived write instants (after :meth:`archived_timeline`), each read once."""
        wanted = {f"archived:{i.requested_time}": i for i in instants if i.writes_data}
        missing = sorted(i.requested_time for key, i in wanted.items() if key not in self._metadata_cache)
        if missing and self._archive.files:
            for time, data in self._archived_rows([archive.INSTANT_TIME, archive.METADATA], missing):
                key = f"archived:{time}"
                if data is not None and key in wanted:
                    self._metadata_cache[key] = decode_commit_metadata(bytes(data), name=f"archived instant {time}")
        return {i: self._metadata_cache[key] for key, i in wanted.items() if key in self._metadata_cache}

    def cleaned_bound(self, timeline: Timeline) -> CleanedBound | None:
        """The cleaner's bound on ``timeline`` (see :mod:`~hudi_connect.core.format.history_bounds`): the latest
        clean's metadata (or plan, while it runs), read once per view."""
        clean = latest_clean(timeline)
        if clean is None:
            return None
        # a clean under way: its plan (the requested file) says what it retains
        path = self.instant_file(clean) if clean.is_completed else \
            f"{self.timeline_directory}/{clean.requested_time}.{clean.action.value}.requested"
        if path not in self._state.cleans:
            content = self._access.read_files([path])
            self._state.cleans[path] = earliest_commit_to_retain(next(iter(content.values()), b""))
        return cleaned_bound(timeline, self._state.cleans[path])

    def reverse_commits(self) -> dict[Instant, str]:
        """RFC-70 checkpoint instants (completed ``reversecommit`` files) and their paths."""
        found = [p for p in self._instant_files("*.reversecommit") if p.state is InstantState.COMPLETED]
        return {Instant(p.requested_time, p.action, p.state, p.completion_time): f"{self.timeline_directory}/{p.name}"
                for p in found}

    def _instant_files(self, pattern: str = "*") -> list[InstantFile]:
        # listed on an executor: a requested instant's file is empty, and Spark's sources skip empty files
        return _instant_files(list_directory(self._access, self.timeline_directory), pattern)

    def instant_file(self, instant: Instant) -> str:
        """The path of a completed instant's file: ``<requested>_<completion>.<action>`` in layout 2, else
        ``<requested>.<action>``."""
        action = instant.action.value
        if self.properties.timeline_dir:
            return f"{self.timeline_directory}/{instant.requested_time}_{instant.completion_time}.{action}"
        return f"{self.timeline_directory}/{instant.requested_time}.{action}"

    def commit_metadata(self, instants: Sequence[Instant]) -> dict[Instant, CommitMetadata]:
        """Decoded metadata of completed write instants, each read once in the view's life."""
        wanted = {self.instant_file(i): i for i in instants if i.is_completed and i.writes_data}
        missing = [path for path in wanted if path not in self._metadata_cache]
        if missing:
            contents = self._access.read_files(missing)
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
        names = [f.name for f in self._access.list_files(f"{directory}/*.schemacommit")]
        completed = (i.requested_time for i in timeline if i.is_completed)
        name = latest_history_file(names, completed)
        content = read_file(self._access, f"{directory}/{name}") if name else None
        return schema_history(content.decode("utf-8")) if content else []

    def find_latest_completed_action_at(self, time: str) -> Instant | None:
        """The last completed instant requested at or before ``time`` (RFC-64)."""
        return self.timeline().latest_completed_at(time)


LISTING_ATTEMPTS = 3  # listings of the timeline and files, each beside a new clean, before refusing


def _timeline_key(names: Iterable[str]) -> frozenset[str]:
    """What identifies a timeline's state: its instant file names, without reverse-stream checkpoints."""
    parsed = (parse_instant_file_name(name) for name in names if name[:1].isdigit())
    return frozenset(p.name for p in parsed if p is not None and p.action is not Action.REVERSE_COMMIT)


def _instant_files(files: list[RemoteFile], pattern: str = "*") -> list[InstantFile]:
    parsed = (parse_instant_file_name(f.name, f.modification_time_ms) for f in files
              if fnmatch.fnmatchcase(f.name, f"[0-9]{pattern}"))
    return [p for p in parsed if p is not None]
