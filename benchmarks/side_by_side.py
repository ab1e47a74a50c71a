"""What the side-by-side benchmarks share: a Hudi server and a plain server started
together, the generated table rows, and median timings of repeated runs."""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_connect.client.server import connect
from hudi_connect.stack.endpoints import MinioEndpoint
from hudi_connect.stack.spark_connect import start_spark_connect

T = TypeVar("T")
SCHEMA = "id long, name string, amount double, category string, ts long"


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


def timed(action: Callable[[], T], repeat: int) -> tuple[float, T]:
    """Median seconds of ``repeat`` runs, and their result (which must not change between runs)."""
    results, times = [], []
    for _ in range(repeat):
        begin = time.perf_counter()
        results.append(action())
        times.append(time.perf_counter() - begin)
    assert all(r == results[0] for r in results), "a reader gave different answers on repeated runs"
    return statistics.median(times), results[0]
