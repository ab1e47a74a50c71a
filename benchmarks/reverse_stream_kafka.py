"""Reverse stream to Kafka against Hudi's own streaming source, and the job a user would write by hand, on the
Hudi server.

    python benchmarks/reverse_stream_kafka.py [--sizes 250k,1m] [--changed 0.05] [--repeat 3] [--partitions 4]
                                              [--warmups 3]

For each size it writes a CDC-enabled COW table through Hudi (DATA_BEFORE_AFTER): a
bulk insert, then three commits that together change ``--changed`` of the rows
(two upserts and a delete). Then, into a new topic of ``--partitions`` partitions
per run, interleaved after ``--warmups`` untimed runs of each (three: ``side_by_side.add_warmups``), medians
of ``--repeat`` runs:

Full export (every row of the table as of its last commit):
- ours: a new stream's ``ReverseStream.run_once()`` with a ``KafkaSink`` on the plain
  server (no Hudi jar): planning, reading, building the records, sending, checkpointing
  (creating the stream object is not timed);
- stream (the anchor): what a user runs on the Hudi server to keep a topic following a
  table: Hudi's Structured Streaming source (``readStream.format("hudi")``, incremental,
  ``startOffset`` earliest) into Spark's Kafka sink with a new ``checkpointLocation``,
  ``trigger(availableNow=True)``, the record key as the message key and the row as JSON;
- hand (for continuity with earlier runs): Hudi's snapshot read, the record key as the
  message key and the row as JSON, ``df.write.format("kafka")``;
- raw (information): Spark sending the sink's own records, computed beforehand and
  saved as Parquet.

Incremental batch (the three change commits):
- ours: a stream checkpointed at the bulk insert (untimed), ``run_once()`` (the
  changes in per-key commit order, counted, sent, checkpointed);
- stream (the anchor): Hudi's streaming source in CDC format
  (``hoodie.datasource.query.incremental.format=cdc``) from the bulk insert
  (``startOffset``), a new checkpoint, into Spark's Kafka sink, ``availableNow`` once; the key
  from the images, the event as JSON;
- hand: Hudi's CDC query from the bulk insert, the key from the images, the event as
  JSON, ``df.write.format("kafka")``.

Every run's topic must hold exactly the expected messages: one per row for the full
export, one per change event (Hudi's count) for the incremental batch, on both sides.
It prints the medians, the rates and the throughput ratios ours / stream (the target) and ours / hand per
size.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from hudi_connect_stack.endpoints import KafkaEndpoint
from hudi_connect_stack.kafka import start_kafka
from hudi_connect_stack.spark_connect import start_spark_connect
from hudi_connect_stack.testing.topics import create_topic
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from side_by_side import SCHEMA, add_warmups, generated_rows, hudi_cdc, sizes

from hudi_connect.client.server import connect
from hudi_connect.client.timeline_view import load_properties
from hudi_connect.core.format.timeline import Instant
from hudi_connect.reverse import KafkaSink, ReverseStream
from hudi_connect.reverse.changes import full_batch
from hudi_connect.reverse.sink import BatchContext
from hudi_connect.reverse.sinks.kafka import PRODUCER_DEFAULTS
from hudi_connect.table.hudi_table import HudiTable

TARGET_RATIO = 1.0  # ours / hand, in records per second


def topic_size(endpoint: KafkaEndpoint, topic: str) -> int:
    """Messages in ``topic``: the sum of its partitions' end offsets (no transactions, no compaction)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=endpoint.bootstrap_servers, enable_auto_commit=False)
    try:
        numbers = consumer.partitions_for_topic(topic)
        assert numbers, f"topic {topic} has no partitions"
        offsets = consumer.end_offsets([TopicPartition(topic, n) for n in sorted(numbers)])
        return sum(int(offset) for offset in offsets.values())
    finally:
        consumer.close()


def timed_runs(runs: dict[str, Callable[[str], Callable[[], int]]], endpoint: KafkaEndpoint, expected: int,
               args: argparse.Namespace) -> dict[str, float]:
    """Median seconds of ``--repeat`` runs of each ``run(topic)()``, interleaved (rotating order) after
    ``--warmups`` untimed runs each, each into a new topic; the topic and ``run(topic)`` (setting a stream up) are
    untimed, its result (the job) is timed and must have sent ``expected`` records (its own count and the
    topic's)."""
    times: dict[str, list[float]] = {label: [] for label in runs}
    labels = list(runs)
    for attempt in range(args.warmups + args.repeat):
        shift = attempt % len(labels)
        for label in labels[shift:] + labels[:shift]:
            topic = f"{label}-{uuid.uuid4().hex[:8]}"
            create_topic(endpoint, topic, args.partitions)
            job = runs[label](topic)
            begin = time.perf_counter()
            sent = job()
            seconds = time.perf_counter() - begin
            in_topic = topic_size(endpoint, topic)
            assert sent == expected, f"{label} run {attempt}: sent {sent} records, expected {expected}"
            assert in_topic == expected, f"{label} run {attempt}: topic {topic} holds {in_topic}, expected {expected}"
            timed = attempt >= args.warmups
            what = f"run {attempt - args.warmups + 1}" if timed else "warm-up"
            print(f"    {label} {what}: {seconds:7.2f}s  {expected / seconds:10,.0f} records/s", flush=True)
            if timed:
                times[label].append(seconds)
    return {label: statistics.median(t) for label, t in times.items()}


def write_table(hudi: SparkSession, path: str, rows: int, changed: float) -> tuple[HudiTable, list[Instant]]:
    """The bulk insert and three change commits (upsert, upsert, delete), each of a third of ``changed``."""
    table = HudiTable.create(hudi, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="category",
                             table_type="COPY_ON_WRITE", cdc="DATA_BEFORE_AFTER",
                             options={"hoodie.clean.automatic": "false"})
    data = generated_rows(hudi, rows)
    commits = [table.bulk_insert(data)]
    for commit in range(3):
        chosen = data.where((F.col("id") % 3 == commit) & (F.rand(100 + commit) < changed))
        if commit == 2:
            commits.append(table.delete(chosen.select("id", "category")))
        else:
            commits.append(table.upsert(chosen.withColumn("amount", F.col("amount") + 1)
                                        .withColumn("ts", F.lit(commit + 2).cast("long"))))
    return table, commits


def kafka_write(rows: DataFrame, bootstrap: str, topic: str) -> None:
    rows.write.format("kafka").options(**(PRODUCER_DEFAULTS | {"kafka.bootstrap.servers": bootstrap,
                                                                "topic": topic})).save()


def one_size(hudi: SparkSession, plain: SparkSession, kafka: KafkaEndpoint, run_dir: Path, rows: int,
             args: argparse.Namespace) -> list[tuple[str, int, float, float, float, float | None]]:
    bootstrap = kafka.bootstrap_servers
    path = str(run_dir / f"cow_{rows}")
    begin = time.perf_counter()
    table, commits = write_table(hudi, path, rows, args.changed)
    print(f"\n{rows} rows: wrote the table and 3 change commits in {time.perf_counter() - begin:.0f}s", flush=True)
    data_columns = SCHEMA_COLUMNS
    live = int(table.hudi.snapshot().count())
    events = int(table.hudi.cdc(commits[0]).count())

    # raw's input: the sink's records of the same full read, computed once and saved
    properties = load_properties(plain, path)
    end = commits[-1]
    context = BatchContext("raw-precompute", 1, properties.name, path, properties.record_key_fields, None,
                           end.requested_time, end.completion_time or end.requested_time, True)
    records_dir = str(run_dir / f"kafka_records_{rows}")
    KafkaSink(bootstrap, "unused").records(full_batch(plain, path, properties, end)[0], context) \
        .write.mode("overwrite").parquet(records_dir)

    def run_once(stream: ReverseStream) -> Callable[[], int]:
        def job() -> int:
            result = stream.run_once()
            assert result.sent and result.checkpoint is not None
            return result.records
        return job

    def ours_full(topic: str) -> Callable[[], int]:  # a new stream: its first batch is a full read
        return run_once(ReverseStream(plain, path, f"full-{uuid.uuid4().hex[:8]}", [KafkaSink(bootstrap, topic)]))

    def hand_full(topic: str) -> Callable[[], int]:  # a user's export: Hudi's snapshot, key and row as JSON
        def job() -> int:
            snapshot = hudi.read.format("hudi").load(path)
            kafka_write(snapshot.select(F.col("_hoodie_record_key").cast("binary").alias("key"),
                                        F.to_json(F.struct(*data_columns)).alias("value")), bootstrap, topic)
            return live
        return job

    def raw(topic: str) -> Callable[[], int]:
        def job() -> int:
            kafka_write(plain.read.parquet(records_dir), bootstrap, topic)
            return live
        return job

    def hudi_stream(topic: str, start: str, cdc: bool) -> Callable[[], int]:
        """What a user runs on the Hudi server to keep a topic following a table: Hudi's Structured Streaming
        source into Spark's Kafka sink with a checkpoint (a new one: the stream starts at ``start``), triggered
        for what is available now, once; ``cdc``: the source's change events, else its latest-state records."""
        checkpoint = str(run_dir / f"stream-checkpoint-{uuid.uuid4().hex[:8]}")

        def job() -> int:
            source = hudi.readStream.format("hudi").options(**{
                "hoodie.datasource.query.type": "incremental", "hoodie.datasource.streaming.startOffset": start,
                **({"hoodie.datasource.query.incremental.format": "cdc"} if cdc else {})}).load(path)
            if cdc:
                key = F.coalesce(F.get_json_object("after", "$.id"), F.get_json_object("before", "$.id"))
                rows = source.select(key.cast("binary").alias("key"),
                                     F.to_json(F.struct("op", "ts_ms", "before", "after")).alias("value"))
            else:
                rows = source.select(F.col("_hoodie_record_key").cast("binary").alias("key"),
                                     F.to_json(F.struct(*data_columns)).alias("value"))
            query = (rows.writeStream.format("kafka")
                     .options(**(PRODUCER_DEFAULTS | {"kafka.bootstrap.servers": bootstrap, "topic": topic}))
                     .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
            query.awaitTermination()
            return events if cdc else live
        return job

    def stream_full(topic: str) -> Callable[[], int]:  # a new streaming query from the table's first commit
        return hudi_stream(topic, "earliest", cdc=False)

    def stream_changes(topic: str) -> Callable[[], int]:  # a new streaming query from the bulk insert on
        return hudi_stream(topic, commits[0].requested_time, cdc=True)

    def ours_changes(topic: str) -> Callable[[], int]:  # a stream that has sent the bulk insert already
        stream = ReverseStream(plain, path, f"changes-{uuid.uuid4().hex[:8]}", [KafkaSink(bootstrap, topic)])
        stream.set_checkpoint(commits[0])
        return run_once(stream)

    def hand_changes(topic: str) -> Callable[[], int]:  # a user's incremental job: Hudi's CDC query
        def job() -> int:
            changes = hudi_cdc(hudi, path, str(commits[0].completion_time))
            key = F.coalesce(F.get_json_object("after", "$.id"), F.get_json_object("before", "$.id"))
            kafka_write(changes.select(key.cast("binary").alias("key"),
                                       F.to_json(F.struct("op", "ts_ms", "before", "after")).alias("value")),
                        bootstrap, topic)
            return events
        return job

    print(f"  full export ({live} rows):", flush=True)
    full = timed_runs({"ours": ours_full, "stream": stream_full, "hand": hand_full, "raw": raw}, kafka, live, args)
    print(f"  incremental batch ({events} change events over 3 commits):", flush=True)
    incremental = timed_runs({"ours": ours_changes, "stream": stream_changes, "hand": hand_changes}, kafka, events,
                             args)
    shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(records_dir, ignore_errors=True)
    return [("full export", rows, full["ours"], full["stream"], full["hand"], full["raw"]),
            ("incremental", rows, incremental["ours"], incremental["stream"], incremental["hand"], None)]


SCHEMA_COLUMNS = [part.split()[0] for part in SCHEMA.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=sizes, default=sizes("250k,1m"), help="rows, comma-separated (250k,1m,4m)")
    parser.add_argument("--changed", type=float, default=0.05, help="share of the rows the 3 commits change")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=4, help="partitions of each topic")
    add_warmups(parser)
    args = parser.parse_args()
    run_dir = Path(tempfile.mkdtemp(prefix="hudi-connect-bench-"))
    run_dir.chmod(0o755)
    kafka = start_kafka(run_dir)
    servers = []
    try:
        servers = [start_spark_connect(run_dir, "hudi"), start_spark_connect(run_dir, "plain")]
        hudi, plain = (connect(s.endpoint.url) for s in servers)  # type: ignore[attr-defined]
        summary = [line for rows in args.sizes
                   for line in one_size(hudi, plain, kafka.endpoint, run_dir, rows, args)]  # type: ignore[arg-type]
    finally:
        for server in servers:
            server.stop()
        kafka.stop()
        shutil.rmtree(run_dir, ignore_errors=True)
    print("\nbatch        rows      ours s  stream s  hand s  raw s   ours/stream  ours/hand (throughput)  target")
    for batch, rows, ours, stream, hand, raw_time in summary:
        shown = f"{raw_time:6.2f}" if raw_time is not None else "     -"
        print(f"{batch:12s} {rows:<9} {ours:6.2f}  {stream:8.2f}  {hand:6.2f}  {shown}  {stream / ours:11.2f}"
              f"  {hand / ours:9.2f}               ours/stream at least {TARGET_RATIO}")
        print(f"RESULT reverse_stream_kafka batch={batch.replace(' ', '_')} rows={rows} ours_s={ours:.2f} "
              f"stream_s={stream:.2f} hand_s={hand:.2f} ratio={stream / ours:.2f} hand_ratio={hand / ours:.2f}"
              + (f" raw_s={raw_time:.2f}" if raw_time else ""))

if __name__ == "__main__":
    main()
