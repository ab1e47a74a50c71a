"""The artifact shipped to Spark's Python workers holds the format core and the
executor functions only, and they import nothing else of hudi-connect."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import zipfile

from hudi_connect.client.artifacts import package_zip

WORKER_PREFIX = "hudi_connect/core/"  # the one folder zipped, beside the package's stub __init__


def test_the_artifact_holds_only_the_worker_layers() -> None:
    names = zipfile.ZipFile(package_zip()).namelist()
    assert {n for n in names if not n.startswith(WORKER_PREFIX)} == {"hudi_connect/__init__.py"}
    assert {"hudi_connect/core/errors.py", "hudi_connect/core/format/timeline.py"} < set(names)
    assert any(n.startswith("hudi_connect/core/executor/") for n in names)
    assert not any("/stack/" in n or "/testing/" in n or "/client/" in n for n in names)


def test_every_executor_module_imports_from_the_artifact_alone() -> None:
    # A fresh interpreter with the zip first on sys.path: hudi_connect resolves to the zip's stub,
    # so any import of a client module fails, as it would in a worker.
    archive = str(package_zip())
    modules = sorted(n[:-3].replace("/", ".").removesuffix(".__init__")
                     for n in zipfile.ZipFile(archive).namelist() if n.startswith("hudi_connect/core/executor/"))
    script = f"""
import importlib, json, sys
# no install of ours either: drop the editable install's finder, as a server's Python has none
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
sys.path[:] = [{archive!r}] + [p for p in sys.path if "__editable__" not in p and "hudi_connect_stack" not in p]
for name in {modules!r}:
    importlib.import_module(name)
loaded = sorted(m for m in sys.modules if m == "hudi_connect" or m.startswith("hudi_connect."))
files = {{m: getattr(sys.modules[m], "__file__", "") or "" for m in loaded}}
missing = [m for m in ("hudi_connect.reader", "hudi_connect.client", "hudi_connect.table")
           if importlib.util.find_spec(m) is not None]
print(json.dumps({{"loaded": loaded, "outside": [m for m, f in files.items() if not f.startswith({archive!r})],
                  "client_importable": missing}}))
"""
    # run outside the checkout, as a worker does: its folders would be namespace packages from the current one
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         cwd=tempfile.gettempdir())
    report = json.loads(out.stdout)
    assert set(modules) <= set(report["loaded"])
    assert report["outside"] == []
    assert report["client_importable"] == []
    assert all(m in ("hudi_connect", "hudi_connect.core") or m.startswith("hudi_connect.core.")
               for m in report["loaded"]), report["loaded"]
