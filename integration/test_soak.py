"""Soak (issue #36; ``--full`` only, 30 minutes by default, ``HUDI_CONNECT_SOAK_MINUTES`` to change it): a
writer commits to a table on MinIO every few seconds, forwarding each commit inline to Kafka and PostgreSQL;
a standalone reverse streamer on the plain server sends the same table to another topic and PostgreSQL table
every few seconds. A third of the way in Kafka restarts; two thirds in MinIO does (the writer waits for it, the
streamers meet it). At the end every sink equals the table: PostgreSQL row for row, Kafka with every change
of the model once (a repeat only from a batch sent again after a failure) and each key's last record its
state. Memory is sampled all along (this process, both servers' JVMs and Python workers) and must level off:
the second half's peak within a quarter (plus 100 MB) of the first half's.
"""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from hudi_connect_stack.endpoints import KafkaEndpoint, MinioEndpoint
from hudi_connect_stack.kafka import start_kafka
from hudi_connect_stack.minio import create_bucket, start_minio
from hudi_connect_stack.process import free_port
from hudi_connect_stack.spark_connect import start_spark_connect
from hudi_connect_stack.testing.topics import create_topic, read_topic

from hudi_connect import HudiTable, KafkaSink, PostgresSink, ReverseStream, SinkError, connect
from integration.reverse_stream_model import SCHEMA, History, kafka_changes, postgres_rows

pytestmark = pytest.mark.full

MINUTES = float(os.environ.get("HUDI_CONNECT_SOAK_MINUTES", "30"))
WRITE_EVERY = 3.0  # seconds between the end of a write and the next
STREAM_EVERY = 5.0  # the standalone streamer's pause between batches
SAMPLE_EVERY = 20.0
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def _resident_mb(pids: set[int]) -> float:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm") as statm:
                total += int(statm.read().split()[1]) * PAGE_KB
        except OSError:
            continue
    return total / 1024


def _session_pids(session: int) -> set[int]:
    """The processes of a server's session (its JVM, and the Python workers it forks)."""
    pids = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as stat:
                    text = stat.read()
            except OSError:
                continue
            if int(text[text.rindex(")") + 2:].split()[3]) == session:
                pids.add(int(entry.name))
    return pids


class Soak:
    """The services, the writer, the streamer and the samples of one soak."""

    def __init__(self, run_dir: Path, postgres_dsn: str) -> None:
        self.run_dir, self.dsn = run_dir, postgres_dsn
        self.minio = start_minio(run_dir)
        self.minio_endpoint: MinioEndpoint = self.minio.endpoint  # type: ignore[assignment]
        create_bucket(self.minio_endpoint, "lake")
        self.kafka_ports = (free_port(), free_port())
        self.kafka = start_kafka(run_dir, port=self.kafka_ports[0], controller_port=self.kafka_ports[1])
        self.kafka_endpoint: KafkaEndpoint = self.kafka.endpoint  # type: ignore[assignment]
        self.hudi = start_spark_connect(run_dir, "hudi", minio=self.minio_endpoint)
        self.plain = start_spark_connect(run_dir, "plain", minio=self.minio_endpoint)
        self.path = f"s3a://lake/soak/{uuid.uuid4().hex[:8]}"
        suffix = uuid.uuid4().hex[:8]
        self.topics = {"inline": f"soak-inline-{suffix}", "standalone": f"soak-standalone-{suffix}"}
        self.pg_tables = {"inline": f"soak_inline_{suffix}", "standalone": f"soak_standalone_{suffix}"}
        for topic in self.topics.values():
            create_topic(self.kafka_endpoint, topic)
        self.storage_up = threading.Event()
        self.storage_up.set()
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.failures: Counter[str] = Counter()  # where and what, for the report
        self.samples: list[tuple[float, dict[str, float]]] = []
        self.writes = 0
        self.batches = 0
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
                self.storage_up.wait()
                try:
                    history.step()
                except SinkError as forwarding:  # committed; the inline stream's next run sends it
                    self.failed("inline forwarding", forwarding)
                self.writes += 1
                self.stop.wait(WRITE_EVERY)
        except BaseException as error:  # the test fails with it
            self.writer_error = error

    def stream_loop(self, stream: ReverseStream) -> None:
        while not self.stop.is_set():
            try:
                stream.run_once()
                self.batches += 1
            except Exception as error:  # a sink or the storage away: counted; the next batch sends it
                self.failed("standalone batch", error)
            self.stop.wait(STREAM_EVERY)

    def sample(self, began: float) -> None:
        client_pids = {os.getpid()}
        servers = {"hudi": self.hudi, "plain": self.plain}
        while not self.stop.wait(SAMPLE_EVERY):
            memory = {"client": _resident_mb(client_pids)}
            for name, service in servers.items():
                memory[name] = _resident_mb(_session_pids(service.processes[0].pid))
            self.samples.append((time.monotonic() - began, memory))

    def restart_kafka(self) -> None:
        self.kafka.stop()
        time.sleep(5)
        self.kafka = start_kafka(self.run_dir, port=self.kafka_ports[0], controller_port=self.kafka_ports[1])

    def restart_minio(self, writing: threading.Thread) -> None:
        self.storage_up.clear()  # the writer finishes its write and waits
        time.sleep(WRITE_EVERY + 30)
        self.minio.stop()
        time.sleep(5)
        self.minio = start_minio(self.run_dir, restart=self.minio_endpoint)
        self.storage_up.set()
        assert writing.is_alive(), f"the writer stopped: {self.writer_error!r}"

    def close(self) -> None:
        for service in (self.plain, self.hudi, self.kafka, self.minio):
            service.stop()


def _assert_kafka_equals(records: list, history: History, name: str) -> int:
    """Every change of the model is in the topic, in order per key, and each key's last record is its state;
    returns how many records repeat one sent before."""
    per_key = kafka_changes(records)
    expected: dict[str, list[tuple[str, str]]] = {}
    for commit, key, op in history.events:
        expected.setdefault(str(key), []).append((op, commit))
    repeats = 0
    for key, events in per_key.items():
        seen: list[tuple[str, str]] = []
        for op, commit, _ in events:
            if seen and (op, commit) in seen:
                repeats += 1
            else:
                seen.append((op, commit))
        assert seen == expected.get(key, []), f"{name}: key {key} got {seen}, the model {expected.get(key)}"
    assert set(per_key) == set(expected), f"{name}: keys never sent {set(expected) - set(per_key)}"
    for key, row in history.state.items():
        last = per_key[str(key)][-1]
        assert last[0] != "d" and last[2] == {"id": row[0], "v": row[1], "ts": row[2], "part": row[3]}, (name, key)
    return repeats


def _level(samples: list[tuple[float, dict[str, float]]], process: str) -> tuple[float, float]:
    half = samples[-1][0] / 2
    first = max(m[process] for t, m in samples if t <= half)
    second = max(m[process] for t, m in samples if t > half)
    return first, second


@pytest.mark.timeout(MINUTES * 60 + 1200)  # the run's minutes, its set-up and the checks at the end
def test_soak_every_sink_ends_equal_to_the_table(tmp_path: Path, postgres_dsn: str) -> None:
    os.chmod(tmp_path, 0o755)
    soak = Soak(tmp_path, postgres_dsn)
    try:
        writer_spark = connect(soak.hudi.endpoint.url)  # type: ignore[attr-defined]
        table = HudiTable.create(writer_spark, soak.path, SCHEMA, record_key="id", ordering_field="ts",
                                 partition_by="part", table_type="COPY_ON_WRITE", cdc="DATA_BEFORE_AFTER",
                                 options={"hoodie.parquet.small.file.limit": "0"})
        inline = table.reverse_stream("inline", soak.sinks("inline"))
        history = History(table.forwarding_to(inline), random.Random(36))
        plain = connect(soak.plain.endpoint.url)  # type: ignore[attr-defined]
        standalone = ReverseStream(plain, soak.path, "standalone", soak.sinks("standalone"))
        began = time.monotonic()
        writing = threading.Thread(target=soak.write_loop, args=(history,), daemon=True)
        streaming = threading.Thread(target=soak.stream_loop, args=(standalone,), daemon=True)
        sampling = threading.Thread(target=soak.sample, args=(began,), daemon=True)
        for thread in (writing, streaming, sampling):
            thread.start()
        end = began + MINUTES * 60
        time.sleep(max(0.0, began + MINUTES * 20 - time.monotonic()))
        print(f"\n{(time.monotonic() - began) / 60:.1f} min: Kafka restarts")
        soak.restart_kafka()
        time.sleep(max(0.0, began + MINUTES * 40 - time.monotonic()))
        print(f"{(time.monotonic() - began) / 60:.1f} min: MinIO restarts")
        soak.restart_minio(writing)
        time.sleep(max(0.0, end - time.monotonic()))
        soak.stop.set()
        for thread in (writing, streaming, sampling):
            thread.join(timeout=600)
            assert not thread.is_alive()
        assert soak.writer_error is None, soak.writer_error
        # both streams catch up with the last commits
        while inline.run_once().sent:
            pass
        while standalone.run_once().sent:
            pass
        print(f"{soak.writes} writes, {soak.batches} standalone batches, {len(history.events)} changes, "
              f"{len(history.state)} rows at the end; failures met: {dict(soak.failures)}")
        repeats = {}
        for name in ("inline", "standalone"):
            assert postgres_rows(postgres_dsn, soak.pg_tables[name]) == history.state, f"{name}: PostgreSQL"
            repeats[name] = _assert_kafka_equals(read_topic(soak.kafka_endpoint, soak.topics[name]), history, name)
        print(f"Kafka records repeated: {repeats}")
        assert {r.id: (r.id, r.v, r.ts, r.part) for r in table.snapshot().collect()} == history.state
        for name, failures in (("inline", "inline forwarding"), ("standalone", "standalone batch")):
            if not any(where.startswith(failures) for where in soak.failures):
                assert repeats[name] == 0, f"{name}: records repeated without a failed batch"
        print("memory (MB) every few minutes: " + "; ".join(
            f"{t / 60:.0f} min " + ", ".join(f"{k} {v:.0f}" for k, v in m.items())
            for t, m in soak.samples[:: max(1, len(soak.samples) // 12)]))
        for process in ("client", "hudi", "plain"):
            first, second = _level(soak.samples, process)
            print(f"{process}: peak {first:.0f} MB in the first half, {second:.0f} MB in the second")
            assert second <= first * 1.25 + 100, f"{process}'s memory kept growing: {first:.0f} -> {second:.0f} MB"
    finally:
        soak.close()

