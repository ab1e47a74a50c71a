"""The release a user installs: both distributions build as wheels and sdists, pass ``twine check``, carry their
version, changelog and licence, and a fresh venv with the two wheels alone runs the README's tour as written
against running servers (``--full``: it builds, and installs pyspark into a new venv)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
VERSION = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.MULTILINE)[1]  # type: ignore[index]


def _run(command: list[str], cwd: Path | None = None) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.full
def test_the_wheels_install_in_a_fresh_venv_and_run_the_tour(tmp_path: Path, hudi_server_url: str,
                                                            plain_server_url: str) -> None:
    source, dist = tmp_path / "source", tmp_path / "dist"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".git", "build", "*.egg-info", "__pycache__"))
    for project in (source, source / "hudi_connect_stack"):
        _run([sys.executable, "-m", "build", "-o", str(dist), str(project)])
    built = sorted(p.name for p in dist.iterdir())
    assert built == sorted([f"hudi_connect-{VERSION}-py3-none-any.whl", f"hudi_connect-{VERSION}.tar.gz",
                            f"hudi_connect_stack-{VERSION}-py3-none-any.whl", f"hudi_connect_stack-{VERSION}.tar.gz"])
    _run([sys.executable, "-m", "twine", "check", "--strict", *map(str, dist.iterdir())])
    with tarfile.open(dist / f"hudi_connect-{VERSION}.tar.gz") as sdist:
        names = set(sdist.getnames())
    assert {f"hudi_connect-{VERSION}/{n}" for n in ("LICENSE", "CHANGELOG.md", "README.md")} <= names
    assert not any("/hudi_connect_stack/" in n or "/integration/" in n for n in names)  # each its own
    with zipfile.ZipFile(dist / f"hudi_connect-{VERSION}-py3-none-any.whl") as wheel:
        assert f"hudi_connect-{VERSION}.dist-info/licenses/LICENSE" in wheel.namelist()
        assert "pyspark_hudi/__init__.py" in wheel.namelist()  # format("hudi"), for a Spark 4 server's Python

    venv = tmp_path / "venv"
    _run([sys._base_executable, "-m", "venv", str(venv)])  # type: ignore[attr-defined]
    python = venv / "bin" / "python"
    wheel_of = {p.name.split("-")[0]: p for p in dist.glob("*.whl")}
    _run([str(python), "-m", "pip", "install", "-q", "--progress-bar", "off",
          f"{wheel_of['hudi_connect']}[spark35]", str(wheel_of["hudi_connect_stack"])])
    assert _run([str(python), "-c", "import hudi_connect, importlib.metadata as m; "
                 "print(m.version('hudi-connect'))"]).strip() == VERSION
    readme = (REPO / "README.md").read_text()
    tour = re.search(r"<!-- runnable -->\s*\n```python\n(.*?)\n```", readme, re.DOTALL)[1]  # type: ignore[index]
    tour = (tour.replace("sc://localhost:15002", hudi_server_url).replace("sc://localhost:15003", plain_server_url)
            .replace("/tmp/hudi-connect-tour", str(tmp_path / "tour")))
    (tmp_path / "tour.py").write_text(tour)
    shown = _run([str(python), str(tmp_path / "tour.py")], cwd=tmp_path)  # not the checkout: the wheels alone
    assert "paris" in shown and "prunes partitions and files" in shown, shown
