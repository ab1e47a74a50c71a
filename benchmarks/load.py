"""Many clients on one server (issue #36, load): throughput, latency, errors and the server's memory.

    python benchmarks/load.py [--clients 8] [--seconds 120] [--rows 20k] [--writes 6]

A Hudi server writes three tables (COW with the metadata table, MOR with it, MOR without; inline compaction,
CDC on) and their model in plain Python (``integration/load.py``). Then ``--clients`` clients, each with its own
Connect session, run a mix for ``--seconds``, first on a plain server (our jar-free snapshot, time travel,
incremental read and change query on each table), then on the Hudi server (Hudi's own four reads through
HudiTable on each table, beside our snapshot and change query). Every answer is compared with the model's.
Reported per server: operations, throughput, p50/p99 latency, wrong answers, errors, and the resident memory
of the server's JVM and its Python workers before the load, at its peak and after it (sampled from /proc).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from footprint import ServerMemory
from hudi_connect_stack.spark_connect import start_spark_connect
from hudi_connect_stack.testing.process_memory import resident_mb
from side_by_side import sizes

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the load's model is shared with its CI test
from hudi_connect.client.server import connect
from integration.load import LoadResult, LoadTable, hudi_queries, jar_free_queries, run_load, write_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--rows", default="20k", help="records per table")
    parser.add_argument("--writes", type=int, default=6, help="writes after each table's bulk insert")
    args = parser.parse_args()
    rows = sizes(args.rows)[0]
    run_dir = Path(tempfile.mkdtemp(prefix="hudi-connect-load-"))
    run_dir.chmod(0o755)
    services = []
    try:
        for flavor in ("hudi", "plain"):
            services.append(start_spark_connect(run_dir, flavor))
        hudi, plain = services
        spark = connect(hudi.endpoint.url)  # type: ignore[attr-defined]
        tables: list[LoadTable] = [
            write_table(spark, str(run_dir / name), table_type, metadata_table=mdt, rows=rows, writes=args.writes)
            for name, table_type, mdt in (("cow_mdt", "COPY_ON_WRITE", True), ("mor_mdt", "MERGE_ON_READ", True),
                                          ("mor_nomdt", "MERGE_ON_READ", False))]
        spark.stop()
        mixes = {"plain": (plain, [q for t in tables for q in jar_free_queries(t)]),
                 "hudi": (hudi, [q for t in tables for q in (*hudi_queries(t), *jar_free_queries(t)[::3])])}
        print(f"{args.clients} clients, {args.seconds:.0f} s per server, 3 tables of {rows} records "
              f"and {args.writes} writes each\n")
        rows_out = []
        for name, (service, queries) in mixes.items():
            session = service.processes[0].pid  # each server runs in a session of its own
            before = resident_mb(session)
            memory = ServerMemory(session, interval=0.5)
            with memory.watching():
                result: LoadResult = run_load(service.endpoint.url, queries,  # type: ignore[attr-defined]
                                              clients=args.clients, seconds=args.seconds)
            after = resident_mb(session)
            print(f"{name} server: {result.summary()}\n")
            rows_out.append(
                f"| {name} | {result.operations} | {result.operations / result.seconds:.2f} | "
                f"{result.latency(0.5):.2f} | {result.latency(0.99):.2f} | "
                f"{len(result.wrong)} | {len(result.errors)} | {before[0]:.0f} / {memory.jvm_peak_mb:.0f} / "
                f"{after[0]:.0f} | {before[1]:.0f} / {memory.python_peak_mb:.0f} / {after[1]:.0f} |")
        print("| server | operations | per second | p50 s | p99 s | wrong | errors | JVM MB before / peak / after "
              "| Python workers MB before / peak / after |")
        print("|---|---|---|---|---|---|---|---|---|")
        print("\n".join(rows_out))
    finally:
        for service in reversed(services):
            service.stop()
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
