"""Every code sample of the README and the documentation marked ``<!-- runnable -->`` runs as written, on the
harness's servers: the Hudi server stands at ``sc://localhost:15002`` and the server without Hudi's jars at
``sc://localhost:15003`` (the addresses the samples name), table paths under ``/tmp/hudi-connect-tour`` move
to a fresh directory. A page's runnable samples run in order, in one namespace, and may print."""

from __future__ import annotations

import contextlib
import io
import re
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
RUNNABLE = re.compile(r"<!-- runnable -->\s*\n```python\n(.*?)\n```", re.DOTALL)


def samples(page: Path) -> list[str]:
    return RUNNABLE.findall(page.read_text())


def test_the_readme_has_a_runnable_tour() -> None:
    tour = samples(ROOT / "README.md")
    assert len(tour) == 1 and 20 <= len(tour[0].splitlines()) <= 40, "the README's tour: one runnable sample"


@pytest.mark.parametrize(("page", "reading_server"), [
    # CI reads every page on the server without Hudi's jars, and the README's tour on the Hudi server too
    pytest.param(p, s, id=f"{p.relative_to(ROOT)}-{s}",
                 marks=() if s == "plain" or p.name == "README.md" else (pytest.mark.full,))
    for p in PAGES if samples(p) for s in ("plain", "hudi")])
def test_runnable_samples_run_as_written(page: Path, reading_server: str, hudi_server_url: str,
                                         plain_server_url: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The reads (``sc://localhost:15003``) on the server without Hudi's jars, and again on the Hudi server.
    Samples of tables by name use the two servers sharing a Hive Metastore: ``sc://localhost:15004`` (Hudi's
    bundle) and ``sc://localhost:15005`` (none)."""
    namespace: dict[str, object] = {"__name__": f"sample of {page.name}"}
    printed = io.StringIO()
    addresses = {"sc://localhost:15002": lambda: hudi_server_url,
                 "sc://localhost:15003": lambda: plain_server_url if reading_server == "plain" else hudi_server_url,
                 "sc://localhost:15004": lambda: request.getfixturevalue("metastore_server_url"),
                 "sc://localhost:15005": lambda: request.getfixturevalue(
                     "plain_metastore_url" if reading_server == "plain" else "metastore_server_url")}
    table_name = f"orders_{uuid.uuid4().hex[:10]}"  # the metastore outlives a run: a name of the run's own
    for number, code in enumerate(samples(page), start=1):
        for address, url in addresses.items():
            if address in code:
                code = code.replace(address, url())
        code = code.replace("/tmp/hudi-connect-tour", str(tmp_path)).replace("orders_tour", table_name)
        with contextlib.redirect_stdout(printed):
            exec(compile(code, f"{page.name}, runnable sample {number}", "exec"), namespace)
    assert printed.getvalue(), f"the samples of {page.name} showed nothing"
