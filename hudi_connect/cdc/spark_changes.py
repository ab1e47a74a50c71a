"""Spark's own change-row shape (SPARK-55668, Spark 4.2's ``spark.read.changes``) for a Hudi change stream.

A change row is a row of the table's data columns and three of Spark's: ``_change_type`` (insert, delete,
update_preimage, update_postimage), ``_commit_version`` (here the commit's completion time as a BIGINT:
its order is the order commits took effect) and ``_commit_timestamp`` (that time as a TIMESTAMP). Spark's
post-processing, with its option names and defaults, applied as Spark applies it to a connector that
declares what Hudi's change stream holds:

- updates Hudi knows (``u`` events) are emitted as an update_preimage and update_postimage pair, which
  Spark never relabels;
- a replace commit (insert overwrite) deletes each key from its old file group and inserts it into the new
  one: a delete and an insert of one key in one commit, which is a *carry-over* when the record is the same
  (dropped unless ``deduplication_mode="none"``) and an update when it is not (``compute_updates``);
- ``deduplication_mode="netChanges"`` collapses each key's changes over the range to one net effect:
  nothing, an insert, a delete, or the first pre-image and the last post-image (a delete and an insert
  without ``compute_updates``).

Pure: builds a plan from the ``typed`` events, runs nothing.
"""

from __future__ import annotations

from typing import Literal

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from hudi_connect.core.format.table_schema import META_COLUMNS

DeduplicationMode = Literal["none", "dropCarryovers", "netChanges"]
DEDUPLICATION_MODES: tuple[DeduplicationMode, ...] = ("none", "dropCarryovers", "netChanges")
CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP = "_change_type", "_commit_version", "_commit_timestamp"

_KEY, _SIDE, _IMAGE = "__hudi_key", "__hudi_side", "__hudi_image"  # helpers, dropped before the rows leave


def check_options(deduplication_mode: str, compute_updates: bool) -> None:
    """Refuse what Spark refuses (its INVALID_CDC_OPTION errors, by the same names)."""
    if deduplication_mode not in DEDUPLICATION_MODES:
        raise ValueError(f"deduplication_mode must be one of {', '.join(DEDUPLICATION_MODES)}, not "
                         f"{deduplication_mode!r} (Spark's INVALID_DEDUPLICATION_MODE)")
    if compute_updates and deduplication_mode == "none":
        raise ValueError("compute_updates needs deduplication_mode 'dropCarryovers' or 'netChanges': a replace "
                         "commit's carry-over pairs would be labelled updates (Spark's "
                         "UPDATE_DETECTION_REQUIRES_CARRY_OVER_REMOVAL)")


def spark_change_rows(typed: DataFrame, schema: StructType, *, deduplication_mode: DeduplicationMode,
                      compute_updates: bool, commit_millis: Column) -> DataFrame:
    """The ``typed`` events (op, record_key, completion_time, before, after) as Spark's change rows.
    ``schema``: the images' struct type; ``commit_millis``: epoch milliseconds of ``completion_time``."""
    check_options(deduplication_mode, compute_updates)
    data = [f.name for f in schema.fields if f.name not in META_COLUMNS]
    op = F.col("op")
    # each event as one or two rows: its side (0: the image before, 1: after) and change type
    before = F.when(op.isin("u", "d"), F.struct(
        F.col("before").alias(_IMAGE), F.lit(0).alias(_SIDE),
        F.when(op == "u", "update_preimage").otherwise("delete").alias(CHANGE_TYPE)))
    after = F.when(op.isin("u", "i"), F.struct(
        F.col("after").alias(_IMAGE), F.lit(1).alias(_SIDE),
        F.when(op == "u", "update_postimage").otherwise("insert").alias(CHANGE_TYPE)))
    rows = typed.select(
        F.col("record_key").alias(_KEY), F.col("completion_time").cast("long").alias(COMMIT_VERSION),
        F.timestamp_millis(commit_millis).alias(COMMIT_TIMESTAMP),
        F.inline(F.filter(F.array(before, after), lambda side: side.isNotNull())))
    rows = rows.select(*(F.col(_IMAGE)[name].alias(name) for name in data), CHANGE_TYPE, COMMIT_VERSION,
                       COMMIT_TIMESTAMP, _KEY, _SIDE)
    rows = _replaced_pairs(rows, _record(schema, data), drop_carryovers=deduplication_mode != "none",
                           compute_updates=compute_updates)
    if deduplication_mode == "netChanges":
        rows = _net_changes(rows, compute_updates)
    return rows.drop(_KEY, _SIDE)


def _record(schema: StructType, data: list[str]) -> Column:
    """A row's data columns as one comparable value (JSON where a map makes the struct incomparable)."""
    record = F.struct(*(F.col(name) for name in data))
    has_map = any("map<" in schema[name].dataType.simpleString() for name in data)
    return F.to_json(record) if has_map else record


def _replaced_pairs(rows: DataFrame, record: Column, *, drop_carryovers: bool, compute_updates: bool) -> DataFrame:
    """A delete and an insert of one key in one commit (a replace commit moved the record): dropped where the
    record is the same (a carry-over), labelled update_preimage and update_postimage with ``compute_updates``."""
    in_commit = Window.partitionBy(_KEY, COMMIT_VERSION)
    kind = F.col(CHANGE_TYPE)
    deletes = F.sum(F.when(kind == "delete", 1).otherwise(0)).over(in_commit)
    inserts = F.sum(F.when(kind == "insert", 1).otherwise(0)).over(in_commit)
    pair_of_rows = (deletes == 1) & (inserts == 1) & (F.count(F.lit(1)).over(in_commit) == 2)
    rows = rows.select("*", pair_of_rows.alias("__pair"),
                       (F.size(F.collect_set(record).over(in_commit)) == 1).alias("__same"))
    pair = F.col("__pair")
    if drop_carryovers:
        rows = rows.where(~(pair & F.col("__same")))
    if compute_updates:
        rows = rows.withColumn(CHANGE_TYPE, F.when(pair & (kind == "delete"), "update_preimage")
                               .when(pair & (kind == "insert"), "update_postimage").otherwise(kind))
    return rows.drop("__pair", "__same")


def _net_changes(rows: DataFrame, compute_updates: bool) -> DataFrame:
    """Each key's changes collapsed over the range (Spark's netChanges): whether it existed before the range
    (its first row is a delete or pre-image) and after it (its last row an insert or post-image) decide."""
    ordered = Window.partitionBy(_KEY).orderBy(COMMIT_VERSION, _SIDE)
    whole = ordered.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    kind = F.col(CHANGE_TYPE)
    existed = F.first(kind).over(whole).isin("delete", "update_preimage")
    exists = F.last(kind).over(whole).isin("insert", "update_postimage")
    position, count = F.row_number().over(ordered), F.count(F.lit(1)).over(whole)
    marked = rows.select("*", existed.alias("__existed"), exists.alias("__exists"), position.alias("__position"),
                         count.alias("__count"))
    first, last = F.col("__position") == 1, F.col("__position") == F.col("__count")
    kept = marked.where((first & F.col("__existed")) | (last & F.col("__exists")))
    both = F.col("__existed") & F.col("__exists")
    relabelled = (F.when(first & both, "update_preimage" if compute_updates else "delete")
                  .when(last & both, "update_postimage" if compute_updates else "insert")
                  .when(first & F.col("__existed"), "delete")
                  .otherwise("insert"))
    return kept.withColumn(CHANGE_TYPE, relabelled).drop("__existed", "__exists", "__position", "__count")
