"""The ``hudi-connect`` command line."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence

from hudi_connect.errors import HudiConnectError


def _demo(args: argparse.Namespace) -> None:
    from hudi_connect.demo import run_demo
    from hudi_connect.local import local_hudi_server
    from hudi_connect.server import connect, require_hudi_server

    path = args.path or tempfile.mkdtemp(prefix="hudi-connect-demo-") + "/trips"
    if args.remote:
        spark = connect(args.remote)
        require_hudi_server(spark)
        run_demo(spark, path)
        return
    print("Starting a local Spark Connect server with Hudi (the embedded default)...", flush=True)
    with local_hudi_server() as url:
        spark = connect(url)
        require_hudi_server(spark)
        run_demo(spark, path)
        spark.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hudi-connect", description="Apache Hudi over Spark Connect")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="write, update and delete a small MOR table and print it")
    demo.add_argument("--remote", help="sc:// URL of a Hudi-enabled server (default: start a local one)")
    demo.add_argument("--path", help="table path (default: a new local temporary directory)")
    demo.set_defaults(run=_demo)
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except HudiConnectError as error:
        print(f"hudi-connect: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
