"""Change queries: hudi-connect's plan on a plain Spark Connect server against Hudi's
own CDC query on the Hudi server, same table and range.

    python benchmarks/cdc_query.py [--sizes 250k,1m] [--commits 10] [--changed 0.05] [--repeat 3]

For each configuration (COW with DATA_BEFORE_AFTER, COW with OP_KEY_ONLY, MOR with
DATA_BEFORE_AFTER) and each size it writes a table through Hudi: a bulk insert of
that many rows, then ``--commits`` commits each updating or (every third) deleting
``--changed`` of the rows. Then it times the readers materialising every change
event of those commits (interleaved medians, after a warm-up), checks that they
agree on the number of events of each kind, and prints the medians and the ratios
per size. Where ``.cdc`` records hold whole events, the decoder ``auto`` did not
choose (the JVM's, the plain server has spark-avro, or Python's) runs too, for
information.
"""

from __future__ import annotations

import argparse
import shutil
import time
from collections import Counter
from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from side_by_side import SCHEMA, add_warmups, generated_rows, hudi_and_plain_sessions, hudi_cdc, interleaved, sizes

from hudi_connect.cdc import ChangeQuery
from hudi_connect.table.hudi_table import HudiTable

CONFIGURATIONS = (("COPY_ON_WRITE", "DATA_BEFORE_AFTER"), ("COPY_ON_WRITE", "OP_KEY_ONLY"),
                  ("MERGE_ON_READ", "DATA_BEFORE_AFTER"))


def materialise(df: DataFrame) -> Counter[str]:
    """Every event computed and touched (hash of both images), counted by op."""
    rows = df.groupBy("op").agg(F.count(F.lit(1)).alias("n"), F.sum(F.xxhash64("before", "after"))).collect()
    return Counter({r.op: r.n for r in rows})


def write_table(hudi: SparkSession, path: str, table_type: str, mode: str, rows: int,
                args: argparse.Namespace) -> HudiTable:
    table = HudiTable.create(hudi, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="category",
                             table_type=table_type, cdc=mode, metadata_table=False,
                             options={"hoodie.compact.inline.max.delta.commits": "1000",
                                      "hoodie.clean.automatic": "false"})
    data = generated_rows(hudi, rows)
    table.bulk_insert(data)
    for commit in range(args.commits):
        # every third commit deletes, the others update; each touches ``changed`` of the rows
        chosen = data.where(F.rand(100 + commit) < args.changed)
        if commit % 3 == 2:
            table.delete(chosen.select("id", "category"))
            data = data.join(chosen.select("id"), "id", "left_anti")
        else:
            updated = chosen.withColumn("amount", F.col("amount") + commit + 1)
            table.upsert(updated.withColumn("ts", F.lit(commit + 2).cast("long")))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=sizes, default=sizes("250k,1m"),
                        help="rows of each table, comma-separated (250k,1m,4m)")
    parser.add_argument("--commits", type=int, default=10)
    parser.add_argument("--changed", type=float, default=0.05)
    parser.add_argument("--repeat", type=int, default=3)
    add_warmups(parser)
    parser.add_argument("--only", choices=[f"{t}/{m}" for t, m in CONFIGURATIONS], action="append",
                        help="run just these configurations (TABLE_TYPE/MODE); default all")
    args = parser.parse_args()
    summary = []
    with hudi_and_plain_sessions() as (hudi, plain, run_dir):
        for rows in args.sizes:
            for table_type, mode in CONFIGURATIONS:
                if args.only and f"{table_type}/{mode}" not in args.only:
                    continue
                path = str(run_dir / f"{table_type}_{mode}_{rows}".lower())
                begin = time.perf_counter()
                table = write_table(hudi, path, table_type, mode, rows, args)
                first = table.timeline().write_commits().instants[1]  # the bulk insert; changes come after it
                print(f"\n{table_type} {mode}, {rows} rows: wrote them and {args.commits} change commits "
                      f"in {time.perf_counter() - begin:.0f}s")
                query = ChangeQuery(plain, path)
                decoding = query.explain(first).splitlines()[-1]
                actions: dict[str, Callable[[], Counter[str]]] = {
                    "hudi": lambda p=path, f=first: materialise(hudi_cdc(hudi, p, str(f.completion_time))),
                    "ours": lambda q=query, f=first: materialise(q.changes(f)),
                }
                if "DATA_BEFORE_AFTER" in decoding:  # the other decoder of the same records, for information
                    other = "python" if "decoded in the JVM" in decoding else "jvm"
                    forced = ChangeQuery(plain, path, avro_decoding=other)
                    actions[f"ours_{other}"] = lambda q=forced, f=first: materialise(q.changes(f))
                    print(f"  {decoding}")
                medians = interleaved(actions, args.repeat, args.warmups)
                hudi_time, hudi_events = medians["hudi"]
                for label, (_, found) in medians.items():
                    assert found == hudi_events, (label, found, hudi_events)
                print(f"  events {dict(hudi_events)} (equal on every side)")
                target = 1.0 if (table_type, mode) == ("COPY_ON_WRITE", "DATA_BEFORE_AFTER") else 0.5
                for label, (seconds, _) in medians.items():
                    print(f"  {label:12s} {seconds:7.2f}s  ratio to Hudi's {seconds / hudi_time:5.2f}")
                    if label != "hudi":
                        summary.append((rows, f"{table_type}/{mode}", label, hudi_time, seconds, target))
                shutil.rmtree(path, ignore_errors=True)
    print("\nrows      configuration                     reader        Hudi s  ours s  ratio  target")
    for rows, configuration, label, hudi_time, seconds, target in summary:
        shown = f"at most {target}" if label == "ours" else "(information)"
        print(f"{rows:<9} {configuration:33s} {label:12s} {hudi_time:7.2f} {seconds:7.2f} "
              f"{seconds / hudi_time:6.2f}  {shown}")
        print(f"RESULT cdc_query rows={rows} configuration={configuration} reader={label} "
              f"hudi_s={hudi_time:.2f} ours_s={seconds:.2f} ratio={seconds / hudi_time:.2f}")


if __name__ == "__main__":
    main()
