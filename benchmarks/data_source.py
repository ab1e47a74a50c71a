"""``format("hudi")`` against our DataFrame read of the same request, on a plain Spark 4 server (issue #69).

    ~/.cache/hudi-connect/venv-spark43/bin/python benchmarks/data_source.py [--sizes 1m] [--repeat 3]

The Spark 4 client cannot talk to the Spark 3.5 Hudi server, so the tables are written first by this script in
the Spark 3.5 environment (``--write DIR``: the tables of ``snapshot_floor.py``, COW and MOR, a fifth of the rows
updated), then read on a plain Spark 4 server of the client's line: ``spark.read.format("hudi").load(path)``
(planned in the server's Python planning worker, read by its Python workers) against ``TableReader.snapshot()``
(planned in the client, base-only slices by Spark's Parquet scan), each materialising every row and column; both
answers are checked equal. Target: format("hudi") at most 1.1x ours.

``--stream``: ``readStream.format("hudi")`` on the plain Spark 4 server against Hudi's own streaming source on the
Spark 3.5 Hudi server (kept by a helper process in the 3.5 environment, ``--hudi-streams``), the same table: each
run a new checkpoint, ``startOffset`` earliest, into Spark's Parquet sink, ``trigger(availableNow=True)``, the
rows landed counted (untimed) and checked equal. Target: ours at least 1.0x Hudi's throughput.

A Python data source's rows reach the JVM as Arrow batches from its Python workers, however they are read:
``--floor`` times that path alone (``mapInArrow`` of pyarrow reading the COW table's base files, no Hudi logic)
beside the two reads, the bound format("hudi") cannot beat.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parent
TABLE_TYPES = ("COPY_ON_WRITE", "MERGE_ON_READ")


def write_tables(directory: Path, sizes: list[int], updated: float) -> None:
    """The tables, written by Hudi on the Spark 3.5 Hudi server (run in the 3.5 environment)."""
    from side_by_side import hudi_and_plain_sessions
    from snapshot_floor import write_table

    with hudi_and_plain_sessions() as (hudi, _, _):
        for rows in sizes:
            for table_type in TABLE_TYPES:
                write_table(hudi, str(directory / f"{table_type.lower()}_{rows}"), rows, table_type, updated)


def stream_landed(spark: Any, path: str, run_dir: Path) -> Path:
    """A stream of the table's commits from the earliest, into Spark's Parquet sink with a new checkpoint,
    ``availableNow``: where it landed (its rows counted after the caller's clock stops)."""
    out = run_dir / f"stream-{uuid.uuid4().hex[:8]}"
    query = (spark.readStream.format("hudi").option("hoodie.datasource.streaming.startOffset", "earliest")
             .load(path).writeStream.format("parquet").option("checkpointLocation", str(out / "checkpoint"))
             .option("path", str(out / "rows")).trigger(availableNow=True).start())
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(f"the stream of {path} failed: {query.exception()}")
    return out


def serve_hudi_streams(directory: Path) -> None:
    """The helper of ``--stream`` (3.5 environment): a Hudi server; for each table path read from stdin, Hudi's
    streaming source run once (:func:`stream_landed`), answered on stdout with its seconds and rows."""
    import time

    from hudi_connect_stack.spark_connect import start_spark_connect

    from hudi_connect.client.server import connect

    server = start_spark_connect(directory, "hudi")
    try:
        spark = connect(server.endpoint.url)  # type: ignore[attr-defined]
        print("ready", flush=True)
        for line in sys.stdin:
            begin = time.perf_counter()
            out = stream_landed(spark, line.strip(), directory)
            seconds = time.perf_counter() - begin
            print(f"{seconds} {spark.read.parquet(str(out / 'rows')).count()}", flush=True)
    finally:
        server.stop()


class HudiStreams:
    """The ``--hudi-streams`` helper process, asked for one run of Hudi's streaming source at a time."""

    def __init__(self, python: str, directory: Path) -> None:
        self._process = subprocess.Popen([python, __file__, "--hudi-streams", str(directory)], cwd=BENCHMARKS,
                                         env={**os.environ, "PYTHONPATH": str(BENCHMARKS)}, text=True,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self._process.stdout is not None and self._process.stdin is not None
        self._stdin, self._stdout = self._process.stdin, self._process.stdout
        if self._stdout.readline().strip() != "ready":
            sys.exit("the Hudi server of the 3.5 environment did not start")

    def run(self, path: str) -> tuple[float, int]:
        """Seconds of one run of Hudi's streaming source on ``path``, as timed in the helper, and its rows."""
        self._stdin.write(path + "\n")
        self._stdin.flush()
        seconds, rows = self._stdout.readline().split()
        return float(seconds), int(rows)

    def close(self) -> None:
        self._stdin.close()
        self._process.wait(timeout=120)


def compare_streams(spark: Any, directory: Path, args: argparse.Namespace) -> list[tuple[str, int, float, float]]:
    """Median seconds of our stream and of Hudi's streaming source per table, rows checked equal, runs
    interleaved (each side's time taken where it runs: the helper times Hudi's)."""
    import statistics
    import time

    hudi = HudiStreams(args.spark35_python, directory)
    summary = []
    try:
        for rows in args.sizes:
            for table_type in TABLE_TYPES:
                path = str(directory / f"{table_type.lower()}_{rows}")
                times: dict[str, list[float]] = {"ours": [], "hudi": []}
                for round_number in range(args.warmups + args.repeat):
                    for side in (("ours", "hudi") if round_number % 2 == 0 else ("hudi", "ours")):
                        if side == "hudi":
                            seconds, landed = hudi.run(path)
                        else:
                            begin = time.perf_counter()
                            out = stream_landed(spark, path, directory)
                            seconds = time.perf_counter() - begin
                            landed = spark.read.parquet(str(out / "rows")).count()
                        assert landed == rows, f"{side}'s stream of {path} landed {landed} rows, not {rows}"
                        if round_number >= args.warmups:
                            times[side].append(seconds)
                ours, theirs = statistics.median(times["ours"]), statistics.median(times["hudi"])
                print(f"stream {table_type} {rows}: ours {ours:.2f}s, Hudi's streaming source {theirs:.2f}s, "
                      f"throughput ratio {theirs / ours:.2f}", flush=True)
                summary.append((table_type, rows, ours, theirs))
    finally:
        hudi.close()
    return summary


def floor_rows(spark: Any, path: str) -> Any:
    """The COW table's rows by the Python-to-JVM path alone: pyarrow reads each base file in a ``mapInArrow``
    task (as many tasks as format("hudi") plans), no Hudi logic; Spark's rows from Arrow as the data source's."""
    from hudi_connect.reader import TableReader

    plan = TableReader(spark, path).plan()
    files = ["/".join(part for part in (path, s.partition, s.base_file.name) if part)
             for s in plan.slices or () if s.base_file is not None]
    schema = spark.read.parquet(*files).schema

    def read(batches: Any) -> Any:
        import pyarrow.parquet as pq

        for batch in batches:
            for file in batch.column(0).to_pylist():
                yield from pq.ParquetFile(file).read().to_batches()

    return spark.createDataFrame([(f,) for f in files], "path string").repartition(
        2 * (os.cpu_count() or 1)).mapInArrow(read, schema)


def main() -> None:
    from side_by_side import add_warmups, sizes

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=sizes, default=sizes("1m"))
    parser.add_argument("--updated", type=float, default=0.2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", type=Path, help="write the tables into this directory (Spark 3.5 environment)")
    parser.add_argument("--spark35-python", default=str(Path.home() / ".cache/hudi-connect/venv/bin/python"))
    parser.add_argument("--tables", type=Path, help="read the tables an earlier --write left here (not written)")
    parser.add_argument("--stream", action="store_true", help="streams: ours against Hudi's streaming source")
    parser.add_argument("--floor", action="store_true", help="also time the Python data sources' Arrow path alone")
    parser.add_argument("--hudi-streams", type=Path, help=argparse.SUPPRESS)  # the --stream helper
    add_warmups(parser)
    args = parser.parse_args()
    if args.write is not None:
        write_tables(args.write, args.sizes, args.updated)
        return
    if args.hudi_streams is not None:
        serve_hudi_streams(args.hudi_streams)
        return

    import pyspark
    from hudi_connect_stack.spark_connect import start_spark_connect
    from side_by_side import fingerprint, interleaved

    from hudi_connect.client.server import connect
    from hudi_connect.reader import TableReader

    line = ".".join(pyspark.__version__.split(".")[:2])
    directory = args.tables or Path(tempfile.mkdtemp(prefix="hudi-connect-bench-ds-"))
    if args.tables is None:
        directory.chmod(0o755)
        written = subprocess.run([args.spark35_python, __file__, "--write", str(directory), "--sizes",
                                  ",".join(str(s) for s in args.sizes), "--updated", str(args.updated)],
                                 cwd=BENCHMARKS, env={**os.environ, "PYTHONPATH": str(BENCHMARKS)})
        if written.returncode != 0:
            sys.exit("writing the tables in the Spark 3.5 environment failed")
    server = start_spark_connect(directory, f"plain-{line}")
    summary, streams = [], []
    try:
        spark = connect(server.endpoint.url)  # type: ignore[attr-defined]
        if args.stream:
            streams = compare_streams(spark, directory, args)
        for rows in args.sizes:
            for table_type in TABLE_TYPES if not args.stream else ():
                path = str(directory / f"{table_type.lower()}_{rows}")
                reader = TableReader(spark, path)
                actions = {"ours": lambda r=reader: fingerprint(r.snapshot()),
                           "format": lambda p=path: fingerprint(spark.read.format("hudi").load(p))}
                if args.floor and table_type == "COPY_ON_WRITE":
                    actions["floor"] = lambda p=path: fingerprint(floor_rows(spark, p))
                medians = interleaved(actions, args.repeat, args.warmups)
                (ours_time, ours_result), (format_time, format_result) = medians["ours"], medians["format"]
                assert ours_result == format_result, "format('hudi') and our DataFrame read disagree"
                floor = medians.get("floor", (None, ours_result))
                assert floor[1] == ours_result, "the Arrow path's rows and our DataFrame read disagree"
                print(f"{table_type} {rows}: ours {ours_time:.2f}s, format('hudi') {format_time:.2f}s, "
                      f"ratio {format_time / ours_time:.2f}"
                      + (f", the Arrow path alone {floor[0]:.2f}s" if floor[0] is not None else ""), flush=True)
                summary.append((table_type, rows, ours_time, format_time, floor[0]))
    finally:
        server.stop()
    print(f"\nSpark {pyspark.__version__}: table  rows      ours s  format s  ratio  target  Arrow path s (ratio)")
    for table_type, rows, ours_time, format_time, floor_time in summary:
        kind = "COW" if table_type == "COPY_ON_WRITE" else "MOR"
        alone = f"  {floor_time:.2f} ({floor_time / ours_time:.2f})" if floor_time is not None else ""
        print(f"{kind:<6} {rows:<9} {ours_time:6.2f}  {format_time:8.2f}  {format_time / ours_time:5.2f}  at most 1.1"
              + alone)
        print(f"RESULT data_source table={kind} rows={rows} ours_s={ours_time:.2f} format_s={format_time:.2f} "
              f"ratio={format_time / ours_time:.2f}" + (f" arrow_path_s={floor_time:.2f}" if floor_time else ""))
    for table_type, rows, ours_time, hudi_time in streams:
        kind = "COW" if table_type == "COPY_ON_WRITE" else "MOR"
        print(f"RESULT data_source_stream table={kind} rows={rows} ours_s={ours_time:.2f} hudi_s={hudi_time:.2f} "
              f"throughput_ratio={hudi_time / ours_time:.2f} target=at_least_1.0")


if __name__ == "__main__":
    main()
