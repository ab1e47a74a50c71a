"""The embedded default: a local Spark Connect server with Hudi (and one without, for the demo), for one process.

    with local_hudi_server() as url:
        spark = connect(url)
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hudi_connect.stack import provision
from hudi_connect.stack.spark_connect import start_spark_connect


@contextmanager
def local_hudi_server(run_dir: Path | None = None) -> Iterator[str]:
    """Provision (if needed) and start a Hudi Connect server on local[2]; yields its ``sc://`` URL."""
    provision.provision(["jars", "interceptor", "server-python"])
    owned = run_dir is None
    directory = Path(tempfile.mkdtemp(prefix="hudi-connect-local-")) if run_dir is None else run_dir
    try:
        server = start_spark_connect(directory, "hudi")
        try:
            yield server.endpoint.url  # type: ignore[attr-defined]
        finally:
            server.stop()
    finally:
        if owned:
            shutil.rmtree(directory, ignore_errors=True)


@contextmanager
def local_servers(run_dir: Path | None = None) -> Iterator[tuple[str, str]]:
    """A local server with Hudi's jars and one without (the jar-free reads), started side by side;
    yields their ``sc://`` URLs."""
    from concurrent.futures import ThreadPoolExecutor

    provision.provision(["jars", "interceptor", "server-python"])
    owned = run_dir is None
    directory = Path(tempfile.mkdtemp(prefix="hudi-connect-local-")) if run_dir is None else run_dir
    try:
        with ThreadPoolExecutor(2) as pool:
            starting = [pool.submit(start_spark_connect, directory, flavor) for flavor in ("hudi", "plain")]
        servers = [s.result() for s in starting if s.exception() is None]
        try:
            for started in starting:
                started.result()  # a server that failed to start fails the demo, after the other is stopped
            yield servers[0].endpoint.url, servers[1].endpoint.url  # type: ignore[attr-defined]
        finally:
            for server in servers:
                server.stop()
    finally:
        if owned:
            shutil.rmtree(directory, ignore_errors=True)
