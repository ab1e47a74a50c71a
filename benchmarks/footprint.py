"""What an operation costs besides time, counted rather than timed: the Connect requests its client sends, the
largest message the client receives, the Spark jobs and tasks the server runs, and the server's memory.

Used by ``jobs_per_read.py`` and ``scale.py``. The server's memory is sampled from ``/proc`` (the benchmarks run
their servers locally, in ``local[2]`` mode, so the executors are the server's JVM and its Python workers)."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from hudi_connect_stack.testing.process_memory import resident_mb
from pyspark.sql import SparkSession


@dataclass
class Sent:
    """The requests a client sent and the largest message it received while counted."""

    executed: int = 0
    analysed: int = 0
    largest_message: int = 0  # bytes of one serialized response


@contextmanager
def counting(spark: SparkSession) -> Iterator[Sent]:
    """The plans ``spark``'s client sends to be executed and analysed while inside, and the largest response
    message it receives (the serialized size gRPC's ``max_receive_message_length`` bounds)."""
    sent, client = Sent(), spark.client
    execute, analyse, stub = client._execute_and_fetch_as_iterator, client._analyze, client._stub
    stream_calls = {name: getattr(stub, name) for name in ("ExecutePlan", "ReattachExecute")}
    analyse_call = stub.AnalyzePlan

    def executed(*args: Any, **kwargs: Any) -> Any:
        sent.executed += 1
        return execute(*args, **kwargs)

    def analysed(*args: Any, **kwargs: Any) -> Any:
        sent.analysed += 1
        return analyse(*args, **kwargs)

    def measured_stream(call: Any) -> Any:
        def stream(*args: Any, **kwargs: Any) -> Iterator[Any]:
            for response in call(*args, **kwargs):
                sent.largest_message = max(sent.largest_message, response.ByteSize())
                yield response
        return stream

    def measured_analyse(*args: Any, **kwargs: Any) -> Any:
        response = analyse_call(*args, **kwargs)
        sent.largest_message = max(sent.largest_message, response.ByteSize())
        return response

    client._execute_and_fetch_as_iterator, client._analyze = executed, analysed  # type: ignore[method-assign]
    for name, call in stream_calls.items():
        setattr(stub, name, measured_stream(call))
    stub.AnalyzePlan = measured_analyse
    try:
        yield sent
    finally:
        del client._execute_and_fetch_as_iterator, client._analyze
        for name, call in stream_calls.items():
            setattr(stub, name, call)
        stub.AnalyzePlan = analyse_call


def jobs(ui_port: int) -> list[dict[str, Any]]:
    """Every job the server has run, from its status API (Spark's UI must be on)."""
    base = f"http://127.0.0.1:{ui_port}/api/v1/applications"
    with urllib.request.urlopen(base) as response:
        application = json.load(response)[0]["id"]
    with urllib.request.urlopen(f"{base}/{application}/jobs") as response:
        return sorted(json.load(response), key=lambda job: job["jobId"])


def last_job(ui_port: int) -> int:
    """The id of the server's latest job (-1 before any): jobs after it are a new operation's."""
    return max((job["jobId"] for job in jobs(ui_port)), default=-1)


@dataclass
class ServerMemory:
    """The peak resident memory of a local server's JVM and of its Python workers while sampled."""

    session: int  # the server's session id (the stack starts each server in a session of its own)
    interval: float = 0.05
    jvm_start_mb: float = 0.0
    jvm_peak_mb: float = 0.0
    python_peak_mb: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)

    def sample(self) -> None:
        jvm, python = resident_mb(self.session)
        self.jvm_peak_mb = max(self.jvm_peak_mb, jvm)
        self.python_peak_mb = max(self.python_peak_mb, python)

    @contextmanager
    def watching(self) -> Iterator[ServerMemory]:
        self.sample()
        self.jvm_start_mb, self.python_peak_mb = self.jvm_peak_mb, 0.0
        thread = threading.Thread(target=self._run, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join()
            self.sample()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()


@dataclass(frozen=True)
class Footprint:
    """One counted run of an operation."""

    executed: int
    analysed: int
    jobs: int
    tasks: int
    largest_message_mb: float
    jvm_growth_mb: float
    python_workers_peak_mb: float

    def as_row(self) -> str:
        return (f"{self.executed} / {self.analysed} | {self.jobs} / {self.tasks} | {self.largest_message_mb:.2f} | "
                f"{self.jvm_growth_mb:.0f} | {self.python_workers_peak_mb:.0f}")


def footprint(spark: SparkSession, ui_port: int, server_session: int, operation: Any) -> tuple[Footprint, Any]:
    """``operation()`` counted on ``spark``'s server, and its result."""
    before = last_job(ui_port)
    memory = ServerMemory(server_session)
    with counting(spark) as sent, memory.watching():
        result = operation()
    time.sleep(1)  # the status API learns of a job's end from Spark's listener bus, a moment later
    ran = [job for job in jobs(ui_port) if job["jobId"] > before]
    return Footprint(sent.executed, sent.analysed, len(ran), sum(job["numTasks"] for job in ran),
                     sent.largest_message / 2**20, memory.jvm_peak_mb - memory.jvm_start_mb,
                     memory.python_peak_mb), result
