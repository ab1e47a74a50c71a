"""Functions that run inside Spark's Python workers (``mapInArrow``), shipped as a
session artifact so that the server's Python needs only pyarrow and fastavro.

- :func:`list_table_files`: list a table's data files, hidden log files included.
- :func:`read_file_slices`: read file slices (base file plus log files) and
  merge them by record key as Hudi's snapshot readers do.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_connect.core.errors import UnsupportedTableFeatureError
from hudi_connect.core.executor.base_files import read_base_file
from hudi_connect.core.executor.contracts import LISTING, SLICES, ListedFile
from hudi_connect.core.executor.refusals import planned_file, worker_body
from hudi_connect.core.executor.storage import data_files, join, read_bytes
from hudi_connect.core.format.bootstrap import (
    Bootstrap,
    is_skeleton,
    joined_records,
    skeleton_source,
    with_partition_values_of_path,
)
from hudi_connect.core.format.fs_view import BlockValidity, base_file_instant
from hudi_connect.core.format.internal_schema import ColumnRenames, with_reader_names
from hudi_connect.core.format.log.blocks import data_block_records, delete_records, rollback_target
from hudi_connect.core.format.log.format import HeaderKey, LogBlock, LogBlockType, read_log_blocks
from hudi_connect.core.format.merge import KEY, ORD, SEQ, LogRecords, merge_slice, merge_slice_partial
from hudi_connect.core.format.metadata.hfile import read_hfile
from hudi_connect.core.format.schema_evolution import align
from hudi_connect.core.format.table_schema import COMMIT_TIME_COLUMN, IS_DELETED_COLUMN, RECORD_KEY_COLUMN

LISTING_BATCH_ROWS = 1 << 16
"""The most rows of a listing (or of statistics matches) a task holds before it sends them as one batch: a task
listing a large table streams it rather than holding its share whole."""


def listing_batch(rows: Iterable[tuple[str, str, int]]) -> pa.RecordBatch:
    """(partition, name, size) rows as one batch of the :data:`~hudi_connect.core.executor.contracts.LISTING`
    contract, sorted by partition and name."""
    return LISTING.batch(cast(list[ListedFile], sorted(rows)))  # plain tuples: no NamedTuple per file


def listing_columns(partitions: list[str], names: list[str], sizes: list[int]) -> pa.RecordBatch:
    """A listing given column by column, as one batch of the LISTING contract sorted by partition and name (by
    Arrow: a million files need no Python tuple each)."""
    batch = pa.RecordBatch.from_arrays([pa.array(partitions, pa.string()), pa.array(names, pa.string()),
                                        pa.array(sizes, pa.int64())], schema=LISTING.schema)
    return batch.sort_by([("partition", "ascending"), ("name", "ascending")])


BASE_URI_SCHEMA = pa.schema([("base_uri", pa.string())])  # the input of a task listing a table's files


@worker_body
def list_table_files(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """For each input row (``base_uri``): every file below it outside ``.hoodie``."""
    for batch in batches:
        for base_uri in batch.column("base_uri").to_pylist():
            yield listing_batch(list(data_files(base_uri)))


@dataclass(frozen=True)
class SliceReadConfig:
    """Everything a worker needs to merge file slices; pickled into the plan."""

    base_uri: str
    output_schema: pa.Schema  # meta columns (if any) then data columns
    record_key_fields: tuple[str, ...]
    ordering_fields: tuple[str, ...]  # compared field by field (Hudi's ArrayComparable) where several
    event_time_ordering: bool
    valid_instants: BlockValidity  # blocks of other instants are ignored (HUDI-2285)
    writer_schema_json: str | None = None  # Avro schema to read log records with
    commit_times: frozenset[str] | None = None  # incremental reads keep only these _hoodie_commit_time
    field_prefixed_keys: bool = False  # keys built from data read "f:v" even for one field (KeyEncoding)
    partial_updates: bool = False  # a newer record's null fields keep older values (table_features.partial_updates)
    column_renames: ColumnRenames = ()  # schema on read: each version's file columns by their read names
    planned_at: str | None = None  # the instant the read was planned at (named if a planned file is gone)
    bootstrap: Bootstrap | None = None  # a bootstrapped table's skeleton files join their source files


def record_keys(table: pa.Table, config: SliceReadConfig) -> pa.Array:
    """Each record's key: the ``_hoodie_record_key`` meta column, or on tables without meta fields the key
    generator's rendering of the key fields (Hudi's ``KeyGenerator``)."""
    if RECORD_KEY_COLUMN in table.column_names:
        return table[RECORD_KEY_COLUMN].combine_chunks()
    if len(config.record_key_fields) == 1 and not config.field_prefixed_keys:
        return table[config.record_key_fields[0]].cast(pa.string()).combine_chunks()
    # KeyGenerator.constructRecordKey: "field1:value1,field2:value2", nulls as __null__, "" as __empty__
    parts = []
    for name in config.record_key_fields:
        text = table[name].cast(pa.string())
        text = pc.if_else(pc.equal(text, ""), "__empty__", text)
        parts.append(pc.binary_join_element_wise(f"{name}:", pc.fill_null(text, "__null__"), ""))
    return pc.binary_join_element_wise(*parts, ",").combine_chunks()


def _ordering_values(table: pa.Table, config: SliceReadConfig, ord_type: pa.DataType) -> pa.Array:
    """Each record's ordering value: its ordering field's, a struct of several fields' (in their order), or
    null where the table has none (the merge then orders by position)."""
    fields = [f for f in config.ordering_fields if f in table.column_names]
    if not fields or len(fields) < len(config.ordering_fields):
        return pa.nulls(table.num_rows, ord_type)
    if len(fields) == 1:
        return table[fields[0]]
    return pa.StructArray.from_arrays([table[f].combine_chunks() for f in fields], fields=list(ord_type))


def _with_merge_columns(table: pa.Table, config: SliceReadConfig, first_seq: int, ord_type: pa.DataType) -> pa.Table:
    ordering = _ordering_values(table, config, ord_type)
    return (
        table.append_column(KEY, record_keys(table, config))
        .append_column(ORD, ordering)
        .append_column(SEQ, pa.array(np.arange(first_seq, first_seq + table.num_rows, dtype=np.int64)))
    )


def _ordering_type(config: SliceReadConfig) -> pa.DataType:
    fields = [config.output_schema.field(f) for f in config.ordering_fields if f in config.output_schema.names]
    if not fields or len(fields) < len(config.ordering_fields):
        return pa.int64()
    return fields[0].type if len(fields) == 1 else pa.struct(fields)


def _delete_ordering(value: object, ord_type: pa.DataType, where: str) -> object:
    """A delete record's ordering value as the merge's ordering column holds it: a dict of the fields where
    several (Hudi writes one value per field)."""
    if not pa.types.is_struct(ord_type) or value is None:
        return value
    names = [f.name for f in ord_type]
    if not isinstance(value, tuple) or len(value) != len(names):
        raise UnsupportedTableFeatureError(
            "a delete's ordering value unlike the table's ordering fields", "delete record orderingVal",
            repr(value), where=where, detail=f"the table orders by {len(names)} fields: {', '.join(names)}")
    return dict(zip(names, value, strict=True))


def _is_partial(block: LogBlock) -> bool:
    return block.headers.get(HeaderKey.IS_PARTIAL, "").lower() == "true"


def _merged_blocks(config: SliceReadConfig, partition: str, log_files: list[str]) -> list[LogBlock]:
    """The data and delete blocks a slice's merge reads, in the order Hudi's log reader merges them
    (``BaseHoodieLogRecordReader.scanInternal``): of valid instants, not rolled back, grouped by instant in the
    order each instant's first block arrived, and a log compaction's block (``COMPACTED_BLOCK_TIMES``: the
    instants whose blocks it merged) in place of the blocks it compacted, at the latest of them. A time travel
    from before the log compaction reads the original blocks: the compacted block's instant is not valid there."""
    by_instant: dict[str, list[LogBlock]] = {}  # in the order of each instant's first block
    rolled_back: set[str] = set()
    for name in log_files:
        uri = join(config.base_uri, partition, name)
        with planned_file(uri, planned_at=config.planned_at):
            content = read_bytes(uri)
        for block in read_log_blocks(content, source=uri):
            if block.block_type is LogBlockType.COMMAND:
                target = rollback_target(block)
                if target:
                    rolled_back.add(target)
            elif block.block_type is not LogBlockType.CORRUPT and block.instant_time is not None \
                    and block.instant_time in config.valid_instants:
                by_instant.setdefault(block.instant_time, []).append(block)
    instants = [i for i in by_instant if i not in rolled_back]
    compacted_into: dict[str, str] = {}  # an instant's blocks -> the last log compaction holding them
    merged: list[str] = []  # the instants whose blocks are merged, newest first
    for instant in reversed(instants):
        compacted = by_instant[instant][0].headers.get(HeaderKey.COMPACTED_BLOCK_TIMES)
        if compacted:
            for original in compacted.split(","):
                compacted_into[original.strip()] = compacted_into.get(instant, instant)
            continue
        chosen = compacted_into.get(instant, instant)
        if chosen not in merged:
            merged.append(chosen)
    return [block for instant in reversed(merged) for block in by_instant[instant]]


def _read_logs(config: SliceReadConfig, partition: str, blocks: list[LogBlock], ord_type: pa.DataType) -> LogRecords:
    data_tables: list[pa.Table] = []
    partial_blocks: list[tuple[int, int, frozenset[str]]] = []
    delete_keys: list[str] = []
    delete_ords: list[object] = []
    delete_seqs: list[int] = []
    seq = 1  # base rows are older than every log row
    for block in blocks:
        instant = block.instant_time or ""  # every merged block has one (_merged_blocks)
        if block.block_type in (LogBlockType.AVRO_DATA, LogBlockType.PARQUET_DATA):
            records = with_reader_names(data_block_records(block, config.writer_schema_json),
                                        config.column_renames, instant)
            if _is_partial(block):
                if config.column_renames:
                    raise UnsupportedTableFeatureError(
                        "partial-update log blocks under schema-on-read renames", "log block header IS_PARTIAL",
                        "true", where=f"partition {partition!r}")
                absent = frozenset(config.output_schema.names) - set(_block_columns(block, records))
                partial_blocks.append((seq, seq + records.num_rows, absent))
            records = align(records, config.output_schema)
            data_tables.append(_with_merge_columns(records, config, seq, ord_type))
            seq += records.num_rows
        elif block.block_type is LogBlockType.DELETE:
            for record in delete_records(block):
                delete_keys.append(record.record_key)
                delete_ords.append(None if record.natural_order else
                                   _delete_ordering(record.ordering_value, ord_type, f"partition {partition!r}"))
                delete_seqs.append(seq)
                seq += 1
    empty = _with_merge_columns(config.output_schema.empty_table(), config, 0, ord_type)
    data = pa.concat_tables(data_tables) if data_tables else empty
    delete_table = pa.table({
        KEY: pa.array(delete_keys, pa.string()),
        ORD: pa.array(delete_ords, ord_type),
        SEQ: pa.array(delete_seqs, pa.int64()),
    })
    return LogRecords(data, delete_table, tuple(partial_blocks))


def _block_columns(block: LogBlock, records: pa.Table) -> list[str]:
    """The columns a partial-update block's records set: its writer schema's fields (decoded against a
    fuller reader schema, the others would come back as nulls)."""
    if block.schema_json is None:
        return list(records.column_names)
    return [str(f["name"]) for f in json.loads(block.schema_json).get("fields", ())]


def read_slice(config: SliceReadConfig, partition: str, base_file: str | None, log_files: list[str]) -> pa.Table:
    """The merged records of one file slice, in ``config.output_schema``; an incremental read keeps those whose
    commit is in its range (``config.commit_times``) of the whole slice as of the range's end, as time travel
    there shows them. (Hudi's incremental query merges the range's own log blocks only, so a record of the range
    that lost to an older one is returned until a compaction folds the two, and then not.)"""
    ord_type = _ordering_type(config)
    blocks = _merged_blocks(config, partition, log_files) if log_files else []
    base = None
    if base_file:
        dictionaries = _merge_dictionaries(config) if blocks else frozenset()
        records = _base_records(config, partition, base_file, dictionaries)
        if config.column_renames:
            records = with_reader_names(records, config.column_renames, base_file_instant(base_file))
        base = align(records, config.output_schema, dictionaries=bool(dictionaries))
    if not blocks:
        merged = base if base is not None else config.output_schema.empty_table()
    else:
        base_for_merge = _with_merge_columns(base, config, 0, ord_type) if base is not None else None
        logs = _read_logs(config, partition, blocks, ord_type)
        if config.partial_updates or logs.partial_blocks:
            merged = merge_slice_partial(base_for_merge, logs, event_time_ordering=config.event_time_ordering,
                                         nulls_keep_older=config.partial_updates)
        else:
            merged = merge_slice(base_for_merge, logs, event_time_ordering=config.event_time_ordering)
        merged = align(merged, config.output_schema)
    if IS_DELETED_COLUMN in merged.column_names:
        merged = merged.filter(pc.invert(pc.fill_null(merged[IS_DELETED_COLUMN], False)))
    if config.commit_times is not None and COMMIT_TIME_COLUMN in merged.column_names:
        merged = merged.filter(pc.is_in(merged[COMMIT_TIME_COLUMN], value_set=pa.array(sorted(config.commit_times))))
    return merged


def _merge_dictionaries(config: SliceReadConfig) -> frozenset[str]:
    """The base file's columns a merge may carry dictionary-encoded, to expand only the rows it keeps: not those
    it computes with (keys, ordering values, the deleted flag, the commit time an incremental read keeps rows by),
    and none where base columns are renamed or joined (schema on read, bootstrap)."""
    if config.bootstrap is not None or config.column_renames:
        return frozenset()
    computed = {RECORD_KEY_COLUMN, COMMIT_TIME_COLUMN, IS_DELETED_COLUMN, *config.record_key_fields,
                *config.ordering_fields}
    return frozenset(config.output_schema.names) - computed


def _base_records(config: SliceReadConfig, partition: str, base_file: str,
                  dictionaries: frozenset[str] = frozenset()) -> pa.Table:
    """A base file's records (``dictionaries``: columns it may return dictionary-encoded); a bootstrap's skeleton
    file joined with its source file."""
    uri = join(config.base_uri, partition, base_file)
    with planned_file(uri, planned_at=config.planned_at):
        records = read_base_file(uri, dictionaries)
    if config.bootstrap is None:
        return records
    if not is_skeleton(base_file):
        return with_partition_values_of_path(records, partition, config.bootstrap, config.output_schema, where=uri)
    sources = _bootstrap_sources(config.bootstrap.index_uri, config.planned_at)
    source = skeleton_source(sources, config.bootstrap, partition, base_file.split("_", 1)[0], where=uri)
    with planned_file(source, planned_at=config.planned_at):
        data = read_base_file(source)
    return joined_records(records, data, partition, config.bootstrap, config.output_schema, where=uri)


@lru_cache(maxsize=8)
def _bootstrap_sources(index_uri: str, planned_at: str | None) -> dict[bytes, bytes]:
    """The bootstrap's file-id index, whole (one small entry per source file), once per worker and plan."""
    with planned_file(index_uri, planned_at=planned_at):
        content = read_bytes(index_uri)
    return dict(read_hfile(content, source=index_uri))


@worker_body
def read_file_slices(config: SliceReadConfig, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: rows of the :data:`~hudi_connect.core.executor.contracts.SLICES` contract in, merged
    records out."""
    for batch in batches:
        for row in SLICES.rows(batch):
            merged = read_slice(config, row.partition, row.base_file, list(row.log_files or ()))
            yield from merged.to_batches(max_chunksize=65536)
