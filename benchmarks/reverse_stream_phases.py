"""Where a reverse-stream batch to Kafka spends its time, beside the job a user would write by hand.

    python benchmarks/reverse_stream_phases.py [--sizes 300k,1m] [--repeat 3]

The table and the two batches are those of ``reverse_stream_kafka.py`` (a CDC-enabled COW table, a bulk insert
and three change commits changing 5% of the rows; a full export and the incremental batch of the three
commits, one new topic per run). Each batch of ours is split on the client into its phases, and every Spark job
the plain server ran for it is listed from the server's status API (its UI is on):

- timeline: the checkpoint, the timeline and commit metadata (and the files, where the read lists them) in one
  task (``TimelineView.list_with_files``);
- plan: the batch's DataFrame built (``full_batch`` / ``change_batch``);
- persisted: the incremental batch marked for caching (a request, no job);
- sent: the sink's Kafka write (for an incremental batch, its computation into the cache too);
- checkpoint: the checkpoint's claim and publication (``CheckpointStore.advance``); for an incremental batch,
  in the same task, the count of the cached batch (a full export's count runs beside its write).

The hand-written jobs (Hudi's snapshot or CDC query, ``to_json``, ``df.write.format("kafka")`` on the Hudi
server) are timed whole. Medians of ``--repeat`` runs after one warm-up each; every topic must hold the expected
count, as in ``reverse_stream_kafka.py``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from footprint import jobs, last_job
from hudi_connect_stack.kafka import start_kafka
from hudi_connect_stack.process import free_port
from hudi_connect_stack.spark_connect import start_spark_connect
from hudi_connect_stack.testing.topics import create_topic
from pyspark.sql import functions as F
from reverse_stream_kafka import SCHEMA_COLUMNS, kafka_write, topic_size, write_table
from side_by_side import hudi_cdc, sizes

from hudi_connect.client.server import connect
from hudi_connect.client.timeline_view import TimelineView
from hudi_connect.reverse import KafkaSink, ReverseStream, streamer
from hudi_connect.reverse.checkpoint import CheckpointStore

PHASES = ("timeline", "plan", "persisted", "sent", "checkpoint", "whole batch")


@contextmanager
def phases_timed(spent: dict[str, float]) -> Iterator[None]:
    """The streamer's phases timed into ``spent`` (seconds) while inside, by wrapping the methods they call."""
    targets: list[tuple[Any, str, str]] = [
        (TimelineView, "list_with_files", "timeline"), (streamer, "full_batch", "plan"),
        (streamer, "change_batch", "plan"), (KafkaSink, "write", "sent"),
        (CheckpointStore, "advance", "checkpoint"), (ReverseStream, "_send", "_send"),
    ]
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in targets]

    def timed(function: Callable[..., Any], phase: str) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[phase] = spent.get(phase, 0.0) + time.perf_counter() - started
        return wrapper

    for (owner, name, phase), (_, _, original) in zip(targets, originals, strict=True):
        setattr(owner, name, timed(original, phase))
    try:
        yield
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)
        # what _send did besides the sink's write: the batch marked for caching
        spent["persisted"] = spent.pop("_send", 0.0) - spent.get("sent", 0.0)


def job_lines(ui_port: int, after: int) -> list[str]:
    """The server's jobs after ``after``, in order: from submission to completion (waiting for task slots
    included: a full export's count runs beside its write) and their tasks, from the status API. (Connect names
    every job after its session, so names say nothing here.)"""
    time.sleep(1)  # the status API learns of a job's end from Spark's listener bus, a moment later
    lines = []
    for job in (j for j in jobs(ui_port) if j["jobId"] > after):
        started, ended = job.get("submissionTime"), job.get("completionTime")
        seconds = (_instant(ended) - _instant(started)) if started and ended else float("nan")
        lines.append(f"{seconds:5.2f} s  {job['numTasks']:3d} tasks")
    return lines


def _instant(text: str) -> float:
    """Seconds of a status-API time such as 2026-11-26T23:59:01.123GMT."""
    return datetime.strptime(text.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=sizes, default=sizes("300k,1m"), help="rows, comma-separated")
    parser.add_argument("--changed", type=float, default=0.05, help="share of the rows the 3 commits change")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    run_dir = Path(tempfile.mkdtemp(prefix="hudi-connect-bench-"))
    run_dir.chmod(0o755)
    ui_port = free_port()
    kafka = start_kafka(run_dir)
    servers = []
    try:
        servers = [start_spark_connect(run_dir, "hudi"),
                   start_spark_connect(run_dir, "plain", extra_confs={"spark.ui.enabled": "true",
                                                                      "spark.ui.port": str(ui_port)})]
        hudi, plain = (connect(s.endpoint.url) for s in servers)  # type: ignore[attr-defined]
        endpoint = kafka.endpoint  # type: ignore[attr-defined]
        bootstrap = endpoint.bootstrap_servers
        for rows in args.sizes:
            path = str(run_dir / f"cow_{rows}")
            table, commits = write_table(hudi, path, rows, args.changed)
            live = int(table.hudi.snapshot().count())
            events = int(table.hudi.cdc(commits[0]).count())
            for batch, expected in (("full export", live), ("incremental", events)):
                ours: dict[str, list[float]] = defaultdict(list)
                hand: list[float] = []
                last_jobs: list[str] = []
                for run in range(args.repeat + 1):  # the first is the warm-up
                    topic = f"bench-{uuid.uuid4().hex[:8]}"
                    create_topic(endpoint, topic, 4)
                    stream = ReverseStream(plain, path, f"s-{uuid.uuid4().hex[:8]}", [KafkaSink(bootstrap, topic)])
                    if batch == "incremental":
                        stream.set_checkpoint(commits[0])
                    spent: dict[str, float] = {}
                    before = last_job(ui_port)
                    with phases_timed(spent):
                        started = time.perf_counter()
                        result = stream.run_once()
                        spent["whole batch"] = time.perf_counter() - started
                    last_jobs = job_lines(ui_port, before)
                    assert result.records == expected == topic_size(endpoint, topic), (result.records, expected)
                    topic = f"bench-{uuid.uuid4().hex[:8]}"
                    create_topic(endpoint, topic, 4)
                    started = time.perf_counter()
                    if batch == "incremental":
                        changes = hudi_cdc(hudi, path, str(commits[0].completion_time))
                        key = F.coalesce(F.get_json_object("after", "$.id"), F.get_json_object("before", "$.id"))
                        kafka_write(changes.select(key.cast("binary").alias("key"), F.to_json(
                            F.struct("op", "ts_ms", "before", "after")).alias("value")), bootstrap, topic)
                    else:
                        snapshot = hudi.read.format("hudi").load(path)
                        kafka_write(snapshot.select(F.col("_hoodie_record_key").cast("binary").alias("key"),
                                                    F.to_json(F.struct(*SCHEMA_COLUMNS)).alias("value")),
                                    bootstrap, topic)
                    elapsed = time.perf_counter() - started
                    assert topic_size(endpoint, topic) == expected
                    if run:
                        hand.append(elapsed)
                        for phase in PHASES:
                            ours[phase].append(spent.get(phase, 0.0))
                print(f"\n{rows} rows, {batch} ({expected} records): medians of {args.repeat}")
                for phase in PHASES:
                    print(f"  ours {phase:22s} {statistics.median(ours[phase]):5.2f} s")
                print(f"  hand (whole)                {statistics.median(hand):5.2f} s")
                print("  the last run's jobs on the plain server:")
                for line in last_jobs:
                    print(f"    {line}")
                print(f"RESULT reverse_stream_phases rows={rows} batch={batch.replace(' ', '_')} " + " ".join(
                    f"{p.replace(' ', '_')}={statistics.median(ours[p]):.2f}" for p in PHASES)
                    + f" hand={statistics.median(hand):.2f}", flush=True)
            shutil.rmtree(path, ignore_errors=True)
    finally:
        for server in servers:
            server.stop()
        kafka.stop()
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
