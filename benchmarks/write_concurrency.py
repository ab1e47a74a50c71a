"""What safety beside other writers costs one writer (issue #68): an upsert with the library's default
concurrency control (Hudi's optimistic concurrency control, lazy cleaning of failed writes, the in-process lock)
against the same upsert in Hudi's single-writer mode (``single_writer=True``), on one table, in one run.

Each round upserts a batch (a tenth of the keys updated, as many new) through both modes in rotating order into
the same table, so both meet the same table sizes; the medians of the rounds are compared. Afterwards the
table's snapshot (ours and Hudi's) must equal the model of every batch. Target: the default at most 1.05x.

    python benchmarks/write_concurrency.py --rows 100k --batch 10k --repeat 9
"""

from __future__ import annotations

import argparse
import statistics
import time

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from benchmarks.side_by_side import hudi_and_plain_sessions, sizes
from hudi_connect import HudiTable

SCHEMA = "id long, v string, ts long, part string"


def batch(spark: SparkSession, first_new: int, updated: range, step: int, new: int) -> DataFrame:
    """Updates of ``updated`` and ``new`` new keys from ``first_new``, ordering value ``step``."""
    keys = spark.range(updated.start, updated.stop).union(spark.range(first_new, first_new + new))
    return keys.select(F.col("id"), F.lit(f"s{step}").alias("v"), F.lit(step).cast("long").alias("ts"),
                       (F.col("id") % 4).cast("string").alias("part"))


def measure(table_type: str, rows: int, batch_rows: int, repeat: int) -> dict[str, float]:
    with hudi_and_plain_sessions() as (hudi, plain, run_dir):
        path = str(run_dir / f"concurrency-{table_type.lower()}")
        created = HudiTable.create(hudi, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="part",
                                   table_type=table_type)
        created.upsert(batch(hudi, 0, range(0), 0, rows))
        tables = {"multi-writer (default)": HudiTable.open(hudi, path),
                  "single writer": HudiTable.open(hudi, path, single_writer=True)}
        medians, expected = rotating_upserts(hudi, tables, rows, batch_rows, repeat)
        for name, count in (("ours", HudiTable.open(plain, path).snapshot().count()),
                            ("Hudi's", tables["single writer"].hudi.snapshot().count())):
            assert count == expected, f"{name} snapshot has {count} rows, the model {expected}"
        return medians


def rotating_upserts(spark: SparkSession, tables: dict[str, HudiTable], rows: int, batch_rows: int,
                     repeat: int) -> tuple[dict[str, float], int]:
    """``repeat`` rounds (after an untimed one that warms every side up) of an upsert through each of ``tables``
    (one table opened several ways, holding keys 0 to ``rows``), in rotating order: the medians per side, and
    the keys the table holds afterwards (every key written once or more)."""
    times: dict[str, list[float]] = {label: [] for label in tables}
    next_key, step = rows, 0
    for round_number in range(repeat + 1):
        labels = list(tables)
        shift = round_number % len(labels)
        for label in labels[shift:] + labels[:shift]:
            step += 1
            start = (step * batch_rows) % max(rows - batch_rows, 1)
            df = batch(spark, next_key, range(start, start + batch_rows), step, batch_rows)
            begin = time.perf_counter()
            tables[label].upsert(df)
            if round_number:
                times[label].append(time.perf_counter() - begin)
            next_key += batch_rows
    return {label: statistics.median(values) for label, values in times.items()}, next_key


def upsert_arguments(description: str | None, repeat: int) -> argparse.Namespace:
    """The command line of the upsert benchmarks: table size, batch size, rounds and table types."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rows", default="100k", type=lambda text: sizes(text)[0])
    parser.add_argument("--batch", default="10k", type=lambda text: sizes(text)[0])
    parser.add_argument("--repeat", type=int, default=repeat)
    parser.add_argument("--table-types", default="COPY_ON_WRITE,MERGE_ON_READ", type=lambda text: text.split(","))
    return parser.parse_args()


def main() -> None:
    args = upsert_arguments(__doc__, repeat=9)
    rows, batch_rows = args.rows, args.batch
    print("| table | rows | batch | multi-writer s | single writer s | ratio | target |\n|---|---|---|---|---|---|---|")
    for table_type in args.table_types:
        medians = measure(table_type, rows, batch_rows, args.repeat)
        multi, single = medians["multi-writer (default)"], medians["single writer"]
        print(f"| {table_type} | {rows} | {batch_rows} | {multi:.2f} | {single:.2f} | {multi / single:.3f} | "
              "≤ 1.05 |", flush=True)


if __name__ == "__main__":
    main()
