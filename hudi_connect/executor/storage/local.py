"""The local file system: atomic creation by ``os.link`` and replacement by ``os.replace``."""

from __future__ import annotations

import os

import pyarrow.fs as pafs

from hudi_connect.executor.storage import Location, aside, read_stream


def filesystem(location: Location) -> pafs.LocalFileSystem:
    return pafs.LocalFileSystem()


def read(location: Location) -> bytes:
    return read_stream(location)


def _written_aside(path: str, data: bytes) -> str:
    temporary = aside(path)
    os.makedirs(temporary.rsplit("/", 1)[0], exist_ok=True)
    with open(temporary, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    return temporary


def create_exclusive(location: Location, data: bytes) -> bool:
    temporary = _written_aside(location.path, data)
    try:
        os.link(temporary, location.path)  # atomic, and fails when the name exists
        return True
    except FileExistsError:
        return False
    finally:
        os.unlink(temporary)


def replace(location: Location, data: bytes) -> None:
    os.replace(_written_aside(location.path, data), location.path)
