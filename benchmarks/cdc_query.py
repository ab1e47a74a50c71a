"""Change queries: hudi-connect's plan on a plain Spark Connect server against Hudi's
own CDC query on the Hudi server, same table and range.

    python benchmarks/cdc_query.py [--rows 1000000] [--commits 10] [--changed 0.05] [--repeat 3]

For each configuration (COW with DATA_BEFORE_AFTER, COW with OP_KEY_ONLY, MOR with
DATA_BEFORE_AFTER) it writes a table through Hudi: a bulk insert of ``--rows``,
then ``--commits`` commits each updating or (every third) deleting ``--changed``
of the rows. Then it times both readers
materialising every change event of those commits, checks that they agree on
the number of events of each kind, and prints the medians and the ratio.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from side_by_side import SCHEMA, generated_rows, hudi_and_plain_sessions, timed

from hudi_connect.cdc import ChangeQuery
from hudi_connect.table.hudi_table import HudiTable

CONFIGURATIONS = (("COPY_ON_WRITE", "DATA_BEFORE_AFTER"), ("COPY_ON_WRITE", "OP_KEY_ONLY"),
                  ("MERGE_ON_READ", "DATA_BEFORE_AFTER"))


def materialise(df: DataFrame) -> Counter[str]:
    """Every event computed and touched (hash of both images), counted by op."""
    rows = df.groupBy("op").agg(F.count(F.lit(1)).alias("n"), F.sum(F.xxhash64("before", "after"))).collect()
    return Counter({r.op: r.n for r in rows})


def write_table(hudi: SparkSession, path: str, table_type: str, mode: str, args: argparse.Namespace) -> HudiTable:
    table = HudiTable.create(hudi, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="category",
                             table_type=table_type, cdc=mode, metadata_table=False,
                             options={"hoodie.compact.inline.max.delta.commits": "1000",
                                      "hoodie.clean.automatic": "false"})
    rows = generated_rows(hudi, args.rows)
    table.bulk_insert(rows)
    for commit in range(args.commits):
        # every third commit deletes, the others update; each touches ``changed`` of the rows
        chosen = rows.where(F.rand(100 + commit) < args.changed)
        if commit % 3 == 2:
            table.delete(chosen.select("id", "category"))
            rows = rows.join(chosen.select("id"), "id", "left_anti")
        else:
            updated = chosen.withColumn("amount", F.col("amount") + commit + 1)
            table.upsert(updated.withColumn("ts", F.lit(commit + 2).cast("long")))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--commits", type=int, default=10)
    parser.add_argument("--changed", type=float, default=0.05)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=[f"{t}/{m}" for t, m in CONFIGURATIONS], action="append",
                        help="run just these configurations (TABLE_TYPE/MODE); default all")
    args = parser.parse_args()
    with hudi_and_plain_sessions() as (hudi, plain, run_dir):
        for table_type, mode in CONFIGURATIONS:
            if args.only and f"{table_type}/{mode}" not in args.only:
                continue
            path = str(run_dir / f"{table_type}_{mode}".lower())
            begin = time.perf_counter()
            table = write_table(hudi, path, table_type, mode, args)
            first = table.timeline().write_commits().instants[1]  # the bulk insert; changes come after it
            print(f"\n{table_type} {mode}: wrote {args.rows} rows and {args.commits} change commits "
                  f"in {time.perf_counter() - begin:.0f}s")
            hudi_time, hudi_events = timed(lambda t=table, f=first: materialise(t.hudi_cdc(f)), args.repeat)
            query = ChangeQuery(plain, path)
            ours_time, ours_events = timed(lambda q=query, f=first: materialise(q.changes(f)), args.repeat)
            assert ours_events == hudi_events, (ours_events, hudi_events)
            print(f"  events {dict(hudi_events)}")
            print(f"  Hudi's CDC query (Hudi server):           {hudi_time:7.2f}s")
            print(f"  hudi-connect (plain server, no Hudi jar): {ours_time:7.2f}s")
            print(f"  ratio ours / Hudi's: {ours_time / hudi_time:.2f} (target: at most 0.5)")


if __name__ == "__main__":
    main()
