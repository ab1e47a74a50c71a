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
- a change query over the last 10 commits, counted, against Hudi's CDC query;
- a reverse-stream batch of those 10 commits to JSON files (a new stream checkpointed before them) against the
  job a user writes by hand on the Hudi server (Hudi's CDC query written as JSON).

Then one counted run of each side (``footprint.py``): Connect requests (plans executed / analysed), Spark jobs
and tasks (each server's status API), the largest message the client received, the server JVM's resident
growth and its Python workers' peak (the executors, in ``local[2]``). The client's peak memory (``VmHWM``) of
each of ours is measured once in a process of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from footprint import Footprint, footprint
from hudi_connect_stack.process import RunningService, free_port
from hudi_connect_stack.spark_connect import start_spark_connect
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from side_by_side import hudi_cdc, interleaved, sizes

from hudi_connect.cdc import ChangeQuery
from hudi_connect.client import server
from hudi_connect.client.server import connect
from hudi_connect.reader import TableReader
from hudi_connect.reverse import ReverseStream
from hudi_connect.reverse.sinks import FileSink
from hudi_connect.table.hudi_table import HudiTable
from hudi_connect.table_spec import FileIndex, col

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
from hudi_connect.reverse import ReverseStream
from hudi_connect.reverse.sinks import FileSink
from hudi_connect.table_spec import FileIndex, col
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
elif what == "reverse":
    stream = ReverseStream(spark, path, "probe", [FileSink(args["sink"], "json", spark=spark)])
    stream.set_checkpoint(args["begin"])
    result = stream.run_once().records
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


def build_table(hudi: SparkSession, path: str, files: int, per_partition: int, commits: int) -> None:
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
    for n in range(commits + 1):  # the first of these builds the metadata table
        begin = time.perf_counter()
        changed = hudi.range(20).select(
            (F.col("id") * 7 + n).alias("id"), F.lit(f"u{n}").alias("name"),
            F.format_string("p%05d", (F.col("id") * 7 + n) % partitions).alias("part"),
            F.lit(2000 + n).cast("long").alias("ts"))
        table.upsert(changed, options={**OPTIONS, **METADATA})
        if n == 0:
            print(f"  Hudi built the metadata table in {time.perf_counter() - begin:.0f}s", flush=True)


PART, TS = "p00007", 1500  # the pruned read's partition and column predicate


def side_by_side_cases(hudi: SparkSession, plain: SparkSession, path: str, begin: Any,
                       sinks: Path) -> dict[str, dict[str, Callable[[], Any]]]:
    """Ours and Hudi's of each case, on one table."""
    hudi_begin = begin.completion_time or begin.requested_time

    def reverse_batch() -> int:  # a new stream that has sent everything up to ``begin``
        stream = ReverseStream(plain, path, f"bench-{uuid.uuid4().hex[:8]}",
                               [FileSink(str(sinks / uuid.uuid4().hex), "json", spark=plain)])
        stream.set_checkpoint(begin)
        return stream.run_once().records

    def hand_batch() -> int:  # the user's own job: Hudi's CDC query, written as JSON
        changes = hudi_cdc(hudi, path, hudi_begin).cache()
        changes.write.json(str(sinks / uuid.uuid4().hex))
        written = changes.count()
        changes.unpersist()
        return written

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
        "reverse-stream batch, 10 commits": {"ours": reverse_batch, "hudi": hand_batch},
    }


@dataclass(frozen=True)
class Server:
    """A local server with Spark's UI on (for its status API), and the session it serves."""

    service: RunningService
    spark: SparkSession
    ui_port: int

    @property
    def session_id(self) -> int:
        return self.service.processes[0].pid  # each server runs in a session of its own

    def counted(self, operation: Callable[[], Any]) -> tuple[Footprint, Any]:
        return footprint(self.spark, self.ui_port, self.session_id, operation)


HUDI_MESSAGE_LIMIT = 1 << 30  # the Hudi session's client: Connect's default of 128 MiB refuses inputFiles() at 1M


@contextmanager
def larger_messages() -> Iterator[None]:
    """Sessions connected inside receive messages up to :data:`HUDI_MESSAGE_LIMIT` (pyspark's own option comes
    first on the channel, and gRPC takes the first)."""
    try:  # pyspark 4.x
        from pyspark.sql.connect.client import DefaultChannelBuilder as Channel  # type: ignore[attr-defined]
    except ImportError:  # pyspark 3.5
        from pyspark.sql.connect.client import ChannelBuilder as Channel
    default = Channel.MAX_MESSAGE_LENGTH
    Channel.MAX_MESSAGE_LENGTH = HUDI_MESSAGE_LIMIT
    try:
        yield
    finally:
        Channel.MAX_MESSAGE_LENGTH = default


@contextmanager
def observed_servers(run_dir: Path) -> Iterator[tuple[Server, Server]]:
    """The Hudi server and a plain one, each with its status API."""
    servers: list[Server] = []
    try:
        for flavor in ("hudi", "plain"):
            ui_port = free_port()
            service = start_spark_connect(run_dir, flavor, extra_confs={"spark.ui.enabled": "true",
                                                                        "spark.ui.port": str(ui_port)})
            url = service.endpoint.url  # type: ignore[attr-defined]
            if flavor == "hudi":  # Hudi's inputFiles() answers in one message: 137 MB at 1M files
                with larger_messages():
                    session = connect(url)
            else:
                session = connect(url)
            servers.append(Server(service, session, ui_port))
        yield servers[0], servers[1]
    finally:
        for server_ in reversed(servers):
            server_.service.stop()


def probe(url: str, path: str, what: str, **args: Any) -> dict[str, Any]:
    run = subprocess.run([sys.executable, "-c", PROBE, url, path, what, json.dumps(args)], capture_output=True,
                         text=True, timeout=3600, check=False, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    if run.returncode != 0:
        raise RuntimeError(f"the {what} probe failed: {run.stderr[-3000:]}")
    measured: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return measured


def table_for(hudi: SparkSession, tables: Path, files: int, args: argparse.Namespace) -> tuple[str, Any]:
    """The table of ``files`` files under ``tables`` (built unless a finished one is there), and the instant
    whose following 10 commits the change cases read."""
    path = tables / f"scale_{files}"
    built = tables / f"scale_{files}.built"
    if not built.exists():
        shutil.rmtree(path, ignore_errors=True)
        build_table(hudi, str(path), files, args.files_per_partition, args.commits)
        built.write_text(json.dumps({"files": files, "per_partition": args.files_per_partition,
                                     "commits": args.commits}))
    else:
        print(f"  reusing the table at {path}", flush=True)
    commits = list(HudiTable.open(hudi, str(path)).timeline().write_commits())
    return str(path), commits[-11]  # the changes of the last 10 commits, after it (to the latest, on both sides)


def measure_case(case: str, actions: dict[str, Callable[[], Any]], hudi_server: Server, plain_server: Server,
                 repeat: int) -> dict[str, Any]:
    medians = interleaved(actions, repeat)
    (ours_s, ours_result), (hudi_s, hudi_result) = medians["ours"], medians["hudi"]
    assert ours_result == hudi_result, f"{case}: ours {ours_result}, Hudi {hudi_result}"
    print(f"  {case}: {ours_result} on both; ours {ours_s:.2f}s, Hudi {hudi_s:.2f}s, ratio {ours_s / hudi_s:.2f}",
          flush=True)
    counted = {"ours": plain_server.counted(actions["ours"]), "hudi": hudi_server.counted(actions["hudi"])}
    for side, (cost, result) in counted.items():
        assert result == ours_result, f"{case}: {side}'s counted run gave {result}"
        print(f"    {side}: executed / analysed | jobs / tasks | largest message MB | JVM growth MB | "
              f"Python workers peak MB: {cost.as_row()}", flush=True)
    return {"case": case, "result": ours_result, "ours_s": ours_s, "hudi_s": hudi_s,
            **{side: asdict(cost) for side, (cost, _) in counted.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=sizes, default=sizes("100k,1m"), help="files, comma-separated")
    parser.add_argument("--files-per-partition", type=int, default=100)
    parser.add_argument("--commits", type=int, default=12, help="small upserts after the metadata table's build")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work-dir", type=Path, default=None,
                        help="keep the tables here, and use a finished one found here again (default: removed)")
    args = parser.parse_args()
    report: list[dict[str, Any]] = []
    run_dir = Path(tempfile.mkdtemp(prefix="hudi-connect-bench-"))
    run_dir.chmod(0o755)
    tables = args.work_dir or run_dir
    tables.mkdir(parents=True, exist_ok=True)
    try:
        with observed_servers(run_dir) as (hudi_server, plain_server):
            hudi, plain = hudi_server.spark, plain_server.spark
            plain_url = getattr(plain.client, server._URL_ATTRIBUTE)  # the URL connect() was given
            for files in args.sizes:
                print(f"\n{files} files, {args.files_per_partition} per partition", flush=True)
                path, begin = table_for(hudi, tables, files, args)
                sinks = run_dir / f"sinks_{files}"
                for case, actions in side_by_side_cases(hudi, plain, path, begin, sinks).items():
                    try:  # a case that fails is reported; the others still run on the table built at length
                        report.append({"files": files, **measure_case(case, actions, hudi_server, plain_server,
                                                                      args.repeat)})
                    except Exception as failure:
                        print(f"  {case}: FAILED: {' '.join(str(failure).split())[:600]}", flush=True)
                        report.append({"files": files, "case": case, "failed": str(failure)[:2000]})
                    shutil.rmtree(sinks, ignore_errors=True)
                for what, extra in (("planning", {}), ("planning-storage", {}), ("pruned", {"part": PART, "ts": TS}),
                                    ("changes", {"begin": begin.completion_time or begin.requested_time}),
                                    ("reverse", {"begin": begin.requested_time, "sink": str(sinks / "probe")})):
                    try:
                        memory = probe(plain_url, path, what, **extra)
                    except Exception as failure:
                        print(f"  client memory, {what}: FAILED: {str(failure)[-600:]}", flush=True)
                        continue
                    print(f"  client memory, {what}: peak {memory['peak_mb']:.0f} MB "
                          f"(after connecting {memory['baseline_mb']:.0f} MB)", flush=True)
                    report.append({"files": files, "case": f"client memory: {what}", **memory})
                shutil.rmtree(sinks, ignore_errors=True)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    print("\nRESULT " + json.dumps(report, default=int))


if __name__ == "__main__":
    main()
