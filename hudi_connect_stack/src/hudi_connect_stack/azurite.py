"""Azurite as a local process: Azure's Blob service on loopback for wasb:// tables.

Only the Blob service runs (``azurite-blob``), path-style, with the emulator's well-known account. Its port is
not ours to choose: Hadoop's WASB driver reaches the storage emulator (account host ``storageemulator`` in
``wasb://container@storageemulator/path``, see ``fs.azure.storage.emulator.account.name``) through
``CloudStorageAccount.getDevelopmentStorageAccount()``, whose blob endpoint is always http://127.0.0.1:10000.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import urllib.error
import urllib.request
from email.utils import formatdate
from pathlib import Path
from urllib.parse import unquote, urlsplit

from hudi_connect.core.errors import ServiceStartError
from hudi_connect.core.executor.storage.azure import EMULATOR_ACCOUNT, EMULATOR_KEY
from hudi_connect_stack import provision
from hudi_connect_stack.endpoints import AzuriteEndpoint
from hudi_connect_stack.process import LOOPBACK, RunningService, launch, port_open, wait_until_ready

READY_TIMEOUT = 30.0
BLOB_PORT = 10000  # the storage emulator's, fixed in the Azure SDK that WASB uses
ACCOUNT_NAME = EMULATOR_ACCOUNT
ACCOUNT_KEY = EMULATOR_KEY  # the emulator's published key (every Azurite's and the Azure SDKs'): no secret
API_VERSION = "2021-08-06"  # of the requests this module signs


def azurite_command(node: str, script: Path, data_dir: Path) -> list[str]:
    return [node, str(script), *azurite_flags(data_dir)]


def azurite_flags(data_dir: Path, bind: str = LOOPBACK) -> list[str]:
    """The Blob service's flags: on ``bind`` (a container binds every address; its port is published on
    127.0.0.1:10000), its data in ``data_dir``."""
    return [
        "--blobHost", bind, "--blobPort", str(BLOB_PORT),
        "--location", str(data_dir),
        # Serve clients newer than Azurite: azure-storage-blob 12.31 sends x-ms-version 2026-10-06. Not --loose,
        # which would ignore the headers Azurite does not implement rather than refuse the request.
        "--skipApiVersionCheck",
        "--disableProductStyleUrl",  # the account is the path's first segment, whatever host name a client uses
        "--disableTelemetry",
    ]


def answers(blob_endpoint: str) -> bool:
    """Whether Azurite answers at ``blob_endpoint`` (an unsigned request is refused, but by Azurite)."""
    try:
        with urllib.request.urlopen(f"{blob_endpoint}?comp=list", timeout=1) as response:
            server = str(response.headers.get("Server", ""))
    except urllib.error.HTTPError as refused:
        server = str(refused.headers.get("Server", ""))
    except OSError:
        return False
    return server.startswith("Azurite-Blob")


def emulator_endpoint() -> AzuriteEndpoint:
    """The storage emulator's endpoint, once its port is known to be free (else ServiceStartError): the port is
    fixed, so an Azurite already there would pass for this one."""
    if port_open(BLOB_PORT):
        raise ServiceStartError(
            "azurite",
            f"port {BLOB_PORT} on {LOOPBACK} is in use, and Hadoop's WASB driver reaches the storage emulator "
            f"there only; stop what listens on it (an Azurite left from an earlier run?) and start again",
        )
    return AzuriteEndpoint(
        blob_endpoint=f"http://{LOOPBACK}:{BLOB_PORT}/{ACCOUNT_NAME}", account_name=ACCOUNT_NAME,
        account_key=ACCOUNT_KEY,
    )


def start_azurite(run_dir: Path, *, timeout: float = READY_TIMEOUT) -> RunningService:
    """Start Azurite's Blob service on 127.0.0.1:10000 with its data under ``run_dir``; started again on the
    same ``run_dir``, it serves the containers and blobs it had.

    >>> service = start_azurite(Path("/tmp/run"))
    >>> create_container(service.endpoint, "tables")  # then wasb://tables@storageemulator/t1
    """
    endpoint = emulator_endpoint()
    script = provision.ensure_azurite()
    data_dir = run_dir / "azurite" / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    process, popen = launch(
        "azurite", azurite_command(provision.require_tool("node"), script, data_dir),
        log=run_dir / "azurite" / "azurite.log",
    )
    wait_until_ready(process, lambda: answers(endpoint.blob_endpoint), timeout=timeout, popen=popen)
    return RunningService(endpoint, (process,))


def shared_key_headers(endpoint: AzuriteEndpoint, method: str, url: str, headers: dict[str, str],
                       content_length: int = 0) -> dict[str, str]:
    """``headers`` plus ``x-ms-date``, ``x-ms-version`` and the SharedKey ``Authorization`` of a Blob request
    (https://learn.microsoft.com/rest/api/storageservices/authorize-with-shared-key); headers named in the
    string to sign (``If-None-Match``, ``Content-Type``...) must be given with their canonical capitalisation."""
    signed = {"x-ms-date": formatdate(usegmt=True), "x-ms-version": API_VERSION, **headers}
    standard = ("Content-Encoding", "Content-Language", "Content-Length", "Content-MD5", "Content-Type", "Date",
                "If-Modified-Since", "If-Match", "If-None-Match", "If-Unmodified-Since", "Range")
    values = {**signed, "Content-Length": str(content_length) if content_length else ""}
    ms_headers = sorted((k.lower(), v.strip()) for k, v in signed.items() if k.lower().startswith("x-ms-"))
    parts = urlsplit(url)
    query = sorted(tuple(item.split("=", 1)) for item in parts.query.split("&") if item)
    resource = f"/{endpoint.account_name}{parts.path}" + "".join(f"\n{k.lower()}:{unquote(v)}" for k, v in query)
    to_sign = "\n".join([method, *(values.get(name, "") for name in standard),
                         *(f"{k}:{v}" for k, v in ms_headers), resource])
    digest = hmac.new(base64.b64decode(endpoint.account_key), to_sign.encode(), hashlib.sha256).digest()
    return {**signed, "Authorization": f"SharedKey {endpoint.account_name}:{base64.b64encode(digest).decode()}"}


def create_container(endpoint: AzuriteEndpoint, name: str) -> None:
    """Create the container ``name`` if it does not exist (Create Container, signed here: no Azure SDK needed)."""
    url = f"{endpoint.blob_endpoint}/{name}?restype=container"
    request = urllib.request.Request(url, method="PUT", headers=shared_key_headers(endpoint, "PUT", url, {}))
    try:
        with urllib.request.urlopen(request, timeout=10):
            return
    except urllib.error.HTTPError as refused:
        if refused.code == 409 and refused.headers.get("x-ms-error-code") == "ContainerAlreadyExists":
            return
        raise
