"""fake-gcs-server as a local process: Google Cloud Storage's JSON API on loopback for gs:// tables.

Google's Hadoop connector (``fs.gs.storage.root.url``), pyarrow's ``GcsFileSystem`` (``endpoint_override``,
``scheme="http"``, ``anonymous=True``) and google-cloud-storage (``client_options={"api_endpoint": ...}`` or
``STORAGE_EMULATOR_HOST``) all reach it unauthenticated over plain http.

The objects live in memory (``-backend memory``): the filesystem backend maps object names onto nested
directories, so it does not keep the ``dir/`` placeholder objects the connector's ``mkdirs`` writes (Hudi's
first write then fails: ``.hoodie/timeline`` "does not exist"), nor ``a`` beside ``a/b``. The price: a
restarted emulator starts empty (no test restarts it).

Unlike GCS, fake-gcs-server honours the preconditions ``ifGenerationMatch``/``ifGenerationNotMatch`` on
multipart uploads only (``uploadType=multipart``, what google-cloud-storage sends up to 8 MiB), not on simple
(``media``) or resumable ones. The connector uploads resumably with ``ifGenerationMatch=0`` for a new file; its
``create(path, overwrite=false)`` also checks for the object first, but two such creates racing both succeed
here where GCS would refuse the second.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote

from hudi_connect.core.errors import ServiceStartError
from hudi_connect_stack.endpoints import GcsEndpoint
from hudi_connect_stack.process import LOOPBACK, RunningService, free_port, launch, port_open, wait_until_ready
from hudi_connect_stack.provision import ensure_fake_gcs_server

__all__ = ["api_answers", "create_bucket", "ensure_fake_gcs_server", "fake_gcs_command", "fake_gcs_flags",
           "start_fake_gcs"]

READY_TIMEOUT = 30.0


def fake_gcs_flags(port: int, bind: str = LOOPBACK) -> list[str]:
    """The server's flags: plain http on ``bind`` (a container binds every address: its published port is
    ``127.0.0.1:port`` too). Its public host and external URL are ``127.0.0.1:port``, so the resumable-upload URLs
    it hands out (the ``Location`` of an upload's first request) lead back to it, and requests whose ``Host`` is
    ``127.0.0.1:port`` also reach its public-host routes (``/bucket/object``)."""
    address = f"{LOOPBACK}:{port}"
    return [
        "-scheme", "http", "-host", bind, "-port", str(port),
        "-public-host", address, "-external-url", f"http://{address}",
        "-backend", "memory",
        "-log-level", "warn",  # 'info' logs every request
    ]


def fake_gcs_command(binary: Path, port: int) -> list[str]:
    """The local server's argv."""
    return [str(binary), *fake_gcs_flags(port)]


def api_answers(endpoint_url: str) -> bool:
    """Whether the JSON API answers (the bucket list), not only the socket."""
    try:
        with urllib.request.urlopen(f"{endpoint_url}/storage/v1/b", timeout=1) as response:
            return int(response.status) == 200
    except OSError:
        return False


def start_fake_gcs(run_dir: Path, *, port: int | None = None, timeout: float = READY_TIMEOUT) -> RunningService:
    """Start fake-gcs-server on a free loopback port (or ``port``), its log in ``run_dir / "fake-gcs"``; it starts
    with no bucket.

    >>> service = start_fake_gcs(Path("/tmp/run"))
    >>> create_bucket(service.endpoint, "tables")  # then gs://tables/t1
    """
    binary = ensure_fake_gcs_server()
    port = port or free_port()
    if port_open(port):  # else the readiness check could pass on whatever answers there
        raise ServiceStartError("fake-gcs-server", f"port {port} on {LOOPBACK} is in use; choose another or none")
    endpoint = GcsEndpoint(endpoint_url=f"http://{LOOPBACK}:{port}")
    process, popen = launch(
        "fake-gcs-server", fake_gcs_command(binary, port), log=run_dir / "fake-gcs" / "fake-gcs-server.log"
    )
    wait_until_ready(process, lambda: api_answers(endpoint.endpoint_url), timeout=timeout, popen=popen)
    return RunningService(endpoint, (process,))


def create_bucket(endpoint: GcsEndpoint, bucket: str) -> None:
    """Create ``bucket`` if it does not exist (the JSON API's ``buckets.insert``; 409 means it exists)."""
    request = urllib.request.Request(
        f"{endpoint.endpoint_url}/storage/v1/b?project={quote(endpoint.project, safe='')}",
        data=json.dumps({"name": bucket}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10):
            pass
    except urllib.error.HTTPError as error:
        if error.code == 400:  # GCS's naming rules: 3 to 63 of [a-z0-9._-], say
            reason = error.read().decode(errors="replace").strip()
            raise ValueError(f"fake-gcs-server refused the bucket name {bucket!r}: {reason}") from error
        if error.code != 409:
            raise
