"""Where a MOR snapshot's time goes, phase by phase (issue #71): the workers' own code run in this process
over every file slice of the table, profiled, beside the whole read on the plain server.

    python benchmarks/mor_phases.py [--rows 4m] [--updated 0.2] [--decoder both|native|python]

The table is ``snapshot_floor.py``'s MOR table (bulk insert, then an upsert of ``--updated`` of the rows into
log files). The phases, each the cumulative time of the worker functions that do it: reading the base files
(Parquet), reading the log files (blocks framed, checked), decoding the log blocks' Avro records into Arrow,
merging (ordering, deduplication, `merge_slice`), and what is left of the read (shaping, filters). With
``--decoder both`` the slices are read once with Arrow's compiled Avro decoder (datafusion) and once with ours
alone, side by side. The whole read on the server is timed too: what the phases do not cover is Spark's part
(tasks, Arrow batches to the JVM, the aggregate).

With ``--memory DIR[,DIR]`` the table's largest file slice is read once more in a fresh process per checkout
(``DIR`` on ``PYTHONPATH``: the code of an older commit, say), as a Spark worker's task reads it, and its peak
resident memory and Arrow's peak allocation are printed side by side.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pickle
import pstats
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

from side_by_side import fingerprint, hudi_and_plain_sessions, interleaved, sizes
from snapshot_floor import write_table

from hudi_connect.core.executor import slices as slice_reader
from hudi_connect.core.format.log import native_avro
from hudi_connect.reader import TableReader

# phase: the functions whose cumulative time it is (module path suffix, function name)
PHASES = {
    "base files (Parquet)": [("executor/slices.py", "_base_records")],
    "log files read and framed": [("executor/slices.py", "_merged_blocks")],
    "log records decoded to Arrow": [("log/blocks.py", "data_block_records")],
    "merge": [("format/merge.py", "merge_slice"), ("format/merge.py", "merge_slice_partial"),
              ("executor/slices.py", "_with_merge_columns")],
    "all of read_slice": [("executor/slices.py", "read_slice")],
}

SLUGS = dict(zip(PHASES, ("base_s", "log_files_s", "decode_s", "merge_s", "read_slice_s"), strict=True))


@contextmanager
def decoder(kind: str) -> Iterator[None]:
    """Arrow's compiled decoder where the process has it ('native'), or ours alone ('python')."""
    if kind == "native":
        assert native_avro.native_decoding_available(), "install datafusion to time Arrow's decoder"
        yield
    else:
        with mock.patch.object(native_avro, "_context", lambda: None):
            yield


def phases(profile: pstats.Stats) -> dict[str, float]:
    stats = profile.stats  # type: ignore[attr-defined]
    totals = {}
    for phase, functions in PHASES.items():
        totals[phase] = sum(cumulative for (file, _, name), (_, _, _, cumulative, _) in stats.items()
                            if any(file.endswith(suffix) and name == wanted for suffix, wanted in functions))
    return totals


# one slice read as a worker's task reads it, in a fresh process: its rows, Arrow's peak, the peak resident set
SLICE_IN_A_FRESH_PROCESS = """
import pickle, resource, sys
import pyarrow as pa
from hudi_connect.core.executor.slices import read_slice
config, partition, base_file, log_files = pickle.load(open(sys.argv[1], "rb"))
rows = read_slice(config, partition, base_file, log_files).num_rows
print(rows, pa.default_memory_pool().max_memory(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def slice_memory(task: str, checkout: str) -> tuple[int, int, int]:
    """Rows, Arrow's peak bytes and the peak resident bytes of the pickled slice read by ``checkout``'s code."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [checkout, os.environ.get("PYTHONPATH")])))
    # -P: `python -c` would put the working directory (this checkout) ahead of PYTHONPATH and measure its code
    out = subprocess.run([sys.executable, "-P", "-c", SLICE_IN_A_FRESH_PROCESS, task], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    rows, arrow_peak, resident = (int(v) for v in out[-3:])
    return rows, arrow_peak, resident


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=lambda text: sizes(text)[0], default=sizes("4m")[0])
    parser.add_argument("--updated", type=float, default=0.2)
    parser.add_argument("--decoder", choices=("both", "native", "python"), default="both")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of the whole read on the server")
    parser.add_argument("--memory", type=lambda text: text.split(","), default=[],
                        help="checkouts whose code reads the largest slice in a fresh process (comma-separated)")
    args = parser.parse_args()
    with hudi_and_plain_sessions() as (hudi, plain, run_dir):
        path = str(run_dir / "mor")
        begin = time.perf_counter()
        write_table(hudi, path, args.rows, "MERGE_ON_READ", args.updated)
        print(f"MOR table of {args.rows} rows written in {time.perf_counter() - begin:.0f}s", flush=True)
        reader = TableReader(plain, path)
        planned = reader.planned_snapshot()
        config = reader.read_config(planned)
        file_slices = planned.plan.slices or ()
        print(f"{len(file_slices)} file slices, {sum(len(s.log_files) for s in file_slices)} log files")
        results = {}
        for kind in (("native", "python") if args.decoder == "both" else (args.decoder,)):
            with decoder(kind):
                profile = cProfile.Profile()
                started = time.perf_counter()
                rows = 0
                profile.enable()
                for s in file_slices:
                    rows += slice_reader.read_slice(config, s.partition, s.base_file.name if s.base_file else None,
                                                    [log.name for log in s.log_files]).num_rows
                profile.disable()
                wall = time.perf_counter() - started
            results[kind] = (phases(pstats.Stats(profile)), wall, rows)
        timed = interleaved({"server": lambda: fingerprint(reader.snapshot())}, args.repeat)
        server_time = timed["server"][0]
        largest = max(file_slices, key=lambda s: (s.base_file.size if s.base_file else 0)
                      + sum(log.size for log in s.log_files))
        task = run_dir / "largest_slice.pickle"
        task.write_bytes(pickle.dumps((config, largest.partition, largest.base_file.name if largest.base_file
                                       else None, [log.name for log in largest.log_files])))
        memory = {checkout: slice_memory(str(task), checkout) for checkout in args.memory}
    kinds = list(results)
    print(f"\nphase (s, profiled: cProfile adds overhead)  {'  '.join(f'{k:>8}' for k in kinds)}")
    for phase in PHASES:
        print(f"{phase:<44} {'  '.join(f'{results[k][0][phase]:8.2f}' for k in kinds)}")
    print(f"{'in-process wall (profiled)':<44} {'  '.join(f'{results[k][1]:8.2f}' for k in kinds)}")
    print(f"{'rows':<44} {'  '.join(f'{results[k][2]:8d}' for k in kinds)}")
    print(f"the whole read on the plain server (its workers' decoder): {server_time:.2f}s")
    for checkout, (rows, arrow_peak, resident) in memory.items():
        print(f"largest slice ({rows} rows) read by {checkout}: Arrow's peak {arrow_peak / 2**20:.0f} MiB, "
              f"peak resident {resident / 2**20:.0f} MiB")
    for kind in kinds:
        print(f"RESULT mor_phases rows={args.rows} decoder={kind} "
              + " ".join(f"{SLUGS[phase]}={seconds:.2f}" for phase, seconds in results[kind][0].items())
              + f" server_s={server_time:.2f}")


if __name__ == "__main__":
    main()
