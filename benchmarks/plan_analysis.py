"""What the server spends analysing a plan of task rows, before any job: with and without a declared schema.

    python benchmarks/plan_analysis.py [--splits 24] [--repeat 15]

Every plan of ours starts from rows the client hands to executor tasks (``client/task_rows.py``): a local
relation. Sent with a declared schema, the server adds a projection casting the Arrow data to it, analyses it
and compiles it, in every request that holds the plan (a reverse-stream batch sends its change plan three times:
persisted, counted, written). This times, on a plain server, the server's answer to a schema question (the
analysis alone, no job) for:

- ``range``: ``spark.range(2)``, the floor of a round trip;
- a change query's splits (``CDC_SPLITS``, 16 columns, lists among them) as a local relation, with the schema
  declared (as before) and as sent now (the server reads it from the Arrow data);
- the same under the change query's ``mapInArrow``.

Medians of ``--repeat`` runs after a warm-up, interleaved. Each pair must give the same schema (asserted).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pyarrow as pa
from hudi_connect_stack.spark_connect import start_spark_connect
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
from pyspark.sql.connect.plan import LocalRelation

from hudi_connect.client.server import connect
from hudi_connect.client.task_rows import map_task_rows, spark_schema, task_rows
from hudi_connect.core.executor.contracts import CDC_SPLITS, CdcSplitRow, rows_batch


def splits(count: int) -> list[CdcSplitRow]:
    """``count`` change-query splits of the kind a COW DATA_BEFORE_AFTER range makes (file names only)."""
    return [CdcSplitRow(f"2026112700000{n:04d}", f"2026112700001{n:04d}", f"category={n % 4}", f"fg-{n}-0",
                        f"fg-{n}-0_0-1-1_2026112700000{n:04d}.parquet", [], [f"2026112700000{n:04d}"], True,
                        f"fg-{n}-0_0-2-2_2026112700001{n:04d}.parquet", [], [f"2026112700001{n:04d}"], True,
                        False, False, [f"fg-{n}-0_0-2-2_2026112700001{n:04d}.parquet-cdc"], "DATA_BEFORE_AFTER")
            for n in range(count)]


def declared(spark: SparkSession, rows: list[CdcSplitRow]) -> DataFrame:
    """The splits as a local relation declaring its schema (how task rows were sent before)."""
    table = pa.Table.from_batches([rows_batch(rows, CDC_SPLITS.schema)])
    relation = LocalRelation(table, schema=spark_schema(CDC_SPLITS.schema).json())
    return ConnectDataFrame.withPlan(relation, session=spark)  # type: ignore[arg-type,return-value]


def identity(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield from batches


def timed(cases: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median seconds of each case, interleaved in rotating order after one warm-up each."""
    times: dict[str, list[float]] = {label: [] for label in cases}
    labels = list(cases)
    for attempt in range(repeat + 1):
        shift = attempt % len(labels)
        for label in labels[shift:] + labels[:shift]:
            started = time.perf_counter()
            cases[label]()
            if attempt:
                times[label].append(time.perf_counter() - started)
    return {label: statistics.median(t) for label, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--splits", type=int, default=24, help="rows of the local relation (a 300k-row range: 24)")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    run_dir = Path(tempfile.mkdtemp(prefix="hudi-connect-bench-"))
    server = start_spark_connect(run_dir, "plain")
    try:
        spark = connect(server.endpoint.url)  # type: ignore[attr-defined]
        rows = splits(args.splits)
        before, now = declared(spark, rows), task_rows(spark, rows, CDC_SPLITS.schema)
        mapped_before = map_task_rows(before, CDC_SPLITS.schema, identity, CDC_SPLITS.schema)
        mapped_now = map_task_rows(now, CDC_SPLITS.schema, identity, CDC_SPLITS.schema)
        assert before.schema == now.schema == spark_schema(CDC_SPLITS.schema)
        assert mapped_before.schema == mapped_now.schema
        medians = timed({"range": lambda: spark.range(2).schema,
                         "splits, schema declared": lambda: before.schema,
                         "splits, as sent now": lambda: now.schema,
                         "mapInArrow over splits, schema declared": lambda: mapped_before.schema,
                         "mapInArrow over splits, as sent now": lambda: mapped_now.schema}, args.repeat)
    finally:
        server.stop()
        shutil.rmtree(run_dir, ignore_errors=True)
    print(f"\nthe server's analysis of a plan ({args.splits} splits), medians of {args.repeat}")
    for label, seconds in medians.items():
        print(f"  {label:42s} {seconds * 1000:7.1f} ms")
    print("RESULT plan_analysis " + " ".join(f"{label.replace(' ', '_').replace(',', '')}={seconds * 1000:.1f}ms"
                                             for label, seconds in medians.items()))


if __name__ == "__main__":
    main()
