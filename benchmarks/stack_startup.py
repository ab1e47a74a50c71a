"""How long each service of the stack takes to start, cold or warm.

    python benchmarks/stack_startup.py

Starts every service one after another as the test fixtures do (MinIO, Kafka,
PostgreSQL, the Hudi and plain Connect servers, the standalone cluster with its
Connect server), prints the seconds each took and the total, then stops them.
Provisioning is done first and timed separately, so the service figures are
warm starts.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from hudi_connect_stack.backend import LocalBackend
from hudi_connect_stack.endpoints import MinioEndpoint
from hudi_connect_stack.process import RunningService

from hudi_connect_stack import provision


def main() -> None:
    started = time.monotonic()
    provision.provision()
    print(f"provisioning (check or install): {time.monotonic() - started:6.1f}s")
    run_dir = Path(tempfile.mkdtemp(prefix="hudi-connect-bench-"))
    backend = LocalBackend()
    running: list[RunningService] = []

    def timed(name: str, start: Callable[[], RunningService]) -> RunningService:
        begin = time.monotonic()
        service = start()
        running.append(service)
        print(f"{name:<28}{time.monotonic() - begin:6.1f}s")
        return service

    total = time.monotonic()
    try:
        minio = timed("minio", lambda: backend.minio(run_dir))
        assert isinstance(minio.endpoint, MinioEndpoint)
        endpoint = minio.endpoint
        timed("kafka", lambda: backend.kafka(run_dir))
        timed("postgres", lambda: backend.postgres(run_dir))
        timed("spark connect (hudi)", lambda: backend.spark_connect(run_dir, "hudi", endpoint))
        timed("spark connect (plain)", lambda: backend.spark_connect(run_dir, "plain", endpoint))
        timed("spark cluster + connect", lambda: backend.spark_connect(run_dir, "cluster", endpoint))
        print(f"{'all services, warm':<28}{time.monotonic() - total:6.1f}s")
    finally:
        for service in reversed(running):
            service.stop()
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
