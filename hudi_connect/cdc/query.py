"""Change queries: what changed in a table between two instants, as a DataFrame.

    changes = ChangeQuery(spark, "s3a://lake/trips").changes(begin, end)          # Hudi's CDC schema
    typed = ChangeQuery(spark, path).changes(begin, end, format="typed")         # structs + commit times
    print(ChangeQuery(spark, path).explain(begin, end))                          # case per file group

Runs on any Spark Connect server and for any table, CDC-enabled or not. The
range follows Hudi 1.x: commits whose completion time lies in (begin, end]
(requested times on version-6 tables); 'earliest' starts at the beginning.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial, reduce
from typing import Literal

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from hudi_connect.cdc.cases import CdcInferenceCase, CdcSplit, infer_splits
from hudi_connect.cdc.jvm_decoding import (
    AvroDecoding,
    DecodingChoice,
    decoded_events,
    has_spark_avro,
    too_small_for_jvm,
    unsupported_writer_schema,
)
from hudi_connect.cdc.spark_changes import DeduplicationMode, check_options, spark_change_rows
from hudi_connect.client.artifacts import ship_package
from hudi_connect.client.instants import InstantLike, resolve_instant, resolve_optional, timeline_zone_id
from hudi_connect.client.result_rows import result_rows
from hudi_connect.client.server_loss import ensure_bounded, over_connect
from hudi_connect.client.task_rows import map_task_rows, task_rows
from hudi_connect.client.timeline_view import TimelineView
from hudi_connect.core.errors import (
    HistoryUnavailableError,
    HudiConnectError,
    InvalidInstantError,
    ServerMisconfiguredError,
    UnsupportedOperationError,
    UnsupportedTableFeatureError,
)
from hudi_connect.core.executor.cdc_as_is import (
    RECORD_BYTES_SCHEMA,
    WRITER_SCHEMAS,
    cdc_record_bytes,
    cdc_writer_schemas,
)
from hudi_connect.core.executor.cdc_events import change_events, event_schema
from hudi_connect.core.executor.contracts import CDC_SPLITS, CdcSplitRow
from hudi_connect.core.executor.slices import SliceReadConfig
from hudi_connect.core.format.commit_metadata import CommitMetadata, latest_schema_json
from hudi_connect.core.format.expressions import Expression
from hudi_connect.core.format.fs_view import (
    BlockValidity,
    FileSlice,
    StoredFile,
    file_slices_at,
    parse_data_file,
    replaced_file_groups,
    valid_block_instants,
)
from hudi_connect.core.format.schema_evolution import check_promotable, schema_history_changes
from hudi_connect.core.format.table_config import CdcLoggingMode, TableProperties
from hudi_connect.core.format.table_features import check_column_types, check_timeline_readable
from hudi_connect.core.format.table_schema import META_COLUMNS, record_schema
from hudi_connect.core.format.timeline import Instant, Timeline, range_time
from hudi_connect.reader import TableReader
from hudi_connect.table_spec.file_index import conjunction
from hudi_connect.table_spec.spark_columns import all_of
from hudi_connect.table_spec.user_predicates import UserPredicates, as_sequence, translate_all

ChangeFormat = Literal["hudi", "typed", "debezium", "spark"]
# Hudi writes every field of an image, nulls included
# The canonical rendering of images (README, "What hudi-connect reads"): nulls kept, decimals exact, binary
# base64, timestamps ISO 8601 to the microsecond (Spark's default would cut them to milliseconds), in UTC
JSON_OPTIONS = {
    "ignoreNullFields": "false",
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
    "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
    "timeZone": "UTC",
}



@dataclass(frozen=True)
class _Plan:
    """A change query's splits as worker rows, split by who decodes them."""

    python_rows: list[CdcSplitRow]  # for change_events
    record_rows: list[CdcSplitRow]  # those whose .cdc records the JVM decodes
    config: SliceReadConfig
    spark_schema: StructType
    events_schema: StructType
    choice: DecodingChoice | None  # None: no split reads DATA_BEFORE_AFTER .cdc records


def delete_first() -> Column:
    """Within one commit, a key's delete before its insert: a replace commit that moves a key (insert_overwrite)
    deletes it from the replaced file group and inserts it into a new one at the same instant, and whoever
    applies the two the other way round loses the key."""
    return F.when(F.col("op") == "d", 0).otherwise(1)

class ChangeQuery:
    """The change stream of one table, computed from its timeline and files.

    RFC-51's change data capture (Hudi's ``hoodie.datasource.query.incremental.format=cdc``) without Hudi's
    jars: each file group of each commit in the range is one split of an RFC-51 inference case
    (:class:`~hudi_connect.cdc.cases.CdcInferenceCase`), read from ``.cdc`` log files where the table logs
    them and from file slices before and after the commit where it does not, so tables without CDC logging
    answer too.

    Example::

        query = ChangeQuery(spark, "s3a://lake/trips")
        query.changes("earliest").show()                    # op, ts_ms, before, after (Hudi's CDC schema)
        print(query.explain("earliest"))
    """

    @over_connect("opening a table for a change query")
    def __init__(self, spark: SparkSession, base_path: str, *, avro_decoding: AvroDecoding = "auto",
                 view: TimelineView | None = None) -> None:
        """``avro_decoding`` decides who decodes DATA_BEFORE_AFTER ``.cdc`` records: ``auto`` the JVM where
        the server has spark-avro and the images allow it (:mod:`hudi_connect.cdc.jvm_decoding`), else
        Python; ``jvm`` or ``python`` insist (``jvm`` fails with the reason where it cannot). ``view``: the
        table's timeline as its caller reads it already (else opened here)."""
        if avro_decoding not in ("auto", "jvm", "python"):
            raise ValueError(f"avro_decoding must be 'auto', 'jvm' or 'python', not {avro_decoding!r}")
        self._spark = ensure_bounded(spark)
        self._avro_decoding = avro_decoding
        self._base_path = base_path.rstrip("/")
        self._reader = TableReader(spark, self._base_path, view)
        if self._reader.index.partial_updates:
            # Hudi's CDC reports an update for a late record that changed nothing; which events a partial
            # update produces is not settled enough to reproduce, so none are guessed.
            raise UnsupportedTableFeatureError(
                "change queries of tables with partial updates", "hoodie.table.partial.update.mode",
                self._reader.properties.raw.get("hoodie.table.partial.update.mode", ""),
                where=f"the table at {self._base_path}", detail="snapshot, time travel and incremental reads work")

    def _range(self, begin: InstantLike, end: InstantLike | None,
               timeline: Timeline | None = None) -> tuple[list[Instant], list[Instant]]:
        """The write commits (the last archived one first, where the range holds the active timeline's first
        commit and needs its predecessor) and those in (begin, end]. A range reaching archived commits is
        refused: their metadata is not read, and a change stream computed from part of the range is wrong."""
        properties = self._reader.properties
        begin = resolve_instant(self._spark, properties, begin)
        end = resolve_optional(self._spark, properties, end)
        view = self._reader.view
        timeline = timeline or view.timeline()
        by_completion = view.properties.ranges_by_completion
        in_range = timeline.commits_between(begin, end, by_completion=by_completion)
        commits = list(timeline.write_commits())
        if not commits or (commits[0] not in in_range
                           and not timeline.begins_before(begin, by_completion=by_completion)):
            return commits, in_range
        history = view.archived_timeline(timeline)
        last = history.last_write_commit()
        if last is None:
            return commits, in_range
        if history.commits_between(begin, end):
            last_time = range_time(last, by_completion=by_completion)
            raise HistoryUnavailableError(
                f"the change query of {self._base_path} from {range_time(begin, by_completion=by_completion)} "
                f"reaches commits Hudi archived (the last at {last_time}); changes are not computed from part "
                "of a range (Hudi's CDC query fails there too)", earliest_answerable=last_time)
        return [last, *commits], in_range

    @over_connect("planning a change query")
    def splits(self, begin: InstantLike, end: InstantLike | None = None) -> list[CdcSplit]:
        """The splits of the commits in (begin, end] that change data: one per file group per commit, each
        with its RFC-51 inference case (what :meth:`explain` shows)."""
        commits, in_range = self._range(begin, end)
        return infer_splits(commits, self._reader.view.commit_metadata(in_range), in_range)

    @over_connect("explaining a change query")
    def explain(self, begin: InstantLike, end: InstantLike | None = None) -> str:
        """One line per file group per commit: its inference case and the files it reads; then, where
        ``.cdc`` records hold whole events, who decodes them and why."""
        lines = [split.describe() for split in self.splits(begin, end)]
        if not lines:
            return "no commit in the range changes data"
        try:
            choice = self._plan(begin, end, ()).choice
        except HudiConnectError as error:
            lines.append(f"not planned: {error}")
        else:
            if choice is not None:
                lines.append(choice.describe())
        return "\n".join(lines)

    def _record_schema_json(self, commits: list[Instant]) -> str:
        metadata = self._reader.view.commit_metadata(commits)
        schema = latest_schema_json(commits, metadata)
        if schema is None:
            raise InvalidInstantError(f"{self._base_path} has no commit with a schema")
        return schema

    def _plan(self, begin: InstantLike, end: InstantLike | None, predicates: Sequence[Expression]) -> _Plan:
        view = self._reader.view
        props = view.properties
        # listed once: every step of the plan sees the same timeline; the table's files in the same task
        # where splits are likely to need file slices
        timeline, files = self._reader.index.timeline_and_files(list_storage=needs_file_slices(props))
        commits, in_range = self._range(begin, end, timeline)
        metadata = view.commit_metadata(list(timeline.write_commits()))
        check_timeline_readable(timeline, metadata, where=f"the table at {self._base_path}")
        schema_json = self._record_schema_json(list(timeline.write_commits()))
        check_column_types(schema_json, where=f"the table at {self._base_path}")
        arrow_schema = record_schema(schema_json, meta_fields=props.populate_meta_fields)
        check_promotable(schema_history_changes(props, list(metadata.values()), arrow_schema),
                         where=f"the table at {self._base_path}")
        keep = self._reader.index.partition_filter(arrow_schema, conjunction(predicates))
        splits = [s for s in infer_splits(commits, metadata, in_range) if keep.keeps(s.partition)]
        from pyspark.sql.pandas.types import from_arrow_schema

        spark_schema = from_arrow_schema(arrow_schema, prefer_timestamp_ntz=True)
        events_schema = from_arrow_schema(event_schema(arrow_schema), prefer_timestamp_ntz=True)
        # each side's completed writes: in its split's row
        config = self._reader.slice_read_config(arrow_schema, valid_block_instants(timeline),
                                                planned_at=timeline.planned_at())
        if not splits:
            return _Plan([], [], config, spark_schema, events_schema, None)
        slices_at: dict[str, dict[tuple[str, str], FileSlice]] = {}
        # the files of the splits' file groups, listed (a Spark job) only if a split needs slices and the table's
        # files were not listed above: the client holds what the range touched, not the table
        listed: list[list[StoredFile]] = [] if files is None else [touched_files(files, splits)]

        def list_touched() -> None:
            if not listed:
                listed.append(self._touched_listing(splits, arrow_schema))

        def slices(as_of: str) -> dict[tuple[str, str], FileSlice]:
            if as_of not in slices_at:
                list_touched()
                found = file_slices_at(listed[0], timeline, table_version=props.version,
                                       replaced=replaced_file_groups(metadata, as_of), as_of=as_of)
                slices_at[as_of] = {(s.partition, s.file_id): s for s in found}
            return slices_at[as_of]

        bound = view.cleaned_bound(timeline)
        if bound is not None and bound.may_have_cleaned([*in_range, *(s.previous_commit for s in splits
                                                                      if s.previous_commit)]):
            list_touched()
            present = {f"{f.partition}/{f.name}" if f.partition else f.name for f in listed[0]}
            for split in splits:
                before, after = _sides(split, slices, props.cdc_logging_mode)
                gone = _cleaned_state(split, props.cdc_logging_mode, before, after, present)
                if gone is not None:
                    earliest = [c for c in timeline.write_commits() if c.requested_time < split.instant.requested_time]
                    raise HistoryUnavailableError(
                        f"the change query of {self._base_path} needs {gone} for the changes of "
                        f"{split.instant.requested_time} in {split.partition or '/'}:{split.file_id}, and the cleaner "
                        f"took it ({bound.reason}; Hudi's CDC query fails there too)",
                        earliest_answerable=range_time(earliest[-1], by_completion=props.ranges_by_completion)
                        if earliest else None)
        # each file group's splits together, in commit order: a task then merges the state between two commits
        # once (one commit's after state is the next one's before state), not twice
        splits = sorted(splits, key=lambda split: (split.partition, split.file_id))
        rows = [_split_row(split, slices, timeline, props.cdc_logging_mode) for split in splits]
        whole_events = [split.case is CdcInferenceCase.AS_IS and props.cdc_logging_mode is
                        CdcLoggingMode.DATA_BEFORE_AFTER for split in splits]
        record_rows = [row for row, whole in zip(rows, whole_events, strict=True) if whole]
        cdc_bytes = _cdc_bytes([s for s, whole in zip(splits, whole_events, strict=True) if whole], metadata)
        choice = self._decoding(record_rows, config, spark_schema, cdc_bytes) if record_rows else None
        if choice is None or choice.decoder == "python":
            return _Plan(rows, [], config, spark_schema, events_schema, choice)
        python_rows = [row for row, whole in zip(rows, whole_events, strict=True) if not whole]
        return _Plan(python_rows, record_rows, config, spark_schema, events_schema, choice)

    @over_connect("listing the files a change query touches")
    def _touched_listing(self, splits: list[CdcSplit], schema: pa.Schema) -> list[StoredFile]:
        """The files of the splits' file groups, from a storage listing of their partitions, streamed."""
        index = self._reader.index
        keep = dataclasses.replace(index.partition_filter(schema, None), paths=frozenset(touched_partitions(splits)))
        listing = index.storage_listing(keep, fan_out=index.view.files_over_limit)
        return touched_files((StoredFile(*values) for values in result_rows(listing, ("partition", "name", "size"))),
                             splits)

    def _split_rows(self, rows: list[CdcSplitRow]) -> DataFrame:
        """``rows`` as a DataFrame sliced as Spark slices a local relation: one task per core of the server,
        each with its share of the splits. Not one task per split: a task costs tens of milliseconds of
        scheduling and Arrow set-up, more than the change events of a small split take to compute (a
        change query of 80 splits of 1,500 events ran 4x faster this way)."""
        return task_rows(self._spark, rows, CDC_SPLITS.schema)

    def _decoding(self, record_rows: list[CdcSplitRow], config: SliceReadConfig,
                  image_type: StructType, cdc_bytes: int) -> DecodingChoice:
        """Who decodes the DATA_BEFORE_AFTER .cdc records of ``record_rows`` (``cdc_bytes`` of .cdc files):
        the JVM when it can give exactly the Python path's values and, under ``auto``, has enough to decode
        to pay for its schema job or the session knows the writer schemas already; as ``avro_decoding`` allows."""
        if self._avro_decoding == "python":
            return DecodingChoice("python", "avro_decoding='python' asks for it")
        if not has_spark_avro(self._spark):
            if self._avro_decoding == "jvm":
                raise ServerMisconfiguredError(
                    "avro_decoding='jvm' needs Spark's Avro module on the server (spark-avro, e.g. "
                    "org.apache.spark:spark-avro_2.12 for Spark 3.5), and this server has none")
            return DecodingChoice("python", "the server has no spark-avro")
        keys = [(row.instant, name) for row in record_rows for name in row.cdc_files]
        known = self._reader.view.known_cdc_schemas(keys)
        # with the writer schemas known (no job), the JVM path is the faster at every size
        small = too_small_for_jvm(cdc_bytes) if self._avro_decoding == "auto" and known is None else None
        if small is not None:
            return DecodingChoice("python", small)
        schemas = tuple(sorted(known if known is not None else self._found_writer_schemas(record_rows, config, keys)))
        for schema in schemas:
            reason = unsupported_writer_schema(schema, image_type, config.record_key_fields)
            if reason is not None:
                if self._avro_decoding == "jvm":
                    raise UnsupportedOperationError(
                        f"avro_decoding='jvm' cannot decode the .cdc records of {self._base_path} exactly: {reason}; "
                        "avro_decoding='auto' decodes them in Python")
                return DecodingChoice("python", reason)
        learned = " (known from an earlier query of these commits: no schema job)" if known is not None else ""
        return DecodingChoice("jvm", f"the server has spark-avro and the images of {len(schemas)} writer "
                                     f"schema(s){learned} are plain primitives", schemas)

    def _found_writer_schemas(self, record_rows: list[CdcSplitRow], config: SliceReadConfig,
                              keys: list[tuple[str, str]]) -> frozenset[str]:
        """The writer schemas of the .cdc blocks ``record_rows`` read, found by a job and kept in the session for
        the blocks of those (commit, file) ``keys``: a later query of them runs no such job."""
        ship_package(self._spark)
        found = map_task_rows(self._split_rows(record_rows), CDC_SPLITS.schema, partial(cdc_writer_schemas, config),
                              WRITER_SCHEMAS)
        schemas = frozenset(row.writer_schema for row in found.collect())
        self._reader.view.keep_cdc_schemas(keys, schemas)
        return schemas

    def _events(self, begin: InstantLike, end: InstantLike | None,
                predicates: Sequence[Expression]) -> tuple[DataFrame, StructType]:
        """Events with images as structs of the record schema (the second value)."""
        plan = self._plan(begin, end, predicates)
        parts = []
        if plan.python_rows:
            ship_package(self._spark)
            parts.append(map_task_rows(self._split_rows(plan.python_rows), CDC_SPLITS.schema,
                                       partial(change_events, plan.config), plan.events_schema))
        if plan.record_rows:
            assert plan.choice is not None
            from pyspark.sql.pandas.types import from_arrow_schema

            record_bytes = map_task_rows(
                self._split_rows(plan.record_rows), CDC_SPLITS.schema,
                partial(cdc_record_bytes, plan.config, {s: n for n, s in enumerate(plan.choice.writer_schemas)}),
                from_arrow_schema(RECORD_BYTES_SCHEMA))
            parts.append(decoded_events(record_bytes, plan.choice, plan.spark_schema,
                                        plan.config.record_key_fields, plan.config.field_prefixed_keys))
        if not parts:
            return self._spark.createDataFrame([], plan.events_schema), plan.spark_schema
        return reduce(lambda a, b: a.unionByName(b), parts), plan.spark_schema

    def _zone(self) -> str:
        """The zone of the table's instant times (a commit's epoch time in ts_ms and _commit_timestamp)."""
        return timeline_zone_id(self._spark, self._reader.properties)

    @over_connect("planning a change query")
    def changes(self, begin: InstantLike, end: InstantLike | None = None, *,
                format: ChangeFormat = "hudi", predicates: UserPredicates = (),
                deduplication_mode: DeduplicationMode = "dropCarryovers", compute_updates: bool = False) -> DataFrame:
        """The changes of commits in (begin, end], in Hudi's CDC schema or another ``format``.

        - ``hudi``: op (i/u/d), ts_ms (the commit's instant), before and after as JSON strings;
        - ``typed``: before and after as structs of the table's schema, with the commit's
          requested and completion times and the record key;
        - ``debezium``: op (c/u/d), before, after, source (table, path, commit), ts_ms;
        - ``spark``: Spark 4.2's change rows (``spark.read.changes``): the data columns, ``_change_type``
          (insert, delete, update_preimage, update_postimage), ``_commit_version`` and ``_commit_timestamp``,
          post-processed by Spark's ``deduplication_mode`` and ``compute_updates``
          (:mod:`hudi_connect.cdc.spark_changes`; given with another format, they are refused).

        ``predicates`` prune partitions, then keep the changes whose before or after image satisfies them
        (our tree, Spark Connect Columns or SQL strings, over the table's columns, as reads take them).

            query.changes(begin, format="spark", deduplication_mode="netChanges", compute_updates=True)
        """
        if format != "spark" and (deduplication_mode != "dropCarryovers" or compute_updates):
            raise ValueError("deduplication_mode and compute_updates shape Spark's change rows: format='spark'")
        if format == "spark":
            check_options(deduplication_mode, compute_updates)  # before anything runs
        events, schema = self._kept_events(begin, end, predicates)
        if format == "hudi":
            return events.select("op", "ts_ms", _image_json("before", schema).alias("before"),
                                 _image_json("after", schema).alias("after"))
        typed = _typed(events)
        if format == "typed":
            return typed
        if format == "debezium":
            source = F.struct(
                F.lit("hudi").alias("connector"), F.lit(self._reader.properties.name).alias("table"),
                F.lit(self._base_path).alias("path"), F.col("requested_time").alias("commit_time"),
                F.col("completion_time"),
            )
            return typed.select(
                F.when(F.col("op") == "i", "c").otherwise(F.col("op")).alias("op"), "before", "after",
                source.alias("source"),
                instant_millis(F.col("completion_time"), self._zone()).alias("ts_ms"),
            )
        if format == "spark":
            return spark_change_rows(typed, schema, deduplication_mode=deduplication_mode,
                                     compute_updates=compute_updates,
                                     commit_millis=instant_millis(F.col("completion_time"), self._zone()))
        raise ValueError(f"unknown change format {format!r}: choose 'hudi', 'typed', 'debezium' or 'spark'")

    @over_connect("planning a change query")
    def typed_changes(self, begin: InstantLike, end: InstantLike | None = None, *,
                      predicates: UserPredicates = ()) -> tuple[DataFrame, StructType]:
        """The ``typed`` changes and their images' struct type, known from the table's schema without asking
        the server (each schema question is a round trip of tens of milliseconds)."""
        events, schema = self._kept_events(begin, end, predicates)
        return _typed(events), schema

    def _kept_events(self, begin: InstantLike, end: InstantLike | None,
                     predicates: UserPredicates) -> tuple[DataFrame, StructType]:
        given = as_sequence(predicates)
        translations = translate_all(given)
        events, schema = self._events(begin, end, [t.pruning for t in translations if t.pruning is not None])
        ours = [p for p in given if isinstance(p, Expression)]
        if ours and len(ours) == len(given):  # a change is kept when either image satisfies the predicates
            events = events.where(F.coalesce(all_of(ours, "before"), F.lit(False))
                                  | F.coalesce(all_of(ours, "after"), F.lit(False)))
        elif translations:
            events = _either_image(events, reduce(lambda a, b: a & b, (t.filter for t in translations)))
        return events, schema


_EVENT, _BEFORE_HOLDS = "_hudi_connect_event", "_hudi_connect_before_holds"  # beside an image's columns


def _either_image(events: DataFrame, condition: Column) -> DataFrame:
    """The events whose before or after image satisfies ``condition``, a user's column over the table's
    columns: it cannot be re-qualified to an image's fields as our tree is (``all_of(predicates, "before")``),
    so each image's fields become the top-level columns it reads, as in a read, beside the event as a struct."""
    holds = F.coalesce(condition, F.lit(False))
    before = (events.select(F.struct(F.col("*")).alias(_EVENT), F.col("before.*"))
              .select(_EVENT, holds.alias(_BEFORE_HOLDS)))
    after = before.select(_EVENT, _BEFORE_HOLDS, F.col(f"{_EVENT}.after.*"))
    return after.where(F.col(_BEFORE_HOLDS) | holds).select(f"{_EVENT}.*")


def _cdc_bytes(splits: Sequence[CdcSplit], metadata: Mapping[Instant, CommitMetadata]) -> int:
    """Bytes of the .cdc files the splits read, as their commits recorded them."""
    wanted = {(s.instant, s.partition, s.file_id) for s in splits}
    return sum(size for instant in {s.instant for s in splits} for stat in metadata[instant].write_stats
               if (instant, stat.partition_path, stat.file_id) in wanted for size in stat.cdc_stats.values())


def _typed(events: DataFrame) -> DataFrame:
    return events.select("op", "record_key", F.col("ts_ms").alias("requested_time"), "completion_time",
                         "before", "after")


def _image_json(side: str, schema: StructType) -> Column:
    """An image as Hudi's CDC query shows it: JSON, without meta columns where Hudi's comes from a .cdc file."""
    image = F.col(side)
    data = F.struct(*(image[f.name].alias(f.name) for f in schema.fields if f.name not in META_COLUMNS))
    return (F.when(image.isNull(), F.lit(None))
            .when(F.col(f"{side}_without_meta"), F.to_json(data, JSON_OPTIONS))
            .otherwise(F.to_json(image, JSON_OPTIONS)))


def instant_millis(instant: Column, zone: str) -> Column:
    """Epoch milliseconds of an instant time yyyyMMddHHmmssSSS on a timeline written in ``zone``
    (:func:`~hudi_connect.client.instants.timeline_zone_id`), whatever the reading session's time zone: its fields
    placed in that zone (Spark's parser rejects the pattern as a whole), the milliseconds added."""
    def field(start: int, length: int) -> Column:
        return F.substring(instant, start, length).cast("int")
    moment = F.make_timestamp(field(1, 4), field(5, 2), field(7, 2), field(9, 2), field(11, 2),
                              F.substring(instant, 13, 2).cast("decimal(8,6)"), F.lit(zone))
    return F.unix_millis(moment) + F.coalesce(F.substring(instant, 15, 3).cast("long"), F.lit(0))


def needs_file_slices(props: TableProperties) -> bool:
    """Whether a change query on this table is likely to read file slices (and so to list the table's files):
    all but COW tables logging both images in .cdc files."""
    return props.is_merge_on_read or props.cdc_logging_mode is not CdcLoggingMode.DATA_BEFORE_AFTER


def images_without_meta(case: CdcInferenceCase, mode: CdcLoggingMode | None) -> tuple[bool, bool]:
    """Whether Hudi's CDC query shows (before, after) images without meta columns.

    Images Hudi reads from its CDC log files (AS_IS) carry only the data columns;
    images it fills in from file slices carry the meta columns too. Which images
    a CDC log file holds depends on the supplemental logging mode.
    """
    if case is not CdcInferenceCase.AS_IS or mode is None or mode is CdcLoggingMode.OP_KEY_ONLY:
        return (False, False)
    if mode is CdcLoggingMode.DATA_BEFORE:
        return (True, False)
    return (True, True)


def touched_partitions(splits: Iterable[CdcSplit]) -> set[str]:
    """The partitions of the splits' file groups and of the files their commits wrote."""
    return {s.partition for s in splits} | {path.rpartition("/")[0] for s in splits for path in s.files if path}


def touched_files(files: Iterable[StoredFile], splits: Sequence[CdcSplit]) -> list[StoredFile]:
    """Of ``files``, those of the splits' file groups and those their commits wrote: all a change query's
    slices and cleaner checks look at."""
    groups = {(s.partition, s.file_id) for s in splits}
    written = {path for s in splits for path in s.files if path}
    partitions = touched_partitions(splits)
    kept = []
    for stored in files:
        if stored.partition not in partitions:
            continue
        parsed = parse_data_file(stored)
        path = f"{stored.partition}/{stored.name}" if stored.partition else stored.name
        if (parsed is not None and (parsed.partition, parsed.file_id) in groups) or path in written:
            kept.append(stored)
    return kept


def _sides(split: CdcSplit, slices: Callable[[str], dict[tuple[str, str], FileSlice]],
           mode: CdcLoggingMode | None) -> tuple[FileSlice | None, FileSlice | None]:
    """The file slices a split reads before and after its commit (None where it reads none)."""
    key = (split.partition, split.file_id)
    before_as_of, after_as_of = _side_instants(split, mode)
    return (slices(before_as_of).get(key) if before_as_of else None,
            slices(after_as_of).get(key) if after_as_of else None)


def _side_instants(split: CdcSplit, mode: CdcLoggingMode | None) -> tuple[str | None, str | None]:
    """The instants of the states a split reads from file slices, before and after its commit."""
    from_cdc_files = _reads_cdc_files(split, mode)
    needs_after = not (from_cdc_files and mode is CdcLoggingMode.DATA_BEFORE_AFTER)
    before = None if from_cdc_files or not split.previous_commit else split.previous_commit.requested_time
    return before, split.instant.requested_time if needs_after else None


def _reads_cdc_files(split: CdcSplit, mode: CdcLoggingMode | None) -> bool:
    """Whether a split's images come from its ``.cdc`` files: holding before images, they spare merging the
    old slice; holding after images, the new one too."""
    return split.case is CdcInferenceCase.AS_IS and mode is not CdcLoggingMode.OP_KEY_ONLY


def _cleaned_state(split: CdcSplit, mode: CdcLoggingMode | None, before: FileSlice | None,
                   after: FileSlice | None, present: set[str]) -> str | None:
    """What a split needs that the cleaner took (None if all is there): a file its commit wrote, or the file
    slice its changes are relative to (the previous version of the base file, as Hudi's CDC query says)."""
    for path in split.files:
        if path and path not in present:
            return f"{path}, written by the commit"
    stat = split.stat
    before_as_of, after_as_of = _side_instants(split, mode)
    if after_as_of is not None and stat is not None and stat.path:
        name = stat.path.rsplit("/", 1)[-1]
        written = ([after.base_file.name] if after.base_file else []) if after is not None else []
        if name not in [*written, *(f.name for f in (after.log_files if after is not None else ()))]:
            return f"the file slice holding {stat.path}"
    if before_as_of is None:
        return None
    if before is None:
        existed = stat is None or stat.prev_commit is not None  # a replaced group, or one written before
        return f"the file group's state at {before_as_of}" if existed else None
    expected = stat.prev_commit if stat is not None and not stat.is_log_file else None
    if expected is not None and before.base_instant != expected:
        return f"the previous version of the base file (of {expected})"
    expected_base = stat.base_file.rsplit("/", 1)[-1] if stat is not None and stat.is_log_file and stat.base_file \
        else None
    if expected_base and (before.base_file is None or before.base_file.name != expected_base):
        return f"the base file {expected_base} the log file belongs to"
    return None


def _split_row(split: CdcSplit, slices: Callable[[str], dict[tuple[str, str], FileSlice]], timeline: Timeline,
               mode: CdcLoggingMode | None) -> CdcSplitRow:
    """One row of the :data:`~hudi_connect.core.executor.contracts.CDC_SPLITS` contract: the slices (or ``.cdc``
    files) a worker reads for the split."""
    before_as_of, after_as_of = _side_instants(split, mode)
    before, after = _sides(split, slices, mode)
    before_base, before_logs, before_valid, has_before = _slice_columns(
        before, valid_block_instants(timeline, before_as_of) if before_as_of else None)
    after_base, after_logs, after_valid, has_after = _slice_columns(
        after, valid_block_instants(timeline, after_as_of) if after_as_of is not None else None)
    before_without_meta, after_without_meta = images_without_meta(split.case, mode)
    return CdcSplitRow(
        instant=split.instant.requested_time, completion_time=split.instant.completion_time,
        partition=split.partition, file_id=split.file_id,
        before_base=before_base, before_logs=before_logs, before_valid=before_valid, has_before=has_before,
        after_base=after_base, after_logs=after_logs, after_valid=after_valid, has_after=has_after,
        before_without_meta=before_without_meta, after_without_meta=after_without_meta,
        cdc_files=list(split.files) if _reads_cdc_files(split, mode) else [], cdc_mode=mode.value if mode else None,
    )


def _slice_columns(file_slice: FileSlice | None,
                   valid: BlockValidity | None) -> tuple[str | None, list[str], list[str], bool]:
    """(base file name, log file names, valid instants, whether the side exists) of one side of a split."""
    if file_slice is None:
        return (None, [], [], False)
    base = file_slice.base_file.name if file_slice.base_file else None
    return (base, [f.name for f in file_slice.log_files], sorted(valid.completed) if valid else [], True)
