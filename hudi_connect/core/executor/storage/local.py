"""The local file system: atomic creation by ``os.link`` and replacement by ``os.replace``."""

from __future__ import annotations

import os

import pyarrow.fs as pafs

from hudi_connect.core.executor.storage import Location, aside, read_stream


def filesystem(location: Location) -> pafs.LocalFileSystem:
    """pyarrow's local file system (the same for every location)."""
    return pafs.LocalFileSystem()


def read(location: Location) -> bytes:
    """The whole file, through pyarrow's input stream."""
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
    """Write ``data`` aside, then hard-link it into place: ``os.link`` fails where the name exists, so one
    writer wins; whether this one did."""
    temporary = _written_aside(location.path, data)
    try:
        os.link(temporary, location.path)  # atomic, and fails when the name exists
        return True
    except FileExistsError:
        return False
    finally:
        os.unlink(temporary)


def replace(location: Location, data: bytes) -> None:
    """Write ``data`` aside (synced), then ``os.replace`` it into place: readers see the old file or the new."""
    os.replace(_written_aside(location.path, data), location.path)
