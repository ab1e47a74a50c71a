"""The local file system: atomic creation by ``os.link`` and replacement by ``os.replace``."""

from __future__ import annotations

import os
import uuid

from hudi_connect.executor.storage import Location


def aside(path: str) -> str:
    """A hidden temporary name beside local ``path`` (its directory created), to be renamed or linked into place."""
    parent = path.rsplit("/", 1)[0]
    os.makedirs(parent, exist_ok=True)
    return f"{parent}/.{uuid.uuid4().hex}.tmp"


def _written_aside(path: str, data: bytes) -> str:
    temporary = aside(path)
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
