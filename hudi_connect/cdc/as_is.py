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

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_connect.executor import SliceReadConfig, _record_keys
from hudi_connect.log.blocks import data_block_records
from hudi_connect.log.format import LogBlockType, read_log_blocks
from hudi_connect.storage import join, read_bytes


def cdc_records(config: SliceReadConfig, cdc_files: list[str], instant: str) -> pa.Table | None:
    """The CDC records the commit ``instant`` logged in ``cdc_files`` (paths relative to the table)."""
    tables = []
    for name in cdc_files:
        uri = join(config.base_uri, name)
        for block in read_log_blocks(read_bytes(uri), source=uri):
            # a retried task may leave blocks of the same instant only once; other instants never share a file
            if block.block_type is LogBlockType.CDC_DATA and block.instant_time == instant:
                tables.append(data_block_records(block))
    if not tables:
        return None
    return pa.concat_tables(tables, promote_options="default")


def image_keys(images: pa.StructArray, config: SliceReadConfig) -> pa.Array:
    """The record keys of data-only images (null where the image is)."""
    flat = dict(zip((f.name for f in images.type), images.flatten(), strict=True))
    columns = {name: flat[name] for name in config.record_key_fields}
    return _record_keys(pa.table(columns), config)


def _images(column: pa.ChunkedArray) -> list[dict[str, Any] | None]:
    images: list[dict[str, Any] | None] = column.to_pylist(maps_as_pydicts="lossy")
    return images


def before_after_events(config: SliceReadConfig, records: pa.Table) -> dict[str, list[Any]]:
    """DATA_BEFORE_AFTER: every field of the event is in the record."""
    before = records["before"].combine_chunks()
    after = records["after"].combine_chunks()
    keys = pc.coalesce(image_keys(after, config), image_keys(before, config))
    return {"op": records["op"].to_pylist(), "record_key": keys.to_pylist(),
            "before": _images(records["before"]), "after": _images(records["after"])}


def before_only_events(records: pa.Table, after_state: pa.Table, after_keys: pa.Array) -> dict[str, list[Any]]:
    """DATA_BEFORE: op, key and before image logged; the after image is the key's record after the commit."""
    keys = records["record_key"].combine_chunks()
    ops = records["op"].to_pylist()
    positions = pc.index_in(keys, value_set=after_keys).to_pylist()
    found = after_state.take(pa.array([p for p in positions if p is not None], pa.int64()))
    found_rows = iter(found.to_pylist(maps_as_pydicts="lossy"))
    afters = [next(found_rows) if p is not None else None for p in positions]
    afters = [None if op == "d" else a for op, a in zip(ops, afters, strict=True)]
    return {"op": ops, "record_key": keys.to_pylist(), "before": _images(records["before"]), "after": afters}
