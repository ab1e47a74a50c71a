"""Runs a drawn scenario: writes its history through Hudi's datasource on the Hudi server and, after every
step, makes its requests of our jar-free reader (the plain server) and of Hudi's own read of the same table.

Each request ends one of four ways: *equal*; *refused* (ours raised an error of ``hudi_connect.core.errors``
naming what it does not read); *no oracle* (Hudi's own read failed; ours answered); or a *difference*, which
fails the test. Hudi's read is filtered with pyspark's own column built from the recipe, never through our
translation of it, so the oracle shares none of our predicate code.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import itertools
import json
import os
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import reduce
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote
from zoneinfo import ZoneInfo

from hudi_connect_stack.testing.cdc_history import event_multiset
from hudi_connect_stack.testing.compare import row_multiset
from pyspark.errors.exceptions.base import PySparkException
from pyspark.errors.exceptions.connect import SparkConnectException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from hudi_connect import library_errors
from hudi_connect.cdc import ChangeQuery
from hudi_connect.client.server import reconnector, server_time_zone
from hudi_connect.core.errors import InvalidInstantError, UnsupportedTableFeatureError, WriteFailedError
from hudi_connect.core.executor.image_json import JSON_OPTIONS
from hudi_connect.core.format.expressions import Expression
from hudi_connect.core.format.table_features import string_partition_columns
from hudi_connect.core.format.timeline import Action, Instant
from hudi_connect.reader import TableReader
from hudi_connect.table.concurrency import concurrency_options, is_write_conflict, supports_non_blocking
from hudi_connect.table.hudi_table import HudiTable
from integration.differential.scenario import (
    MS_2024,
    Concurrent,
    Recipe,
    Record,
    Request,
    Scenario,
    Service,
    Shape,
    Write,
    ordering_value,
    ours,
    sql_text,
)

if TYPE_CHECKING:
    from integration.differential.spark4_reader import Spark4Reader

IGNORED = {"_hoodie_file_name", "_hoodie_commit_seqno"}  # where a reader found a record, not what it is
EPOCH = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
_SPARK_TYPES = {"string": "string", "int": "int", "long": "bigint", "float": "float", "double": "double",
                "date": "date", "boolean": "boolean", "none": "string"}
_PAYLOADS = {"event_time": "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
             "commit_time": "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"}
_MERGE_MODES = {"event_time": "EVENT_TIME_ORDERING", "commit_time": "COMMIT_TIME_ORDERING"}
# what ours may answer a request with instead of rows: a refusal that names what it does not read, or an instant
# it cannot answer (HistoryUnavailableError among them; a time travel at or after a write a crash left pending is
# refused as Hudi refuses it, HoodieTimeTravelException)
REFUSALS = (UnsupportedTableFeatureError, InvalidInstantError)


class HudiWriteFailed(Exception):
    """Hudi itself failed to write the drawn history: no table to compare on."""


@dataclass
class Outcome:
    """What a scenario's requests came to."""

    compared: Counter[str] = field(default_factory=Counter)  # "equal", "refused: <class>", "no oracle: ..."
    differences: list[str] = field(default_factory=list)
    release_differences: list[str] = field(default_factory=list)  # an earlier release's answer unlike 1.2's
    concurrent: Counter[str] = field(default_factory=Counter)  # what concurrent writes ended in
    spark4: Counter[str] = field(default_factory=Counter)  # the requests also read on Spark 4 (spark4_reader)

    def add(self, other: Outcome) -> None:
        self.compared.update(other.compared)
        self.spark4.update(other.spark4)
        self.concurrent.update(other.concurrent)
        self.differences += other.differences
        self.release_differences += other.release_differences


def schema(shape: Shape) -> str:
    second = ", ts2 int" if shape.ordering_fields == 2 else ""
    return (f"key int, part {_SPARK_TYPES[shape.partition_type]}, "
            f"ts {_SPARK_TYPES[shape.ordering_type]}, t timestamp, v string, n int, "
            f"region string, ms bigint, _hoodie_is_deleted boolean{second}")


def writer_options(shape: Shape) -> dict[str, str]:
    """Hudi's options for the shape, as a Hudi user sets them."""
    keygen, partition_path = {
        (): ("NonpartitionedKeyGenerator", ""), ("part",): ("SimpleKeyGenerator", "part"),
        ("ms",): ("TimestampBasedKeyGenerator", "ms"),
        ("part", "region"): ("ComplexKeyGenerator", "part,region") if shape.key_generator == "complex"
        else ("CustomKeyGenerator", "part:SIMPLE,region:SIMPLE"),
    }[shape.partition_columns]
    options = {
        "hoodie.table.name": "differential",
        "hoodie.datasource.write.table.type": shape.table_type,
        "hoodie.write.table.version": str(shape.version),
        "hoodie.datasource.write.recordkey.field": "key",
        "hoodie.datasource.write.partitionpath.field": partition_path,
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen." + keygen,
        "hoodie.datasource.write.precombine.field": "ts,ts2" if shape.ordering_fields == 2 else "ts",
        "hoodie.datasource.write.hive_style_partitioning": str(shape.hive_style).lower(),
        "hoodie.datasource.write.partitionpath.urlencode": str(shape.url_encode).lower(),
        "hoodie.metadata.enable": str(shape.metadata).lower(),
        "hoodie.index.type": shape.index,
        "hoodie.datasource.write.payload.class": _PAYLOADS[shape.merge],
        "hoodie.clean.automatic": "false",
        "hoodie.compact.inline": "false",
    }
    if shape.version != 6:
        options["hoodie.record.merge.mode"] = _MERGE_MODES[shape.merge]
    if shape.column_stats:
        options["hoodie.metadata.index.column.stats.enable"] = "true"
    if shape.index == "RECORD_INDEX":
        options["hoodie.metadata.record.index.enable"] = "true"
    if shape.index == "BUCKET":
        options["hoodie.bucket.index.num.buckets"] = "2"
    if shape.key_generator == "complex":  # Hudi 1.2 asks so of a table whose keys it encoded before 1.1
        options["hoodie.write.complex.keygen.validation.enable"] = "false"
    if shape.key_generator == "timestamp":
        options |= {"hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
                    "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd",
                    "hoodie.keygen.timebased.timezone": "UTC"}
    if shape.cdc != "off":
        # Hudi's own CDC query fails ("There should be a cdc log file") on inserts packed into small files
        options |= {"hoodie.table.cdc.enabled": "true", "hoodie.table.cdc.supplemental.logging.mode": shape.cdc,
                    "hoodie.parquet.small.file.limit": "0"}
    if shape.log_format != "avro":
        options["hoodie.logfile.data.block.format"] = shape.log_format
    if shape.log_compaction:  # inline, as soon as a file slice has two log blocks
        options |= {"hoodie.log.compaction.inline": "true", "hoodie.log.compaction.blocks.threshold": "2"}
    if shape.archival:
        options |= {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
                    "hoodie.clean.commits.retained": "1"}
        if shape.metadata:  # Hudi archives no commit after the metadata table's last compaction
            options["hoodie.metadata.compact.max.delta.commits"] = "1"
    return options


def _row(shape: Shape, record: Record, deleted: bool) -> tuple[Any, ...]:
    return (record.key, record.part, ordering_value(shape.ordering_type, record.ts),
            EPOCH + dt.timedelta(minutes=record.t), record.v, record.n,
            "ew"[record.key % 2], MS_2024 + record.t * 60_000, deleted,
            *((record.ts2,) if shape.ordering_fields == 2 else ()))


def multi_writer_options(shape: Shape) -> dict[str, str]:
    """Hudi's multi-writer options as ``HudiTable``'s writes take them on one server (the in-process lock)."""
    non_blocking = supports_non_blocking(merge_on_read=shape.is_mor, table_version=shape.version,
                                         settings={"hoodie.index.type": shape.index})
    return concurrency_options(single_writer=False, server_lock={}, chosen={}, non_blocking=non_blocking,
                               merge_on_read=shape.is_mor)


def write_concurrently(spark: SparkSession, shape: Shape, path: str, step: Concurrent) -> list[str]:
    """Each write of ``step`` by a session of its own on ``spark``'s server, at once; what each ended in
    ('committed', or 'conflict'). Any other failure is Hudi's (HudiWriteFailed)."""
    connect_again = reconnector(spark)
    assert connect_again is not None, "the tester's sessions come from hudi_connect.connect"
    sessions = [connect_again() for _ in step.writes]
    start = threading.Barrier(len(step.writes))

    def write(session: SparkSession, one: Write) -> str:
        start.wait()
        try:
            write_step(session, shape, path, one, multi_writer_options(shape))
        except HudiWriteFailed as failed:
            if is_write_conflict(str(failed.__cause__)):
                return "conflict"
            raise
        return "committed"

    try:
        with ThreadPoolExecutor(len(step.writes)) as pool:
            return list(pool.map(write, sessions, step.writes))
    finally:
        for session in sessions:
            session.stop()


def write_step(spark: SparkSession, shape: Shape, path: str, step: Write | Service,
               concurrency: dict[str, str] | None = None) -> None:
    """One step of the history, through Hudi (its datasource, or its procedures for services); ``concurrency``:
    Hudi's multi-writer options (single writer, Hudi's default, without)."""
    try:
        if isinstance(step, Service):
            table = HudiTable.open(spark, path)
            if step.kind == "compact":  # a pending compaction too
                table.compaction.schedule()
                table.compaction.run()
            elif step.kind == "schedule_compaction":
                table.compaction.schedule()
            elif step.kind == "clean":
                table.clean(retain_commits=1)
            else:
                table.cluster()
            return
        if step.operation in ("bootstrap", "full_bootstrap"):
            bootstrap(spark, shape, path, step)
            return
        operation = {"soft_delete": "upsert"}.get(step.operation, step.operation)
        rows = [_row(shape, r, step.operation == "soft_delete") for r in step.records]
        spark.createDataFrame(rows, schema(shape)).write.format("hudi") \
            .options(**writer_options(shape) | (concurrency or {})) \
            .option("hoodie.datasource.write.operation", operation).mode("append").save(path)
    except (SparkConnectException, PySparkException, WriteFailedError) as error:  # Hudi's write or table service
        raise HudiWriteFailed(f"{step}: {str(error).splitlines()[0][:300]}") from error
    if step.fails:
        uncomplete_last_write(spark, path, shape.version)


def bootstrap(spark: SparkSession, shape: Shape, path: str, step: Write) -> None:
    """The step's records as a Parquet folder beside the table (partitioned hive-style by the shape's partition
    columns, which its files then do not hold), made the table by Hudi's metadata-only bootstrap, or by its
    full-record bootstrap for ``full_bootstrap``."""
    source = f"{path.rstrip('/')}-source"
    rows = [_row(shape, r, False) for r in step.records]
    before = spark.conf.get("spark.sql.parquet.outputTimestampType")
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")  # Hudi's bootstrap reads no INT96
    try:
        spark.createDataFrame(rows, schema(shape)).write.partitionBy(*shape.partition_columns).mode("overwrite") \
            .parquet(source)
    finally:
        spark.conf.set("spark.sql.parquet.outputTimestampType", before or "INT96")
    full = step.operation == "full_bootstrap"
    # a full-record bootstrap copies the source's values by position into the schema of the frame written: one of
    # no columns makes it the source's own (partition columns last), as Hudi's tests write; a typed frame in
    # another order failed every record, which Hudi then dropped (hoodie.write.ignore.failed, true by default)
    frame = spark.createDataFrame([], StructType([])) if full else spark.createDataFrame([], schema(shape))
    frame.write.format("hudi").options(**writer_options(shape)) \
        .option("hoodie.datasource.write.operation", "bootstrap").option("hoodie.bootstrap.base.path", source) \
        .option("hoodie.datasource.write.hive_style_partitioning", "true") \
        .option("hoodie.metadata.index.column.stats.enable", "false").option("hoodie.write.ignore.failed", "false") \
        .options(**({"hoodie.bootstrap.mode.selector": FULL_RECORD_SELECTOR} if full else {})) \
        .mode("overwrite").save(path)


FULL_RECORD_SELECTOR = "org.apache.hudi.client.bootstrap.selector.FullRecordBootstrapModeSelector"
_COMPLETED = re.compile(r"^(\d+)(?:_\d+)?\.(commit|deltacommit|replacecommit)$")


def uncomplete_last_write(spark: SparkSession, path: str, version: int) -> None:
    """The table as a writer that died before completing its last commit leaves it: its data files, log
    blocks and metadata-table records in place, its markers too (Hudi removes them only once the commit
    completes: the next write's rollback finds what to undo by them), the completed instant's file gone."""
    view = TableReader(spark, path).view
    last = max(view.timeline().write_commits(), key=lambda instant: instant.requested_time)
    markers = os.path.join(path, ".hoodie", ".temp", last.requested_time)
    for stat in view.commit_metadata([last])[last].write_stats:
        name = os.path.basename(stat.path)
        # a log file's marker: APPEND below table version 8, CREATE from 8 (log files named by their instant)
        appended = ".log." in name and version < 8
        io_type = "APPEND" if appended else "CREATE" if ".log." in name or stat.prev_commit in (None, "null") \
            else "MERGE"
        folder = os.path.join(markers, stat.partition_path)
        os.makedirs(folder, exist_ok=True)
        open(os.path.join(folder, f"{name}.marker.{io_type}"), "w").close()  # Hudi's direct markers
    timeline = [os.path.join(path, ".hoodie", "timeline"), os.path.join(path, ".hoodie")]
    completed = [os.path.join(folder, name) for folder in timeline if os.path.isdir(folder)
                 for name in os.listdir(folder)
                 if (match := _COMPLETED.match(name)) and match.group(1) == last.requested_time]
    assert len(completed) == 1, completed
    os.remove(completed[0])


@contextlib.contextmanager
def client_zone(zone: str | None) -> Iterator[None]:
    """The client process in time zone ``zone`` (as a user's notebook elsewhere is), None: unchanged."""
    if zone is None:
        yield
        return
    before = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        time.tzset()


def pyspark_column(recipe: Recipe) -> Column:
    """The recipe as pyspark's own column (what a user's ``df.where`` on Hudi's read applies)."""
    kind = recipe[0]
    if kind == "cmp":  # an integer beyond bigint as Spark's parser types it (pyspark's lit refuses it)
        column = F.col(recipe[2])
        value = _spark_value(recipe[3])
        return {"=": column == value, "!=": column != value, "<": column < value, "<=": column <= value,
                ">": column > value, ">=": column >= value}[recipe[1]]
    if kind == "in":
        return F.col(recipe[1]).isin(*(_spark_value(v) for v in recipe[2]))
    if kind == "null":
        return F.col(recipe[1]).isNull()
    if kind == "not":
        return ~pyspark_column(recipe[1])
    parts = [pyspark_column(recipe[1]), pyspark_column(recipe[2])]
    return reduce(lambda a, b: a & b, parts) if kind == "and" else reduce(lambda a, b: a | b, parts)


def _spark_value(value: Any) -> Any:
    """A literal as pyspark's lit takes it: an integer beyond bigint as the decimal Spark's parser types it."""
    return decimal.Decimal(value) if isinstance(value, int) and not isinstance(value, bool) \
        and abs(value) >= 2**63 else value


@contextlib.contextmanager
def session_zone(sessions: list[SparkSession], zone: str | None) -> Iterator[None]:
    """The reading sessions in time zone ``zone`` (spark.sql.session.timeZone), None: unchanged."""
    if zone is None:
        yield
        return
    for session in sessions:
        session.conf.set("spark.sql.session.timeZone", zone)
    try:
        yield
    finally:
        for session in sessions:
            session.conf.unset("spark.sql.session.timeZone")


def _is_moment(instant: Instant, completed: bool) -> bool:
    """Whether the instant's time (its completion time where ``completed``) is a moment on a clock."""
    time = (instant.completion_time or instant.requested_time) if completed else instant.requested_time
    return time >= "1970"


def _moment(spark: SparkSession, instant: Instant, completed: bool = False) -> tuple[dt.datetime, str]:
    """An instant as a user names it by time: the moment (aware, on the timeline's clock: the writer server's
    zone) for ours, and the wall-clock text of that clock Hudi's ``as.of.instant`` takes; ``completed``: its
    completion time (what ranges compare on tables of version 8 and later), else its requested time."""
    digits = (instant.completion_time or instant.requested_time) if completed else instant.requested_time
    wall = dt.datetime.strptime(digits[:14], "%Y%m%d%H%M%S").replace(microsecond=int(digits[14:17]) * 1000)
    return wall.replace(tzinfo=ZoneInfo(server_time_zone(spark))), wall.isoformat(sep=" ", timespec="milliseconds")


def user_predicate(request: Request) -> Expression | Column | str:
    """The request's predicate as its user hands it to ours: our tree, pyspark's Column or SQL."""
    assert request.predicate is not None
    if request.spelling == "column":
        return pyspark_column(request.predicate)
    if request.spelling == "sql":
        return sql_text(request.predicate)
    return ours(request.predicate)


def _rows(df: DataFrame, url_decoded: bool = False) -> tuple[dict[str, str], Counter[tuple[Any, ...]]]:
    if "before" in df.columns:  # a change query: Hudi's CDC rows, their images parsed
        return {}, event_multiset((r.op, r.ts_ms, _epoch_image(r.before), _epoch_image(r.after)) for r in df.collect())
    columns = sorted(set(df.columns) - IGNORED)
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields if f.name in columns}
    rows = (r.asDict(recursive=True) for r in df.select(*columns).collect())
    return types, row_multiset(({**r, "part": _part(r.get("part"), url_decoded)} for r in rows), columns)


def _epoch_image(text: str | None) -> str | None:
    """A change image with its timestamps as epoch microseconds and dates as epoch days: Hudi's CDC query writes
    them so in some cases and as text in others; ours as ISO text throughout (README, the image table)."""
    if text is None:
        return None
    image = json.loads(text)
    if not isinstance(image, dict):
        return text
    if image.get("part") == "":  # Hudi's read shows a string partition's '' as NULL: kept out as in rows (_part)
        image["part"] = None
    return json.dumps({name: _epoch(value) for name, value in image.items()})


def _epoch(value: Any) -> Any:
    if not isinstance(value, str) or len(value) < 10 or value[4:5] != "-" or value[7:8] != "-":
        return value
    try:
        if len(value) == 10:
            return (dt.date.fromisoformat(value) - dt.date(1970, 1, 1)).days
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        return value
    moment = moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)  # Hudi's text: its session's zone, UTC
    return (moment - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)


def _part(value: Any, url_decoded: bool) -> Any:
    """Hudi's bugs kept out of the oracle (README, "Differential testing against Hudi"): its Spark read shows a
    string partition's '' as NULL (it takes the value from the path, where Hudi writes both as
    __HIVE_DEFAULT_PARTITION__), and its incremental read of URL-encoded paths shows the encoded value
    (``x%2Fy`` for ``x/y``); ours keeps the stored values, as hudi-rs and Hudi's snapshot do."""
    if value == "":
        return None
    return unquote(value) if url_decoded and isinstance(value, str) else value


def _pair(plain: SparkSession, table: HudiTable, request: Request,
          commits: list[Instant]) -> tuple[Any, Any] | None:
    """Ours and Hudi's read for the request (unfiltered), or None where it names no valid range."""
    return read_pair(plain, table.base_path, table.properties.ranges_by_completion, table.hudi, request, commits)


def read_pair(plain: SparkSession, base_path: str, ranges_by_completion: bool, hudi: Any, request: Request,
              commits: list[Instant]) -> tuple[Any, Any] | None:
    """Ours (on ``plain``) and Hudi's read (``hudi``: a table's Hudi reads; None where only ours is made, the Spark
    4 reader's) for the request, or None where it names no valid range."""
    reader = TableReader(plain, base_path)
    predicates = [user_predicate(request)] if request.predicate is not None else []
    if request.kind == "snapshot":
        return (lambda: reader.snapshot(predicates), lambda: hudi.snapshot(with_meta_columns=True))
    if request.kind == "read_optimized":
        return (lambda: reader.read_optimized(predicates), lambda: hudi.read_optimized(with_meta_columns=True))
    if -request.commit > len(commits):
        return None
    end = commits[request.commit]
    named = [end, *(commits[request.begin - 1:request.begin] if request.kind != "as_of" and request.begin else [])]
    if request.by_moment and not all(_is_moment(c, ranges_by_completion and request.kind != "as_of") for c in named):
        return None  # a bootstrap's instant (00000000000001) is no moment a user names by time
    if request.kind == "as_of":
        if request.by_moment:
            moment, text = _moment(plain, end)
            return (lambda: reader.as_of(moment, predicates), lambda: hudi.as_of(text, with_meta_columns=True))
        return (lambda: reader.as_of(end, predicates), lambda: hudi.as_of(end, with_meta_columns=True))
    if request.begin > len(commits) or (request.begin and commits[request.begin - 1] == end):
        return None
    begin: Instant | str = "earliest" if request.begin == 0 else commits[request.begin - 1]
    if isinstance(begin, Instant) and commits.index(begin) > commits.index(end):
        return None
    ours_range: tuple[Any, Any] = (begin, end)
    hudis_range: tuple[Any, Any] = (begin, end)
    if request.by_moment:  # both ends named by time: ours a datetime, Hudi's the timeline's wall-clock text
        completed = ranges_by_completion
        (end_moment, end_text) = _moment(plain, end, completed)
        begin_moment, begin_text = _moment(plain, begin, completed) if isinstance(begin, Instant) else (begin, begin)
        ours_range, hudis_range = (begin_moment, end_moment), (begin_text, end_text)
    if request.kind == "changes":
        return (lambda: ChangeQuery(plain, base_path).changes(*ours_range),
                lambda: hudi.cdc(*hudis_range))
    # Hudi's full-scan fallback on version 6 too (its default there is off: a range reaching archived commits then
    # reads the active timeline's part alone, silently); ours answers such a range by that rule (docs)
    return (lambda: reader.incremental(*ours_range, predicates),
            lambda: hudi.incremental(*hudis_range, with_meta_columns=True, fallback_to_full_scan=True))


def _their_rows(read: Any, request: Request, url_encoded: bool) -> tuple[dict[str, str], Counter[Any]] | str:
    """Hudi's answer to the request, filtered as the user filters Hudi's read, or the first line of its error."""
    try:
        df = read()
        if request.predicate is not None:
            df = df.where(sql_text(request.predicate) if request.spelling == "sql"
                          else pyspark_column(request.predicate))
        return _rows(df, url_decoded=url_encoded and request.kind == "incremental")
    except (SparkConnectException, PySparkException) as error:
        return str(error).splitlines()[0][:100]
    except InvalidInstantError as refused:  # the wrapper of Hudi's read refuses a range ending before it begins
        # (an instant completed after a later-requested one beside a concurrent writer), as ours does
        return str(refused).splitlines()[0][:100]


def _difference(where: str, request: Request, mine: Any, theirs: Any) -> str:
    (my_types, my_rows), (their_types, their_rows) = mine, theirs
    detail = f"{where}: {request}\n"
    if my_types != their_types:
        detail += f"  types: ours {my_types} / Hudi's {their_types}\n"
    return detail + f"  ours only: {dict(my_rows - their_rows)}\n  Hudi only: {dict(their_rows - my_rows)}"


def _file_group(file_name: str) -> str:
    """A record's file id from ``_hoodie_file_name``: a base file's or a log file's name, or the id itself."""
    return file_name.lstrip(".").split("_", 1)[0]


def _time_travel_rows(hudi: HudiTable, instant: Instant | None) -> list[dict[str, Any]]:
    """Hudi's time travel to ``instant`` (none before the first commit): each row's sequence number, commit time,
    file group, key and data-only image as JSON."""
    if instant is None:
        return []
    df = hudi.hudi.as_of(instant, with_meta_columns=True)
    # Hudi's reads give a timestamp key generator's partition column as the text of its stored value, where a
    # change image (Hudi's CDC query's, and ours) holds the value itself: the scenario's is ``ms``, a long
    strings = string_partition_columns(hudi.properties)
    if strings:  # (pyspark's Connect client refuses withColumns of nothing)
        df = df.withColumns({c: F.col(c).cast("long") for c in strings})
    data = [c for c in df.columns if not c.startswith("_hoodie_") or c == "_hoodie_is_deleted"]
    return [r.asDict() for r in df.select(
        "_hoodie_commit_seqno", "_hoodie_commit_time", "_hoodie_file_name", "_hoodie_record_key",
        F.to_json(F.struct(*data), JSON_OPTIONS).alias("image")).collect()]


def _by_group_and_key(rows: list[dict[str, Any]]) -> dict[tuple[str, str], list[str]]:
    """Images of ``rows`` by (file group, record key), in sequence-number order."""
    groups: dict[tuple[str, str], list[str]] = {}
    for r in sorted(rows, key=lambda r: r["_hoodie_commit_seqno"]):
        groups.setdefault((_file_group(r["_hoodie_file_name"]), r["_hoodie_record_key"]), []).append(r["image"])
    return groups


def model_changes(hudi: HudiTable, commits: list[Instant], first: int, last: int) -> Counter[tuple[Any, ...]]:
    """The model of a change query of ``commits[first..last]`` where Hudi's CDC query is no oracle (it looks a
    change's images up by key, and a file may hold a key twice): Hudi's own time travel before and after each
    commit of the range (by completion time on version 8+). Rows gone are removed, rows of the commit written; in
    each file group a key's n-th removed row by sequence number pairs with its n-th written one (an update), the
    rest are deletes and inserts. A row the commit brought back (a late record after a delete loses to the base
    record, which returns with its old commit time) is written by the commit too: it is new to the table's
    state."""
    events: list[tuple[str, str, str | None, str | None]] = []
    for index in _in_range(commits, first, last, by_completion=hudi.properties.ranges_by_completion):
        commit = commits[index]
        before = _time_travel_rows(hudi, commits[index - 1] if index else None)
        after = _time_travel_rows(hudi, commit)
        kept, had = {r["_hoodie_commit_seqno"] for r in after}, {r["_hoodie_commit_seqno"] for r in before}
        removed = [r for r in before if r["_hoodie_commit_seqno"] not in kept]
        written = [r for r in after if r["_hoodie_commit_seqno"] not in had]
        olds, news = _by_group_and_key(removed), _by_group_and_key(written)
        for where in olds.keys() | news.keys():
            for old, new in itertools.zip_longest(olds.get(where, []), news.get(where, [])):
                events.append(("u" if old and new else "d" if old else "i", commit.requested_time,
                               _epoch_image(old), _epoch_image(new)))
    return event_multiset(events)


def _in_range(commits: list[Instant], first: int, last: int, *, by_completion: bool) -> list[int]:
    """Indexes (in requested order) of the commits in the range (commits[first - 1], commits[last]]: on tables of
    version 8+ by completion time, where a write requested before another may complete after it. Each one's
    time travel before and after still tells its own changes: writers beside each other touch other files."""
    if not by_completion:
        return list(range(first, last + 1))
    begin = commits[first - 1].completion_time or "" if first else ""
    end = commits[last].completion_time or ""
    return [i for i, c in enumerate(commits) if begin < (c.completion_time or "") <= end]


def _data_only(events: Counter[tuple[Any, ...]]) -> Counter[tuple[Any, ...]]:
    """Change events with their images' meta columns left out (Hudi's .cdc images have none)."""
    def data(image: Any) -> Any:
        return image if image is None else tuple((k, v) for k, v in image if not k.startswith("_hoodie_")
                                                 or k == "_hoodie_is_deleted")
    return Counter({(op, ts, data(before), data(after)): n for (op, ts, before, after), n in events.items()})


def _oracle(tables: dict[str, HudiTable]) -> HudiTable:
    """The table as Hudi 1.2 reads it (the oracle where releases disagree), else the writer's."""
    return tables.get("1.2") or next(iter(tables.values()))


EQUAL_TO_THE_MODEL = "equal to the model (Hudi's time travel)"


def compare_changes_with_model(plain: SparkSession, hudi: HudiTable, request: Request, commits: list[Instant],
                               where: str, mine: Counter[tuple[Any, ...]] | None = None) -> Outcome:
    """A change request held against :func:`model_changes` (Hudi's time travel) instead of Hudi's CDC query;
    ``mine``: our answer, where the caller has it already."""
    outcome = Outcome()
    pair = _pair(plain, hudi, request, commits)
    if pair is None:
        return outcome
    end = commits.index(commits[request.commit])
    first = request.begin  # the range's begin (commits[begin - 1], or the earliest) is exclusive
    if mine is None:
        try:
            with library_errors():
                _, mine = _rows(pair[0]())
        except REFUSALS as refusal:
            outcome.compared[f"refused: {type(refusal).__name__}"] += 1
            return outcome
    try:
        model = model_changes(hudi, commits, first, end)
    except (SparkConnectException, PySparkException) as error:  # Hudi's time travel fails on its own table
        outcome.compared[f"no oracle: {str(error).splitlines()[0][:100]}"] += 1
        return outcome
    mine_data, model_data = _data_only(mine), _data_only(model)
    if mine_data == model_data:
        outcome.compared[EQUAL_TO_THE_MODEL] += 1
    else:
        outcome.differences.append(_difference(f"{where}, the model of Hudi's time travel", request,
                                                ({}, mine_data), ({}, model_data)))
        outcome.compared["different"] += 1
    return outcome


def time_travel_torn_by_compaction(commits: Iterable[Instant]) -> list[Instant]:
    """Delta commits still in flight when a compaction was requested (a writer beside a compaction, or 1.0.2
    upgrading a 0.15 MOR table, which compacts it while its first commit is written). Version 8+ slices log files
    by completion time, so such a commit's log files belong to the compaction's new file slice, and Hudi's time
    travel to a moment between the two requests reads the old slice: the commit's new files without its log
    blocks, part of a returned commit (docs). Ours shows the whole commit."""
    commits = list(commits)
    compactions = _compaction_requests(commits)
    return [c for c in commits if c.action is Action.DELTA_COMMIT and c.completion_time
            and any(c.requested_time < r < c.completion_time for r in compactions)]


def _compaction_requests(commits: list[Instant]) -> list[str]:
    """Requested times of the compactions among ``commits`` (on a MOR table every commit action is one)."""
    return [c.requested_time for c in commits if c.action in (Action.COMMIT, Action.COMPACTION)]


def _torn_at(commits: list[Instant], request: Request) -> bool:
    """Whether Hudi's time travel to the request's end, or any commit of its range, is torn by a compaction."""
    torn = time_travel_torn_by_compaction(commits)
    compactions = _compaction_requests(commits)
    end = commits.index(commits[request.commit]) if -request.commit <= len(commits) else len(commits) - 1
    first = end if request.kind == "as_of" else max(request.begin - 1, 0)
    return any(d.requested_time <= moment.requested_time < r < str(d.completion_time)
               for moment in commits[first:end + 1] for d in torn for r in compactions)


def compare_request(plain: SparkSession, tables: dict[str, HudiTable], request: Request, commits: list[Instant],
                    where: str, url_encoded: bool = False, spark4: Spark4Reader | None = None) -> Outcome:
    """One request, ours against Hudi's read on each release of ``tables``, in the request's client time zone.
    Where the releases disagree, Hudi 1.2's answer is the oracle (README: the writer release); the other's
    difference is counted and kept as an example. Where ours equals Hudi's, ``spark4`` reads it again on a Spark
    4 server against Hudi's rows filtered there."""
    outcome = Outcome()
    sessions = [plain, *(table.spark for table in tables.values())]
    with client_zone(request.zone), session_zone(sessions, request.session_zone):
        pairs = {release: _pair(plain, table, request, commits) for release, table in tables.items()}
        if any(pair is None for pair in pairs.values()):
            return outcome
        theirs = {release: _their_rows(pair[1], request, url_encoded)
                  for release, pair in pairs.items() if pair is not None}
        answers = {release: rows for release, rows in theirs.items() if not isinstance(rows, str)}
        try:
            with library_errors():  # a refusal a Spark worker raised, as the library's own class
                mine = _rows(next(iter(pairs.values()))[0]())  # type: ignore[index]
        except REFUSALS as refusal:
            outcome.compared[f"refused: {type(refusal).__name__}"] += 1
            return outcome
        except (SparkConnectException, PySparkException) as error:  # Spark refuses the predicate itself
            if answers:
                raise
            outcome.compared[f"refused by Spark in both: {str(error).splitlines()[0][:80]}"] += 1
            return outcome
        if not answers:
            outcome.compared[f"no oracle: {next(iter(theirs.values()))}"] += 1
            return outcome
        if all(rows == mine for rows in answers.values()):
            outcome.compared["equal"] += 1
            if spark4 is not None and "1.2" in answers:
                _on_spark4(spark4, tables["1.2"], pairs["1.2"], request, commits, where, url_encoded, outcome)
            return outcome
        if answers.get("1.2") == mine:
            other = next(release for release, rows in answers.items() if rows != mine)
            outcome.compared[f"equal to Hudi 1.2's; Hudi {other}'s differs"] += 1
            outcome.release_differences.append(_difference(f"{where}, Hudi {other}", request, mine, answers[other]))
            return outcome
        release = "1.2" if "1.2" in answers else next(r for r, rows in answers.items() if rows != mine)
        if tables[release].properties.metadata_partitions and _their_rows(
                read_pair(plain, tables[release].base_path, tables[release].properties.ranges_by_completion,
                          tables[release].hudi.listing_storage(), request, commits)[1],  # type: ignore[index]
                request, url_encoded) == mine:
            # Hudi inconsistent with itself: its read through its metadata table unlike its listing of storage,
            # which ours equals (a commit whose files the metadata table lacks: docs, seed 70072)
            outcome.compared["Hudi's metadata-table read unlike its own listing read, which ours equals"] += 1
            outcome.release_differences.append(_difference(f"{where}, Hudi {release} through its metadata table "
                                                            "(ours equals its listing read)", request, mine,
                                                            answers[release]))
            return outcome
        if request.kind == "changes" and compare_changes_with_model(
                plain, _oracle(tables), request, commits, where, mine[1]).compared[EQUAL_TO_THE_MODEL]:
            # Hudi inconsistent with itself: its CDC query unlike its own time travel, which ours equals (docs:
            # the 1.0.2 run's seed 9601, a delete in the null partition); kept as an example, not a failure
            outcome.compared["Hudi's CDC unlike its own time travel, which ours equals"] += 1
            outcome.release_differences.append(_difference(f"{where}, Hudi {release}'s CDC (ours equals its time "
                                                            "travel)", request, mine, answers[release]))
            return outcome
        if request.kind == "incremental" and _their_rows(
                lambda: incremental_model(_oracle(tables), request, commits), request, url_encoded) == mine:
            # Hudi's incremental query merges the range's log blocks alone: a record of the range that lost to an
            # older one is returned until a compaction folds the two (docs); ours answers as its time travel does
            outcome.compared["Hudi's incremental unlike its own time travel, which ours equals"] += 1
            outcome.release_differences.append(_difference(f"{where}, Hudi {release}'s incremental (ours equals "
                                                            "its time travel)", request, mine, answers[release]))
            return outcome
        if request.kind in ("as_of", "incremental", "changes") and _torn_at(commits, request):
            # a write completed after a compaction requested after it began: Hudi's time travel shows part of the
            # commit there, ours the whole (time_travel_torn_by_compaction); no oracle for that request
            outcome.compared["no oracle: Hudi's time travel torn by a compaction beside a writer"] += 1
            outcome.release_differences.append(_difference(f"{where}, Hudi {release} (its time travel torn by a "
                                                            "compaction)", request, mine, answers[release]))
            return outcome
        outcome.differences.append(_difference(f"{where}, Hudi {release}", request, mine, answers[release]))
        outcome.compared["different"] += 1
    return outcome


def _on_spark4(spark4: Spark4Reader, table: HudiTable, pair: Any, request: Request, commits: list[Instant],
               where: str, url_encoded: bool, outcome: Outcome) -> None:
    """The request read by ours on Spark 4, held to Hudi's unfiltered answer (copied as Parquet by the Hudi
    server) filtered by Spark 4."""
    from integration.differential.spark4_reader import Question

    copy = f"{table.base_path.rstrip('/')}-answers/{uuid.uuid4().hex[:8]}"
    pair[1]().write.mode("overwrite").parquet(copy)
    answer = spark4.compare(Question(table.base_path, request, commits, table.properties.ranges_by_completion,
                                     copy, url_encoded, where))
    outcome.spark4[answer.kind] += 1
    if answer.data_source is not None:
        outcome.spark4[f"format('hudi') {answer.data_source}"] += 1
    if answer.difference is not None:
        outcome.differences.append(answer.difference)


def incremental_model(hudi: HudiTable, request: Request, commits: list[Instant]) -> DataFrame:
    """The model of an incremental range (begin, end]: Hudi's time travel to its end, the rows whose commit is in
    the range (what its full-scan fallback answers too)."""
    end = commits.index(commits[request.commit])
    state = hudi.hudi.as_of(commits[end], with_meta_columns=True)
    if request.begin == 0:  # from the earliest: every row time travel shows, archived commits' too
        return state
    selected = [c.requested_time for c in commits[request.begin:end + 1]]
    return state.where(F.col("_hoodie_commit_time").isin(selected))


def run_scenario(spark: SparkSession, plain: SparkSession, path: str, scenario: Scenario,
                 oracles: dict[str, SparkSession] | None = None, spark4: Spark4Reader | None = None) -> Outcome:
    """Writes the scenario's history at ``path`` with ``spark`` (a Hudi server) and compares every request after
    each step with Hudi's read on each of ``oracles`` (release name -> server; default: the writer, 1.2's), and
    where ours equals it, on Spark 4 through ``spark4``."""
    outcome = Outcome()
    written: set[int] = set()
    duplicated = False  # an `insert` (no index lookup) wrote a key the table held: it may hold it twice
    looked_up = scenario.shape.cdc in ("OP_KEY_ONLY", "DATA_BEFORE")  # Hudi finds change images by key
    for number, (step, requests) in enumerate(zip(scenario.steps, scenario.requests, strict=True), start=1):
        if isinstance(step, Concurrent):
            outcome.concurrent.update(write_concurrently(spark, scenario.shape, path, step))
        else:
            write_step(spark, scenario.shape, path, step)
        for write in (step.writes if isinstance(step, Concurrent) else (step,)):
            if isinstance(write, Write) and not write.fails:  # a write a conflict aborted counts too: harmless
                keys = {r.key for r in write.records}
                duplicated = duplicated or (write.operation == "insert" and bool(keys & written))
                written |= keys
        commits = list(TableReader(plain, path).view.timeline().write_commits())
        tables = {release: HudiTable.open(server, path) for release, server in (oracles or {"1.2": spark}).items()}
        for request in requests:
            if request.kind == "changes" and duplicated and looked_up:
                # Hudi's CDC query looks a logged change's images up by key in the file group's new file, and
                # of a key the file holds twice it may take the row the commit did not change (docs): the model
                # of Hudi's time travel is the oracle there
                outcome.add(compare_changes_with_model(plain, _oracle(tables), request, commits,
                                                       f"after step {number} ({step})"))
                continue
            outcome.add(compare_request(plain, tables, request, commits, f"after step {number} ({step})",
                                        scenario.shape.url_encode, spark4))
    return outcome


def reproduction(scenario: Scenario) -> str:
    """Runnable code that replays the scenario (inside the test suite's fixtures ``spark`` and ``plain_spark``)."""
    return ("import datetime\nfrom integration.differential.scenario import *\n"
            "from integration.differential.runner import run_scenario\n"
            f"outcome = run_scenario(spark, plain_spark, path, {scenario!r})\n"
            "assert not outcome.differences, outcome.differences\n")
