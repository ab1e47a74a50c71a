"""Azure Blob Storage and ADLS Gen2 (``abfs(s)://``, ``wasb(s)://``) through pyarrow's Azure file system.

A URI names its container and account host: ``abfss://container@account.dfs.core.windows.net/path``,
``wasbs://container@account.blob.core.windows.net/path``. The account's key comes from the worker's
``AZURE_STORAGE_CONNECTION_STRING`` (whose ``BlobEndpoint`` also points at an emulator such as Azurite) or
``AZURE_STORAGE_ACCOUNT_KEY``; without either, pyarrow uses Azure's default credential (a service principal's
environment, a managed or workload identity). The host ``storageemulator`` is Hadoop's name for the local
storage emulator (``fs.azure.storage.emulator.account.name``): its well-known account at 127.0.0.1:10000.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlparse

import pyarrow.fs as pafs

from hudi_connect.core.executor.storage import Location, read_stream

EMULATOR_HOST = "storageemulator"
# the storage emulator's documented development account (Azurite's and Hadoop's), not a secret
EMULATOR_ACCOUNT = "devstoreaccount1"
EMULATOR_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
EMULATOR_BLOB_ENDPOINT = "http://127.0.0.1:10000/devstoreaccount1"


@dataclass(frozen=True)
class AzureAccount:
    """An account as the worker reaches it: its key (None: Azure's default credential) and, for an
    emulator or another cloud, its Blob endpoint."""

    name: str
    key: str | None = None
    blob_endpoint: str | None = None  # http://127.0.0.1:10000/devstoreaccount1


def _connection_string() -> dict[str, str]:
    text = os.environ.get("AZURE_STORAGE_CONNECTION_STRING", "")
    return dict(part.split("=", 1) for part in text.split(";") if "=" in part)


def account_of(authority: str) -> AzureAccount:
    """The account of a URI's ``container@host``, with what the worker's environment says of it."""
    host = authority.split("@", 1)[1] if "@" in authority else authority
    if host.lower() == EMULATOR_HOST:
        return AzureAccount(EMULATOR_ACCOUNT, EMULATOR_KEY, EMULATOR_BLOB_ENDPOINT)
    name = host.split(".", 1)[0]
    connection = _connection_string()
    if connection.get("AccountName") == name:
        return AzureAccount(name, connection.get("AccountKey"), connection.get("BlobEndpoint"))
    if os.environ.get("AZURE_STORAGE_ACCOUNT_KEY") and os.environ.get("AZURE_STORAGE_ACCOUNT_NAME", name) == name:
        return AzureAccount(name, os.environ["AZURE_STORAGE_ACCOUNT_KEY"])
    return AzureAccount(name)


def filesystem_options(account: AzureAccount) -> dict[str, Any]:
    """pyarrow's AzureFileSystem arguments for the account."""
    options: dict[str, Any] = {"account_name": account.name}
    if account.key:
        options["account_key"] = account.key
    endpoint = urlparse(account.blob_endpoint or "")
    if endpoint.netloc and not endpoint.netloc.lower().startswith(f"{account.name.lower()}."):
        # an endpoint that is not the account's own host names the account in its path (path-style, as
        # emulators serve it): pyarrow adds it there itself; the account's own host is pyarrow's default
        options.update(blob_storage_authority=endpoint.netloc, blob_storage_scheme=endpoint.scheme,
                       dfs_storage_authority=endpoint.netloc, dfs_storage_scheme=endpoint.scheme)
    return options


@lru_cache(maxsize=16)
def _filesystem(account: AzureAccount) -> pafs.FileSystem:
    return pafs.AzureFileSystem(**filesystem_options(account))


def filesystem(location: Location) -> pafs.FileSystem:
    """pyarrow's Azure file system for the account of the location's host (one kept per account)."""
    return _filesystem(account_of(location.authority))


def read(location: Location) -> bytes:
    """The whole blob, in one GET."""
    return read_stream(location)


def create_exclusive(location: Location, data: bytes) -> bool:
    """Put Blob with ``If-None-Match: *`` (the SDK's ``overwrite=False``): one writer wins."""
    from azure.core.exceptions import ResourceExistsError

    try:
        _put_blob(location, data, overwrite=False)
        return True
    except ResourceExistsError:
        return False


def replace(location: Location, data: bytes) -> None:
    """One Put Blob: pyarrow's output stream would first leave an empty blob in the old one's place."""
    _put_blob(location, data, overwrite=True)


def _put_blob(location: Location, data: bytes, *, overwrite: bool) -> None:
    from azure.core.exceptions import AzureError, ResourceExistsError
    from azure.storage.blob import BlobClient

    account = account_of(location.authority)
    container, _, name = location.path.partition("/")
    endpoint = account.blob_endpoint or f"https://{account.name}.blob.core.windows.net"
    try:
        BlobClient(endpoint, container, name, credential=_credential(account)).upload_blob(data, overwrite=overwrite)
    except ResourceExistsError:
        raise
    except AzureError as error:  # the storage's refusal, as the other clients raise it
        raise OSError(f"Azure Put Blob of {container}/{name} in {account.name}: {error}") from error


def _credential(account: AzureAccount) -> Any:
    if account.key:
        return {"account_name": account.name, "account_key": account.key}
    try:
        from azure.identity import DefaultAzureCredential
    except ImportError as missing:
        raise OSError(f"no key for the Azure account {account.name} in the worker's environment, and no "
                      "azure-identity in its Python for Azure's default credential") from missing
    return DefaultAzureCredential()
