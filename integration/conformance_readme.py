"""Put the conformance matrix's outcome into the documentation's "What hudi-connect reads" page (between its
conformance markers).

    HUDI_CONNECT_CONFORMANCE_REPORT=/tmp/matrix.md ci/test.sh --full integration/test_conformance_matrix.py
    python -m integration.conformance_readme /tmp/matrix.md
"""

from __future__ import annotations

import sys
from pathlib import Path

BEGIN, END = "<!-- conformance matrix: begin -->", "<!-- conformance matrix: end -->"
README = Path(__file__).resolve().parent.parent / "docs" / "what-it-reads.md"


def replace_block(readme: str, report: str) -> str:
    if BEGIN not in readme or END not in readme:
        raise SystemExit(f"{README} has no {BEGIN} ... {END} block")
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{report.strip()}\n{END}{tail}"


if __name__ == "__main__":
    README.write_text(replace_block(README.read_text(), Path(sys.argv[1]).read_text()))
