"""One metadata-table task's peak memory (issue #33): the listing task's and the column-statistics lookup's
bodies run in a fresh process each, on a table ``scale.py --work-dir`` built, as a Spark worker runs them.

    python benchmarks/task_memory.py /work/scale-tables/scale_1000000 [listing|pruned-listing|stats]

Prints the rows the body sent, its time and the process's peak resident memory (``ru_maxrss``) against the
same after imports and the timeline. With ``PYTHONPATH`` at an older checkout, it measures that code.
"""

from __future__ import annotations

import os
import resource
import sys
import time

import pyarrow as pa

from hudi_connect.core.executor import metadata_reader as reader
from hudi_connect.core.executor.listing import PartitionFilter
from hudi_connect.core.format.expressions import col, lit
from hudi_connect.core.format.timeline import Timeline, parse_instant_file_name

PARTITIONS = PartitionFilter(("part",), pa.schema([("part", pa.string())]), True, False, None)


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    base, what = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "listing"
    names = os.listdir(os.path.join(base, ".hoodie", "timeline"))
    timeline = Timeline.from_files([f for f in (parse_instant_file_name(n, 0) for n in names) if f is not None])
    source = reader.MetadataSource(f"file://{base}", reader.DataTimeline.of(timeline), 9)
    before, started, rows = peak_mb(), time.monotonic(), 0
    if what in ("listing", "pruned-listing"):
        keep = PARTITIONS if what == "listing" else PartitionFilter(
            PARTITIONS.fields, PARTITIONS.schema, True, False, col("part") == lit("p00007"))
        for batch in reader.list_through_metadata(source, keep, [pa.record_batch({"base_uri": [source.base_uri]})]):
            rows += batch.num_rows
    elif what == "stats":
        for shard, shards in reader.stats_shards():
            trigger = pa.record_batch({"shard": [shard], "shards": [shards]}, schema=reader.STATS_SHARDS_SCHEMA)
            for batch in reader.match_by_metadata_stats(source, PARTITIONS, col("ts") > lit(1500), ("ts",), [trigger]):
                rows += batch.num_rows
    else:
        raise SystemExit(f"unknown body {what!r}: listing, pruned-listing or stats")
    print(f"{what}: {rows} rows, {time.monotonic() - started:.1f}s, peak {peak_mb():.0f} MB "
          f"(after imports and the timeline {before:.0f} MB)")


if __name__ == "__main__":
    main()
