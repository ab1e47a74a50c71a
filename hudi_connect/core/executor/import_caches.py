"""Spark's Python worker, before every task, calls ``importlib.invalidate_caches()`` (so that files added to
the session since are found). Python 3.11's ``zipimporter`` answers by re-reading its archive's whole directory
in pure Python, once per importer: once for each subpackage imported from ``pyspark.zip`` and twice for the
``spark-core`` jar on the workers' path, some 0.1 s of every task on a small server (measured on a 2-core
machine: 60-125 ms), more than a small task's own work.

The archives do not change under a running worker (Spark adds files under new names), so once a body of ours
has run in a worker, a ``zipimporter`` there re-reads an archive only if its size, modification time or inode
changed: what the re-read would find stays what it finds.
"""

from __future__ import annotations

import os
import zipimport
from collections.abc import Callable
from typing import Any

_STAMP = "_hudi_connect_archive_stamp"


def _archive_stamp(archive: str) -> tuple[int, int, int] | None:
    try:
        stat = os.stat(archive)
    except OSError:
        return None
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino)


def _rereading_only_changed(invalidate: Callable[[Any], None]) -> Callable[[Any], None]:
    def invalidate_caches(importer: Any) -> None:
        stamp = _archive_stamp(importer.archive)
        if stamp is not None and getattr(importer, _STAMP, None) == stamp:
            return
        invalidate(importer)
        setattr(importer, _STAMP, stamp)

    invalidate_caches.__wrapped__ = invalidate  # type: ignore[attr-defined]
    return invalidate_caches


def keep_unchanged_archives() -> None:
    """Make ``zipimporter.invalidate_caches`` re-read only changed archives, in this process (idempotent)."""
    current = getattr(zipimport.zipimporter, "invalidate_caches", None)
    if current is None or hasattr(current, "__wrapped__"):
        return
    zipimport.zipimporter.invalidate_caches = _rereading_only_changed(current)  # type: ignore[method-assign,assignment]
