"""Production-size tables (issue #33): planning, a pruned read and a change query on tables of 100k and 1M
files, ours on a plain server against Hudi's own on the Hudi server, with the client's peak memory.

    python benchmarks/scale.py [--sizes 100k,1m] [--files-per-partition 100] [--commits 12] [--repeat 3]

Run by hand, not in CI. For each size (files) the table is made so that Hudi itself knows every file:

1. Hudi creates a COW table (CDC on, the metadata table off) and bulk-inserts one row per partition;
2. the rest of the files are written directly, in Hudi's layout: one row each, with Hudi's meta columns, named
   as base files of that first commit (what a bulk insert of tiny files would leave, written in minutes
   instead of hours on two cores);
3. Hudi's next upsert turns the metadata table on (``files`` and ``column_stats``): Hudi builds it from a
   listing of every file, as it does for any table that enables it late;
4. ``--commits`` more small upserts (simple index) make the active timeline the change query reads.

Then, interleaved medians after a warm-up (every pair must agree):

- planning through the metadata table: ``FileIndex(...).list_files_at()`` against Hudi's
  ``load(path).inputFiles()`` (its file index); the same through a storage listing (metadata table off);
- a pruned read: a partition and a column predicate, counted (Hudi with data skipping on);
- a change query over the last 10 commits, counted, against Hudi's CDC query.

The client's peak memory (``VmHWM``) of each of ours is measured once in a process of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from side_by_side import hudi_and_plain_sessions, hudi_cdc, interleaved, sizes

from hudi_connect.cdc import ChangeQuery
from hudi_connect.client import server
from hudi_connect.reader import TableReader
from hudi_connect.spec import FileIndex, col
from hudi_connect.table.hudi_table import HudiTable

SCHEMA = "id long, name string, part string, ts long"
OPTIONS = {
    "hoodie.index.type": "SIMPLE",  # the files written directly carry no bloom filter
    "hoodie.parquet.small.file.limit": "0", "hoodie.clean.automatic": "false",
    "hoodie.bulkinsert.sort.mode": "PARTITION_SORT",
}
METADATA = {"hoodie.metadata.enable": "true", "hoodie.metadata.index.column.stats.enable": "true",
            "hoodie.metadata.index.column.stats.column.list": "ts"}
DATA_SKIPPING = {"hoodie.enable.data.skipping": "true", "hoodie.metadata.enable": "true"}
NO_METADATA = {"hoodie.metadata.enable": "false"}

# the client's high-water mark (VmHWM) around one of ours, in a process of its own
PROBE = """
import json, sys
from hudi_connect.client.server import connect
from hudi_connect.cdc import ChangeQuery
from hudi_connect.client import server
from hudi_connect.reader import TableReader
from hudi_connect.spec import FileIndex, col
def high_water_kb():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
url, path, what, args = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
spark = connect(url)
spark.range(1).collect()
baseline = high_water_kb()
if what == "planning":
    result = sum(len(s.file_slices) for s in FileIndex(spark, path).list_files_at())
elif what == "planning-storage":
    result = sum(len(s.file_slices) for s in FileIndex(spark, path, use_metadata=False).list_files_at())
elif what == "pruned":
    result = TableReader(spark, path).snapshot([col("part") == args["part"], col("ts") > args["ts"]]).count()
elif what == "snapshot":
    result = TableReader(spark, path).snapshot().count()
else:
    result = ChangeQuery(spark, path).changes(args["begin"]).count()
print(json.dumps({"result": int(result), "baseline_mb": baseline / 1024, "peak_mb": high_water_kb() / 1024}))
"""


def write_direct_files(hudi_file: Path, partitions: list[Path], files: int, commit: str) -> None:
    """``files`` one-row base files of ``commit`` spread over ``partitions``, with the schema (and Avro
    schema in the footer) of a file Hudi wrote in that commit; two processes write them."""
    per_partition = files // len(partitions)
    chunks = [(str(hudi_file), [str(p) for p in partitions[i::2]], per_partition, commit, i) for i in range(2)]
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_write_files, chunks))


def _write_files(chunk: tuple[str, list[str], int, str, int]) -> None:
    hudi_file, partitions, per_partition, commit, worker = chunk
    written = pq.read_schema(hudi_file)
    # the Avro schema, as Hudi's reader of the footer expects it; not the bloom filter of Hudi's file (~100 KB)
    schema = written.with_metadata({k: v for k, v in (written.metadata or {}).items() if b"avro" in k})
    key = 10_000_000 + worker * 1_000_000_000
    for partition in partitions:
        directory = Path(partition)
        part = directory.name.split("=", 1)[-1]
        for _ in range(per_partition):
            name = f"{uuid.uuid4()}-0_0-1-1_{commit}.parquet"
            row = {"_hoodie_commit_time": commit, "_hoodie_commit_seqno": f"{commit}_0_{key}",
                   "_hoodie_record_key": str(key), "_hoodie_partition_path": directory.name,
                   "_hoodie_file_name": name, "id": key, "name": f"n{key}", "part": part, "ts": key % 1000}
            columns = [pa.array([row.get(f.name)], f.type) for f in schema]
            pq.write_table(pa.Table.from_arrays(columns, schema=schema), directory / name, compression="NONE",
                           use_dictionary=False)
            key += 1


def build_table(hudi: SparkSession, path: str, files: int, per_partition: int, commits: int) -> list[Any]:
    partitions = max(1, files // per_partition)
    table = HudiTable.create(hudi, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="part",
                             table_type="COPY_ON_WRITE", metadata_table=False, cdc="DATA_BEFORE_AFTER",
                             options=OPTIONS)
    first = table.bulk_insert(hudi.range(partitions, numPartitions=4).select(
        "id", F.concat(F.lit("n"), F.col("id").cast("string")).alias("name"),
        F.format_string("p%05d", F.col("id")).alias("part"), F.lit(1).cast("long").alias("ts")))
    directories = sorted(p for p in Path(path).iterdir() if p.is_dir() and p.name != ".hoodie")
    hudi_file = next(directories[0].glob("*.parquet"))
    begin = time.perf_counter()
    write_direct_files(hudi_file, directories, files - partitions, first.requested_time)
    print(f"  wrote {files - partitions} files directly in {time.perf_counter() - begin:.0f}s", flush=True)
    written = [first]
    for n in range(commits + 1):  # the first of these builds the metadata table
        begin = time.perf_counter()
        changed = hudi.range(20).select(
            (F.col("id") * 7 + n).alias("id"), F.lit(f"u{n}").alias("name"),
            F.format_string("p%05d", (F.col("id") * 7 + n) % partitions).alias("part"),
            F.lit(2000 + n).cast("long").alias("ts"))
        written.append(table.upsert(changed, options={**OPTIONS, **METADATA}))
        if n == 0:
            print(f"  Hudi built the metadata table in {time.perf_counter() - begin:.0f}s", flush=True)
    return written


PART, TS = "p00007", 1500  # the pruned read's partition and column predicate


def side_by_side_cases(hudi: SparkSession, plain: SparkSession, path: str,
                       begin: Any) -> dict[str, dict[str, Callable[[], Any]]]:
    """Ours and Hudi's of each case, on one table."""
    hudi_begin = begin.completion_time or begin.requested_time
    return {
        "planning (metadata table)": {
            "ours": lambda: sum(len(s.file_slices) for s in FileIndex(plain, path).list_files_at()),
            "hudi": lambda: len(hudi.read.format("hudi").load(path).inputFiles())},
        "planning (storage listing)": {
            "ours": lambda: sum(len(s.file_slices) for s in FileIndex(plain, path, use_metadata=False).list_files_at()),
            "hudi": lambda: len(hudi.read.format("hudi").options(**NO_METADATA).load(path).inputFiles())},
        "pruned read": {
            "ours": lambda: TableReader(plain, path).snapshot([col("part") == PART, col("ts") > TS]).count(),
            "hudi": lambda: hudi.read.format("hudi").options(**DATA_SKIPPING).load(path)
            .where((F.col("part") == PART) & (F.col("ts") > TS)).count()},
        "change query, 10 commits": {
            "ours": lambda: ChangeQuery(plain, path).changes(begin).count(),
            "hudi": lambda: hudi_cdc(hudi, path, hudi_begin).count()},
    }


def probe(url: str, path: str, what: str, **args: Any) -> dict[str, Any]:
    run = subprocess.run([sys.executable, "-c", PROBE, url, path, what, json.dumps(args)], capture_output=True,
                         text=True, timeout=3600, check=False, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    if run.returncode != 0:
        raise RuntimeError(f"the {what} probe failed: {run.stderr[-3000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=sizes, default=sizes("100k,1m"), help="files, comma-separated")
    parser.add_argument("--files-per-partition", type=int, default=100)
    parser.add_argument("--commits", type=int, default=12, help="small upserts after the metadata table's build")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    report: list[dict[str, Any]] = []
    with hudi_and_plain_sessions() as (hudi, plain, run_dir):
        plain_url = getattr(plain.client, server._URL_ATTRIBUTE)  # the URL connect() was given
        for files in args.sizes:
            path = str(run_dir / f"scale_{files}")
            print(f"\n{files} files, {args.files_per_partition} per partition", flush=True)
            commits = build_table(hudi, path, files, args.files_per_partition, args.commits)
            begin = commits[-11]  # the changes of the last 10 commits, after it (to the latest, on both sides)
            for case, actions in side_by_side_cases(hudi, plain, path, begin).items():
                medians = interleaved(actions, args.repeat)
                (ours_s, ours_result), (hudi_s, hudi_result) = medians["ours"], medians["hudi"]
                assert ours_result == hudi_result, f"{case}: ours {ours_result}, Hudi {hudi_result}"
                print(f"  {case}: {ours_result} on both; ours {ours_s:.2f}s, Hudi {hudi_s:.2f}s, "
                      f"ratio {ours_s / hudi_s:.2f}", flush=True)
                report.append({"files": files, "case": case, "result": ours_result, "ours_s": ours_s,
                               "hudi_s": hudi_s})
            for what, extra in (("planning", {}), ("planning-storage", {}), ("pruned", {"part": PART, "ts": TS}),
                                ("changes", {"begin": begin.requested_time})):
                memory = probe(plain_url, path, what, **extra)
                print(f"  client memory, {what}: peak {memory['peak_mb']:.0f} MB "
                      f"(after connecting {memory['baseline_mb']:.0f} MB)", flush=True)
                report.append({"files": files, "case": f"client memory: {what}", **memory})
    print("\nRESULT " + json.dumps(report, default=int))


if __name__ == "__main__":
    main()
