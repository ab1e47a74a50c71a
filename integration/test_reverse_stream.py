"""Reverse streamer (RFC-70) end to end: random write histories streamed to real Kafka, MinIO/local
files and PostgreSQL, on COW and MOR tables.

History: see :mod:`integration.reverse_stream_model` (seeded). The stream runs
after a random subset of the writes, and after the last. Oracles: the
plain-Python model of the table (PostgreSQL and the files must equal it, with
no change written twice) and Hudi's own snapshot and CDC query on the same
table (Kafka must hold, per key and in order, the full read's records and then
exactly Hudi's CDC events of every checkpointed range).
"""

from __future__ import annotations

import json
import random
import threading
import uuid
from pathlib import Path

import pytest
from hudi_connect_stack.endpoints import KafkaEndpoint, PostgresEndpoint
from hudi_connect_stack.testing.topics import read_topic
from pyspark.sql import SparkSession

from hudi_connect.core.errors import CheckpointConflictError, InvalidInstantError
from hudi_connect.reverse import FileSink, KafkaSink, PostgresSink, ReverseStream
from hudi_connect.table.hudi_table import HudiTable
from integration.reverse_stream_model import (
    SCHEMA,
    History,
    hudi_cdc_changes,
    kafka_changes,
    postgres_rows,
    replay_files,
)

HUDI_OPTIONS = {"hoodie.parquet.small.file.limit": "0"}  # Hudi's CDC query needs it (see test_cdc)


def new_table(spark: SparkSession, path: str, table_type: str) -> HudiTable:
    return HudiTable.create(spark, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="part",
                            table_type=table_type, cdc="DATA_BEFORE_AFTER" if table_type == "COPY_ON_WRITE"
                            else "OP_KEY_ONLY", options=HUDI_OPTIONS)


# CI runs COW's history (80 s) in the container leg only (marked full, it runs there by name) and MOR's (86 s)
# under --full only, for CI's time budget; MOR tables still stream in CI through the kill suite's inline
# forwarding (mor-minio-mdt) and test_reverse_stream_timeline
@pytest.mark.parametrize(("table_type", "seed"), [pytest.param("COPY_ON_WRITE", 11, marks=pytest.mark.full),
                                                  pytest.param("MERGE_ON_READ", 12, marks=pytest.mark.full)])
def test_random_histories_reach_every_sink_exactly(
    spark: SparkSession, local_base_path: str, s3a_base_path: str, kafka_endpoint: KafkaEndpoint,
    kafka_topic: str, postgres_dsn: str, table_type: str, seed: int,
) -> None:
    # COW: table on the local disk, files on MinIO; MOR: table on MinIO, files on the local disk
    table_path, files_root = ((local_base_path, f"{s3a_base_path}-export") if table_type == "COPY_ON_WRITE"
                              else (s3a_base_path, f"{local_base_path}-export"))
    table = new_table(spark, table_path, table_type)
    pg_table = f"serving_{uuid.uuid4().hex[:8]}"
    files = FileSink(files_root, "parquet", spark=spark)
    stream = ReverseStream(spark, table_path, "serving", [KafkaSink(kafka_endpoint.bootstrap_servers, kafka_topic),
                                                          files, PostgresSink(postgres_dsn, pg_table)])
    history = History(table, random.Random(seed))
    expected_kafka: dict[str, list[tuple[str, str, dict[str, object] | None]]] = {}
    batches = 0
    for step in range(10):
        history.step()
        if step < 9 and history.rng.random() < 0.5:
            continue
        before = stream.checkpoint()
        result = stream.run_once()
        assert result.sent and result.checkpoint is not None
        batches += 1
        end = result.checkpoint
        if before.position is None:  # the full read: every live record as 'r' at the batch's end commit
            for key, row in history.state.items():
                expected_kafka.setdefault(str(key), []).append(
                    ("r", str(end.end_requested_time), dict(zip(("id", "v", "ts", "part"), row, strict=True))))
        else:
            for key, events in hudi_cdc_changes(spark, table, str(before.end_completion_time),
                                                str(end.end_completion_time)).items():
                expected_kafka.setdefault(key, []).extend(events)
        # after every batch: the serving table and the files equal the model, Kafka equals Hudi, per key
        assert postgres_rows(postgres_dsn, pg_table) == history.state
        replayed, repeats = replay_files(files)
        assert (replayed, repeats) == (history.state, 0)
        assert kafka_changes(read_topic(kafka_endpoint, kafka_topic)) == expected_kafka
    assert batches >= 2
    snapshot = {r.id: (r.id, r.v, r.ts, r.part) for r in table.hudi.snapshot().collect()}
    assert snapshot == history.state  # the model is Hudi's table
    assert stream.run_once().sent is False  # caught up: nothing to send, no checkpoint
    assert [c.sequence for c in stream.checkpoints.history("serving")] == list(range(1, batches + 1))


def test_latest_mode_and_debezium_envelope(spark: SparkSession, local_base_path: str, kafka_endpoint: KafkaEndpoint,
                                           kafka_topic: str) -> None:
    table = new_table(spark, local_base_path, "MERGE_ON_READ")
    rows = spark.createDataFrame([(1, "a", 1, "p1"), (2, "b", 2, "p2")], SCHEMA)
    table.upsert(rows)
    stream = ReverseStream(spark, local_base_path, "cdc",
                           [KafkaSink(kafka_endpoint.bootstrap_servers, kafka_topic, "debezium", tombstones=True)],
                           mode="latest")
    stream.run_once()
    table.upsert(spark.createDataFrame([(1, "a2", 3, "p1")], SCHEMA))
    table.upsert(spark.createDataFrame([(1, "a3", 4, "p1")], SCHEMA))
    table.delete(spark.createDataFrame([(2, "p2")], "id int, part string"))
    stream.run_once()
    records = read_topic(kafka_endpoint, kafka_topic)
    values = [(r.key, json.loads(r.value) if r.value else None) for r in records]
    ops = [(k, v["op"] if v else "tombstone") for k, v in values]
    assert sorted(ops[:2]) == [(b"1", "r"), (b"2", "r")]
    # latest mode: key 1's last change only; key 2's delete followed by its tombstone
    assert sorted(ops[2:]) == [(b"1", "u"), (b"2", "d"), (b"2", "tombstone")]
    assert [op for k, op in ops[2:] if k == b"2"] == ["d", "tombstone"]
    update = next(v for k, v in values[2:] if k == b"1" and v)
    assert update["after"] == {"id": 1, "v": "a3", "ts": 4, "part": "p1"}
    assert update["before"]["v"] == "a2"  # the before image of the last change
    assert update["source"]["table"] == table.properties.name and update["ts_ms"] > 0


def test_two_runs_of_one_stream_never_both_advance(spark: SparkSession, s3a_base_path: str) -> None:
    table = new_table(spark, s3a_base_path, "COPY_ON_WRITE")
    table.upsert(spark.createDataFrame([(1, "a", 1, "p1")], SCHEMA))
    first = ReverseStream(spark, s3a_base_path, "twin", [FileSink(f"{s3a_base_path}-a", spark=spark)])
    second = ReverseStream(spark, s3a_base_path, "twin", [FileSink(f"{s3a_base_path}-b", spark=spark)])
    origin = first.checkpoint()
    assert origin.sequence == 0
    commit = table.timeline().write_commits().last()
    assert commit is not None
    first.checkpoints.advance(origin, origin.successor("override", commit))
    with pytest.raises(CheckpointConflictError, match="twin"):
        second.checkpoints.advance(origin, origin.successor("override", commit))
    # racing whole batches: exactly one of the two records checkpoint 2
    table.upsert(spark.createDataFrame([(2, "b", 2, "p2")], SCHEMA))
    outcomes: list[str] = []

    def run(stream: ReverseStream) -> None:
        try:
            stream.run_once()
            outcomes.append("advanced")
        except CheckpointConflictError:
            outcomes.append("conflict")

    threads = [threading.Thread(target=run, args=(s,)) for s in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["advanced", "conflict"]
    assert first.checkpoint().sequence == 2


def test_manual_override_and_reset(spark: SparkSession, local_base_path: str, postgres_endpoint: PostgresEndpoint,
                                   postgres_dsn: str) -> None:
    table = new_table(spark, local_base_path, "COPY_ON_WRITE")
    first = table.upsert(spark.createDataFrame([(1, "a", 1, "p1"), (2, "b", 2, "p2")], SCHEMA))
    table.upsert(spark.createDataFrame([(3, "c", 3, "p0")], SCHEMA))
    pg_table = f"override_{uuid.uuid4().hex[:8]}"
    stream = table.reverse_stream("manual", [PostgresSink(postgres_dsn, pg_table)])
    stream.set_checkpoint(first)  # skip the first commit: only key 3 is sent
    stream.run_once()
    assert set(postgres_rows(postgres_dsn, pg_table)) == {3}
    with pytest.raises(InvalidInstantError, match="manual"):
        stream.set_checkpoint("20000101000000000")
    stream.reset()  # the next batch reads the table in full
    result = stream.run_once()
    assert result.records == 3 and set(postgres_rows(postgres_dsn, pg_table)) == {1, 2, 3}
    kinds = [c.kind for c in stream.checkpoints.history("manual")]
    assert kinds == ["override", "batch", "reset", "batch"]
    # the sink is described without its credentials
    assert all(postgres_endpoint.password not in c.to_json() and c.sinks == (stream.sinks[0].describe(),)
               for c in stream.checkpoints.history("manual") if c.kind == "batch")


def test_a_key_moved_by_a_replace_commit_stays_in_every_sink(
    spark: SparkSession, local_base_path: str, kafka_endpoint: KafkaEndpoint, kafka_topic: str, postgres_dsn: str,
    tmp_path: Path,
) -> None:
    """insert_overwrite deletes a key from the replaced file group and inserts it into a new one at one instant:
    every sink must apply the delete first (applied the other way round, the key is lost)."""
    table = new_table(spark, local_base_path, "COPY_ON_WRITE")
    table.upsert(spark.createDataFrame([(1, "a", 1, "p1"), (2, "b", 2, "p1"), (3, "c", 3, "p2")], SCHEMA))
    serving, latest_serving = (f"moved_{uuid.uuid4().hex[:8]}" for _ in range(2))
    files = FileSink(str(tmp_path / "files"), "parquet", spark=spark)
    changes = table.reverse_stream("moved", [KafkaSink(kafka_endpoint.bootstrap_servers, kafka_topic), files,
                                             PostgresSink(postgres_dsn, serving)])
    latest = table.reverse_stream("moved-latest", [PostgresSink(postgres_dsn, latest_serving)], mode="latest")
    changes.run_once()
    latest.run_once()
    table.insert_overwrite(spark.createDataFrame([(1, "a2", 4, "p1")], SCHEMA))  # 1 moves, 2 goes
    changes.run_once()
    latest.run_once()
    expected = {1: (1, "a2", 4, "p1"), 3: (3, "c", 3, "p2")}
    assert postgres_rows(postgres_dsn, serving) == expected
    assert postgres_rows(postgres_dsn, latest_serving) == expected
    assert replay_files(files) == (expected, 0)
    moved = kafka_changes(read_topic(kafka_endpoint, kafka_topic))["1"]
    assert [op for op, *_ in moved] == ["r", "d", "c"] and moved[-1][2] == {"id": 1, "v": "a2", "ts": 4, "part": "p1"}
