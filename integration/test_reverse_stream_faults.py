"""Reverse-stream fault tests: a streamer killed mid-batch, Kafka restarted, MinIO restarted and
PostgreSQL stopped during a batch. On resume nothing is lost; Kafka may repeat records (at least
once), PostgreSQL and the file sink never do, even when the killed client's write goes on
running on the server.

History (seeded, :mod:`integration.reverse_stream_model`): random upserts, deletes and
partition drops on a COW table; the faults strike the second or third batch. Oracles:
the plain-Python model for PostgreSQL and the files; for Kafka, every change of
Hudi's CDC query must be in the topic, and each key's last record must be its state.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest
from hudi_connect_stack.endpoints import KafkaEndpoint
from hudi_connect_stack.kafka import start_kafka
from hudi_connect_stack.minio import create_bucket, start_minio
from hudi_connect_stack.postgres import start_postgres
from hudi_connect_stack.process import free_port
from hudi_connect_stack.spark_connect import start_spark_connect
from hudi_connect_stack.testing.topics import KafkaRecord, create_topic, read_topic
from pyspark.sql import SparkSession

from hudi_connect.client.server import connect
from hudi_connect.core.errors import SinkError
from hudi_connect.core.format.timeline import Instant
from hudi_connect.reverse import FileSink, KafkaSink, PostgresSink, ReverseStream
from hudi_connect.reverse.changes import full_batch
from hudi_connect.reverse.sink import BatchContext
from hudi_connect.table.hudi_table import HudiTable
from integration.reverse_stream_model import SCHEMA, History, Row, kafka_changes, postgres_rows, replay_files

REPO = Path(__file__).resolve().parents[1]


def cow_table(spark: SparkSession, path: str) -> HudiTable:
    return HudiTable.create(spark, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="part",
                            table_type="COPY_ON_WRITE", cdc="DATA_BEFORE_AFTER",
                            options={"hoodie.parquet.small.file.limit": "0"})


def assert_kafka_holds(records: list[KafkaRecord], state: dict[int, Row], table: HudiTable, since: str) -> None:
    """Every change Hudi's CDC query shows after ``since`` is in the topic (at least once), and each
    key's last record is its state."""
    per_key = kafka_changes(records)
    sent = {(key, op, commit) for key, events in per_key.items() for op, commit, _ in events}
    for r in table.hudi.cdc(since).collect():
        image = json.loads(r.after if r.op != "d" else r.before)
        assert (str(image["id"]), {"i": "c", "u": "u", "d": "d"}[r.op], r.ts_ms) in sent, (image, r.op, r.ts_ms)
    last = {int(key): events[-1] for key, events in per_key.items()}
    assert {k for k, (op, _, _) in last.items() if op != "d"} == set(state)
    for key, (_, _, row) in last.items():
        if key in state:
            assert row is not None and (row["id"], row["v"], row["ts"], row["part"]) == state[key]


def run_in_thread(stream: ReverseStream) -> tuple[threading.Thread, list[object]]:
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(stream.run_once())
        except Exception as error:
            outcome.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def test_streamer_killed_between_sinks_and_checkpoint_resends_exactly(
    spark: SparkSession, hudi_server_url: str, local_base_path: str, kafka_endpoint: KafkaEndpoint,
    kafka_topic: str, postgres_dsn: str,
) -> None:
    table = cow_table(spark, local_base_path)
    history = History(table, random.Random(21))
    for _ in range(3):
        history.step()
    files_root, pg_table = f"{local_base_path}-export", f"killed_{uuid.uuid4().hex[:8]}"
    command = [sys.executable, "-m", "integration.paused_cli", "reverse-stream", "--remote", hudi_server_url,
               "--table", local_base_path, "--name", "killed", "--kafka-bootstrap", kafka_endpoint.bootstrap_servers,
               "--kafka-topic", kafka_topic, "--files-root", files_root, "--postgres-table", pg_table]
    env = dict(os.environ, PYTHONPATH=str(REPO), HUDI_CONNECT_POSTGRES_DSN=postgres_dsn)
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    output = []
    assert process.stdout is not None
    for line in process.stdout:
        output.append(line)
        if "pausing" in line:  # every sink written, the checkpoint not yet recorded
            os.killpg(process.pid, signal.SIGKILL)
            break
    process.wait(timeout=60)
    assert any("pausing" in line for line in output), "".join(output)
    assert postgres_dsn.split("@")[0].split(":")[-1] not in "".join(output)  # the password never shows
    files = FileSink(files_root, spark=spark)
    stream = ReverseStream(spark, local_base_path, "killed",
                           [KafkaSink(kafka_endpoint.bootstrap_servers, kafka_topic), files,
                            PostgresSink(postgres_dsn, pg_table)])
    assert stream.checkpoint().sequence == 0  # the dead run recorded nothing
    for _ in range(3):
        history.step()
    first = stream.run_once()  # re-sends the dead run's range (the files keep their copy), then the rest
    assert first.checkpoint is not None and first.checkpoint.begin_completion_time is None
    assert stream.run_once().sent
    assert postgres_rows(postgres_dsn, pg_table) == history.state
    assert replay_files(files) == (history.state, 0)
    assert_kafka_holds(read_topic(kafka_endpoint, kafka_topic), history.state, table,
                       str(first.checkpoint.end_completion_time))


def test_postgres_stopped_during_a_batch(spark: SparkSession, local_base_path: str) -> None:
    # PostgreSQL runs as its own user, who cannot enter pytest's private tmp_path
    run_dir = Path(tempfile.mkdtemp(prefix="hudi-connect-pg-fault-"))
    os.chmod(run_dir, 0o755)
    port = free_port()
    service = start_postgres(run_dir, port=port)
    dsn = service.endpoint.dsn  # type: ignore[attr-defined]
    password = service.endpoint.password  # type: ignore[attr-defined]
    try:
        table = cow_table(spark, local_base_path)
        history = History(table, random.Random(22))
        history.step()
        stream = ReverseStream(spark, local_base_path, "pg", [PostgresSink(dsn, "serving")])
        stream.run_once()
        for _ in range(3):
            history.step()
        thread, outcome = run_in_thread(stream)
        service.stop()  # while the batch is being computed
        thread.join()
        assert isinstance(outcome[0], SinkError), outcome
        assert "rolled the batch back" in str(outcome[0]) and password not in str(outcome[0])
        assert stream.checkpoint().sequence == 1
        service = start_postgres(run_dir, port=port)
        assert stream.run_once().sent
        assert postgres_rows(dsn, "serving") == history.state
    finally:
        service.stop()
        shutil.rmtree(run_dir, ignore_errors=True)


@pytest.mark.full  # CI's fault slice: the streamer killed between its sinks and its checkpoint
def test_kafka_restarted_during_a_batch(spark: SparkSession, local_base_path: str, tmp_path: Path) -> None:
    port, controller = free_port(), free_port()
    broker = start_kafka(tmp_path, port=port, controller_port=controller)
    endpoint: KafkaEndpoint = broker.endpoint  # type: ignore[assignment]
    try:
        topic = f"restart-{uuid.uuid4().hex[:8]}"
        create_topic(endpoint, topic)
        table = cow_table(spark, local_base_path)
        history = History(table, random.Random(23))
        history.step()
        stream = ReverseStream(spark, local_base_path, "kafka", [KafkaSink(endpoint.bootstrap_servers, topic)])
        since = str(stream.run_once().checkpoint.end_completion_time)  # type: ignore[union-attr]
        for _ in range(3):
            history.step()
        broker.stop()
        thread, outcome = run_in_thread(stream)
        time.sleep(3)
        broker = start_kafka(tmp_path, port=port, controller_port=controller)
        thread.join()
        if isinstance(outcome[0], Exception):  # the producer gave up: the batch is sent again
            assert isinstance(outcome[0], SinkError), outcome
            assert stream.run_once().sent
        assert stream.checkpoint().sequence == 2
        assert_kafka_holds(read_topic(endpoint, topic), history.state, table, since)
    finally:
        broker.stop()


@pytest.mark.full  # CI restarts Kafka and stops PostgreSQL during a batch; MinIO's restart (80 s) under --full
def test_minio_restarted_during_a_batch(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o755)
    minio = start_minio(tmp_path)
    endpoint = minio.endpoint  # type: ignore[attr-defined]
    create_bucket(endpoint, "lake")
    server = start_spark_connect(tmp_path, "hudi", minio=endpoint)
    try:
        spark = connect(server.endpoint.url)  # type: ignore[attr-defined]
        path = f"s3a://lake/tables/{uuid.uuid4().hex[:8]}"
        table = cow_table(spark, path)
        history = History(table, random.Random(24))
        history.step()
        files = FileSink(f"s3a://lake/export/{uuid.uuid4().hex[:8]}", "json", spark=spark)
        stream = ReverseStream(spark, path, "minio", [files])
        stream.run_once()
        for _ in range(3):
            history.step()
        minio.stop()
        thread, outcome = run_in_thread(stream)
        time.sleep(3)
        minio = start_minio(tmp_path, restart=endpoint)
        thread.join()
        if isinstance(outcome[0], Exception):  # storage gave up: nothing was checkpointed, run again
            assert stream.checkpoint().sequence == 1
            assert stream.run_once().sent
        assert stream.checkpoint().sequence == 2
        state, repeats = replay_files(files)
        assert (state, repeats) == (history.state, 0)
        spark.stop()
    finally:
        server.stop()
        minio.stop()



@pytest.mark.full  # CI kills the streamer between its sinks and its checkpoint
def test_streamer_killed_while_writing_never_publishes_twice(
    spark: SparkSession, hudi_server_url: str, local_base_path: str, postgres_dsn: str,
) -> None:
    table = cow_table(spark, local_base_path)
    bulk = {i: (i, f"b{i}", 0, f"p{i % 3}") for i in range(1000, 151000)}  # wide enough a write to be killed in
    table.bulk_insert(spark.range(1000, 151000).selectExpr(
        "cast(id as int) as id", "concat('b', id) as v", "0L as ts", "concat('p', id % 3) as part"))
    history = History(table, random.Random(25))
    history.step()
    files_root, pg_table = f"{local_base_path}-export", f"midwrite_{uuid.uuid4().hex[:8]}"
    command = [sys.executable, "-m", "integration.paused_cli", "reverse-stream", "--remote", hudi_server_url,
               "--table", local_base_path, "--name", "midwrite", "--files-root", files_root,
               "--postgres-table", pg_table]
    env = dict(os.environ, PYTHONPATH=str(REPO), HUDI_CONNECT_POSTGRES_DSN=postgres_dsn)
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    assert process.stdout is not None
    output = []
    for line in process.stdout:
        output.append(line)
        if f"to {files_root}" in line:  # the file sink's Spark write is under way
            time.sleep(1.0)
            os.killpg(process.pid, signal.SIGKILL)
            break
    process.wait(timeout=60)
    assert any(f"to {files_root}" in line for line in output), "".join(output)
    files = FileSink(files_root, spark=spark)
    stream = ReverseStream(spark, local_base_path, "midwrite", [files, PostgresSink(postgres_dsn, pg_table)])
    assert stream.checkpoint().sequence == 0
    history.step()
    assert stream.run_once().sent  # the dead run claimed nothing: a full read again
    history.step()
    assert stream.run_once().sent
    time.sleep(5)  # the dead client's write may go on on the server: it must never show up
    expected = bulk | history.state
    assert postgres_rows(postgres_dsn, pg_table) == expected
    assert replay_files(files) == (expected, 0)


def test_postgres_never_applies_an_older_batch_over_a_newer(
    spark: SparkSession, local_base_path: str, postgres_dsn: str,
) -> None:
    """A killed client's batch that finishes late on the server is refused by the progress fence."""
    table = cow_table(spark, local_base_path)
    history = History(table, random.Random(26))
    history.step()
    older_end = table.timeline().write_commits().last()
    older_state = dict(history.state)
    for _ in range(3):
        history.step()
    newer_end = table.timeline().write_commits().last()
    assert older_end is not None and newer_end is not None and history.state != older_state
    sink = PostgresSink(postgres_dsn, f"fence_{uuid.uuid4().hex[:8]}")
    props = table.properties

    def context(sequence: int, end: Instant) -> BatchContext:
        return BatchContext("fenced", sequence, props.name, local_base_path, props.record_key_fields, None,
                            end.requested_time, end.completion_time or "", True)

    sink.write(full_batch(spark, local_base_path, props, newer_end)[0], context(2, newer_end))
    sink.write(full_batch(spark, local_base_path, props, older_end)[0], context(1, older_end))  # late and stale
    assert postgres_rows(postgres_dsn, sink.table) == history.state
