"""Shipping hudi-connect's own code to the server's Python workers.

The workers import :mod:`hudi_connect.core.executor.slices` (and what it needs) from a
zip added to the session with ``addArtifacts(..., pyfile=True)``, so the
server needs no install of ours. The zip is named by its content hash: a
changed package is a new artifact, an unchanged one is shipped once per session.
"""

from __future__ import annotations

import hashlib
import io
import tempfile
import weakref
import zipfile
from pathlib import Path

from pyspark.sql import SparkSession

PACKAGE_ROOT = Path(__file__).resolve().parent.parent  # hudi_connect/
WORKER_FOLDER = PACKAGE_ROOT / "core"  # what workers import, whole: nothing else of the library
# In the zip, the package's __init__ is this stub: the real one imports the client API.
WORKER_INIT = b'"""hudi-connect\'s worker artifact: the Hudi format and the executor functions only."""\n'

_shipped: weakref.WeakKeyDictionary[SparkSession, str] = weakref.WeakKeyDictionary()
_zip_by_stamp: dict[tuple[tuple[str, int, int], ...], Path] = {}


def worker_sources() -> list[tuple[str, bytes]]:
    """(name in the zip, content) of every module the workers may import, sorted."""
    sources = [("hudi_connect/__init__.py", WORKER_INIT)]
    sources += [(f"hudi_connect/{source.relative_to(PACKAGE_ROOT).as_posix()}", source.read_bytes())
                for source in WORKER_FOLDER.rglob("*.py")]
    return sorted(sources)


def package_zip() -> Path:
    """A zip of the package's modules, cached in the temp directory under its content hash, and in the
    process while no source changed (building it costs some 10 ms, and every plan asks for it)."""
    stamp = _sources_stamp()
    cached = _zip_by_stamp.get(stamp)
    if cached is not None and cached.exists():
        return cached
    _zip_by_stamp.clear()
    _zip_by_stamp[stamp] = target = _build_zip()
    return target


def _sources_stamp() -> tuple[tuple[str, int, int], ...]:
    """Path, size and modification time of every source the zip holds: a changed file changes it."""
    paths = list(WORKER_FOLDER.rglob("*.py"))
    stats = ((str(p), p.stat()) for p in paths)
    return tuple(sorted((name, st.st_size, st.st_mtime_ns) for name, st in stats))


def _build_zip() -> Path:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in worker_sources():
            # a fixed timestamp keeps the bytes, and so the name, stable
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED  # a ZipInfo is stored uncompressed unless told
            archive.writestr(info, content)
    content = buffer.getvalue()
    digest = hashlib.sha256(content).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / f"hudi_connect-{digest}.zip"
    if not target.exists():
        partial = target.with_suffix(".partial")
        partial.write_bytes(content)
        partial.replace(target)
    return target


def ship_package(spark: SparkSession) -> None:
    """Make ``hudi_connect`` importable in this session's Python workers (once per session)."""
    archive = package_zip()
    if _shipped.get(spark) == archive.name:
        return
    spark.addArtifacts(str(archive), pyfile=True)
    _shipped[spark] = archive.name
