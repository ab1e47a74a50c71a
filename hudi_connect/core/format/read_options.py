"""Hudi's read options as a query: what ``spark.read.format("hudi").options(...)`` asks of a table.

The options a Hudi user passes to Hudi's Spark datasource, read as Hudi 1.2 reads them
(``DataSourceReadOptions``): the query type, time travel's ``as.of.instant``, the incremental range and its
format, the full-scan fallback. An option that would change the answer and is not implemented is refused by
name; options that only tune how Hudi's own reader works (its file index, data skipping, the metadata table
for listing) leave the answer as it is, and are accepted. Keys are compared lower-cased, as Spark hands a data
source its options.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from hudi_connect.core.errors import InvalidOptionError, UnsupportedOperationError
from hudi_connect.core.format.timeline import query_instant_time

QUERY_TYPE = "hoodie.datasource.query.type"
AS_OF_INSTANT = "as.of.instant"
BEGIN_INSTANT = "hoodie.datasource.read.begin.instanttime"
END_INSTANT = "hoodie.datasource.read.end.instanttime"
INCREMENTAL_FORMAT = "hoodie.datasource.query.incremental.format"
FALLBACK_FULL_SCAN = "hoodie.datasource.read.incr.fallback.fulltablescan.enable"
PATH, PATHS = "path", "paths"
START_OFFSET = "hoodie.datasource.streaming.startOffset"
MAX_FILES_PER_TRIGGER = "maxFilesPerTrigger"  # Spark's rate limit of file streams (its file source, Delta's)


class QueryType(Enum):
    """Hudi's ``hoodie.datasource.query.type``."""

    SNAPSHOT = "snapshot"
    READ_OPTIMIZED = "read_optimized"
    INCREMENTAL = "incremental"


# Options that tune how Hudi's reader finds files or spends memory, never which rows it returns: ours answers the
# same without them (it lists through the metadata table where the table has one, and prunes where it is sound).
ANSWER_NEUTRAL = frozenset({
    "hoodie.metadata.enable",
    "hoodie.enable.data.skipping",
    "hoodie.file.index.enable",
    "hoodie.datasource.read.file.index.listing.mode",
    "hoodie.datasource.read.file.index.listing.partition-path-prefix.analysis.enabled",
    "hoodie.datasource.read.use.new.parquet.file.format",
    "hoodie.file.group.reader.enabled",
    "hoodie.memory.merge.max.size",
    "hoodie.memory.spillable.map.path",
    "hoodie.common.spillable.diskmap.type",
    "hoodie.common.diskmap.compression.enabled",
    "hoodie.datasource.read.extract.partition.values.from.path",
    "hoodie.schema.on.read.enable",
})
# Which option says what (each option listed once): the table of docs/format-hudi.md. A stream's options are
# accepted by a batch read too, and mean nothing there, as in Hudi's own
STREAMING = frozenset({START_OFFSET.lower(), MAX_FILES_PER_TRIGGER.lower()})
SUPPORTED = frozenset({QUERY_TYPE, AS_OF_INSTANT, BEGIN_INSTANT, END_INSTANT, INCREMENTAL_FORMAT,
                       FALLBACK_FULL_SCAN, PATH, *STREAMING})


@dataclass(frozen=True)
class ReadQuery:
    """One read of a table at ``path``: Hudi's query type, and its instant or range (instant-time text)."""

    path: str
    query_type: QueryType = QueryType.SNAPSHOT
    as_of: str | None = None
    begin: str | None = None
    end: str | None = None
    fallback_to_full_scan: bool = True
    changes: bool = False  # incremental in Hudi's CDC format (incremental.format=cdc): change events, not records


def read_query(options: Mapping[str, str]) -> ReadQuery:
    """The query Hudi's read options ask for; an option that would change the answer and is not implemented, or a
    contradictory combination, is refused by name."""
    return _query({key.lower(): value for key, value in options.items()}, streaming=False)


def _query(given: Mapping[str, str], *, streaming: bool) -> ReadQuery:
    """:func:`read_query` of lower-cased options; ``streaming``: a stream's, whose range is its offsets'."""
    if PATHS in given:
        raise UnsupportedOperationError(f"reading several tables in one load ({PATHS}={given[PATHS]}): load one "
                                        "table's path at a time")
    path = given.get(PATH, "").strip()
    if not path:
        raise InvalidOptionError("a Hudi read needs the table's path: load(path) or option('path', ...)")
    unknown = sorted(key for key in given if key not in SUPPORTED and key not in ANSWER_NEUTRAL)
    if unknown:
        named = ", ".join(unknown)
        raise UnsupportedOperationError(
            f"read options not implemented by hudi-connect's reader, which would be ignored: {named}; remove them, "
            "or read with Hudi's own datasource")
    raw_type = given.get(QUERY_TYPE, QueryType.SNAPSHOT.value).strip().lower()
    try:
        query_type = QueryType(raw_type)
    except ValueError:
        raise InvalidOptionError(f"{QUERY_TYPE}={raw_type!r}: Hudi's query types are "
                                 f"{', '.join(t.value for t in QueryType)}") from None
    fallback = _boolean(given, FALLBACK_FULL_SCAN, default=True)
    as_of = given.get(AS_OF_INSTANT)
    if query_type is not QueryType.INCREMENTAL:
        stray = [key for key in (BEGIN_INSTANT, END_INSTANT, INCREMENTAL_FORMAT) if key in given]
        if stray:
            raise InvalidOptionError(f"{', '.join(stray)} only apply to {QUERY_TYPE}=incremental, not {raw_type}")
        if as_of is not None and query_type is QueryType.READ_OPTIMIZED:
            raise UnsupportedOperationError(f"{AS_OF_INSTANT} with {QUERY_TYPE}=read_optimized: time travel of a "
                                            "read-optimized query is not implemented")
        return ReadQuery(path, query_type, as_of=as_of)
    if as_of is not None:
        raise InvalidOptionError(f"{AS_OF_INSTANT} applies to snapshot queries, not {QUERY_TYPE}=incremental")
    begin = given.get(BEGIN_INSTANT)
    if streaming:
        stray = [key for key in (BEGIN_INSTANT, END_INSTANT) if key in given]
        if stray:
            raise InvalidOptionError(f"{', '.join(stray)} bound batch reads: a stream starts at "
                                     f"{START_OFFSET} and reads every commit after it")
    elif begin is None:
        raise InvalidOptionError(f"{QUERY_TYPE}=incremental needs {BEGIN_INSTANT} (an instant time, or 'earliest')")
    incremental_format = given.get(INCREMENTAL_FORMAT, "latest_state").strip().lower()
    if incremental_format not in ("latest_state", "cdc"):
        raise InvalidOptionError(f"{INCREMENTAL_FORMAT}={incremental_format!r}: Hudi's formats are latest_state "
                                 "and cdc")
    return ReadQuery(path, query_type, begin=_begin(begin), end=given.get(END_INSTANT),
                     fallback_to_full_scan=fallback, changes=incremental_format == "cdc")


def _begin(text: str | None) -> str | None:
    """A begin instant as our ranges name it: Hudi's "from the start", zeros ("000" in its quick start; "0"),
    before every instant time as Hudi orders them, is ``earliest``; any other text as given."""
    if text is not None and text.strip() and not text.strip("0 "):
        return "earliest"
    return text


@dataclass(frozen=True)
class StreamQuery:
    """A stream of the table's commits at ``path`` from ``start``: ``earliest``, ``latest`` or an instant time;
    ``changes``: as change events (Hudi's CDC format), else the latest state of the records each commit wrote."""

    path: str
    start: str = "earliest"
    changes: bool = False
    max_files: int | None = None  # per micro-batch, whole commits (at least one): the files their commits wrote


def stream_query(options: Mapping[str, str]) -> StreamQuery:
    """The stream Hudi's options ask for: its start offset, its format (``cdc`` with
    ``hoodie.datasource.query.type=incremental``, as Hudi's streaming source takes it) and Spark's
    ``maxFilesPerTrigger``; a read-optimized or time travel stream is refused by name."""
    given = {key.lower(): value for key, value in options.items()}
    query = _query(given, streaming=True)
    if query.query_type is QueryType.READ_OPTIMIZED or query.as_of is not None:
        raise UnsupportedOperationError(f"a stream reads each commit's records (incremental): "
                                        f"{QUERY_TYPE}=read_optimized and {AS_OF_INSTANT} are for batch reads")
    start = given.get(START_OFFSET.lower(), "earliest").strip()
    start = start.lower() if start.lower() in ("earliest", "latest") else query_instant_time(start)
    return StreamQuery(query.path, start, query.changes, _positive(given, MAX_FILES_PER_TRIGGER.lower()))


def _positive(given: Mapping[str, str], key: str) -> int | None:
    value = given.get(key)
    if value is None:
        return None
    if not value.strip().isdigit() or int(value) < 1:
        raise InvalidOptionError(f"{key}={value!r}: a whole number of at least 1")
    return int(value)


def _boolean(given: Mapping[str, str], key: str, *, default: bool) -> bool:
    value = given.get(key)
    if value is None:
        return default
    if value.strip().lower() not in ("true", "false"):
        raise InvalidOptionError(f"{key}={value!r}: true or false")
    return value.strip().lower() == "true"
