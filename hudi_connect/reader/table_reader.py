"""Reading Hudi tables on any Spark Connect server, without Hudi's jars.

The timeline comes from an executor task, the file listing and the merge of
log files through ``mapInArrow`` on the executors (our code shipped as a
session artifact), and base files without log files through Spark's own
vectorised Parquet reader. Reads follow Hudi's semantics: snapshot, time
travel (as of a requested time) and incremental latest state (commits whose
completion time lies in (begin, end] on tables of version 8 and later).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial, reduce

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from hudi_connect.client.artifacts import ship_package
from hudi_connect.client.instants import InstantLike, resolve_instant, resolve_optional
from hudi_connect.client.remote_files import PlanningAccess
from hudi_connect.client.server_loss import ensure_bounded, over_connect
from hudi_connect.client.task_rows import map_task_rows, spark_schema, task_rows
from hudi_connect.client.timeline_view import TimelineView
from hudi_connect.core.errors import HistoryUnavailableError, InvalidInstantError, UnsupportedOperationError
from hudi_connect.core.executor.contracts import LISTING, SLICES, SliceRow
from hudi_connect.core.executor.file_access import LocalFileAccess
from hudi_connect.core.executor.slices import BASE_URI_SCHEMA, SliceReadConfig, list_table_files, read_file_slices
from hudi_connect.core.executor.storage import join
from hudi_connect.core.format.bootstrap import Bootstrap
from hudi_connect.core.format.commit_metadata import CommitMetadata, latest_schema_json
from hudi_connect.core.format.expressions import Expression
from hudi_connect.core.format.fs_view import BlockValidity, FileSlice, StoredFile, recorded_rows, valid_block_instants
from hudi_connect.core.format.history_bounds import first_pending_write
from hudi_connect.core.format.internal_schema import (
    ColumnRenames,
    renames_needed,
    uses_schema_on_read,
    version_at,
    versions_with_renames,
)
from hudi_connect.core.format.schema_evolution import (
    TypeChange,
    check_promotable,
    schema_history_changes,
)
from hudi_connect.core.format.spec_models import TableDefinition
from hudi_connect.core.format.table_config import TableProperties
from hudi_connect.core.format.table_features import (
    KeyEncoding,
    MergeMode,
    check_column_types,
    check_timeline_readable,
    record_key_encoding,
    string_partition_columns,
)
from hudi_connect.core.format.table_schema import COMMIT_TIME_COLUMN, IS_DELETED_COLUMN, META_COLUMNS, record_schema
from hudi_connect.core.format.timeline import Instant, Timeline, as_of_time, range_time
from hudi_connect.table_spec.file_index import FileIndex, TableState
from hudi_connect.table_spec.user_predicates import Translation, UserPredicates, conjuncts, describe, translate_all

log = logging.getLogger(__name__)
MAX_PLANNED_SLICES = 20_000
"""The most file slices a read plans on the client. A read of more makes its slices on the executors
(:meth:`~hudi_connect.table_spec.FileIndex.slice_rows`), so that the client holds no more than this many at any size
of table, and the plan names no file."""


@dataclass(frozen=True)
class ReadPlan:
    """What a read will touch: for tests, :meth:`explain` and pruning counts.

    ``slices`` is None for a read of more than :data:`MAX_PLANNED_SLICES` slices: ``slice_rows`` then makes
    them on the executors, and they are not counted on the client. ``predicates`` are the read's predicates as
    our tree (what of them translates, :mod:`~hudi_connect.table_spec.user_predicates`); ``translations`` the
    predicates as their users wrote them, whose columns Spark filters the rows with; ``untranslated`` the parts
    of those that only filter rows."""

    slices: tuple[FileSlice, ...] | None
    record_schema: pa.Schema  # what the executors merge into
    schema: StructType  # the same, as Spark sees it
    commit_times: frozenset[str] | None = None
    predicates: tuple[Expression, ...] = ()  # what may prune (but those on string_columns)
    type_changes: tuple[TypeChange, ...] = ()  # older files hold some columns in another type
    column_renames: ColumnRenames = ()  # schema on read: older files name some columns differently
    slice_rows: DataFrame | None = None  # the slices, made on the executors (when ``slices`` is None)
    # partition columns Hudi's Spark reader returns as strings of the stored values (a timestamp key generator's)
    string_columns: tuple[str, ...] = ()
    # the rows the read returns, as the commits that wrote its base files recorded them (where asked and known)
    recorded_rows: int | None = None
    translations: tuple[Translation, ...] = field(default=(), compare=False)  # Spark's columns: no equality
    untranslated: tuple[str, ...] = ()
    # the commit times (requested) a version 6 table's incremental fallback keeps: (begin, end], no end if None
    commit_range: tuple[str, str | None] | None = None

    @property
    def pruning(self) -> tuple[Expression, ...]:
        """The predicates' parts that prune partitions and files: not those on a partition column read as a
        string (compared as strings, an order the stored values' statistics do not keep)."""
        strings = set(self.string_columns)
        return tuple(c for p in self.predicates for c in conjuncts(p) if not c.columns() & strings)

    def explain(self) -> str:
        """What prunes the read's partitions and files and what only filters its rows, one line each, then the
        file slices it reads::

            prunes partitions and files: city = 'paris'
            filters rows only: like(name, A%) (not expressible as a pruning predicate)
            reads 3 file slices (3 base files, 2 log files)
        """
        strings = set(self.string_columns)
        lines = [f"prunes partitions and files: {describe(p)}" for p in self.pruning]
        lines += [f"filters rows only: {describe(c)} (on a partition column read as a string)"
                  for p in self.predicates for c in conjuncts(p) if c.columns() & strings]
        lines += [f"filters rows only: {text} (not expressible as a pruning predicate)" for text in self.untranslated]
        if not lines:
            lines.append("no predicate: every partition and file is read")
        if self.slices is None:
            lines.append(f"reads more than {MAX_PLANNED_SLICES} file slices, made on the executors")
        else:
            lines.append(f"reads {len(self.slices)} file slices ({self.base_files} base files, "
                         f"{self.log_files} log files)")
        return "\n".join(lines)

    @property
    def base_files(self) -> int:
        """How many of the plan's file slices have a base file."""
        return sum(1 for s in self._counted() if s.base_file)

    @property
    def log_files(self) -> int:
        """How many log files the plan's file slices merge, in all."""
        return sum(len(s.log_files) for s in self._counted())

    def _counted(self) -> tuple[FileSlice, ...]:
        if self.slices is None:
            raise UnsupportedOperationError(
                f"the read has more than {MAX_PLANNED_SLICES} file slices: they are made on the executors, "
                "and not counted on the client")
        return self.slices


@dataclass(frozen=True)
class PlannedRead:
    """A read's plan with the timeline it was planned on and the instant it reads as of (None: the latest)."""

    plan: ReadPlan
    timeline: Timeline
    as_of: str | None


class TableReader:
    """Snapshot, time-travel and incremental reads of one table, as plain Spark plans.

    Hudi's query types without Hudi's jars: snapshot, read-optimized, time travel (``as.of.instant``) and
    incremental (``hoodie.datasource.query.type``), each answered as Hudi 1.2's Spark datasource answers it,
    on any Spark Connect server. Files are listed through RFC-64's :class:`~hudi_connect.table_spec.FileIndex`.

    Example::

        reader = TableReader(spark, "s3a://lake/trips")
        reader.snapshot([col("city") == "paris"]).show()
        reader.snapshot("city = 'paris' AND amount BETWEEN 10 AND 20").show()  # or F.col("city") == "paris"
        reader.as_of("20260307162434124").count()
        reader.incremental("earliest").show()
    """

    @over_connect("opening a table to read")
    def __init__(self, spark: PlanningAccess, base_path: str, view: TimelineView | None = None) -> None:
        """``spark``: the session to read through (or a planner's own process, the ``format("hudi")`` data
        source's, which only plans: :meth:`planned`); ``view``: the table's timeline as its caller reads it already
        (else opened here)."""
        self._spark = spark if isinstance(spark, LocalFileAccess) else ensure_bounded(spark)
        self._base_path = base_path.rstrip("/")
        self.view = view or TimelineView.open(spark, self._base_path)
        self.index = FileIndex(spark, self._base_path, self.view)  # refuses what the readers do not implement

    @property
    def key_encoding(self) -> KeyEncoding:
        """How record keys are spelled where they are built from data (tables without meta fields)."""
        encoding, _ = record_key_encoding(self.view.properties)
        return encoding or KeyEncoding.VALUE_ONLY  # only MOR tables need it exactly; FileIndex refused those

    @property
    def properties(self) -> TableProperties:
        """The table's ``hoodie.properties``, as its timeline view last read them."""
        return self.view.properties

    @over_connect("listing the table's files")
    def list_files(self) -> list[StoredFile]:
        """Every data file of the table, hidden log files included, listed by an executor."""
        ship_package(self._session())
        rows = (
            task_rows(self._session(), [(self._base_path,)], BASE_URI_SCHEMA)
            .mapInArrow(list_table_files, spark_schema(LISTING.schema))
            .collect()
        )
        return [StoredFile(r.partition, r.name, r.size) for r in rows]

    # --- plans -----------------------------------------------------------------------------

    def _plan(
        self,
        timeline: Timeline,
        metadata: dict[Instant, CommitMetadata],
        as_of: str | None,
        commits_in_range: list[Instant] | None = None,
        translations: Sequence[Translation] = (),
        files: tuple[StoredFile, ...] | None = None,
        *,
        read_optimized: bool = False,
    ) -> ReadPlan:
        props = self.view.properties
        commits = [i for i in timeline.write_commits() if as_of is None or i.requested_time <= as_of]
        # Time travel reads with the schema as of its instant, incremental reads with the latest (as Hudi does);
        # so does a time travel before the active timeline: Hudi looks for its schema there only
        schema_commits = commits if commits_in_range is None and commits else list(timeline.write_commits())
        schema_json = latest_schema_json(schema_commits, metadata)
        if schema_json is None:
            raise InvalidInstantError(f"{self._base_path} has no commit with a schema at {as_of or 'its latest'}")
        where = f"the table at {self._base_path}"
        check_column_types(schema_json, where=where)
        arrow_schema = record_schema(schema_json, meta_fields=props.populate_meta_fields)
        renames = self._column_renames(timeline, metadata, schema_commits)
        changes: list[TypeChange] = []
        if not renames:  # with renames, names do not identify columns: workers promote each file's own types
            written = [metadata[c] for c in schema_commits if c in metadata]
            changes = schema_history_changes(props, written, arrow_schema)
            check_promotable(changes, where=where)
        state = TableState(timeline, metadata, TableDefinition.of(self._base_path, props, arrow_schema), files)
        touched, commit_times = None, None
        if commits_in_range is not None:
            touched = frozenset((s.partition_path, s.file_id) for i in commits_in_range
                                for s in metadata[i].write_stats)
            commit_times = frozenset(i.requested_time for i in commits_in_range)
        spark_schema = from_arrow_schema(arrow_schema, prefer_timestamp_ntz=True)  # local-timestamp: ntz
        strings = tuple(f for f in string_partition_columns(props) if f in arrow_schema.names)
        plan = ReadPlan(None, arrow_schema, spark_schema, commit_times,
                        tuple(t.pruning for t in translations if t.pruning is not None), tuple(changes), renames,
                        string_columns=strings, translations=tuple(translations),
                        untranslated=tuple(text for t in translations for text in t.untranslated))
        # a predicate on a column read as a string compares strings, an order its stored values' statistics
        # do not keep: such predicates filter rows only
        predicates = list(plan.pruning)
        slices = self._client_slices(state, as_of, predicates)
        if slices is None:
            if isinstance(self._spark, LocalFileAccess):
                raise UnsupportedOperationError(
                    f"a read of {self._base_path} takes more than {MAX_PLANNED_SLICES} file slices, more than a read "
                    "planned without a Spark session (the format('hudi') data source) holds: read it through "
                    "hudi_connect's DataFrame reads")
            tasks = int(self._spark.conf.get("spark.sql.shuffle.partitions") or "200")
            rows = self.index.slice_rows(state, predicates, as_of, tasks=tasks, touched=touched,
                                         base_only=read_optimized)
            return dataclasses.replace(plan, slice_rows=rows)
        if touched is not None:
            slices = [s for s in slices if (s.partition, s.file_id) in touched]
        if read_optimized:  # base files only: what compaction has merged so far
            slices = [FileSlice(s.partition, s.file_id, s.base_file, ()) for s in slices if s.base_file]
        return dataclasses.replace(plan, slices=tuple(slices))

    def _client_slices(self, state: TableState, as_of: str | None,
                       predicates: Sequence[Expression]) -> list[FileSlice] | None:
        """The read's file slices, listed to the client; None once there are more than
        :data:`MAX_PLANNED_SLICES` (the listing's stream is dropped there, and the executors make them)."""
        slices: list[FileSlice] = []
        for snapshot in self.index.list_files_at(as_of, predicates, state=state):
            slices.extend(snapshot.file_slices)
            if len(slices) > MAX_PLANNED_SLICES:
                return None
        return slices

    def _column_renames(self, timeline: Timeline, metadata: dict[Instant, CommitMetadata],
                        schema_commits: list[Instant]) -> ColumnRenames:
        """Schema on read: each schema version's columns under the read's names, if any differ."""
        if not uses_schema_on_read(m.extra_metadata for m in metadata.values()):
            return ()
        versions = self.view.schema_history(timeline)
        reader = version_at(versions, schema_commits[-1].requested_time) if versions and schema_commits else None
        if reader is None or not renames_needed(versions, reader):
            return ()
        return versions_with_renames(versions, reader, where=f"the table at {self._base_path}")

    def read_config(self, planned: PlannedRead) -> SliceReadConfig:
        """How the workers read the planned read's file slices."""
        plan = planned.plan
        return self.slice_read_config(plan.record_schema, valid_block_instants(planned.timeline, planned.as_of),
                                      commit_times=plan.commit_times, column_renames=plan.column_renames,
                                      planned_at=planned.timeline.planned_at())

    def _execute(self, planned: PlannedRead) -> DataFrame:
        plan = planned.plan
        spark = self._session()
        if plan.slices is None:
            if plan.slice_rows is None:
                raise AssertionError("a plan without slices has the executors make them")
            ship_package(spark)
            config = self.read_config(planned)
            read = map_task_rows(plan.slice_rows, SLICES.schema, partial(read_file_slices, config), plan.schema)
            return self._kept_rows(read, plan)
        parts: list[DataFrame] = []
        # Spark's own Parquet scan reads base-only slices; the executors read the rest (logs to merge, Lance,
        # every slice of a bootstrapped table: skeletons to join with their sources, and partition columns read
        # from the path as Hudi does there; every slice once a column changed type: Spark's scan would not
        # promote old values as Hudi does)
        bootstrapped = Bootstrap.of(self._base_path, self.view.properties) is not None
        by_spark = [bool(s.base_file and not s.log_files and s.base_file.name.endswith(".parquet")
                         and not bootstrapped and not plan.type_changes and not plan.column_renames)
                    for s in plan.slices]
        plain = [s for s, spark in zip(plan.slices, by_spark, strict=True) if spark]
        merged = [s for s, spark in zip(plan.slices, by_spark, strict=True) if not spark]
        if plain:
            paths = [join(self._base_path, s.partition, s.base_file.name) for s in plain if s.base_file]
            # a file the cleaner removed after planning fails the read, whatever the session's
            # spark.sql.files.ignoreMissingFiles says: skipped, it would be a silently shorter answer
            parts.append(spark.read.schema(plan.schema).option("ignoreMissingFiles", "false").parquet(*paths))
        if merged:
            ship_package(spark)
            config = self.read_config(planned)
            rows = [SliceRow(s.partition, s.file_id, s.base_file.name if s.base_file else None,
                             [f.name for f in s.log_files]) for s in merged]
            # sliced as Spark slices a local relation, one task per core: a task per slice cost a shuffle
            # and tens of milliseconds each (a third of a 100k-row read's time)
            slices_df = task_rows(spark, rows, SLICES.schema)
            parts.append(map_task_rows(slices_df, SLICES.schema, partial(read_file_slices, config), plan.schema))
        if not parts:
            return self._kept_rows(spark.createDataFrame([], plan.schema), plan)
        return self._kept_rows(reduce(lambda a, b: a.unionByName(b), parts), plan)

    @staticmethod
    def _kept_rows(df: DataFrame, plan: ReadPlan) -> DataFrame:
        """The rows of the read's slices the read returns: not deleted, of its commits, matching its predicates."""
        if plan.string_columns:
            df = df.withColumns({c: F.col(c).cast("string") for c in plan.string_columns})
        if IS_DELETED_COLUMN in plan.schema.fieldNames():
            df = df.where(~F.coalesce(F.col(IS_DELETED_COLUMN), F.lit(False)))
        if plan.commit_times is not None and COMMIT_TIME_COLUMN in plan.schema.fieldNames():
            df = df.where(F.col(COMMIT_TIME_COLUMN).isin(sorted(plan.commit_times)))
        if plan.commit_range is not None:
            begin, end = plan.commit_range
            df = df.where(F.col(COMMIT_TIME_COLUMN) > begin)
            df = df.where(F.col(COMMIT_TIME_COLUMN) <= end) if end is not None else df
        if plan.translations:  # the predicates as their users wrote them
            df = df.where(reduce(lambda a, b: a & b, (t.filter for t in plan.translations)))
        return df

    def slice_read_config(self, output_schema: pa.Schema, valid_instants: BlockValidity, *,
                          commit_times: frozenset[str] | None = None,
                          column_renames: ColumnRenames = (), planned_at: str | None = None) -> SliceReadConfig:
        """How the workers read and merge this table's file slices (keys, ordering, merge mode, partial updates),
        for reads and change queries alike: the one place the table's properties become worker settings."""
        props = self.view.properties
        return SliceReadConfig(
            base_uri=self._base_path,
            output_schema=output_schema,
            record_key_fields=props.record_key_fields,
            ordering_fields=props.ordering_fields,
            event_time_ordering=self.index.merge_mode is MergeMode.EVENT_TIME_ORDERING,
            field_prefixed_keys=self.key_encoding is KeyEncoding.FIELD_PREFIXED,
            partial_updates=self.index.partial_updates,
            valid_instants=valid_instants,
            commit_times=commit_times,
            column_renames=column_renames,
            planned_at=planned_at,
            bootstrap=Bootstrap.of(self._base_path, props),
        )

    def _session(self) -> SparkSession:
        if isinstance(self._spark, LocalFileAccess):
            raise AssertionError("a reader without a Spark session only plans")
        return self._spark

    def _read(self, as_of: str | None, commits_in_range: list[Instant] | None = None,
              predicates: UserPredicates = (), *, read_optimized: bool = False,
              time_travel: bool = False, following: bool = False,
              listed: tuple[Timeline, tuple[StoredFile, ...] | None] | None = None,
              count_rows: bool = False) -> tuple[DataFrame, ReadPlan]:
        planned = self._planned(as_of, commits_in_range, predicates, read_optimized=read_optimized,
                                time_travel=time_travel, following=following, listed=listed, count_rows=count_rows)
        return self._execute(planned), planned.plan

    def _planned(self, as_of: str | None, commits_in_range: list[Instant] | None = None,
                 predicates: UserPredicates = (), *, read_optimized: bool = False,
                 time_travel: bool = False, following: bool = False,
                 listed: tuple[Timeline, tuple[StoredFile, ...] | None] | None = None,
                 count_rows: bool = False) -> PlannedRead:
        """A read planned on one timeline (``listed``: the timeline and files its caller's checks used;
        ``count_rows``: the plan's ``recorded_rows`` where the write stats tell them)."""
        timeline, files = listed if listed is not None else self.index.timeline_and_files()
        metadata = self.view.commit_metadata(list(timeline.write_commits()))
        check_timeline_readable(timeline, metadata, where=f"the table at {self._base_path}", schema_on_read=True)
        if time_travel and as_of is not None:
            self._check_time_travel(timeline, as_of, following=following)
        translations = translate_all(predicates)
        plan = self._plan(timeline, metadata, as_of, commits_in_range, translations, files,
                          read_optimized=read_optimized)
        if count_rows and plan.slices is not None and not translations and commits_in_range is None \
                and IS_DELETED_COLUMN not in plan.schema.fieldNames():  # a base file may hold rows marked deleted
            plan = dataclasses.replace(plan, recorded_rows=recorded_rows(plan.slices, metadata))
        kind = ("incremental read" if commits_in_range is not None else "read-optimized read" if read_optimized
                else f"read as of {as_of}" if as_of is not None else "snapshot read")
        log.info("%s of %s: %s", kind, self._base_path, plan.explain().replace("\n", "; "))
        return PlannedRead(plan, timeline, as_of)

    def _check_time_travel(self, timeline: Timeline, as_of: str, *, following: bool) -> None:
        """Hudi's checks of a time travel (``validateTimestampAsOf``), refusing what it refuses, and a time
        before the table's first commit (archived or not). ``following``: for a
        reader following the timeline by completion time, which reads a write pending before ``as_of`` when
        it completes, the pending-write check does not apply."""
        where = f"the table at {self._base_path}"
        pending = first_pending_write(timeline)
        if pending is not None and as_of >= pending.requested_time and not following:
            raise InvalidInstantError(
                f"cannot read {where} as of {as_of}: the {pending.action.value} requested at "
                f"{pending.requested_time} has not completed, and a time travel must be earlier than the first "
                "incomplete commit (Hudi: HoodieTimeTravelException)")
        bound = self.view.cleaned_bound(timeline)
        if bound is not None and as_of < bound.instant:
            raise HistoryUnavailableError(
                f"cannot read {where} as of {as_of}: {bound.reason}, so files of earlier instants may have been "
                "cleaned", earliest_answerable=bound.instant)
        first = self.view.first_write_commit(timeline, reaching=as_of)
        if first is not None and as_of < first.requested_time:
            raise InvalidInstantError(f"cannot read {where} as of {as_of}: its first commit is {first.requested_time}")

    # --- public reads -----------------------------------------------------------------------

    @over_connect("planning a snapshot read")
    def snapshot(self, predicates: UserPredicates = ()) -> DataFrame:
        """The latest state; ``predicates`` prune partitions and files, then filter rows.

        A predicate is our tree (``col("city") == "paris"``), a Spark Connect ``Column``
        (``F.col("city") == "paris"``) or a SQL string (``"city = 'paris'"``); one, or a list that must all hold.
        What of a ``Column`` or a SQL string our tree cannot express (a UDF, LIKE, a cast) filters rows only
        (:meth:`plan` and :meth:`ReadPlan.explain` say which parts prune)."""
        return self._execute(self.planned_snapshot(predicates))

    def planned_snapshot(self, predicates: UserPredicates = ()) -> PlannedRead:
        """:meth:`snapshot`'s plan."""
        return self._planned(None, predicates=predicates)

    @over_connect("planning a read-optimized read")
    def read_optimized(self, predicates: UserPredicates = ()) -> DataFrame:
        """Base files only (on MOR tables, what the last compactions wrote)."""
        return self._execute(self.planned_read_optimized(predicates))

    def planned_read_optimized(self, predicates: UserPredicates = ()) -> PlannedRead:
        """:meth:`read_optimized`'s plan."""
        return self._planned(None, predicates=predicates, read_optimized=True)

    @over_connect("planning a time-travel read")
    def as_of(self, instant: InstantLike, predicates: UserPredicates = ()) -> DataFrame:
        """The table as of a completed instant (by requested time), where Hudi's time travel answers: before the
        first pending write, and not older than the cleaner retains (:class:`HistoryUnavailableError` otherwise);
        archived instants whose files remain are read with the latest schema, as Hudi reads them. ``instant``:
        an ``Instant``, instant-time text or a ``datetime`` (:mod:`hudi_connect.client.instants`), compared with
        requested times as Hudi's ``as.of.instant`` is."""
        return self._execute(self.planned_as_of(instant, predicates))

    def planned_as_of(self, instant: InstantLike, predicates: UserPredicates = ()) -> PlannedRead:
        """:meth:`as_of`'s plan."""
        requested = as_of_time(resolve_instant(self._spark, self.view.properties, instant))
        return self._planned(requested, predicates=predicates, time_travel=True)

    @over_connect("planning a read")
    def as_of_completed(self, instant: Instant) -> tuple[DataFrame, ReadPlan]:
        """The table as of a commit its caller saw completed, for a reader following the timeline in
        completion order (the reverse streamer): a write still pending before it is read once it completes,
        so only the cleaner's bound is checked, not the first pending write. With its plan: the read's schema
        (asking the server would cost a round trip and the plan's analysis) and, where the write stats tell
        it, how many rows it returns (counting them would cost a job)."""
        return self._read(instant.requested_time, time_travel=True, following=True, count_rows=True)

    @over_connect("planning an incremental read")
    def incremental(self, begin: InstantLike, end: InstantLike | None = None,
                    predicates: UserPredicates = (), *, fallback_to_full_scan: bool = True) -> DataFrame:
        """Latest state (as of ``end``) of the records written by commits in (begin, end].

        A range reaching commits Hudi archived, or commits older than the cleaner retains (their files may be
        gone), is answered as Hudi 1.2 answers it with ``hoodie.datasource.read.incr.fallback.fulltablescan.enable``
        (its default on tables of version 8 and later): the latest snapshot's records whose commit is in the
        range. ``fallback_to_full_scan=False`` refuses such a range instead (:class:`HistoryUnavailableError`,
        naming the earliest begin read from the commits themselves)."""
        return self._execute(self.planned_incremental(begin, end, predicates,
                                                      fallback_to_full_scan=fallback_to_full_scan))

    def planned_incremental(self, begin: InstantLike, end: InstantLike | None = None,
                            predicates: UserPredicates = (), *, fallback_to_full_scan: bool = True) -> PlannedRead:
        """:meth:`incremental`'s plan."""
        props = self.view.properties
        begin = resolve_instant(self._spark, props, begin)
        end = resolve_optional(self._spark, props, end)
        if not props.populate_meta_fields:
            raise UnsupportedOperationError(
                f"{self._base_path} was written without meta fields (hoodie.populate.meta.fields=false), "
                "so its records carry no commit time and cannot be read incrementally (Hudi refuses too)"
            )
        # the range, its checks against the cleaner and the plan all on one timeline: a clean completing between
        # two listings would drop the range's file groups from a plan the checks had passed
        listed = self.index.timeline_and_files()
        timeline = listed[0]
        by_completion = props.ranges_by_completion
        commits = timeline.commits_between(begin, end, by_completion=by_completion)
        beyond = self._beyond_history(timeline, commits, begin, end, by_completion)
        if beyond is not None:
            reason, earliest, archived = beyond
            if not fallback_to_full_scan:
                raise HistoryUnavailableError(
                    f"the incremental range of {self._base_path} from {range_time(begin, by_completion=by_completion)}"
                    f" {reason}, and fallback_to_full_scan is off", earliest_answerable=earliest)
            snapshot = self._planned(None, predicates=predicates, listed=listed)
            if not by_completion:  # version 6: Hudi's fallback keeps a range of requested times
                window = (range_time(begin, by_completion=False), range_time(end, by_completion=False) if end else None)
                return dataclasses.replace(snapshot, plan=dataclasses.replace(snapshot.plan, commit_range=window))
            times = frozenset(c.requested_time for c in (*archived, *commits))
            return dataclasses.replace(snapshot, plan=dataclasses.replace(snapshot.plan, commit_times=times))
        if not commits:
            empty = self._planned(None, listed=listed)
            return dataclasses.replace(empty, plan=dataclasses.replace(empty.plan, slices=(), slice_rows=None))
        as_of = max(i.requested_time for i in commits)
        if by_completion:
            # the files as the range's end left them: a write requested before its last commit but completed
            # after it (beside it) has not rewritten them yet, as Hudi reads the files the range's commits wrote
            ended = max(c.completion_time or "" for c in commits)
            listed = (timeline.as_completed_at(ended), listed[1])
        return self._planned(as_of, commits, predicates, listed=listed)

    def _beyond_history(self, timeline: Timeline, commits: list[Instant], begin: Instant | str,
                        end: Instant | str | None, by_completion: bool) -> tuple[str, str | None, list[Instant]] | None:
        """Why an incremental range cannot be read from its commits' own files (None if it can): what it
        reaches, the earliest begin that can, and the archived commits in it."""
        first = timeline.first()
        archived: list[Instant] = []
        if first is not None and timeline.begins_before(begin, by_completion=by_completion):
            history = self.view.archived_timeline(timeline)
            archived = history.commits_between(begin, end)
            last = history.last_write_commit()
            if archived and last is not None:
                last_time = range_time(last, by_completion=by_completion)
                return f"reaches commits Hudi archived (the last at {last_time})", last_time, archived
        bound = self.view.cleaned_bound(timeline)
        missing = self._missing_file(commits) if bound is not None and bound.may_have_cleaned(commits) else None
        if bound is None or missing is None:
            return None
        retained = [c for c in timeline.write_commits() if c.requested_time < bound.instant]
        earliest = range_time(retained[-1], by_completion=by_completion) if retained else None
        gone = f"{missing} is gone" if missing else "the table has too many files to check"
        return f"reaches commits whose files the cleaner may have taken ({gone}; {bound.reason})", earliest, archived

    def _missing_file(self, commits: list[Instant]) -> str | None:
        """A file one of ``commits`` wrote that storage no longer holds (as Hudi's incremental query checks);
        '' if that cannot be told (more files than a listing returns whole); None if all are there."""
        _, files = self.index.timeline_and_files(list_storage=True)
        if files is None:
            return ""
        present = {f"{f.partition}/{f.name}" if f.partition else f.name for f in files}
        for meta in self.view.commit_metadata(commits).values():
            for stat in meta.write_stats:
                if stat.path and stat.path not in present:
                    return stat.path
        return None

    @over_connect("planning a read")
    def plan(self, as_of: str | None = None, predicates: UserPredicates = ()) -> ReadPlan:
        """What a snapshot read (or a read as of the requested time ``as_of``) would touch:
        its file slices after pruning by ``predicates``, and its schema (no record is read);
        ``plan(predicates=...).explain()`` says which predicates prune and which only filter rows."""
        return self._read(as_of, predicates=predicates)[1]


__all__ = ["META_COLUMNS", "PlannedRead", "ReadPlan", "TableReader"]
