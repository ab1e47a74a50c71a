"""Shipping hudi-connect's own code to the server's Python workers.

The workers import :mod:`hudi_connect.executor` (and what it needs) from a
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

import hudi_connect

PACKAGE_ROOT = Path(hudi_connect.__file__).parent
# The harness and the table façade are client-side only.
CLIENT_ONLY = ("stack", "testing")

_shipped: weakref.WeakKeyDictionary[SparkSession, str] = weakref.WeakKeyDictionary()


def package_zip() -> Path:
    """A zip of the package's modules, cached in the temp directory under its content hash."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for source in sorted(PACKAGE_ROOT.rglob("*.py")):
            relative = source.relative_to(PACKAGE_ROOT)
            if relative.parts[0] in CLIENT_ONLY:
                continue
            # a fixed timestamp keeps the bytes, and so the name, stable
            info = zipfile.ZipInfo(f"hudi_connect/{relative.as_posix()}", date_time=(2020, 1, 1, 0, 0, 0))
            archive.writestr(info, source.read_bytes())
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
