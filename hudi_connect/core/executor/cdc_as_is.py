"""The AS_IS case read straight from a commit's ``.cdc`` log files (worker side).

A CDC-enabled writer logs each change of a file group into ``.cdc`` files as
``HoodieCDCDataBlock``s. What a record holds depends on the supplemental
logging mode (``HoodieCDCUtils``):

- DATA_BEFORE_AFTER: op, ts_ms, before, after: the whole event, no file slice needed;
- DATA_BEFORE: op, record_key, before: the after image comes from the slice after the commit;
- OP_KEY_ONLY: op, record_key: both images come from slices (not handled here).

Images in ``.cdc`` files carry only the data columns, as Hudi's CDC query shows them.

DATA_BEFORE_AFTER records need no file slice at all, so where the server has
Spark's Avro module the worker only cuts them out of their blocks, undecoded
(:func:`cdc_record_bytes`), and the JVM decodes them
(:mod:`hudi_connect.cdc.jvm_decoding`); :func:`cdc_writer_schemas` tells the
planner which writer schemas it will meet.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from hudi_connect.core.errors import LogDecodeError
from hudi_connect.core.executor.refusals import planned_file, worker_body
from hudi_connect.core.executor.slices import SliceReadConfig, record_keys
from hudi_connect.core.executor.storage import join, read_bytes
from hudi_connect.core.format.log.blocks import data_block_record_bytes, data_block_records
from hudi_connect.core.format.log.format import LogBlock, LogBlockType, read_log_blocks
from hudi_connect.core.format.schema_evolution import promote

Events = tuple[pa.Array, pa.Array, pa.StructArray, pa.StructArray]  # ops, record keys, before, after images


WRITER_SCHEMAS = pa.schema([("writer_schema", pa.string())])  # the distinct writer schemas of a task's blocks
# One undecoded .cdc record per row, with the split's times and the index of its block's writer schema
RECORD_BYTES_SCHEMA = pa.schema([("ts_ms", pa.string()), ("completion_time", pa.string()),
                                 ("writer_schema", pa.int32()), ("record", pa.binary())])


def _cdc_blocks(config: SliceReadConfig, cdc_files: list[str], instant: str) -> Iterator[LogBlock]:
    """The CDC data blocks the commit ``instant`` wrote in ``cdc_files`` (paths relative to the table)."""
    for name in cdc_files:
        uri = join(config.base_uri, name)
        with planned_file(uri, planned_at=config.planned_at):
            content = read_bytes(uri)
        for block in read_log_blocks(content, source=uri):
            if block.block_type is LogBlockType.CDC_DATA and block.instant_time == instant:
                yield block


def cdc_records(config: SliceReadConfig, cdc_files: list[str], instant: str) -> pa.Table | None:
    """The CDC records the commit ``instant`` logged in ``cdc_files`` (paths relative to the table)."""
    tables = [data_block_records(block) for block in _cdc_blocks(config, cdc_files, instant)]
    if not tables:
        return None
    return pa.concat_tables(tables, promote_options="default").combine_chunks()


def _writer_schema(block: LogBlock) -> str:
    if block.schema_json is None:
        raise LogDecodeError(f"CDC block at byte {block.offset} has no SCHEMA header to decode its records with")
    return block.schema_json


@worker_body
def cdc_writer_schemas(config: SliceReadConfig, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: split rows in, the distinct writer schemas of their CDC blocks out."""
    for batch in batches:
        found = {_writer_schema(block) for row in batch.to_pylist()
                 for block in _cdc_blocks(config, list(row["cdc_files"]), row["instant"])}
        yield pa.RecordBatch.from_arrays([pa.array(sorted(found), pa.string())], schema=WRITER_SCHEMAS)


@worker_body
def cdc_record_bytes(config: SliceReadConfig, writer_schemas: Mapping[str, int],
                     batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: split rows in, rows of :data:`RECORD_BYTES_SCHEMA` out, one per CDC record.

    ``writer_schemas`` numbers the schemas the planner found with :func:`cdc_writer_schemas`; a block
    written in any other schema (none can appear: the files of completed commits do not change) fails
    the task rather than being decoded with the wrong one.
    """
    for batch in batches:
        for row in batch.to_pylist():
            for block in _cdc_blocks(config, list(row["cdc_files"]), row["instant"]):
                schema = _writer_schema(block)
                if schema not in writer_schemas:
                    raise LogDecodeError(f"CDC block at byte {block.offset} of a file of {row['file_id']} has a "
                                         "writer schema the planner did not see; run the query again")
                records = pa.array(data_block_record_bytes(block), pa.binary())
                count = len(records)
                yield pa.RecordBatch.from_arrays(
                    [pa.array([row["instant"]] * count, pa.string()),
                     pa.array([row["completion_time"]] * count, pa.string()),
                     pa.array([writer_schemas[schema]] * count, pa.int32()), records],
                    schema=RECORD_BYTES_SCHEMA)


def aligned_images(values: pa.StructArray, image_type: pa.StructType) -> pa.StructArray:
    """``values`` as structs of ``image_type``: fields matched by name, missing ones (meta columns) null,
    older types promoted as Hudi promotes them."""
    return promote(values, image_type, "image")


def image_keys(images: pa.StructArray, config: SliceReadConfig) -> pa.Array:
    """The record keys of data-only images (null where the image is)."""
    flat = dict(zip((f.name for f in images.type), images.flatten(), strict=True))
    keys = record_keys(pa.table({name: flat[name] for name in config.record_key_fields}), config)
    # a null image has no key (field-prefixed keys would otherwise render its nulls as "f:__null__")
    return pc.if_else(images.is_valid(), keys, pa.scalar(None, keys.type))


def _column(records: pa.Table, name: str) -> pa.Array:
    return records[name].combine_chunks()


def before_after_events(config: SliceReadConfig, records: pa.Table) -> Events:
    """DATA_BEFORE_AFTER: every field of the event is in the record."""
    before, after = _column(records, "before"), _column(records, "after")
    keys = pc.coalesce(image_keys(after, config), image_keys(before, config))
    return _column(records, "op"), keys, before, after


def before_only_events(records: pa.Table, after_images: pa.StructArray, after_keys: pa.Array) -> Events:
    """DATA_BEFORE: op, key and before image logged; the after image is the key's record after the commit."""
    keys = _column(records, "record_key")
    ops = _column(records, "op")
    positions = pc.index_in(keys, value_set=after_keys)
    # a deleted key has no after image, even if an equal key lives on elsewhere in the group
    positions = pc.if_else(pc.equal(ops, "d"), pa.scalar(None, positions.type), positions)
    return ops, keys, _column(records, "before"), after_images.take(positions)
