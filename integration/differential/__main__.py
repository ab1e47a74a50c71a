"""``python -m integration.differential --minutes N [--seed S] [--release R] [--spark4 LINE] [--focus F,...]
[--report F]``: a long differential run, through pytest so that the stack's fixtures start (and stop) the servers
it needs; ``--focus`` spends it on scenarios that all have the features named."""

from __future__ import annotations

import argparse
import os
import sys

import pytest

from integration.differential.scenario import FEATURES


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m integration.differential", description=__doc__)
    parser.add_argument("--minutes", type=float, default=10.0, help="how long to draw scenarios (default 10)")
    parser.add_argument("--seed", type=int, help="the first seed (default: random, printed in the report)")
    parser.add_argument("--release", choices=["1.2", "1.0.2", "0.15.0"], default="1.2",
                        help="the Hudi release that writes the tables (read back by it and by 1.2)")
    parser.add_argument("--report", help="write the run's Markdown report to this file")
    parser.add_argument("--spark4", choices=["4.0", "4.1", "4.2", "4.3", "none"], default="4.3",
                        help="the Spark 4 line that also reads, ANSI on (default 4.3; needs ci/setup-spark4.sh LINE)")
    parser.add_argument("--focus", type=lambda text: text.split(","), default=[],
                        help=f"features every scenario has, comma-separated: {', '.join(FEATURES)}")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.focus) - set(FEATURES))
    if unknown:
        parser.error(f"--focus: no feature {', '.join(unknown)}; the features are {', '.join(FEATURES)}")
    os.environ["HUDI_CONNECT_DIFFERENTIAL_FOCUS"] = ",".join(args.focus)
    os.environ["HUDI_CONNECT_DIFFERENTIAL_SPARK4"] = "" if args.spark4 == "none" else args.spark4
    os.environ["HUDI_CONNECT_DIFFERENTIAL_MINUTES"] = str(args.minutes)
    os.environ["HUDI_CONNECT_DIFFERENTIAL_RELEASE"] = args.release
    if args.seed is not None:
        os.environ["HUDI_CONNECT_DIFFERENTIAL_SEED"] = str(args.seed)
    if args.report:
        os.environ["HUDI_CONNECT_DIFFERENTIAL_REPORT"] = os.path.abspath(args.report)
    return int(pytest.main(["-s", "-p", "no:cacheprovider", "-o", "timeout=0",
                            "integration/test_differential.py::test_differential_run"]))


if __name__ == "__main__":
    sys.exit(main())
