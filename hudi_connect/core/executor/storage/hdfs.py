"""HDFS through WebHDFS (fsspec's client), the REST API every namenode serves.

pyarrow's own HDFS client needs ``libhdfs`` and a JVM class path in the worker's Python, which a Spark
server's Python workers do not have; WebHDFS needs only HTTP. The namenode's HTTP address comes from the
worker's Hadoop client configuration (``dfs.namenode.http-address`` in ``$HADOOP_CONF_DIR/hdfs-site.xml``,
for the URI's namenode host), else the namenode's host at Hadoop 3's default port 9870; the user is
``HADOOP_USER_NAME`` (simple authentication, as the JVM's client without Kerberos).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from hudi_connect.core.executor.storage import Location, aside

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
    """The WebHDFS host and port of the namenode at ``namenode`` (a URI's ``host[:rpc port]``): the client
    configuration's ``dfs.namenode.http-address`` where it describes that namenode (``dfs.namenode.rpc-address``
    is the URI's, or names none and the hosts agree; a wildcard host is the namenode's), else the namenode's host
    at Hadoop 3's default port. (One namenode: an HA nameservice's addresses are not read.)"""
    host = namenode.rsplit(":", 1)[0] if ":" in namenode else namenode
    configured_host, _, port = settings.get("dfs.namenode.http-address", "").rpartition(":")
    rpc = settings.get("dfs.namenode.rpc-address", "")
    wildcard = configured_host in ("0.0.0.0", "")
    if port and (rpc == namenode if rpc else wildcard or configured_host == host):
        return (host if wildcard else configured_host), int(port)
    return host, DEFAULT_HTTP_PORT


def client(location: Location) -> Any:
    """fsspec's WebHDFS client for the namenode of a location (fsspec keeps one per thread and arguments)."""
    from fsspec.implementations.webhdfs import WebHDFS

    host, port = http_address(location.authority, hadoop_settings(os.environ.get("HADOOP_CONF_DIR")))
    return WebHDFS(host, port=port, user=os.environ.get("HADOOP_USER_NAME"))


def filesystem(location: Location) -> pafs.PyFileSystem:
    """pyarrow's file system over WebHDFS for the location's namenode, raising failures a listing would hide."""
    return pafs.PyFileSystem(_WebHdfsHandler(client(location)))


def read(location: Location) -> bytes:
    """One OPEN (the namenode's redirect, then the datanode's bytes); fsspec's file objects ask for the file's
    status first, and pyarrow's reads through them ask again per range."""
    with _as_os_errors():
        return bytes(client(location)._call("OPEN", path=location.path).content)


def read_range(location: Location, offset: int, length: int) -> bytes:
    """``length`` bytes from ``offset``: one OPEN with offset and length, without the status calls of fsspec's
    file objects."""
    with _as_os_errors():
        return bytes(client(location)._call("OPEN", path=location.path, offset=offset, length=length).content)


@contextmanager
def _as_os_errors() -> Iterator[None]:
    """fsspec's WebHDFS raises HDFS's other refusals (a namenode in safe mode or standby, a bad argument) as
    RuntimeError and ValueError: they are storage failures like the rest."""
    try:
        yield
    except (RuntimeError, ValueError) as error:
        raise OSError(f"WebHDFS: {error}") from error


class _WebHdfsHandler(pafs.FSSpecHandler):  # type: ignore[misc]
    """pyarrow's handler for fsspec, made strict: the generic one answers "nothing there" for a directory it
    failed to list (its ``isdir``/``exists`` swallow every error, and ``find`` omits what fails), which would
    make a reader see fewer files than exist. Here only a missing path is missing, and every other failure is
    raised. WebHDFS's modification times (``modificationTime``, ms) are kept: tables before version 8 take
    completion times from them."""

    @staticmethod
    def _create_file_info(path: str, info: dict[str, Any]) -> pafs.FileInfo:
        directory = info["type"] == "directory"
        modified = info.get("modificationTime")
        return pafs.FileInfo(path, pafs.FileType.Directory if directory else pafs.FileType.File,
                             size=None if directory else info["size"],
                             mtime=None if modified is None else datetime.fromtimestamp(modified / 1000, UTC))

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        with _as_os_errors():
            return list(super().get_file_info(paths))  # fs.info: FileNotFoundError only where nothing is

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        with _as_os_errors():
            try:
                base = self.fs.info(selector.base_dir)
            except FileNotFoundError:
                if selector.allow_not_found:
                    return []
                raise
            if base["type"] != "directory":
                raise NotADirectoryError(selector.base_dir)
            found = self.fs.find(selector.base_dir, maxdepth=None if selector.recursive else 1, withdirs=True,
                                 detail=True, on_error="raise")
        root = selector.base_dir.strip("/")
        return [self._create_file_info(path, info) for path, info in found.items() if path.strip("/") != root]

    def open_input_stream(self, path: str) -> pa.PythonFile:
        with _as_os_errors():
            return pa.PythonFile(self.fs.open(path, mode="rb"), mode="r")  # fs.info first: missing is missing

    def open_input_file(self, path: str) -> pa.PythonFile:
        return self.open_input_stream(path)


def _written_aside(webhdfs: Any, path: str, data: bytes) -> str:
    temporary = aside(path)
    webhdfs.pipe_file(temporary, data)  # fsspec's writes create, then append: never in place
    return temporary


def _rename(webhdfs: Any, source: str, target: str, *, overwrite: bool) -> None:
    """WebHDFS's RENAME with options (HDFS's rename2): atomic on the namenode; without ``overwrite`` it fails
    where ``target`` exists (fsspec's own ``mv`` uses the old rename, which quietly does nothing there)."""
    webhdfs._call("RENAME", method="put", path=source, destination=target,
                  renameoptions="OVERWRITE" if overwrite else "NONE")


def create_exclusive(location: Location, data: bytes) -> bool:
    """Write ``data`` aside, then RENAME it into place without overwriting: the namenode lets one writer
    win; whether this one did."""
    webhdfs = client(location)
    temporary = _written_aside(webhdfs, location.path, data)
    try:
        _rename(webhdfs, temporary, location.path, overwrite=False)
        return True
    except RuntimeError as error:  # how fsspec raises HDFS's FileAlreadyExistsException
        if "already exists" in str(error):
            return False
        raise OSError(f"WebHDFS rename to {location.path}: {error}") from error
    finally:
        if webhdfs.exists(temporary):
            webhdfs.rm(temporary)


def replace(location: Location, data: bytes) -> None:
    """Write ``data`` aside, then RENAME it over the file (atomic on the namenode): readers see old or new."""
    webhdfs = client(location)
    temporary = _written_aside(webhdfs, location.path, data)
    try:
        with _as_os_errors():
            _rename(webhdfs, temporary, location.path, overwrite=True)
    finally:
        if webhdfs.exists(temporary):
            webhdfs.rm(temporary)
