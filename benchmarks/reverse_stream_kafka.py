"""Reverse stream to Kafka: hudi-connect's reverse streamer doing a full export of a Hudi
table through its Kafka sink, against Spark writing the same, already computed Kafka
rows to a topic directly, on one Hudi server and one broker.

    python benchmarks/reverse_stream_kafka.py [--rows 1000000] [--repeat 3] [--partitions 4]

Writes a COW table through Hudi (a bulk insert of ``--rows``). Then, ``--repeat``
times each, into a new topic of ``--partitions`` partitions:

- ours: a new stream's ``ReverseStream.run_once()`` with a ``KafkaSink`` (a full
  read: planning, reading the table, building the records, sending them and
  checkpointing, all timed);
- raw: ``df.write.format("kafka")`` of the sink's own records of that full read,
  computed once beforehand and saved as Parquet, with the sink's producer settings
  (Spark only reads an already computed DataFrame and sends it);
- plan: Spark writing the sink's records of the full read straight from the table,
  without the streamer's checkpointing and bookkeeping (where ours loses to raw:
  the read and the JSON, or the streamer itself).

Runs are interleaved after one untimed warm-up each. After every run it checks that
the topic holds exactly one message per row; it prints the medians, the rates and
the ratio of the rates ours / raw.
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

from pyspark.sql import SparkSession
from side_by_side import SCHEMA, generated_rows

from hudi_connect.client.server import connect
from hudi_connect.client.timeline_view import load_properties
from hudi_connect.reverse import KafkaSink, ReverseStream
from hudi_connect.reverse.changes import full_batch
from hudi_connect.reverse.sink import BatchContext
from hudi_connect.reverse.sinks.kafka import PRODUCER_DEFAULTS
from hudi_connect.stack.endpoints import KafkaEndpoint
from hudi_connect.stack.kafka import start_kafka
from hudi_connect.stack.spark_connect import start_spark_connect
from hudi_connect.table.hudi_table import HudiTable
from hudi_connect.testing.topics import create_topic

TARGET_RATIO = 0.8  # ours / raw, in records per second


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


def new_topic(endpoint: KafkaEndpoint, prefix: str, partitions: int) -> str:
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    create_topic(endpoint, topic, partitions)
    return topic


def timed_runs(runs: dict[str, Callable[[str], int]], endpoint: KafkaEndpoint, expected: int,
               args: argparse.Namespace) -> dict[str, float]:
    """Median seconds of ``--repeat`` runs of each ``run(topic)``, interleaved after one untimed warm-up
    run each (so neither side gets a colder JVM), each into a new topic (created untimed), each checked
    to have sent ``expected`` records (its own count and the topic's)."""
    times: dict[str, list[float]] = {label: [] for label in runs}
    for attempt in range(args.repeat + 1):
        for label, run in runs.items():
            topic = new_topic(endpoint, label, args.partitions)
            begin = time.perf_counter()
            sent = run(topic)
            seconds = time.perf_counter() - begin
            in_topic = topic_size(endpoint, topic)
            assert sent == expected, f"{label} run {attempt}: sent {sent} records, expected {expected}"
            assert in_topic == expected, f"{label} run {attempt}: topic {topic} holds {in_topic}, expected {expected}"
            what = "warm-up" if attempt == 0 else f"run {attempt}"
            print(f"  {label} {what}: {seconds:7.2f}s  {expected / seconds:10,.0f} records/s  ({topic})")
            if attempt:
                times[label].append(seconds)
    return {label: statistics.median(t) for label, t in times.items()}


def benchmark(spark: SparkSession, kafka: KafkaEndpoint, run_dir: Path, args: argparse.Namespace) -> None:
    bootstrap = kafka.bootstrap_servers
    path = str(run_dir / "cow_table")
    table = HudiTable.create(spark, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="category",
                             table_type="COPY_ON_WRITE")
    begin = time.perf_counter()
    table.bulk_insert(generated_rows(spark, args.rows))
    print(f"wrote {args.rows} rows to a COW table in {time.perf_counter() - begin:.0f}s")

    # raw's input: the sink's records of the same full read, computed once and saved
    properties = load_properties(spark, path)
    end = table.timeline().write_commits().completed().last()
    assert end is not None
    context = BatchContext("raw-precompute", 1, properties.name, path, properties.record_key_fields, None,
                           end.requested_time, end.completion_time or end.requested_time, True)
    records_dir = str(run_dir / "kafka_records")
    begin = time.perf_counter()
    KafkaSink(bootstrap, "unused").records(full_batch(spark, path, properties, end), context) \
        .write.mode("overwrite").parquet(records_dir)
    precomputed = int(spark.read.parquet(records_dir).count())
    assert precomputed == args.rows, (precomputed, args.rows)
    print(f"precomputed {precomputed} Kafka records (key, value, headers) as Parquet "
          f"in {time.perf_counter() - begin:.0f}s")

    def ours(topic: str) -> int:
        stream = ReverseStream(spark, path, f"bench-{uuid.uuid4().hex[:8]}", [KafkaSink(bootstrap, topic)])
        result = stream.run_once()
        assert result.sent and result.checkpoint is not None
        return result.records

    def raw(topic: str) -> int:
        options = PRODUCER_DEFAULTS | {"kafka.bootstrap.servers": bootstrap, "topic": topic}
        spark.read.parquet(records_dir).write.format("kafka").options(**options).save()
        return precomputed

    def same_plan(topic: str) -> int:  # Spark's own pipeline from the table, without the streamer's bookkeeping
        rows = KafkaSink(bootstrap, topic).records(full_batch(spark, path, properties, end), context)
        options = PRODUCER_DEFAULTS | {"kafka.bootstrap.servers": bootstrap, "topic": topic}
        rows.write.format("kafka").options(**options).save()
        return precomputed

    medians = timed_runs({"ours": ours, "raw": raw, "plan": same_plan}, kafka, args.rows, args)
    ours_time, raw_time, plan_time = medians["ours"], medians["raw"], medians["plan"]
    ours_rate, raw_rate = args.rows / ours_time, args.rows / raw_time
    ratio = ours_rate / raw_rate
    print(f"\nfull export of {args.rows} rows to Kafka ({args.partitions} partitions), median of {args.repeat}:")
    print(f"  hudi-connect ReverseStream + KafkaSink (run_once): {ours_time:7.2f}s  {ours_rate:10,.0f} records/s")
    print(f"  Spark df.write.format('kafka') (precomputed rows): {raw_time:7.2f}s  {raw_rate:10,.0f} records/s")
    print(f"  Spark writing the sink's plan (read + JSON, no checkpoint): {plan_time:7.2f}s  "
          f"{args.rows / plan_time:10,.0f} records/s")
    print(f"  ratio ours / raw throughput: {ratio:.2f} (target: at least {TARGET_RATIO}); "
          f"ours / same plan: {plan_time / ours_time:.2f}")
    print(f"RESULT reverse_stream_kafka rows={args.rows} ours_s={ours_time:.2f} raw_s={raw_time:.2f} "
          f"plan_s={plan_time:.2f} ratio={ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=4, help="partitions of each topic")
    args = parser.parse_args()
    run_dir = Path(tempfile.mkdtemp(prefix="hudi-connect-bench-"))
    run_dir.chmod(0o755)
    try:
        kafka = start_kafka(run_dir)
        try:
            server = start_spark_connect(run_dir, "hudi")
            try:
                spark = connect(server.endpoint.url)  # type: ignore[attr-defined]
                try:
                    benchmark(spark, kafka.endpoint, run_dir, args)  # type: ignore[arg-type]
                finally:
                    spark.stop()
            finally:
                server.stop()
        finally:
            kafka.stop()
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
