"""The conformance matrix: tables Hudi writes across its configuration space, chosen pairwise.

Each :class:`Cell` is one table configuration; :func:`cells` covers every pair of
dimension values at least once (allpairspy), under the constraints Hudi itself
imposes. :func:`write_history` writes the same history into any cell through
Hudi's Spark datasource on the Hudi server, with Hudi's own options (not
``HudiTable``'s defaults), so the table is exactly what a Hudi user would have.

History (keys ``id`` 0..27, partitions a/b/c, ordering field ``ts``):
1. insert ids 0..23 (ts 10);
2. upsert ids 0..5 (ts 20, win), ids 6..7 (ts 5: lose under event-time ordering,
   win under commit-time), insert ids 24..27;
3. delete ids 8..10;
4. upsert ids 11..14, with a new column ``extra`` when the cell adds one, or with ``score`` (int),
   ``ratio`` (float) and ``code`` (int) widened to long, double and string when the cell widens types,
   or, under schema on read, followed by ALTER TABLE renaming ``name`` to ``title``, dropping ``code``,
   widening ``score`` and adding ``extra`` (the later writes use that schema, and a sixth upserts ids 0..3);
5. upsert ids 15..17 (MOR: after an inline compaction on the fourth delta commit).
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections import OrderedDict
from dataclasses import asdict, dataclass
from typing import Any

from allpairspy import AllPairs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

DIMENSIONS: OrderedDict[str, list[str]] = OrderedDict([
    ("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"]),
    ("version", ["6", "8", "9"]),
    ("key_generator", ["simple", "complex", "nonpartitioned", "timestamp", "custom"]),
    ("log_format", ["avro", "parquet"]),
    ("merge", ["event_time", "commit_time", "partial_update", "overwrite_non_defaults"]),
    ("index", ["BLOOM", "SIMPLE", "RECORD_INDEX", "BUCKET"]),
    ("metadata", ["on", "off"]),
    ("cdc", ["off", "DATA_BEFORE_AFTER", "OP_KEY_ONLY"]),
    ("schema_change", ["none", "add_column", "widen_types", "schema_on_read"]),
    # aggressive: Hudi archives all but the last two or three commits as it writes (keep.min 2, max 3)
    ("archival", ["none", "aggressive"]),
    # sql: CREATE TABLE, INSERT INTO, MERGE INTO (full SET, then a partial one), UPDATE, DELETE, ALTER TABLE
    ("writer", ["datasource", "sql"]),
])
_INDEX = {name: i for i, name in enumerate(DIMENSIONS)}


def _allowed(values: list[str]) -> bool:
    """Constraints of Hudi itself (and of meaning): checked on partial rows as allpairspy builds them."""
    def get(name: str) -> str | None:
        i = _INDEX[name]
        return values[i] if i < len(values) else None

    if get("table_type") == "COPY_ON_WRITE" and get("log_format") == "parquet":
        return False  # COW writes no log blocks
    if get("index") == "RECORD_INDEX" and get("metadata") == "off":
        return False  # the record index lives there
    # Hudi 1.2 fails to compact and to read MOR tables of version 6 or 8 with PartialUpdateAvroPayload
    if get("table_type") == "MERGE_ON_READ" and get("version") in ("6", "8") and get("merge") == "partial_update":
        return False
    # nor can it update the record index of a version-6 MOR table after a widening ("cannot support rewrite
    # value for schema type: int since the old schema type is: long", reading the older log blocks)
    if get("table_type") == "MERGE_ON_READ" and get("version") == "6" and get("index") == "RECORD_INDEX" \
            and get("schema_change") == "widen_types":
        return False
    # nor read a timestamp key generator's table with schema on read (its partition column typed as a string
    # meets the long in the files: "PlainLongDictionary" UnsupportedOperationException), so there is no oracle
    if get("key_generator") == "timestamp" and get("schema_change") == "schema_on_read":
        return False
    # nor write wider records (an added column, widened types) into a version-6 MOR table under
    # OverwriteNonDefaultsWithLatestAvroPayload (the second such upsert fails: ArrayIndexOutOfBoundsException in
    # Spark's GenericInternalRow)
    if get("table_type") == "MERGE_ON_READ" and get("version") == "6" and get("merge") == "overwrite_non_defaults" \
            and get("schema_change") in ("add_column", "widen_types"):
        return False
    # nor read a MOR table whose type widening was archived (its snapshot fails: "Parquet column cannot be
    # converted", the older base files' int met as the latest schema's long)
    if get("table_type") == "MERGE_ON_READ" and get("schema_change") == "widen_types" \
            and get("archival") == "aggressive":
        return False
    # SQL writes: keys and partitions as DDL declares them (no timestamp or custom key generators), merging
    # by ordering field or commit time (MERGE INTO brings its own payload), and columns added by ALTER TABLE
    # (type changes there need schema on read)
    return get("writer") != "sql" or (
        get("key_generator") in (None, "simple", "complex", "nonpartitioned")
        and get("merge") in (None, "event_time", "commit_time")
        and get("schema_change") in (None, "none", "add_column"))


@dataclass(frozen=True)
class Cell:
    table_type: str
    version: str
    key_generator: str
    log_format: str
    merge: str
    index: str
    metadata: str
    cdc: str
    schema_change: str
    archival: str = "none"
    writer: str = "datasource"
    # the features of FEATURE_DIMENSIONS, in cells of their own (feature_cells): named in an id only when drawn
    log_compaction: str = "off"
    ordering: str = "ts"
    bootstrap: str = "none"

    @property
    def id(self) -> str:
        values = asdict(self)
        features = {name: values.pop(name) for name in FEATURE_DIMENSIONS}
        drawn = [f"{name}={value}" for name, value in features.items() if value != FEATURE_DIMENSIONS[name][0]]
        return "-".join([*(str(v) for v in values.values()), *drawn])

    @property
    def is_mor(self) -> bool:
        return self.table_type == "MERGE_ON_READ"


# Table features Hudi 1.2 writes that the pairwise dimensions leave out (issue #70), each in a few cells of its own
# beside the usual ones (feature_cells); the first value of each is what every other cell has
FEATURE_DIMENSIONS: OrderedDict[str, list[str]] = OrderedDict([
    # MOR: Hudi's log compaction inline, as soon as a file slice has two log blocks (beside its compaction)
    ("log_compaction", ["off", "on"]),
    # two ordering fields (table version 8+), compared field by field: a tie on ts is broken by score
    ("ordering", ["ts", "ts,score"]),
    # the first write a bootstrap of a Parquet folder of its rows, partitioned hive-style
    ("bootstrap", ["none", "metadata_only", "full_record"]),
])


def feature_cells() -> list[Cell]:
    """Each feature of :data:`FEATURE_DIMENSIONS` on COW and MOR (log compaction: MOR), across table versions,
    indexes, the metadata table, CDC modes and an added column."""
    mor, cow = "MERGE_ON_READ", "COPY_ON_WRITE"
    return [
        Cell(mor, "6", "simple", "avro", "event_time", "BLOOM", "on", "OP_KEY_ONLY", "none", log_compaction="on"),
        Cell(mor, "8", "complex", "parquet", "commit_time", "SIMPLE", "off", "DATA_BEFORE_AFTER", "add_column",
             log_compaction="on"),
        Cell(mor, "9", "simple", "avro", "event_time", "RECORD_INDEX", "on", "off", "none", log_compaction="on"),
        Cell(cow, "8", "simple", "avro", "event_time", "BLOOM", "on", "DATA_BEFORE_AFTER", "none", ordering="ts,score"),
        Cell(mor, "9", "complex", "avro", "event_time", "SIMPLE", "on", "OP_KEY_ONLY", "add_column",
             ordering="ts,score"),
        Cell(mor, "8", "simple", "parquet", "event_time", "BLOOM", "off", "off", "none", ordering="ts,score"),
        Cell(cow, "9", "simple", "avro", "event_time", "BLOOM", "on", "off", "none", bootstrap="metadata_only"),
        Cell(mor, "6", "simple", "avro", "event_time", "SIMPLE", "on", "off", "add_column",
             bootstrap="metadata_only"),
        Cell(cow, "6", "simple", "avro", "event_time", "SIMPLE", "off", "OP_KEY_ONLY", "none",
             bootstrap="full_record"),
        Cell(mor, "9", "simple", "avro", "event_time", "BLOOM", "on", "off", "none", bootstrap="full_record"),
    ]


# The writer release as a dimension where it applies (issue #32): tables Hudi 0.15.0 and 1.0.2 write themselves,
# each of its own table version, through the datasource, merging by event time, with the metadata table; every
# pair of these dimensions' values (integration/test_writer_releases.py)
RELEASE_VERSIONS = {"0.15.0": "6", "1.0.2": "8"}
RELEASE_DIMENSIONS: OrderedDict[str, list[str]] = OrderedDict([
    ("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"]),
    ("key_generator", ["simple", "complex", "nonpartitioned"]),
    ("log_format", ["avro", "parquet"]),
    ("index", ["BLOOM", "RECORD_INDEX"]),
    ("cdc", ["off", "DATA_BEFORE_AFTER", "OP_KEY_ONLY"]),
    ("schema_change", ["none", "add_column"]),
])


def release_cells(release: str) -> list[Cell]:
    """The cells an earlier Hudi release writes: every pair of :data:`RELEASE_DIMENSIONS`' values."""
    def allowed(values: list[str]) -> bool:
        return not (len(values) > 2 and values[0] == "COPY_ON_WRITE" and values[2] == "parquet")  # no log blocks

    rows = [dict(zip(RELEASE_DIMENSIONS, row, strict=True))
            for row in AllPairs(list(RELEASE_DIMENSIONS.values()), filter_func=allowed)]
    return [Cell(r["table_type"], RELEASE_VERSIONS[release], r["key_generator"], r["log_format"], "event_time",
                 r["index"], "on", r["cdc"], r["schema_change"]) for r in rows]


def cells() -> list[Cell]:
    """Every pair of values of any two dimensions, in a stable order; and again on MOR tables alone,
    where the readers merge log files themselves."""
    found = [Cell(*row) for row in AllPairs(list(DIMENSIONS.values()), filter_func=_allowed)]
    mor_only = [["MERGE_ON_READ"] if name == "table_type" else values for name, values in DIMENSIONS.items()]
    found += [Cell(*row) for row in AllPairs(mor_only, filter_func=_allowed)]
    return list(dict.fromkeys(found))


def ci_slice(all_cells: list[Cell]) -> list[Cell]:
    """The cells CI runs on every change: few, yet every value of every dimension in at least one (a log format
    only on a MOR cell: COW writes no log blocks). Greedily, the cell that brings the most values not yet covered
    (the first such, so the slice is stable): five cells, as many as the widest dimension has values (the key
    generators); ``ci/test.sh --full`` runs every cell."""
    def covered(cell: Cell) -> set[tuple[str, str]]:
        return {(n, getattr(cell, n)) for n in DIMENSIONS
                if n != "log_format" or cell.table_type == "MERGE_ON_READ"}

    wanted = {(name, value) for name, values in DIMENSIONS.items() for value in values}
    chosen: list[Cell] = []
    while wanted:
        best = max(all_cells, key=lambda c: len(wanted & covered(c)))
        chosen.append(best)
        wanted -= covered(best)
    return chosen


SCHEMA = ("id int, k2 string, part string, ts long, event_ms long, name string, amount decimal(12,2), "
          "big decimal(24,4), d date, t timestamp, b binary, tags array<string>, attrs map<string,int>, "
          "info struct<a:int,b:string>, tn timestamp_ntz, score int, ratio float, code int")
EXTRA_SCHEMA = SCHEMA + ", extra string"
# Type changes Hudi allows a writer (int to long, float to double, int to string): older files keep the old type
WIDE_SCHEMA = SCHEMA.replace("score int, ratio float, code int", "score long, ratio double, code string")
# Schema on read: ALTER TABLE renames name to title, drops code, widens score and adds extra (columns by id)
EVOLVED_SCHEMA = SCHEMA.replace("name string", "title string").replace(", code int", "").replace(
    "score int", "score long") + ", extra string"
_SCHEMA_ON_READ = {"hoodie.schema.on.read.enable": "true",
                   "hoodie.datasource.write.schema.allow.auto.evolution.column.drop": "true"}
_KEYGEN = "org.apache.hudi.keygen."
_PAYLOADS = {
    "event_time": "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
    "commit_time": "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
    "partial_update": "org.apache.hudi.common.model.PartialUpdateAvroPayload",
    "overwrite_non_defaults": "org.apache.hudi.common.model.OverwriteNonDefaultsWithLatestAvroPayload",
}
_MERGE_MODES = {"event_time": "EVENT_TIME_ORDERING", "commit_time": "COMMIT_TIME_ORDERING"}


def writer_options(cell: Cell, name: str) -> dict[str, str]:
    """Hudi's writer options for the cell, as a Hudi user would set them."""
    options = {
        "hoodie.table.name": name,
        "hoodie.datasource.write.table.type": cell.table_type,
        "hoodie.write.table.version": cell.version,
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.hive_style_partitioning": "false",
        "hoodie.metadata.enable": "true" if cell.metadata == "on" else "false",
        "hoodie.index.type": cell.index,
        "hoodie.clean.automatic": "false",
        "hoodie.parquet.small.file.limit": "0",  # keep inserts in new files, so Hudi's CDC query can read them
        "hoodie.datasource.write.payload.class": _PAYLOADS[cell.merge],
        "hoodie.logfile.data.block.format": cell.log_format,
    }
    if cell.merge in _MERGE_MODES and cell.version != "6":
        options["hoodie.record.merge.mode"] = _MERGE_MODES[cell.merge]
    if cell.metadata == "on":
        options["hoodie.metadata.index.column.stats.enable"] = "true"
    if cell.index == "RECORD_INDEX":
        options["hoodie.metadata.record.index.enable"] = "true"
    if cell.index == "BUCKET":
        options["hoodie.bucket.index.num.buckets"] = "2"
    if cell.cdc != "off":
        options["hoodie.table.cdc.enabled"] = "true"
        options["hoodie.table.cdc.supplemental.logging.mode"] = cell.cdc
    if cell.schema_change == "schema_on_read":
        options |= _SCHEMA_ON_READ
    if cell.archival == "aggressive":
        options |= {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3"}
        if cell.metadata == "on":  # Hudi archives no commit after the metadata table's last compaction
            options["hoodie.metadata.compact.max.delta.commits"] = "1"
    if cell.is_mor:
        options["hoodie.compact.inline"] = "true"
        options["hoodie.compact.inline.max.delta.commits"] = "4"
    if cell.log_compaction == "on":
        options |= {"hoodie.log.compaction.inline": "true", "hoodie.log.compaction.blocks.threshold": "2"}
    options["hoodie.datasource.write.precombine.field"] = cell.ordering
    if cell.bootstrap != "none":  # Hudi bootstraps a folder partitioned hive-style
        options["hoodie.datasource.write.hive_style_partitioning"] = "true"
    keys = {
        "simple": ("id", "part", "SimpleKeyGenerator"),
        "complex": ("id,k2", "part,k2", "ComplexKeyGenerator"),
        "nonpartitioned": ("id", "", "NonpartitionedKeyGenerator"),
        "timestamp": ("id", "event_ms", "TimestampBasedKeyGenerator"),
        "custom": ("id", "part:SIMPLE", "CustomKeyGenerator"),
    }[cell.key_generator]
    options["hoodie.datasource.write.recordkey.field"] = keys[0]
    options["hoodie.datasource.write.partitionpath.field"] = keys[1]
    options["hoodie.datasource.write.keygenerator.class"] = _KEYGEN + keys[2]
    if cell.key_generator == "timestamp":
        options |= {
            "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
            "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd",
            "hoodie.keygen.timebased.timezone": "UTC",
        }
    return options


def _row(key: int, ts: int, name: str) -> tuple[Any, ...]:
    day = dt.date(2024, 1, 1 + key % 3)
    row: tuple[Any, ...] = (
        key, f"k{key % 2}", "abc"[key % 3], ts,
        int(dt.datetime(2024, 1, 1 + key % 3, tzinfo=dt.UTC).timestamp() * 1000),
        name if key % 7 else None,  # nulls at the top level
        decimal.Decimal(f"{key}.{ts % 100:02d}"), decimal.Decimal(f"12345678901234567890.{key:04d}"),
        day, dt.datetime(2024, 1, 1 + key % 3, 10, key % 60, 30), bytes([key, ts % 256]),
        # no null array elements: Hudi's Avro-Parquet writer rejects them (parquet.avro.write-old-list-structure)
        [f"t{key}", "x"] if key % 4 else None, {"n": key} if key % 5 else None,
        (key, None if key % 3 else f"s{key}"), dt.datetime(2024, 1, 1 + key % 3, 8, key % 60, 15, 250000),
        key, key + 0.1, key * 3,
    )
    return row


def _wide_row(key: int, ts: int, name: str) -> tuple[Any, ...]:
    return (*_row(key, ts, name)[:-3], 2**33 + key, key + 0.3, f"c{key}")


def _evolved_row(key: int, ts: int, name: str, extra: str | None) -> tuple[Any, ...]:
    row = _row(key, ts, name)
    return (*row[:-3], 2**33 + key, row[-2], extra)


def _scored(row: tuple[Any, ...], score: int) -> tuple[Any, ...]:
    return (*row[:-3], score, *row[-2:])


BOOTSTRAP_SELECTORS = {
    "metadata_only": "org.apache.hudi.client.bootstrap.selector.MetadataOnlyBootstrapModeSelector",
    "full_record": "org.apache.hudi.client.bootstrap.selector.FullRecordBootstrapModeSelector",
}


def _bootstrap(spark: SparkSession, cell: Cell, path: str, options: dict[str, str], rows: list[tuple[Any, ...]],
               drop_columns: tuple[str, ...]) -> None:
    """``rows`` as a Parquet folder beside the table, partitioned hive-style by ``part``, made the table by Hudi's
    bootstrap of the cell's kind."""
    source = f"{path.rstrip('/')}-source"
    before = spark.conf.get("spark.sql.parquet.outputTimestampType")
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")  # Hudi's bootstrap reads no INT96
    try:
        spark.createDataFrame(rows, SCHEMA).drop(*drop_columns).write.partitionBy("part").mode("overwrite") \
            .parquet(source)
    finally:
        spark.conf.set("spark.sql.parquet.outputTimestampType", before or "INT96")
    # a full-record bootstrap copies the source's values by position into the frame written's schema: a frame of
    # no columns makes it the source's own (the integration/differential runner's bootstrap says why)
    frame = spark.createDataFrame([], StructType([])) if cell.bootstrap == "full_record" \
        else spark.createDataFrame([], SCHEMA).drop(*drop_columns)
    frame.write.format("hudi").options(**options).option("hoodie.datasource.write.operation", "bootstrap") \
        .option("hoodie.bootstrap.base.path", source) \
        .option("hoodie.bootstrap.mode.selector", BOOTSTRAP_SELECTORS[cell.bootstrap]) \
        .option("hoodie.metadata.index.column.stats.enable", "false").option("hoodie.write.ignore.failed", "false") \
        .mode("overwrite").save(path)


def _alter_table(spark: SparkSession, path: str) -> None:
    """Hudi's ALTER TABLE on the table at ``path`` (through a catalog entry), as a schema-on-read user would."""
    name = f"conformance_{uuid.uuid4().hex[:12]}"
    for key, value in _SCHEMA_ON_READ.items():
        spark.conf.set(key, value)
    try:
        spark.sql(f"CREATE TABLE {name} USING hudi LOCATION '{path}'")
        spark.sql(f"ALTER TABLE {name} RENAME COLUMN name TO title")
        spark.sql(f"ALTER TABLE {name} DROP COLUMN code")
        spark.sql(f"ALTER TABLE {name} ALTER COLUMN score TYPE bigint")
        spark.sql(f"ALTER TABLE {name} ADD COLUMNS (extra string)")
        spark.sql(f"DROP TABLE {name}")  # the catalog entry only: the table's files stay
    finally:
        for key in _SCHEMA_ON_READ:
            spark.conf.unset(key)


def write_history(spark: SparkSession, cell: Cell, path: str, extra_options: dict[str, str] | None = None,
                  drop_columns: tuple[str, ...] = ()) -> None:
    """The module's history, written through Hudi's datasource with the cell's options (and ``extra_options``),
    without ``drop_columns`` (for formats that cannot hold them)."""
    options = writer_options(cell, "conformance") | (extra_options or {})
    if cell.schema_change == "schema_on_read":  # Hudi's InternalSchema has no type for timestamp_ntz
        drop_columns = (*drop_columns, "tn")
    if cell.writer == "sql":
        _write_history_in_sql(spark, cell, path, options, drop_columns)
        return

    def write(rows: list[tuple[Any, ...]], operation: str, schema: str = SCHEMA) -> None:
        df: DataFrame = spark.createDataFrame(rows, schema).drop(*drop_columns)
        df.write.format("hudi").options(**options).option("hoodie.datasource.write.operation", operation) \
            .mode("append").save(path)

    if cell.bootstrap == "none":
        write([_row(k, 10, f"n{k}") for k in range(24)], "insert")
    else:
        _bootstrap(spark, cell, path, options, [_row(k, 10, f"n{k}") for k in range(24)], drop_columns)
    # under two ordering fields, ids 18 and 19 tie on ts: 18's higher score wins, 19's lower one loses
    ties = [_scored(_row(k, 10, f"tie{k}"), 1000 if k == 18 else -1000) for k in (18, 19)] \
        if cell.ordering != "ts" else []
    write([_row(k, 20, f"u{k}") for k in range(6)] + [_row(k, 5, f"late{k}") for k in (6, 7)]
          + [_row(k, 20, f"n{k}") for k in range(24, 28)] + ties, "upsert")
    write([_row(k, 30, "gone") for k in (8, 9, 10)], "delete")
    if cell.schema_change == "add_column":
        write([(*_row(k, 40, f"x{k}"), f"e{k}") for k in range(11, 15)], "upsert", EXTRA_SCHEMA)
        write([(*_row(k, 50, f"y{k}"), None if k % 2 else f"f{k}") for k in range(15, 18)], "upsert",
              EXTRA_SCHEMA)
    elif cell.schema_change == "schema_on_read":
        write([_row(k, 40, f"x{k}") for k in range(11, 15)], "upsert")
        _alter_table(spark, path)  # after an upsert: Hudi's ALTER TABLE cannot find a schema in a delete commit
        write([_evolved_row(k, 50, f"y{k}", None) for k in range(15, 18)], "upsert", EVOLVED_SCHEMA)
        # records of files written before the rename, updated after it (MOR: new names in logs, old in bases)
        write([_evolved_row(k, 60, f"z{k}", f"e{k}") for k in range(4)], "upsert", EVOLVED_SCHEMA)
    elif cell.schema_change == "widen_types":
        write([_wide_row(k, 40, f"x{k}") for k in range(11, 15)], "upsert", WIDE_SCHEMA)
        write([_wide_row(k, 50, f"y{k}") for k in range(15, 18)], "upsert", WIDE_SCHEMA)
    else:
        write([_row(k, 40, f"x{k}") for k in range(11, 15)], "upsert")
        write([_row(k, 50, f"y{k}") for k in range(15, 18)], "upsert")



# what CREATE TABLE declares itself (primaryKey, preCombineField, type, PARTITIONED BY), or SQL writes choose
_DDL_KEYS = ("hoodie.table.name", "hoodie.datasource.write.table.type", "hoodie.datasource.write.precombine.field",
             "hoodie.datasource.write.recordkey.field", "hoodie.datasource.write.partitionpath.field",
             "hoodie.datasource.write.keygenerator.class", "hoodie.datasource.write.payload.class")


def _write_history_in_sql(spark: SparkSession, cell: Cell, path: str, options: dict[str, str],
                          drop_columns: tuple[str, ...]) -> None:
    """The module's history as a SQL user writes it: the same records, an UPDATE after the delete, and on version
    8+ the last upsert a partial SET (on MOR tables, partial-update log blocks)."""
    name = f"conformance_{uuid.uuid4().hex[:12]}"
    keys = options["hoodie.datasource.write.recordkey.field"]
    names = [c.split()[0] for c in SCHEMA.split(", ") if c.split()[0] not in drop_columns]
    columns = ", ".join(c for c in SCHEMA.split(", ") if c.split()[0] not in drop_columns)
    partition_fields = [f for f in options["hoodie.datasource.write.partitionpath.field"].split(",") if f]
    partitions = ", ".join(sorted(partition_fields, key=names.index))  # Hudi wants the table's column order
    properties = {k: v for k, v in options.items() if k not in _DDL_KEYS} | {
        "type": "mor" if cell.is_mor else "cow", "primaryKey": keys, "preCombineField": "ts"}
    spark.sql(f"CREATE TABLE {name} ({columns}) USING hudi "
              + (f"PARTITIONED BY ({partitions}) " if partitions else "")
              + f"LOCATION '{path}' TBLPROPERTIES ({', '.join(f'{k!r} = {v!r}' for k, v in properties.items())})")
    on = " AND ".join(f"t.{key} = s.{key}" for key in keys.split(","))

    def source(rows: list[tuple[Any, ...]], schema: str = SCHEMA) -> str:
        spark.createDataFrame(rows, schema).drop(*drop_columns).createOrReplaceTempView("conformance_source")
        return "conformance_source"

    def merge(rows: list[tuple[Any, ...]], schema: str = SCHEMA, assignments: str = "*") -> None:
        spark.sql(f"MERGE INTO {name} t USING {source(rows, schema)} s ON {on} "
                  f"WHEN MATCHED THEN UPDATE SET {assignments} WHEN NOT MATCHED THEN INSERT *")

    try:
        # by position, in the table's order (Spark puts partition columns last)
        ordered = ", ".join(c for c in spark.table(name).columns if not c.startswith("_hoodie_"))
        spark.sql(f"INSERT INTO {name} SELECT {ordered} FROM {source([_row(k, 10, f'n{k}') for k in range(24)])}")
        merge([_row(k, 20, f"u{k}") for k in range(6)] + [_row(k, 5, f"late{k}") for k in (6, 7)]
              + [_row(k, 20, f"n{k}") for k in range(24, 28)])
        spark.sql(f"DELETE FROM {name} WHERE id IN (8, 9, 10)")
        # (before the partial SET: Hudi 1.2's UPDATE over partial-update log blocks can fail decoding the decimals)
        spark.sql(f"UPDATE {name} SET name = 'updated', ts = 35 WHERE id IN (1, 20)")
        # partial SETs where Hudi has partial updates (version 8+; on version 6 Hudi 1.2's MERGE INTO writes the
        # columns a partial SET leaves out as nulls)
        partial = "t.name = s.name, t.ts = s.ts" if cell.version != "6" else "*"
        if cell.schema_change == "add_column":
            spark.sql(f"ALTER TABLE {name} ADD COLUMNS (extra string)")
            merge([(*_row(k, 40, f"x{k}"), f"e{k}") for k in range(11, 15)], EXTRA_SCHEMA)
            merge([(*_row(k, 50, f"y{k}"), None if k % 2 else f"f{k}") for k in range(15, 18)], EXTRA_SCHEMA,
                  partial + ", t.extra = s.extra" if partial != "*" else partial)
        else:
            merge([_row(k, 40, f"x{k}") for k in range(11, 15)])
            merge([_row(k, 50, f"y{k}") for k in range(15, 18)], assignments=partial)
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")  # the catalog entry only: the table's files stay
