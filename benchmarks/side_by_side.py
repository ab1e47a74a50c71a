"""What the side-by-side benchmarks share: a Hudi server and a plain server started
together, the generated table rows, and median timings of repeated runs."""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from hudi_connect_stack.endpoints import MinioEndpoint
from hudi_connect_stack.minio import create_bucket, start_minio
from hudi_connect_stack.spark_connect import start_spark_connect
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_connect.client.server import connect
from hudi_connect.table.options import incremental_options

T = TypeVar("T")
BUCKET = "bench"  # the MinIO bucket of the runs on MinIO
SCHEMA = "id long, name string, amount double, category string, ts long"


def log_format_options(log_format: str) -> dict[str, str]:
    """The writer option that gives a MOR table's upserts data blocks of ``log_format`` (avro or parquet)."""
    return {"hoodie.logfile.data.block.format": log_format}


@contextmanager
def minio_if(wanted: bool) -> Iterator[MinioEndpoint | None]:
    """A MinIO server for the run (a local process, its own directory) with the bucket :data:`BUCKET`, or
    None."""
    if not wanted:
        yield None
        return
    directory = Path(tempfile.mkdtemp(prefix="hudi-connect-bench-minio-"))
    minio = start_minio(directory)
    try:
        endpoint = minio.endpoint
        assert isinstance(endpoint, MinioEndpoint)
        create_bucket(endpoint, BUCKET)
        yield endpoint
    finally:
        minio.stop()
        shutil.rmtree(directory, ignore_errors=True)


def copy_table(minio: MinioEndpoint | None, path: str, copy: str) -> None:
    """Copy the table at ``path`` to ``copy``: a local folder, or on MinIO object by object (a server-side
    copy each)."""
    if minio is None:
        shutil.copytree(path, copy)
        return
    from minio import Minio
    from minio.commonconfig import CopySource

    client = Minio(minio.endpoint_url.split("://", 1)[1], access_key=minio.access_key, secret_key=minio.secret_key,
                   secure=False, region=minio.region)
    source, target = (p.removeprefix(f"s3a://{BUCKET}/") for p in (path, copy))
    for listed in client.list_objects(BUCKET, prefix=f"{source}/", recursive=True):
        name = listed.object_name
        client.copy_object(BUCKET, target + name[len(source):], CopySource(BUCKET, name))


@contextmanager
def hudi_and_plain_sessions(minio: MinioEndpoint | None = None) -> Iterator[tuple[SparkSession, SparkSession, Path]]:
    """Sessions on a Hudi server and on a plain one (no Hudi jar), both on ``minio`` if given,
    and a local run directory."""
    run_dir = Path(tempfile.mkdtemp(prefix="hudi-connect-bench-"))
    run_dir.chmod(0o755)
    hudi_server = start_spark_connect(run_dir, "hudi", minio=minio)
    try:
        plain_server = start_spark_connect(run_dir, "plain", minio=minio)
        try:
            yield (connect(hudi_server.endpoint.url),  # type: ignore[attr-defined]
                   connect(plain_server.endpoint.url), run_dir)  # type: ignore[attr-defined]
        finally:
            plain_server.stop()
    finally:
        hudi_server.stop()
        shutil.rmtree(run_dir, ignore_errors=True)


def generated_rows(spark: SparkSession, rows: int) -> DataFrame:
    """``rows`` records of :data:`SCHEMA` in four partitions (category), ordering value 1."""
    return spark.range(rows).select(
        F.col("id"), F.concat(F.lit("name-"), F.col("id").cast("string")).alias("name"),
        (F.col("id") * 1.5).alias("amount"), (F.col("id") % 4).cast("string").alias("category"),
        F.lit(1).cast("long").alias("ts"))


def hudi_cdc(hudi: SparkSession, path: str, begin_completion_time: str) -> DataFrame:
    """Hudi's CDC query as a user writes it on the Hudi server: options and ``load``, nothing listed first."""
    return hudi.read.format("hudi").options(**incremental_options(begin_completion_time, cdc=True)).load(path)


def fingerprint(df: DataFrame) -> int:
    """Materialise every row and column; the same number from two readers if they agree."""
    columns = [c for c in df.columns if c != "_hoodie_file_name"]
    # summed as decimals: a sum of 64-bit hashes overflows a long, an error under Spark 4's ANSI mode
    hashes = F.xxhash64(*columns).cast("decimal(38,0)")
    row = df.select(F.count(F.lit(1)).alias("n"), F.sum(hashes).alias("h")).collect()[0]
    return hash((row.n, row.h))


def snapshot_arguments(description: str | None) -> argparse.ArgumentParser:
    """The snapshot benchmarks' options beside ``--sizes``: the share of rows updated into logs, the format of
    the log files' data blocks, repeats and warm-ups."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--updated", type=float, default=0.2)
    parser.add_argument("--log-format", choices=("avro", "parquet"), default="avro",
                        help="the MOR table's log data blocks (hoodie.logfile.data.block.format; Hudi's default avro)")
    parser.add_argument("--repeat", type=int, default=3)
    add_warmups(parser)
    return parser


def add_warmups(parser: argparse.ArgumentParser) -> None:
    """``--warmups``: untimed runs of each side before the timed ones, three by default for the benchmarks of
    reads that take a second or less. The Hudi server has just written the table (its JVM has compiled Hudi's
    read and write paths) while the plain server meets the query's plan for the first time, and one warm-up
    left either side on a JVM still compiling: Hudi's CDC query of a 100k-row table on MinIO took 1.20 s after
    one warm-up (2026-11-26) and 0.59 s after three (2026-11-28). A long-lived server answers warm."""
    parser.add_argument("--warmups", type=int, default=3)


def busy_share(seconds: float = 0.25) -> float:
    """The share of the machine's CPU time that was busy over the next ``seconds`` (Linux's /proc/stat)."""
    def sample() -> tuple[int, int]:
        with open("/proc/stat") as stat:
            values = [int(v) for v in stat.readline().split()[1:]]
        idle = values[3] + values[4]  # idle and iowait
        return sum(values) - idle, sum(values)
    busy_before, total_before = sample()
    time.sleep(seconds)
    busy_after, total_after = sample()
    return (busy_after - busy_before) / max(1, total_after - total_before)


def settle(limit: float = 10.0, busy: float = 0.05) -> None:
    """Wait, at most ``limit`` seconds, until the machine is idle: a server's JVM goes on compiling for a
    fraction of a second after its query returns (0.1-0.3 s of CPU, measured), which the next timed run,
    often the other side's, would otherwise pay for."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and busy_share() > busy:
        pass


def interleaved(actions: Mapping[str, Callable[[], T]], repeat: int, warmups: int = 1) -> dict[str, tuple[float, T]]:
    """Median seconds of ``repeat`` runs of each action, and its result. ``warmups`` untimed runs of each
    first, then the runs in rounds (each round runs every action once, in a rotated order), so no side
    gets a warmer JVM or a quieter minute than the other; each timed run starts on an idle machine
    (:func:`settle`). Every run of an action must give one result."""
    labels = list(actions)
    results = {label: actions[label]() for label in labels}  # warm-up
    for _ in range(warmups - 1):
        for label in labels:
            assert actions[label]() == results[label], f"{label} gave different answers on repeated runs"
    times: dict[str, list[float]] = {label: [] for label in labels}
    for round_number in range(repeat):
        shift = round_number % len(labels)
        for label in labels[shift:] + labels[:shift]:
            settle()
            begin = time.perf_counter()
            result = actions[label]()
            times[label].append(time.perf_counter() - begin)
            assert result == results[label], f"{label} gave different answers on repeated runs"
    return {label: (statistics.median(times[label]), results[label]) for label in labels}


def sizes(text: str) -> list[int]:
    """``--sizes 250k,1m,4m`` as row (or file) counts."""
    units = {"k": 1_000, "m": 1_000_000}
    return [int(float(part[:-1]) * units[part[-1]]) if part[-1] in units else int(part)
            for part in text.lower().split(",") if part]
