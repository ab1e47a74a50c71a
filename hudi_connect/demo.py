"""The demo: what sets hudi-connect apart, in a couple of minutes.

A MOR table is written through :class:`HudiTable` on a server with Hudi's jars;
everything after that (the snapshot, the changes of each commit with the
inference case of each file group, the file slices, a reverse stream to files)
goes through the same table object opened on a server *without* them, when one is given.
"""

from __future__ import annotations

import dataclasses
import json
import textwrap
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession
from tabulate import tabulate

from hudi_connect.core.format.spec_models import slice_bytes
from hudi_connect.core.format.table_schema import META_COLUMNS
from hudi_connect.core.format.timeline import Instant
from hudi_connect.reverse import FileSink
from hudi_connect.table import HudiTable

DEMO_SCHEMA = "id int, name string, city string, amount double, ts long"
TRIPS = [(1, "alice", "paris", 10.0, 1), (2, "bob", "lyon", 20.0, 1), (3, "carol", "paris", 30.0, 1),
         (4, "dave", "nice", 40.0, 1)]
UPSERT = [(2, "bob", "lyon", 25.0, 2), (5, "erin", "nice", 50.0, 2)]
DELETE = [(3, "carol", "paris", 30.0, 3)]
STEPS = 6


@dataclass(frozen=True)
class DemoResult:
    """What the demo showed, for checking it."""

    snapshot: tuple[tuple[Any, ...], ...]  # (id, name, city, amount, ts) by id
    changes: tuple[tuple[tuple[str, str], ...], ...]  # per commit: (op, record key) by key
    file_slices: int
    records_streamed: int
    export_root: str


class _Progress:
    """A numbered progress line per step, with the time the previous one took."""

    def __init__(self) -> None:
        self._step, self._started = 0, time.monotonic()
        self.began = self._started

    def __call__(self, what: str) -> None:
        now = time.monotonic()
        took = f"  (previous step {now - self._started:.1f}s)" if self._step else ""
        self._step, self._started = self._step + 1, now
        print(f"\n[{self._step}/{STEPS}] {what}{took}", flush=True)


def _table(rows: Iterable[Mapping[str, Any]]) -> str:
    rows = list(rows)
    return textwrap.indent(tabulate(rows, headers="keys", disable_numparse=True), "  ") if rows else "  (none)"


def _image(row: Any) -> str:
    if row is None:
        return ""
    return json.dumps({k: v for k, v in row.asDict().items() if k not in META_COLUMNS})


def run_demo(spark: SparkSession, path: str, *, jar_free: SparkSession | None = None,
             export_root: str | None = None) -> DemoResult:
    """Write on ``spark`` (Hudi's jars), read on ``jar_free`` (any server; default ``spark``)."""
    reader = jar_free or spark
    where = "a server without Hudi's jars" if jar_free is not None else "the same server"
    step = _Progress()

    step(f"writing a MOR table at {path} through HudiTable: 4 trips inserted, 2 upserted, 1 deleted")
    table = HudiTable.create(spark, path, DEMO_SCHEMA, record_key="id", ordering_field="ts", partition_by="city",
                             table_type="MERGE_ON_READ")
    commits = [("insert", table.insert(spark.createDataFrame(TRIPS, DEMO_SCHEMA))),
               ("upsert", table.upsert(spark.createDataFrame(UPSERT, DEMO_SCHEMA))),
               ("delete", table.delete(spark.createDataFrame(DELETE, DEMO_SCHEMA)))]

    step(f"the snapshot, merged from base and log files on {where}")
    read = HudiTable.open(reader, path)  # the same table object, on any server
    rows = read.snapshot().orderBy("id").collect()
    print(_table(r.asDict() for r in rows))

    step("the timeline, newest first")
    keep = ("requested_time", "completion_time", "action", "operation_type", "records_written", "inserts",
            "updates", "deletes")
    print(_table({k: v for k, v in dataclasses.asdict(e).items() if k in keep} for e in read.history()))

    step(f"the changes of each commit (RFC-51), computed on {where}")
    begin: Instant | str = "earliest"
    changed = []
    for operation, commit in commits:
        print(f"\n  commit {commit.requested_time} ({operation}); how each file group's changes are found:")
        print(textwrap.indent(read.change_query.explain(begin, commit), "    "))
        changes = read.changes(begin, commit, format="typed").orderBy("record_key").collect()
        print(_table({"op": c.op, "key": c.record_key, "before": _image(c.before), "after": _image(c.after)}
                     for c in changes))
        changed.append(tuple((c.op, c.record_key) for c in changes))
        begin = commit

    step("the file slices a reader sees (RFC-64's FileIndex)")
    slices = [s for snapshot in read.files.list_files_at() for s in snapshot.file_slices]
    print(_table({"partition": s.partition, "file group": s.file_id,
                  "base file": s.base_file.name if s.base_file else "-",
                  "log files": len(s.log_files), "bytes": slice_bytes(s)} for s in slices))

    root = export_root or f"{path.rstrip('/')}-export"
    step(f"a reverse stream (RFC-70) of the table to JSON files under {root}, checkpointed on the timeline")
    stream = read.reverse_stream("demo", [FileSink(root, "json")],
                                 progress=lambda message: print(f"  {message}", flush=True))
    result = stream.run_once()
    print(f"  sent {result.records} records in {result.seconds:.1f}s; checkpoint: {stream.checkpoint()}")
    print(f"\nDone in {time.monotonic() - step.began:.0f}s.")
    return DemoResult(tuple(tuple(r) for r in rows), tuple(changed), len(slices), result.records, root)
