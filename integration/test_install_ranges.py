"""hudi-connect installs beside a user's own pyarrow, pandas and numpy, at both ends of the ranges it states
(issue: meet users where they are).

Each end is a fresh venv that already holds what a user of a Spark line could have: the newest versions the
3.5 line allows, the oldest hudi-connect states, or the newest a Spark 4 line allows (numpy 2, pandas 3).
Installing ``hudi-connect[<line>]`` there must change none of them; then the library must work with them: its
unit tests pass, and a jar-free snapshot read and change query over Spark Connect (a plain server of the line)
equal hudi-rs and the fixture's history.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pytest
from hudi import HudiTableBuilder
from hudi_connect_stack.testing.fixture_tables import unzip_fixture
from hudi_connect_stack.versions import SPARK4_LINES
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parent.parent
FIXTURE = "mor_avro_v6_trips_8i1u"  # 8 inserts, then 1 update: 8 rows, 9 changes

# What a user's environment holds before hudi-connect arrives. Newest: what pip picks for the Spark 3.5 line
# (its client needs numpy < 2; pyarrow 26 needs numpy 2 without declaring it). Oldest: the low ends that
# pyproject.toml states.
USER_ENVIRONMENTS = {
    "newest": ["pyspark[connect]>=3.5.2,<3.6", "numpy<2", "pandas", "pyarrow<26", "grpcio", "fastavro"],
    "oldest": ["pyspark[connect]==3.5.2", "numpy==1.23.2", "pandas==2.0.0", "pyarrow==20.0.0", "grpcio==1.56.0",
               "tabulate==0.9.0", "fastavro==1.9.0"],
}
WATCHED = ("pyspark", "numpy", "pandas", "pyarrow", "grpcio", "fastavro")
SPARK4_NEWEST = ["numpy", "pandas", "pyarrow", "grpcio", "fastavro"]  # with the line's client (pyspark-client or,
# on 4.3, which has none, pyspark's connect extra)

READ_SCRIPT = textwrap.dedent("""
    import json, sys
    import hudi_connect
    from hudi_connect import connect
    from hudi_connect.cdc import ChangeQuery
    from hudi_connect.reader import TableReader

    spark = connect(sys.argv[1])
    rows = TableReader(spark, sys.argv[2]).snapshot().toPandas()  # the client's own Arrow-to-pandas path
    keys = sorted(zip(rows["_hoodie_record_key"], rows["_hoodie_commit_time"]))
    changes = int(ChangeQuery(spark, sys.argv[2]).changes("earliest").count())  # pyspark 3.5 counts in numpy
    print(json.dumps({"keys": keys, "changes": changes, "imported_from": hudi_connect.__file__}))
""")
V9_FIXTURE = "mor_avro_v9_txns_simple_meta"  # Avro commit metadata: the client decodes it with fastavro


def _run(command: Sequence[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(list(command), capture_output=True, text=True, cwd=cwd, env=env)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout


def _versions(python: Path) -> dict[str, str]:
    listed = json.loads(_run([str(python), "-m", "pip", "list", "--format", "json"]))
    return {p["name"].lower(): p["version"] for p in listed}


# CI checks the Spark 4 line's newest end (its second leg); --full adds both ends of the 3.5 line
@pytest.mark.parametrize("end", [pytest.param("newest", marks=pytest.mark.full),
                                 pytest.param("oldest", marks=pytest.mark.full),
                                 pytest.param("spark4-newest", marks=pytest.mark.spark4)])
def test_installs_beside_the_users_libraries_and_works_with_them(
    end: str, tmp_path: Path, request: pytest.FixtureRequest,
) -> None:
    spark4 = end.startswith("spark4")
    line = SPARK4_LINES[request.config.getoption("--hudi-connect-spark4-line")] if spark4 else None
    server_url: str = request.getfixturevalue("spark4_server_url" if spark4 else "plain_server_url")
    watched = (Requirement(line.client).name, *WATCHED[1:]) if line else WATCHED
    source = tmp_path / "source"  # a copy: pip builds in the source tree, and the work tree stays as it is
    ignored = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(REPO / "hudi_connect", source / "hudi_connect", ignore=ignored)
    # the harness, which the test tools come with (a distribution of its own, not on PyPI)
    shutil.copytree(REPO / "hudi_connect_stack", source / "hudi_connect_stack", ignore=ignored)
    for name in ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "MANIFEST.in"):
        shutil.copy(REPO / name, source / name)
    venv = tmp_path / "venv"
    _run([sys._base_executable, "-m", "venv", str(venv)])  # type: ignore[attr-defined]
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--progress-bar", "off"]
    _run([*pip, *([line.client, *SPARK4_NEWEST] if line else USER_ENVIRONMENTS[end])])
    before = _versions(python)
    assert before["numpy"].startswith("2." if spark4 else "1.")  # the Spark 4 line's client takes numpy 2

    extra = f"spark{line.name.replace('.', '')}" if line else "spark35"
    _run([*pip, f"{source}[{extra}]"])
    after = _versions(python)
    assert {name: after[name] for name in before} == before  # nothing up- or downgraded (tabulate may be new)
    assert "hudi-connect" in after

    # the installed library alone (no test tools) over Spark Connect, jar-free: a snapshot and change query of
    # a version-6 table equal hudi-rs and the fixture's history (8 inserts, then 1 update)
    base = str(unzip_fixture(FIXTURE, tmp_path))
    script = tmp_path / "read.py"
    script.write_text(READ_SCRIPT)
    answer = json.loads(_run([str(python), str(script), server_url, base], cwd=tmp_path).splitlines()[-1])
    assert answer["imported_from"].startswith(str(venv))
    theirs = pa.Table.from_batches(HudiTableBuilder.from_base_uri(base).build().read())
    expected = sorted(zip(theirs["_hoodie_record_key"].to_pylist(), theirs["_hoodie_commit_time"].to_pylist(),
                          strict=True))
    assert [tuple(k) for k in answer["keys"]] == expected
    assert answer["changes"] == 9
    # and the CLI on a version-9 table (Avro commit metadata): every completed instant of its timeline
    v9 = unzip_fixture(V9_FIXTURE, tmp_path)
    history = json.loads(_run([str(venv / "bin" / "hudi-connect"), "history", str(v9), "--remote", server_url,
                               "--json"], cwd=tmp_path))
    completed = sorted(n.split("_")[0] for n in os.listdir(v9 / ".hoodie" / "timeline") if "_" in n.split(".")[0])
    assert sorted(e["requested_time"] for e in history if e["state"] == "COMPLETED") == completed
    assert all(e["operation_type"] for e in history if e["action"] in ("commit", "deltacommit"))

    # the unit tests with these versions (run from the work tree, whose tests need its layout), the test tools
    # added around the user's versions (fastavro excepted: the tools pin their own, and the read above used the
    # user's)
    held = [name for name in watched if name != "fastavro"]
    pins = tmp_path / "pins.txt"
    pins.write_text("".join(f"{name}=={before[name]}\n" for name in held))
    _run([*pip, "-c", str(pins), str(source / "hudi_connect_stack"), f"{source}[test]"])
    assert {name: _versions(python)[name] for name in held} == {name: before[name] for name in held}
    # the harness installed as a wheel finds the checkout's files (fixture tables, build files) as a user's does
    out = _run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=REPO,
               env=dict(os.environ, HUDI_CONNECT_CHECKOUT=str(REPO)))
    assert " passed" in out and "failed" not in out, out[-2000:]
    versions = ", ".join(f"{name} {before[name]}" for name in watched)
    print(f"\n{end}: {versions}: installed without changes, {out.strip().splitlines()[-1]}")
