"""The ``hudi-connect`` command line."""

from __future__ import annotations

import argparse
import base64
import contextlib
import dataclasses
import json
import math
import os
import signal
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from hudi_connect.core.errors import HarnessMissingError, HudiConnectError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_connect.reverse.sink import Sink


def _demo(args: argparse.Namespace) -> None:
    from hudi_connect.client.server import connect, require_hudi_server
    from hudi_connect.demo import run_demo

    path = args.path or tempfile.mkdtemp(prefix="hudi-connect-demo-") + "/trips"
    if args.remote:
        spark = connect(args.remote)
        require_hudi_server(spark)
        run_demo(spark, path, jar_free=connect(args.jar_free_remote) if args.jar_free_remote else None)
        return
    try:
        from hudi_connect_stack.local import local_servers
    except ModuleNotFoundError as error:
        raise _harness_missing(error, "the demo's local servers (without --remote)") from error

    print("Starting two local Spark Connect servers: one with Hudi's jars, one without...", flush=True)
    with local_servers() as (hudi_url, plain_url):
        spark, plain = connect(hudi_url), connect(plain_url)
        try:
            require_hudi_server(spark)
            run_demo(spark, path, jar_free=plain)
        finally:
            spark.stop()
            plain.stop()


def _reverse_stream(args: argparse.Namespace) -> None:
    with _session(args) as spark:
        _run_stream(spark, args)


def _sinks(spark: SparkSession, args: argparse.Namespace) -> list[Sink]:
    from hudi_connect.reverse import FileSink, KafkaSink, PostgresSink

    sinks: list[Sink] = []
    if args.kafka_bootstrap or args.kafka_topic:
        if not (args.kafka_bootstrap and args.kafka_topic):
            raise SystemExit("hudi-connect: --kafka-bootstrap and --kafka-topic go together")
        sinks.append(KafkaSink(args.kafka_bootstrap, args.kafka_topic, args.kafka_format, args.tombstones))
    if args.files_root:
        sinks.append(FileSink(args.files_root, args.files_format))
    if args.postgres_table:
        dsn = os.environ.get(args.postgres_dsn_env)
        if not dsn:  # a DSN holds a password: it comes from the environment, never the command line
            raise SystemExit(f"hudi-connect: --postgres-table needs the DSN in ${args.postgres_dsn_env}")
        sinks.append(PostgresSink(dsn, args.postgres_table))
    return sinks


@contextlib.contextmanager
def _progress(name: str) -> Iterator[Callable[[str], None]]:
    """Progress for a person waiting: on a terminal, rich's spinner beside the step under way, below the
    steps done; elsewhere (a pipe, a log file) the lines alone."""
    from rich.console import Console

    console = Console()
    if not console.is_terminal:
        yield lambda message: print(f"[{name}] {message}", flush=True)
        return
    with console.status(f"[{name}] starting", spinner="dots") as status:
        def say(message: str) -> None:
            console.print(f"[{name}] {message}", markup=False, highlight=False)
            status.update(f"[{name}] {message}")

        yield say


def _run_stream(spark: SparkSession, args: argparse.Namespace) -> None:
    with _progress(args.name) as say:
        _stream_with(spark, args, say)


def _stream_with(spark: SparkSession, args: argparse.Namespace, say: Callable[[str], None]) -> None:
    from hudi_connect.reverse import ReverseStream

    sinks = _sinks(spark, args) if not (args.show or args.reset or args.set_checkpoint) else []
    stream = ReverseStream(spark, args.table, args.name, sinks, mode=args.mode, max_commits=args.max_commits,
                           progress=say)
    if args.show:
        say(f"checkpoint: {stream.checkpoint()}")
        return
    if args.reset:
        say(f"reset: checkpoint {stream.reset().sequence}; the next batch reads the table in full")
        return
    if args.set_checkpoint:
        checkpoint = stream.set_checkpoint(args.set_checkpoint)
        say(f"checkpoint {checkpoint.sequence} set after commit {checkpoint.end_requested_time}")
        return
    if not sinks:
        raise SystemExit("hudi-connect: name at least one sink (--kafka-topic, --files-root, --postgres-table)")
    say(f"streaming {args.table} to {', '.join(s.describe() for s in sinks)} from {stream.checkpoint()}")
    if not args.continuous:
        result = stream.run_once()
        if not result.sent:
            say("up to date: nothing to send")
        return
    stop = threading.Event()

    def request_stop(*_: object) -> None:  # finish the batch under way, then stop
        say("stopping after the current batch")
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, request_stop)
    for _batch in stream.run_continuously(interval=args.interval, stop=stop):
        pass  # each batch reports itself through ``say``
    say("stopped")


def _recover(args: argparse.Namespace) -> None:
    from hudi_connect.client.server import connect
    from hudi_connect.table import HudiTable

    table = HudiTable.open(connect(args.remote, server_timeout=args.server_timeout), args.table)
    if args.write_id:
        print(table.outcome_of(args.write_id))
        return
    print(f"{args.table}: {table.recover(assume_no_writer=args.assume_no_writer)}")


# --- looking at a table: history, changes, files (jar-free: any Spark Connect server) ---------------

@contextlib.contextmanager
def _session(args: argparse.Namespace) -> Iterator[SparkSession]:
    """A session on ``--remote``, or on a local server started for the command and stopped after it.
    A server lost under the command raises ServerUnavailableError (printed as an error, not a traceback)."""
    from hudi_connect.client.server import connect

    if args.remote:
        spark = connect(args.remote, server_timeout=args.server_timeout)
        try:
            yield spark
        except Exception as error:
            from hudi_connect.client.server_loss import is_server_lost, lost_server_error

            if isinstance(error, HudiConnectError) or not is_server_lost(error):
                raise
            raise lost_server_error(spark, f"running hudi-connect {args.command} on {args.table}") from error
        return
    try:
        from hudi_connect_stack.local import local_hudi_server
    except ModuleNotFoundError as error:
        raise _harness_missing(error, f"hudi-connect {args.command} without --remote (an embedded server)") from error

    print("Starting a local Spark Connect server (the embedded default)...", file=sys.stderr, flush=True)
    with local_hudi_server() as url:
        spark = connect(url, server_timeout=args.server_timeout)
        try:
            yield spark
        finally:
            spark.stop()


def _print_table(rows: Sequence[dict[str, Any]], empty: str) -> None:
    from tabulate import tabulate

    print(tabulate(rows, headers="keys", tablefmt="simple", disable_numparse=True) if rows else empty)


def _jsonable(value: object) -> object:
    """Valid JSON as Spark's ``to_json`` writes it: bytes in base64, NaN and infinities as strings,
    timestamps, dates and decimals as text."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _json_line(value: object) -> str:
    return json.dumps(_jsonable(value), sort_keys=True, allow_nan=False)


def _positive(text: str) -> int:
    number = int(text)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {number}")
    return number


def _history(args: argparse.Namespace) -> None:
    from hudi_connect.client.timeline_view import TimelineView

    with _session(args) as spark:
        entries = [dataclasses.asdict(e) for e in TimelineView.open(spark, args.table).history(args.limit)]
    if args.json:
        print(json.dumps(entries, indent=2))
        return
    _print_table(entries, f"{args.table}: no instants")


def _changes(args: argparse.Namespace) -> None:
    from hudi_connect.cdc import ChangeQuery
    from hudi_connect.cdc.query import delete_first

    with _session(args) as spark:
        query = ChangeQuery(spark, args.table)
        if args.explain:
            print(query.explain(args.begin, args.end))
            return
        changes = query.changes(args.begin, args.end, format="typed").orderBy(
            "completion_time", "requested_time", "record_key", delete_first())  # commit order: completion on v8+
        if args.json:
            for row in changes.toLocalIterator():
                print(_json_line(row.asDict(recursive=True)))
            return
        rows = changes.limit(args.limit + 1).collect()
    shown = [{"op": r.op, "commit": r.requested_time, "record key": r.record_key,
              "before": _json_line(r.before.asDict(recursive=True)) if r.before else "",
              "after": _json_line(r.after.asDict(recursive=True)) if r.after else ""} for r in rows[:args.limit]]
    _print_table(shown, f"{args.table}: no changes in ({args.begin}, {args.end or 'latest'}]")
    if len(rows) > args.limit:
        print(f"... more than {args.limit} changes: raise --limit, or --json prints them all")


def _files(args: argparse.Namespace) -> None:
    from hudi_connect.core.format.spec_models import slice_bytes
    from hudi_connect.table_spec import FileIndex

    slices: list[dict[str, Any]] = []
    with _session(args) as spark:
        for snapshot in FileIndex(spark, args.table).list_files_at(args.as_of):
            for s in snapshot.file_slices:
                slices.append({
                    "partition": s.partition, "file_id": s.file_id,
                    "base_file": s.base_file.name if s.base_file else None,
                    "base_instant": s.base_instant,
                    "log_files": [f.name for f in s.log_files], "bytes": slice_bytes(s),
                })
    if args.json:
        print(json.dumps(slices, indent=2))
        return
    shown = [{**s, "base_file": s["base_file"] or "-", "log_files": len(s["log_files"])} for s in slices]
    _print_table(shown, f"{args.table}: no file slices")


def _add_inspection_commands(commands: Any) -> None:
    def command(name: str, help: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = commands.add_parser(name, help=help)
        parser.add_argument("table", help="the table's base path on the server's storage")
        parser.add_argument("--remote", help="sc:// URL of any Spark Connect server, Hudi jar or not "
                                             "(default: start a local one)")
        parser.add_argument("--json", action="store_true", help="JSON for machines instead of a table")
        parser.add_argument("--server-timeout", type=float, default=30.0,
                            help="seconds to retry an unreachable server")
        return parser

    history = command("history", "the table's instants, newest first, with write statistics")
    history.add_argument("--limit", type=_positive, help="only the newest N instants")
    history.set_defaults(run=_history)
    changes = command("changes", "the changes of commits in (BEGIN, END], computed without Hudi's jars (RFC-51)")
    changes.add_argument("--begin", default="earliest",
                         help="exclusive start: 'earliest', or an instant time (its completion time on table "
                              "version 8 and later, as in Hudi's incremental queries)")
    changes.add_argument("--end", help="inclusive end instant (default: the latest commit)")
    changes.add_argument("--limit", type=_positive, default=50, help="rows in the table (--json prints all)")
    changes.add_argument("--explain", action="store_true",
                         help="the inference case and files of each file group per commit, instead of the rows")
    changes.set_defaults(run=_changes)
    files = command("files", "the file slices a snapshot read sees (RFC-64's FileIndex)")
    files.add_argument("--as-of", help="an instant's requested time (default: the latest)")
    files.set_defaults(run=_files)


def _stack_up(args: argparse.Namespace) -> None:
    from pathlib import Path

    try:
        from hudi_connect_stack.standalone import (
            ENV_FILE,
            JSON_FILE,
            env_of,
            running_services,
            start_stack,
            stop_stack,
        )
    except ModuleNotFoundError as error:
        raise _harness_missing(error, "hudi-connect stack up") from error

    run_dir = Path(args.run_dir)
    services = [s.strip() for s in args.services.split(",") if s.strip()]
    earlier = running_services(run_dir)
    try:
        stack = start_stack(run_dir, services, args.backend, [Path(m).resolve() for m in args.mount])
    except BaseException:
        if not earlier:  # a half-started stack must not outlive the command; one left running earlier stays
            stop_stack(run_dir)
        raise
    env = env_of(stack)
    _print_table([{"variable": key, "value": value} for key, value in env.items()], "")
    if args.env_file:
        Path(args.env_file).write_text((run_dir / ENV_FILE).read_text())
    print(f"\nwritten: {args.env_file or run_dir / ENV_FILE} and {run_dir / JSON_FILE}", flush=True)
    if args.detach:
        print(f"left running: stop it with `hudi-connect stack down --run-dir {run_dir}`", flush=True)
        return
    print("running: Ctrl-C stops it", flush=True)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    try:
        while not stopping.wait(1.0):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        print(f"stopped: {', '.join(stop_stack(run_dir))}", flush=True)


def _stack_down(args: argparse.Namespace) -> None:
    from pathlib import Path

    try:
        from hudi_connect_stack.standalone import stop_stack
    except ModuleNotFoundError as error:
        raise _harness_missing(error, "hudi-connect stack down") from error

    stopped = stop_stack(Path(args.run_dir))
    print(f"stopped: {', '.join(stopped)}" if stopped else f"nothing running in {args.run_dir}")


def _harness_missing(error: ModuleNotFoundError, what: str) -> Exception:
    """The error for a command needing the harness where it is missing (any other missing module, as raised)."""
    if error.name is not None and error.name.split(".")[0] == "hudi_connect_stack":
        return HarnessMissingError(what)
    return error


def _add_stack_commands(commands: Any) -> None:
    stack = commands.add_parser("stack", help="start or stop MinIO, Kafka, PostgreSQL and Spark Connect (with and "
                                              "without Hudi), and on request GCS, Azure and HDFS servers, for "
                                              "end-to-end tests in any language (needs hudi-connect-stack)")
    try:
        from hudi_connect_stack.standalone import DEFAULT_SERVICES, SERVICES, default_run_dir
    except ModuleNotFoundError as error:  # the harness is not installed: the command says so when run
        missing = _harness_missing(error, "hudi-connect stack")

        def refuse(_: argparse.Namespace) -> None:
            raise missing

        stack.add_argument("arguments", nargs=argparse.REMAINDER)
        stack.set_defaults(run=refuse)
        return
    verbs = stack.add_subparsers(dest="verb", required=True)
    up = verbs.add_parser("up", help="start the stack, print its endpoints, stop it on Ctrl-C")
    up.add_argument("--services", default=",".join(DEFAULT_SERVICES),
                    help=f"comma-separated, of {', '.join(SERVICES)} (hudi and plain: the two Connect servers; "
                         "*-storages: Connect servers that also reach gcs, azurite and hdfs, which they start; "
                         "*-metastore: Connect servers keeping their catalog in hive-metastore, which they start; "
                         "spark4: a plain Spark 4.3 server with format('hudi') for clients in any language) "
                         "(default: %(default)s)")
    up.add_argument("--backend", choices=["local", "docker"], default="local",
                    help="local processes, or containers (a Docker engine, or podman's started for the stack)")
    up.add_argument("--env-file", help="also write the endpoints to this env file")
    up.add_argument("--mount", action="append", default=[],
                    help="docker backend: a host folder the Spark containers see at the same path (repeatable)")
    up.add_argument("--detach", action="store_true", help="leave it running; `stack down` stops it")
    for parser in (up, verbs.add_parser("down", help="stop a stack left running with --detach")):
        parser.add_argument("--run-dir", default=str(default_run_dir()),
                            help="where the stack keeps its state, data and logs (default: %(default)s)")
    up.set_defaults(run=_stack_up)
    verbs.choices["down"].set_defaults(run=_stack_down)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``hudi-connect`` with ``argv`` (default: the process's arguments): demo, reverse-stream (RFC-70),
    recover, history, changes, files or stack. Returns the exit status: 1 when a :class:`HudiConnectError`
    stopped it (its message printed, without a traceback), else 0."""
    parser = argparse.ArgumentParser(prog="hudi-connect", description="Apache Hudi over Spark Connect")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="write, update and delete a small MOR table and print it")
    demo.add_argument("--remote", help="sc:// URL of a Hudi-enabled server (default: start a local one)")
    demo.add_argument("--jar-free-remote", help="sc:// URL of a server without Hudi's jars for the reads "
                                                "(with --remote; default: the --remote server)")
    demo.add_argument("--path", help="a new table path (default: in a new local temporary directory)")
    demo.set_defaults(run=_demo)
    stream = commands.add_parser(
        "reverse-stream", help="stream a table (in full, then its changes) to Kafka, files or PostgreSQL (RFC-70)")
    stream.add_argument("--remote", help="sc:// URL of the server (default: start a local one)")
    stream.add_argument("--table", required=True, help="the table's base path on the server's storage")
    stream.add_argument("--name", required=True, help="the stream's name: its checkpoints are kept under it")
    stream.add_argument("--mode", choices=["changes", "latest"], default="changes",
                        help="every change, or each key's last change per batch")
    stream.add_argument("--max-commits", type=int, help="at most this many commits per batch")
    stream.add_argument("--kafka-bootstrap", help="Kafka bootstrap servers")
    stream.add_argument("--kafka-topic")
    stream.add_argument("--kafka-format", choices=["json", "debezium"], default="json")
    stream.add_argument("--tombstones", action="store_true", help="deletes as Kafka tombstones")
    stream.add_argument("--files-root", help="directory (file:, s3a://) for one directory per batch")
    stream.add_argument("--files-format", choices=["parquet", "json"], default="parquet")
    stream.add_argument("--postgres-table", help="serving table kept in sync by primary key")
    stream.add_argument("--postgres-dsn-env", default="HUDI_CONNECT_POSTGRES_DSN",
                        help="environment variable holding postgresql://user:password@host:port/db")
    stream.add_argument("--continuous", action="store_true", help="keep streaming until interrupted")
    stream.add_argument("--interval", type=float, default=10.0, help="seconds between batches (continuous)")
    control = stream.add_mutually_exclusive_group()
    control.add_argument("--show", action="store_true", help="print the checkpoint and exit")
    control.add_argument("--reset", action="store_true", help="next batch reads the table in full")
    control.add_argument("--set-checkpoint", metavar="INSTANT", help="next batch starts after this commit")
    stream.add_argument("--server-timeout", type=float, default=30.0,
                        help="seconds to retry an unreachable server before a batch fails")
    stream.set_defaults(run=_reverse_stream)
    recover = commands.add_parser(
        "recover", help="roll back the writes a dead writer left pending, or say whether one write committed")
    recover.add_argument("table", help="the table's base path on the server's storage")
    recover.add_argument("--remote", required=True, help="sc:// URL of a Hudi-enabled server")
    recover.add_argument("--assume-no-writer", action="store_true",
                         help="recover even though a heartbeat is fresh (you know the writer's server is gone)")
    recover.add_argument("--write-id", help="only report the outcome of this write (from ServerUnavailableError)")
    recover.add_argument("--server-timeout", type=float, default=30.0,
                         help="seconds to retry an unreachable server")
    recover.set_defaults(run=_recover)
    _add_inspection_commands(commands)
    _add_stack_commands(commands)
    args = parser.parse_args(argv)
    if args.command == "demo" and args.jar_free_remote and not args.remote:
        parser.error("--jar-free-remote goes with --remote (locally the demo starts both servers)")
    # pyspark's best-effort release of finished results, after a session closed: harmless, and noise here
    warnings.filterwarnings("ignore", message="ReleaseExecute failed", category=UserWarning)
    try:
        args.run(args)
    except HudiConnectError as error:
        print(f"hudi-connect: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
