"""Soak (issue #36; ``--full`` only, 30 minutes by default, ``HUDI_CONNECT_SOAK_MINUTES`` to change it): a
writer commits to a table on MinIO every few seconds, forwarding each commit inline to Kafka and PostgreSQL;
a standalone reverse streamer on the plain server sends the same table to another topic and PostgreSQL table
every few seconds. A third of the way in Kafka restarts; two thirds in MinIO does (the writer parks for it, the
streamer meets it). At the end every sink equals the table: PostgreSQL row for row; Kafka with every change of
the model once and in order per key (a stream's first batch may send the table whole, as 'r' records of its
commit; a repeat only from a batch sent again after a failure), each key's last record its state. Memory is
sampled all along (this process, both servers' JVMs and Python workers) and must level off: the last quarter's
peak within a quarter (plus 150 MB) of the second quarter's.
"""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import pytest
from hudi_connect_stack.endpoints import KafkaEndpoint, MinioEndpoint
from hudi_connect_stack.kafka import start_kafka
from hudi_connect_stack.minio import create_bucket, start_minio
from hudi_connect_stack.process import free_port
from hudi_connect_stack.spark_connect import start_spark_connect
from hudi_connect_stack.testing.process_memory import own_resident_mb, resident_mb
from hudi_connect_stack.testing.topics import KafkaRecord, create_topic, read_topic
from pyspark.sql import SparkSession

from hudi_connect import HudiTable, KafkaSink, PostgresSink, ReverseStream, SinkError, connect
from integration.reverse_stream_model import SCHEMA, History, kafka_changes, postgres_rows

pytestmark = pytest.mark.full

MINUTES = float(os.environ.get("HUDI_CONNECT_SOAK_MINUTES", "30"))
WRITE_EVERY = 3.0  # seconds between the end of a write and the next
STREAM_EVERY = 5.0  # the standalone streamer's pause between batches
SAMPLE_EVERY = 20.0
Samples = list[tuple[float, dict[str, float]]]


class Soak:
    """The services, the writer's and the streamer's loops, and the memory samples of one soak."""

    def __init__(self, run_dir: Path, postgres_dsn: str, services: ExitStack) -> None:
        self.run_dir, self.dsn = run_dir, postgres_dsn
        # each stopped at the end as it is then (MinIO and Kafka restart mid-run), or when a later start fails
        self.minio = start_minio(run_dir)
        services.callback(lambda: self.minio.stop())
        self.minio_endpoint: MinioEndpoint = self.minio.endpoint  # type: ignore[assignment]
        create_bucket(self.minio_endpoint, "lake")
        self.kafka_ports = (free_port(), free_port())
        self.kafka = start_kafka(run_dir, port=self.kafka_ports[0], controller_port=self.kafka_ports[1])
        services.callback(lambda: self.kafka.stop())
        self.kafka_endpoint: KafkaEndpoint = self.kafka.endpoint  # type: ignore[assignment]
        self.hudi = start_spark_connect(run_dir, "hudi", minio=self.minio_endpoint)
        services.callback(self.hudi.stop)
        self.plain = start_spark_connect(run_dir, "plain", minio=self.minio_endpoint)
        services.callback(self.plain.stop)
        self.path = f"s3a://lake/soak/{uuid.uuid4().hex[:8]}"
        suffix = uuid.uuid4().hex[:8]
        self.topics = {"inline": f"soak-inline-{suffix}", "standalone": f"soak-standalone-{suffix}"}
        self.pg_tables = {"inline": f"soak_inline_{suffix}", "standalone": f"soak_standalone_{suffix}"}
        for topic in self.topics.values():
            create_topic(self.kafka_endpoint, topic)
        self.storage_up, self.parked, self.stop = threading.Event(), threading.Event(), threading.Event()
        self.storage_up.set()
        self.lock = threading.Lock()
        self.failures: Counter[str] = Counter()  # where and what, for the report
        self.samples: Samples = []
        self.writes = self.batches = 0
        self.writer_error: BaseException | None = None

    def sinks(self, name: str) -> list[KafkaSink | PostgresSink]:
        return [KafkaSink(self.kafka_endpoint.bootstrap_servers, self.topics[name]),
                PostgresSink(self.dsn, self.pg_tables[name])]

    def failed(self, where: str, error: BaseException) -> None:
        with self.lock:
            self.failures[f"{where}: {type(error).__name__}"] += 1
        print(f"  {where}: {type(error).__name__}: {str(error)[:300]}")

    def write_loop(self, history: History) -> None:
        try:
            while not self.stop.is_set():
                if not self.storage_up.is_set():
                    self.parked.set()  # between writes: MinIO may go
                    self.storage_up.wait()
                    self.parked.clear()
                try:
                    history.step()
                except SinkError as forwarding:  # committed; the inline stream's next run sends it
                    self.failed("inline forwarding", forwarding)
                self.writes += 1
                self.stop.wait(WRITE_EVERY)
        except BaseException as error:  # the test fails with it
            self.writer_error = error
            self.parked.set()

    def stream_loop(self, stream: ReverseStream) -> None:
        while not self.stop.is_set():
            try:
                stream.run_once()
                self.batches += 1
            except Exception as error:  # a sink or the storage away: counted; the next batch sends it
                self.failed("standalone batch", error)
            self.stop.wait(STREAM_EVERY)

    def sample(self, began: float) -> None:
        while not self.stop.wait(SAMPLE_EVERY):
            memory = {"client": own_resident_mb()}
            for name, service in (("hudi", self.hudi), ("plain", self.plain)):
                memory[name] = sum(resident_mb(service.processes[0].pid))  # its JVM and its Python workers
            self.samples.append((time.monotonic() - began, memory))

    def restart_kafka(self) -> None:
        self.kafka.stop()
        time.sleep(5)
        self.kafka = start_kafka(self.run_dir, port=self.kafka_ports[0], controller_port=self.kafka_ports[1])

    def restart_minio(self) -> None:
        self.storage_up.clear()
        assert self.parked.wait(600), "the writer never parked"
        assert self.writer_error is None, f"the writer stopped: {self.writer_error!r}"
        self.minio.stop()
        time.sleep(5)
        self.minio = start_minio(self.run_dir, restart=self.minio_endpoint)
        self.storage_up.set()

    def halt(self) -> None:
        self.stop.set()
        self.storage_up.set()


def _assert_kafka_equals(records: list[KafkaRecord], history: History, name: str) -> int:
    """Every change of the model is in the topic, in order per key, after the stream's first batch if that sent the
    table whole ('r' records, stamped with its last commit); each key's last record is its state. Returns how many
    records repeat one sent before."""
    per_key = kafka_changes(records)
    whole = {commit for events in per_key.values() for op, commit, _ in events if op == "r"}
    assert len(whole) <= 1, f"{name}: the table sent whole more than once: {whole}"
    sent_whole = next(iter(whole), "")  # commits up to it arrive as the state they left
    alive: dict[str, bool] = {}
    after: dict[str, list[tuple[str, str]]] = {}
    for commit, changed, op in history.events:
        if commit <= sent_whole:
            alive[str(changed)] = op != "d"
        else:
            after.setdefault(str(changed), []).append((op, commit))
    expected = {key: [("r", sent_whole)] * alive.get(key, False) + after.get(key, [])
                for key in set(alive) | set(after)}
    expected = {key: events for key, events in expected.items() if events}
    repeats = 0
    for key, events in per_key.items():
        seen: list[tuple[str, str]] = []
        for op, commit, _ in events:
            if (op, commit) in seen:
                repeats += 1
            else:
                seen.append((op, commit))
        assert seen == expected.get(key, []), f"{name}: key {key} got {seen}, the model {expected.get(key)}"
    assert set(per_key) == set(expected), f"{name}: keys never sent {set(expected) - set(per_key)}"
    for live, row in history.state.items():
        last = per_key[str(live)][-1]
        assert last[0] != "d" and last[2] == {"id": row[0], "v": row[1], "ts": row[2], "part": row[3]}, (name, live)
    return repeats


def _levels_off(samples: Samples, process: str) -> tuple[float, float]:
    """The peak of the second quarter (after the servers warmed up) and of the last."""
    end = samples[-1][0]
    second = [m[process] for t, m in samples if end / 4 < t <= end / 2]
    last = [m[process] for t, m in samples if t > end * 3 / 4]
    assert second and last, f"too few samples ({len(samples)}) for a memory curve"
    return max(second), max(last)


@pytest.mark.timeout(MINUTES * 60 + 1200)  # the run's minutes, its set-up and the checks at the end
def test_soak_every_sink_ends_equal_to_the_table(tmp_path: Path, postgres_dsn: str) -> None:
    os.chmod(tmp_path, 0o755)
    with ExitStack() as services:
        soak = Soak(tmp_path, postgres_dsn, services)
        writer_spark = connect(soak.hudi.endpoint.url)  # type: ignore[attr-defined]
        plain = connect(soak.plain.endpoint.url)  # type: ignore[attr-defined]
        sessions: list[SparkSession] = [writer_spark, plain]
        for session in sessions:
            services.callback(session.stop)
        table = HudiTable.create(writer_spark, soak.path, SCHEMA, record_key="id", ordering_field="ts",
                                 partition_by="part", table_type="COPY_ON_WRITE", cdc="DATA_BEFORE_AFTER",
                                 options={"hoodie.parquet.small.file.limit": "0"})
        inline = table.reverse_stream("inline", soak.sinks("inline"))
        standalone = ReverseStream(plain, soak.path, "standalone", soak.sinks("standalone"))
        history = History(table.forwarding_to(inline), random.Random(36))
        began = time.monotonic()
        threads = [threading.Thread(target=soak.write_loop, args=(history,), daemon=True),
                   threading.Thread(target=soak.stream_loop, args=(standalone,), daemon=True),
                   threading.Thread(target=soak.sample, args=(began,), daemon=True)]
        for thread in threads:
            services.callback(thread.join, timeout=600)
        services.callback(soak.halt)  # on any failure too: the loops stop before the services do
        for thread in threads:
            thread.start()
        time.sleep(max(0.0, began + MINUTES * 20 - time.monotonic()))
        print(f"\n{(time.monotonic() - began) / 60:.1f} min: Kafka restarts")
        soak.restart_kafka()
        time.sleep(max(0.0, began + MINUTES * 40 - time.monotonic()))
        print(f"{(time.monotonic() - began) / 60:.1f} min: MinIO restarts")
        soak.restart_minio()
        time.sleep(max(0.0, began + MINUTES * 60 - time.monotonic()))
        soak.halt()
        for thread in threads:
            thread.join(timeout=600)
            assert not thread.is_alive()
        assert soak.writer_error is None, soak.writer_error
        # both streams catch up with the last commits
        while inline.run_once().checkpoint is not None:
            pass
        while standalone.run_once().checkpoint is not None:
            pass
        print(f"{soak.writes} writes, {soak.batches} standalone batches, {len(history.events)} changes, "
              f"{len(history.state)} rows at the end; failures met: {dict(soak.failures)}")
        repeats = {}
        for name in ("inline", "standalone"):
            assert postgres_rows(postgres_dsn, soak.pg_tables[name]) == history.state, f"{name}: PostgreSQL"
            repeats[name] = _assert_kafka_equals(read_topic(soak.kafka_endpoint, soak.topics[name]), history, name)
        print(f"Kafka records repeated: {repeats}")
        assert {r.id: (r.id, r.v, r.ts, r.part) for r in table.hudi.snapshot().collect()} == history.state
        for name, where in (("inline", "inline forwarding"), ("standalone", "standalone batch")):
            if not any(failure.startswith(where) for failure in soak.failures):
                assert repeats[name] == 0, f"{name}: records repeated without a failed batch"
        print("memory (MB): " + "; ".join(
            f"{t / 60:.0f} min " + ", ".join(f"{k} {v:.0f}" for k, v in m.items())
            for t, m in soak.samples[:: max(1, len(soak.samples) // 12)]))
        for process in ("client", "hudi", "plain"):
            second, last = _levels_off(soak.samples, process)
            print(f"{process}: peak {second:.0f} MB in the second quarter, {last:.0f} MB in the last")
            assert last <= second * 1.25 + 150, f"{process}'s memory kept growing: {second:.0f} -> {last:.0f} MB"
