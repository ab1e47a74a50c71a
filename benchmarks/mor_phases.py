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
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=lambda text: sizes(text)[0], default=sizes("4m")[0])
    parser.add_argument("--updated", type=float, default=0.2)
    parser.add_argument("--decoder", choices=("both", "native", "python"), default="both")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of the whole read on the server")
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
    kinds = list(results)
    print(f"\nphase (s, profiled: cProfile adds overhead)  {'  '.join(f'{k:>8}' for k in kinds)}")
    for phase in PHASES:
        print(f"{phase:<44} {'  '.join(f'{results[k][0][phase]:8.2f}' for k in kinds)}")
    print(f"{'in-process wall (profiled)':<44} {'  '.join(f'{results[k][1]:8.2f}' for k in kinds)}")
    print(f"{'rows':<44} {'  '.join(f'{results[k][2]:8d}' for k in kinds)}")
    print(f"the whole read on the plain server (its workers' decoder): {server_time:.2f}s")
    for kind in kinds:
        print(f"RESULT mor_phases rows={args.rows} decoder={kind} "
              + " ".join(f"{SLUGS[phase]}={seconds:.2f}" for phase, seconds in results[kind][0].items())
              + f" server_s={server_time:.2f}")


if __name__ == "__main__":
    main()
