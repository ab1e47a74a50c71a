"""Servers of a test's own, to SIGKILL at a chosen moment and bring back where clients knew them.

The shared servers of the run must live; these die. A kill is armed on a
condition of the table's timeline (watched on the file system or MinIO, never
through the server being killed), then fired after a seeded delay.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

from hudi_connect_stack.endpoints import MinioEndpoint, SparkConnectEndpoint, SparkFlavor
from hudi_connect_stack.process import RunningService, pid_alive
from hudi_connect_stack.spark_connect import start_spark_connect
from minio import Minio


class KillableServer:
    """A Spark Connect server (the writer's JVM and its executors) that tests kill and restart."""

    def __init__(self, run_dir: Path, flavor: SparkFlavor, minio: MinioEndpoint | None) -> None:
        self._run_dir, self._flavor, self._minio = run_dir, flavor, minio
        # C1 alone: a server restarted at every kill point pays its compilations again each time
        self.service: RunningService = start_spark_connect(run_dir, flavor, minio=minio, jit="quick")
        self.kills = 0

    @property
    def endpoint(self) -> SparkConnectEndpoint:
        endpoint = self.service.endpoint
        assert isinstance(endpoint, SparkConnectEndpoint)
        return endpoint

    @property
    def url(self) -> str:
        return self.endpoint.url

    def kill(self) -> float:
        """SIGKILL every process of the server; returns the monotonic time of the kill."""
        killed_at = time.monotonic()
        for process in self.service.processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        deadline = killed_at + 60
        for process in self.service.processes:
            while pid_alive(process.pid):
                assert time.monotonic() < deadline, f"{process.name} (pid {process.pid}) outlived SIGKILL by 60s"
                time.sleep(0.02)
        self.kills += 1
        return killed_at

    def restart(self) -> None:
        """The server again, on the same port with the same token."""
        endpoint = self.endpoint
        self.service = start_spark_connect(self._run_dir / f"restart-{self.kills}", self._flavor, minio=self._minio,
                                           port=endpoint.port, token=endpoint.token, jit="quick")

    def stop(self) -> None:
        self.service.stop()


class TimelineWatch:
    """Instant file names of a table's timeline and of its metadata table's, read from storage directly."""

    def __init__(self, base_path: str, minio: MinioEndpoint | None = None) -> None:
        self._base_path = base_path.rstrip("/")
        self._client = None
        if base_path.startswith("s3a://"):
            assert minio is not None
            url = urlparse(minio.endpoint_url)
            self._client = Minio(url.netloc, minio.access_key, minio.secret_key, secure=False)

    def names(self, metadata_table: bool = False) -> set[str]:
        directory = f"{self._base_path}/.hoodie/metadata/.hoodie/timeline" if metadata_table \
            else f"{self._base_path}/.hoodie/timeline"
        if self._client is None:
            try:
                return {n for n in os.listdir(directory) if not n.startswith(".")}
            except FileNotFoundError:
                return set()
        bucket, _, prefix = directory.removeprefix("s3a://").partition("/")
        return {o.object_name.rsplit("/", 1)[-1] for o in self._client.list_objects(bucket, prefix=prefix + "/")
                if o.object_name and not o.object_name.endswith("/")}


class Kill:
    """Kills ``server`` once ``condition`` holds, ``delay`` seconds later, in a background thread."""

    def __init__(self, server: KillableServer, condition: Callable[[], bool], *, delay: float = 0.0,
                 poll: float = 0.02, timeout: float = 300.0) -> None:
        self.killed_at: float | None = None
        self._stop = threading.Event()

        def run() -> None:
            deadline = time.monotonic() + timeout
            while not self._stop.is_set() and time.monotonic() < deadline:
                if condition():
                    if delay:
                        time.sleep(delay)
                    self.killed_at = server.kill()
                    return
                time.sleep(poll)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def join(self) -> float | None:
        """Wait for the kill (or disarm it when the condition never held); the kill's time, if fired."""
        self._stop.set()
        self._thread.join()
        return self.killed_at
