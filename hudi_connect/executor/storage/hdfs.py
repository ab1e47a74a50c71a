"""HDFS through WebHDFS (fsspec's client), the REST API every namenode serves.

pyarrow's own HDFS client needs ``libhdfs`` and a JVM class path in the worker's Python, which a Spark
server's Python workers do not have; WebHDFS needs only HTTP. The namenode's HTTP address comes from the
worker's Hadoop client configuration (``dfs.namenode.http-address`` in ``$HADOOP_CONF_DIR/hdfs-site.xml``,
for the URI's namenode host), else the namenode's host at Hadoop 3's default port 9870; the user is
``HADOOP_USER_NAME`` (simple authentication, as the JVM's client without Kerberos).
"""

from __future__ import annotations

import os
import uuid
import xml.etree.ElementTree as ElementTree
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs

from hudi_connect.executor.storage import Location

DEFAULT_HTTP_PORT = 9870


def hadoop_settings(conf_dir: str | None) -> dict[str, str]:
    """The properties of ``core-site.xml`` and ``hdfs-site.xml`` in ``conf_dir`` (none without one)."""
    settings: dict[str, str] = {}
    for name in ("core-site.xml", "hdfs-site.xml"):
        path = Path(conf_dir or "") / name
        if not conf_dir or not path.is_file():
            continue
        for prop in ElementTree.parse(path).getroot().iter("property"):
            key, value = prop.findtext("name"), prop.findtext("value")
            if key and value is not None:
                settings[key.strip()] = value.strip()
    return settings


def http_address(namenode: str, settings: dict[str, str]) -> tuple[str, int]:
    """The WebHDFS host and port of the namenode at ``namenode`` (``host[:rpc port]``)."""
    host = namenode.rsplit(":", 1)[0] if ":" in namenode else namenode
    configured = settings.get("dfs.namenode.http-address", "")
    if configured:
        configured_host, _, port = configured.rpartition(":")
        reachable = host if configured_host in ("0.0.0.0", "") else configured_host
        return reachable, int(port)
    return host, DEFAULT_HTTP_PORT


@lru_cache(maxsize=8)
def _webhdfs(host: str, port: int, user: str | None) -> Any:
    from fsspec.implementations.webhdfs import WebHDFS

    return WebHDFS(host, port=port, user=user)


def client(namenode: str) -> Any:
    """fsspec's WebHDFS client for the namenode of a URI."""
    host, port = http_address(namenode, hadoop_settings(os.environ.get("HADOOP_CONF_DIR")))
    return _webhdfs(host, port, os.environ.get("HADOOP_USER_NAME"))


class _WebHdfsHandler(pafs.FSSpecHandler):  # type: ignore[misc]
    """fsspec's handler with WebHDFS's modification times (``modificationTime``, ms), which the generic one
    leaves out: tables before version 8 take completion times from them."""

    @staticmethod
    def _create_file_info(path: str, info: dict[str, Any]) -> pafs.FileInfo:
        directory = info["type"] == "directory"
        modified = info.get("modificationTime")
        return pafs.FileInfo(path, pafs.FileType.Directory if directory else pafs.FileType.File,
                             size=None if directory else info["size"],
                             mtime=None if modified is None else datetime.fromtimestamp(modified / 1000, UTC))


@lru_cache(maxsize=8)
def _filesystem(namenode: str) -> pafs.PyFileSystem:
    return pafs.PyFileSystem(_WebHdfsHandler(client(namenode)))


def filesystem(namenode: str) -> pafs.PyFileSystem:
    return _filesystem(namenode)


def _aside(client: Any, path: str, data: bytes) -> str:
    parent = path.rsplit("/", 1)[0] or "/"
    temporary = f"{parent}/.{uuid.uuid4().hex}.tmp"
    client.pipe_file(temporary, data)
    return temporary


def _rename(client: Any, source: str, target: str, *, overwrite: bool) -> None:
    """WebHDFS's RENAME with options (HDFS's rename2): atomic on the namenode; without ``overwrite`` it fails
    where ``target`` exists (fsspec's own ``mv`` uses the old rename, which quietly does nothing there)."""
    client._call("RENAME", method="put", path=source, destination=target,
                 renameoptions="OVERWRITE" if overwrite else "NONE")


def create_exclusive(location: Location, data: bytes) -> bool:
    webhdfs = client(location.authority)
    temporary = _aside(webhdfs, location.path, data)  # fsspec's writes create, then append: never in place
    try:
        _rename(webhdfs, temporary, location.path, overwrite=False)
        return True
    except RuntimeError as error:  # how fsspec raises HDFS's FileAlreadyExistsException
        webhdfs.rm(temporary)
        if "already exists" in str(error):
            return False
        raise OSError(f"WebHDFS rename to {location.path}: {error}") from error


def replace(location: Location, data: bytes) -> None:
    webhdfs = client(location.authority)
    _rename(webhdfs, _aside(webhdfs, location.path, data), location.path, overwrite=True)
