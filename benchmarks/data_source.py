"""``format("hudi")`` against our DataFrame read of the same request, on a plain Spark 4 server (issue #69).

    ~/.cache/hudi-connect/venv-spark43/bin/python benchmarks/data_source.py [--sizes 1m] [--repeat 3]

The Spark 4 client cannot talk to the Spark 3.5 Hudi server, so the tables are written first by this script in
the Spark 3.5 environment (``--write DIR``: the tables of ``snapshot_floor.py``, COW and MOR, a fifth of the rows
updated), then read on a plain Spark 4 server of the client's line: ``spark.read.format("hudi").load(path)``
(planned in the server's Python planning worker, read by its Python workers) against ``TableReader.snapshot()``
(planned in the client, base-only slices by Spark's Parquet scan), each materialising every row and column; both
answers are checked equal. Target: format("hudi") at most 1.1x ours.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

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


def main() -> None:
    from side_by_side import add_warmups, sizes

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=sizes, default=sizes("1m"))
    parser.add_argument("--updated", type=float, default=0.2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", type=Path, help="write the tables into this directory (Spark 3.5 environment)")
    parser.add_argument("--spark35-python", default=str(Path.home() / ".cache/hudi-connect/venv/bin/python"))
    add_warmups(parser)
    args = parser.parse_args()
    if args.write is not None:
        write_tables(args.write, args.sizes, args.updated)
        return

    import pyspark
    from hudi_connect_stack.spark_connect import start_spark_connect
    from side_by_side import fingerprint, interleaved

    from hudi_connect.client.server import connect
    from hudi_connect.reader import TableReader

    line = ".".join(pyspark.__version__.split(".")[:2])
    directory = Path(tempfile.mkdtemp(prefix="hudi-connect-bench-ds-"))
    directory.chmod(0o755)
    written = subprocess.run([args.spark35_python, __file__, "--write", str(directory), "--sizes",
                              ",".join(str(s) for s in args.sizes), "--updated", str(args.updated)],
                             cwd=BENCHMARKS, env={**os.environ, "PYTHONPATH": str(BENCHMARKS)})
    if written.returncode != 0:
        sys.exit("writing the tables in the Spark 3.5 environment failed")
    server = start_spark_connect(directory, f"plain-{line}")
    summary = []
    try:
        spark = connect(server.endpoint.url)  # type: ignore[attr-defined]
        for rows in args.sizes:
            for table_type in TABLE_TYPES:
                path = str(directory / f"{table_type.lower()}_{rows}")
                reader = TableReader(spark, path)
                medians = interleaved({
                    "ours": lambda r=reader: fingerprint(r.snapshot()),
                    "format": lambda p=path: fingerprint(spark.read.format("hudi").load(p)),
                }, args.repeat, args.warmups)
                (ours_time, ours_result), (format_time, format_result) = medians["ours"], medians["format"]
                assert ours_result == format_result, "format('hudi') and our DataFrame read disagree"
                print(f"{table_type} {rows}: ours {ours_time:.2f}s, format('hudi') {format_time:.2f}s, "
                      f"ratio {format_time / ours_time:.2f}", flush=True)
                summary.append((table_type, rows, ours_time, format_time))
    finally:
        server.stop()
    print(f"\nSpark {pyspark.__version__}: table  rows      ours s  format s  ratio  target")
    for table_type, rows, ours_time, format_time in summary:
        kind = "COW" if table_type == "COPY_ON_WRITE" else "MOR"
        print(f"{kind:<6} {rows:<9} {ours_time:6.2f}  {format_time:8.2f}  {format_time / ours_time:5.2f}  at most 1.1")
        print(f"RESULT data_source table={kind} rows={rows} ours_s={ours_time:.2f} format_s={format_time:.2f} "
              f"ratio={format_time / ours_time:.2f}")


if __name__ == "__main__":
    main()
