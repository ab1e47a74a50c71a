"""The AS_IS case read straight from a commit's ``.cdc`` log files (worker side).

A CDC-enabled writer logs each change of a file group into ``.cdc`` files as
``HoodieCDCDataBlock``s. What a record holds depends on the supplemental
logging mode (``HoodieCDCUtils``):

- DATA_BEFORE_AFTER: op, ts_ms, before, after: the whole event, no file slice needed;
- DATA_BEFORE: op, record_key, before: the after image comes from the slice after the commit;
- OP_KEY_ONLY: op, record_key: both images come from slices (not handled here).

Images in ``.cdc`` files carry only the data columns, as Hudi's CDC query shows them.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from hudi_connect.executor.slices import SliceReadConfig, _record_keys
from hudi_connect.executor.storage import join, read_bytes
from hudi_connect.format.log.blocks import data_block_records
from hudi_connect.format.log.format import LogBlockType, read_log_blocks
from hudi_connect.format.schema_evolution import promote

Events = tuple[pa.Array, pa.Array, pa.StructArray, pa.StructArray]  # ops, record keys, before, after images


def cdc_records(config: SliceReadConfig, cdc_files: list[str], instant: str) -> pa.Table | None:
    """The CDC records the commit ``instant`` logged in ``cdc_files`` (paths relative to the table)."""
    tables = []
    for name in cdc_files:
        uri = join(config.base_uri, name)
        for block in read_log_blocks(read_bytes(uri), source=uri):
            if block.block_type is LogBlockType.CDC_DATA and block.instant_time == instant:
                tables.append(data_block_records(block))
    if not tables:
        return None
    return pa.concat_tables(tables, promote_options="default").combine_chunks()


def aligned_images(values: pa.StructArray, image_type: pa.StructType) -> pa.StructArray:
    """``values`` as structs of ``image_type``: fields matched by name, missing ones (meta columns) null,
    older types promoted as Hudi promotes them."""
    return promote(values, image_type, "image")


def image_keys(images: pa.StructArray, config: SliceReadConfig) -> pa.Array:
    """The record keys of data-only images (null where the image is)."""
    flat = dict(zip((f.name for f in images.type), images.flatten(), strict=True))
    return _record_keys(pa.table({name: flat[name] for name in config.record_key_fields}), config)


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
