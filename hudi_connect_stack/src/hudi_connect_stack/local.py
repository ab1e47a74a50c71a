"""The embedded default: a local Spark Connect server with Hudi (and one without, for the demo), for one process.

    with local_hudi_server() as url:
        spark = connect(url)
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path

from hudi_connect_stack import provision
from hudi_connect_stack.spark_connect import start_spark_connect


@contextmanager
def _run_directory(run_dir: Path | None) -> Iterator[Path]:
    """The servers' components provisioned, and their directory: ``run_dir``, or a temporary one removed after."""
    provision.provision(["jars", "interceptor", "server-python"])
    if run_dir is not None:
        yield run_dir
        return
    directory = Path(tempfile.mkdtemp(prefix="hudi-connect-local-"))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@contextmanager
def local_hudi_server(run_dir: Path | None = None) -> Iterator[str]:
    """Provision (if needed) and start a Hudi Connect server on local[2]; yields its ``sc://`` URL."""
    with _run_directory(run_dir) as directory:
        server = start_spark_connect(directory, "hudi")
        try:
            yield server.endpoint.url  # type: ignore[attr-defined]
        finally:
            server.stop()


@contextmanager
def local_servers(run_dir: Path | None = None) -> Iterator[tuple[str, str]]:
    """A local server with Hudi's jars and one without (the jar-free reads), started side by side;
    yields their ``sc://`` URLs. Whatever happens (one fails to start, Ctrl-C), every server that started
    is stopped."""
    with _run_directory(run_dir) as directory, contextlib.ExitStack() as started:
        pool = ThreadPoolExecutor(2)
        starting = [pool.submit(start_spark_connect, directory, flavor) for flavor in ("hudi", "plain")]
        try:
            wait(starting)
        finally:  # interrupted too: let both starts finish, so that each one that started is stopped
            pool.shutdown(wait=True)
            for future in starting:
                if future.exception() is None:
                    started.callback(future.result().stop)
        hudi, plain = (future.result() for future in starting)  # a failed start raises here
        yield hudi.endpoint.url, plain.endpoint.url  # type: ignore[attr-defined]
