"""Records per second of hudi_connect.core.format.log, against hudi-rs reading the same tables.

    python benchmarks/log_decoder_throughput.py [--records 100000] [--seconds 2]

Two measures, each printed with the ratio ours / hudi-rs:

1. The real log files of the MOR fixture tables (shared/fixtures/hudi-rs-tables),
   decoded over and over: these blocks hold one record each, so the figure is
   mostly per-block overhead. hudi-rs reads (and merges) the whole table.
2. A copy of ``mor_avro_v6_trips_8i1u`` (and of ``mor_parquet_v6_nonpartitioned``)
   whose log file is replaced by one block of ``--records`` inserts with distinct
   keys, written in the block's own schema: steady-state decoding. hudi-rs reads
   the table: the same block plus the 8 (or 3) rows of the base file, merged.

Our figure covers ``read_log_blocks`` + ``data_block_records`` (to an Arrow
table); hudi-rs's covers its whole snapshot read, so the ratio is a fair
upper bound of what merging would leave us.
"""

from __future__ import annotations

import argparse
import io
import json
import struct
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
from hudi import HudiTableBuilder
from hudi_connect_stack.testing.fixture_tables import fixture_names, unzip_fixture

from hudi_connect.core.format.log import LogBlock, LogBlockType, data_block_records, read_log_blocks

DATA_BLOCKS = (LogBlockType.AVRO_DATA, LogBlockType.PARQUET_DATA, LogBlockType.CDC_DATA)


def data_log_files(base_path: Path) -> list[Path]:
    """The table's log files holding data blocks (not its metadata table's)."""
    return sorted(path for path in base_path.rglob(".*.log.*") if ".hoodie" not in path.relative_to(base_path).parts
                  and any(block.block_type in DATA_BLOCKS for block in read_log_blocks(path.read_bytes())))


def records_per_second(work: Callable[[], int], min_seconds: float = 2.0) -> float:
    """Run ``work`` (which returns how many records it handled) until ``min_seconds`` have passed."""
    work()  # warm up: schema parsing, lazy imports
    records, started = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - started) < min_seconds:
        records += work()
    return records / elapsed


def decode_files(paths: list[Path]) -> Callable[[], int]:
    contents = [path.read_bytes() for path in paths]

    def work() -> int:
        return sum(data_block_records(block).num_rows for data in contents for block in read_log_blocks(data)
                   if block.block_type in DATA_BLOCKS)
    return work


def hudi_rs_read(base_path: Path) -> Callable[[], int]:
    def work() -> int:
        table = HudiTableBuilder.from_base_uri(str(base_path)).build()
        return sum(batch.num_rows for batch in table.read())
    return work


def encode_block(block: LogBlock, content: bytes) -> bytes:
    """``block`` with new content, framed as HoodieLogFormatWriter frames it (no footer entries)."""
    header = struct.pack(">i", len(block.headers))
    for key, value in block.headers.items():
        raw = value.encode()
        header += struct.pack(">ii", list(type(key)).index(key), len(raw)) + raw
    ordinal = list(LogBlockType).index(block.block_type)
    body = struct.pack(">ii", 1, ordinal) + header + struct.pack(">q", len(content)) + content + struct.pack(">i", 0)
    size = len(body) + 8
    return b"#HUDI#" + struct.pack(">q", size) + body + struct.pack(">q", size + 6)


def _with_key(row: dict[str, Any], index: int, key_field: str) -> dict[str, Any]:
    key = f"{row[key_field]}-{index}"
    value: Any = index + 1_000_000 if key_field == "id" else key
    return {**row, "_hoodie_record_key": key if key_field != "id" else str(value), key_field: value,
            "_hoodie_commit_seqno": f"{row['_hoodie_commit_seqno']}_{index}"}


def scaled_log(block: LogBlock, count: int, key_field: str) -> bytes:
    """One block like ``block`` holding ``count`` copies of its first record under distinct keys."""
    [row] = data_block_records(block).slice(0, 1).to_pylist()
    rows = [_with_key(row, index, key_field) for index in range(count)]
    if block.block_type is LogBlockType.PARQUET_DATA:
        buffer = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(rows, schema=data_block_records(block).schema), buffer)
        return encode_block(block, buffer.getvalue())
    assert block.schema_json is not None
    schema = fastavro.parse_schema(json.loads(block.schema_json))
    content = io.BytesIO()
    content.write(struct.pack(">ii", 3, count))
    for item in rows:
        record = io.BytesIO()
        fastavro.schemaless_writer(record, schema, {key: dict(value) if isinstance(value, list) and value
                                                    and isinstance(value[0], tuple) else value
                                                    for key, value in item.items()})
        content.write(struct.pack(">i", record.tell()) + record.getvalue())
    return encode_block(block, content.getvalue())


def report(label: str, ours: float, theirs: float) -> None:
    print(f"{label:<48}{ours:>12,.0f}{theirs:>12,.0f}{ours / theirs:>8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000, help="records in the scaled log block")
    parser.add_argument("--seconds", type=float, default=2.0, help="minimum time per measure")
    arguments = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="hudi-connect-bench-"))
    print(f"{'records/s':<48}{'ours':>12}{'hudi-rs':>12}{'ratio':>8}")
    for name in [name for name in fixture_names() if name.startswith("mor_")]:
        base_path = unzip_fixture(name, root / "as-written")
        paths = data_log_files(base_path)
        if paths:
            report(f"{name} ({len(paths)} files)", records_per_second(decode_files(paths), arguments.seconds),
                   records_per_second(hudi_rs_read(base_path), arguments.seconds))
    for name, key_field in (("mor_avro_v6_trips_8i1u", "uuid"), ("mor_parquet_v6_nonpartitioned", "id")):
        base_path = unzip_fixture(name, root / "scaled")
        [path] = data_log_files(base_path)
        [block] = read_log_blocks(path.read_bytes())
        path.write_bytes(scaled_log(block, arguments.records, key_field))
        report(f"{name}, {arguments.records:,} records", records_per_second(decode_files([path]), arguments.seconds),
               records_per_second(hudi_rs_read(base_path), arguments.seconds))


if __name__ == "__main__":
    main()
