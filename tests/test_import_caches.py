"""A worker re-reads a zip archive's directory only when the archive changed (the import-cache rule of
:mod:`hudi_connect.core.executor.import_caches`), and still finds what a changed archive holds."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def test_an_unchanged_archive_is_not_reread_and_a_changed_one_is(tmp_path: Path) -> None:
    # in a fresh interpreter: the rule changes zipimport for the whole process, as it does in a worker
    script = textwrap.dedent(f"""
        import importlib, os, sys, time, zipfile, zipimport
        from hudi_connect.core.executor.import_caches import keep_unchanged_archives
        archive = {str(tmp_path / "lib.zip")!r}
        with zipfile.ZipFile(archive, "w") as z:
            z.writestr("first.py", "VALUE = 1\\n")
        sys.path.insert(0, archive)
        import first
        reads = []
        original = zipimport._read_directory
        zipimport._read_directory = lambda path: reads.append(path) or original(path)
        keep_unchanged_archives(); keep_unchanged_archives()  # idempotent
        for _ in range(3):
            importlib.invalidate_caches()
        unchanged = len(reads)
        time.sleep(0.01)
        with zipfile.ZipFile(archive, "a") as z:  # changed in place: a new module
            z.writestr("second.py", "VALUE = 2\\n")
        importlib.invalidate_caches()
        import second
        print(unchanged, len(reads), first.VALUE, second.VALUE)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    unchanged, after_change, first, second = out.stdout.split()
    assert unchanged == "1"  # the first invalidation reads it (no stamp yet), the next two do not
    assert int(after_change) == 2 and (first, second) == ("1", "2")
