"""The embedded default: a local Spark Connect server with Hudi, for one process.

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
