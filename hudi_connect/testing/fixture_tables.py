"""The real Hudi tables of ``shared/fixtures/hudi-rs-tables``, unzipped for tests.

They were written by Apache Hudi itself (table versions 6, 8 and 9, COW and
MOR); ``HUDI_CONNECT_FIXTURES`` overrides where the zips are found.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def fixtures_dir() -> Path:
    configured = os.environ.get("HUDI_CONNECT_FIXTURES")
    return Path(configured) if configured else REPO_ROOT.parent / "shared" / "fixtures" / "hudi-rs-tables"


def fixture_names() -> list[str]:
    """Every fixture table (zip stem); [] when the fixtures are not there."""
    return sorted(p.stem for p in fixtures_dir().glob("*.zip"))


def unzip_fixture(name: str, destination: Path) -> Path:
    """Unzip fixture ``name`` under ``destination``; returns the table's base path (holding ``.hoodie``)."""
    archive = fixtures_dir() / f"{name}.zip"
    if not archive.is_file():
        raise FileNotFoundError(f"no fixture table {name!r} in {fixtures_dir()}")
    target = destination / name
    with zipfile.ZipFile(archive) as zipped:
        members = [m for m in zipped.namelist() if not m.startswith("__MACOSX/")]
        zipped.extractall(target, members)
    base = next((p.parent for p in sorted(target.rglob(".hoodie")) if p.is_dir()), None)
    if base is None:
        raise FileNotFoundError(f"fixture {name!r} holds no .hoodie directory")
    for path in [target, *target.rglob("*")]:  # readable by servers running as other users
        path.chmod(0o755 if path.is_dir() else 0o644)
    return base
