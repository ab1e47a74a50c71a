"""The jar-free half on a plain Spark 4 Connect server, from a client of its line (pyspark-client 4.x, numpy 2):
reads, time travel, CDC with its inference cases, the file index through the metadata table, the CLI, and the
reverse streamer to Kafka, files and PostgreSQL. The server has no Hudi jar (no Hudi bundle for Spark 4 is
reachable here), and its workers run numpy 2 and pandas 2.3.

Oracles: hudi-rs on the shared fixture tables (Hudi 0.14 to 1.1), and Hudi's own answers (its snapshot, time
travel and CDC query) on tables the Spark 3.5 Hudi server writes in the same run. A Spark 4 client cannot talk to
that server, so :mod:`hudi_connect_stack.testing.reference_tables` runs in the Spark 3.5 environment. Run with
``ci/test.sh`` (its second leg) or ``ci/test.sh --spark4``.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any, cast

import pytest
from hudi import HudiTableBuilder
from hudi_connect_stack.endpoints import KafkaEndpoint, SparkFlavor
from hudi_connect_stack.provision import cache_dir
from hudi_connect_stack.standalone import ENV_FILE, render_env_file, start_stack, stop_stack
from hudi_connect_stack.testing.cdc_history import event_multiset, events
from hudi_connect_stack.testing.compare import row_multiset
from hudi_connect_stack.testing.fixture_tables import fixture_names, unzip_fixture
from hudi_connect_stack.testing.reference_tables import (
    COMPLETE,
    DATA_COLUMNS,
    REFERENCE_TABLES,
    Answers,
    ReferenceTable,
    load_answers,
)
from hudi_connect_stack.testing.topics import read_topic
from hudi_connect_stack.versions import HUDI_VERSION, SPARK4_LINES
from pyspark import __version__ as pyspark_version_text
from pyspark.errors.exceptions.base import PySparkException
from pyspark.errors.exceptions.connect import SparkConnectException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_connect.cdc import ChangeQuery
from hudi_connect.cli import main
from hudi_connect.client.server import connect
from hudi_connect.core.errors import InvalidInstantError, ServerMisconfiguredError
from hudi_connect.core.format.table_schema import META_COLUMNS
from hudi_connect.reader import TableReader
from hudi_connect.reverse import FileSink, KafkaSink, PostgresSink, ReverseStream
from hudi_connect.table.hudi_table import HudiTable
from hudi_connect.table_spec import FileIndex
from hudi_connect_stack import provision
from integration.killable import KillableServer
from integration.reverse_stream_model import cdc_changes, kafka_changes, postgres_rows, replay_files
from integration.test_table_fixtures import rows_of_hudi_rs

pytestmark = pytest.mark.spark4

REPO = Path(__file__).resolve().parents[1]
SPARK35_PYTHON_ENV = "HUDI_CONNECT_SPARK35_PYTHON"
# a set written ahead in this run by the 3.5 environment (ci/test.sh writes it beside leg 1's suite, whose Hudi
# server is the same line's); copied, since the tests checkpoint streams on the tables
WRITTEN_AHEAD_ENV = "HUDI_CONNECT_REFERENCE_TABLES"


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference tables and Hudi's answers, written by the Spark 3.5 Hudi server in this run."""
    python = os.environ.get(SPARK35_PYTHON_ENV, str(cache_dir() / "venv" / "bin" / "python"))
    out = tmp_path_factory.mktemp("reference")
    os.chmod(out, 0o755)
    ahead = os.environ.get(WRITTEN_AHEAD_ENV)
    if ahead:
        assert (Path(ahead) / COMPLETE).is_file(), \
            f"${WRITTEN_AHEAD_ENV} names {ahead}, where no complete set of reference tables was written"
        shutil.copytree(ahead, out, dirs_exist_ok=True)
        return out
    result = subprocess.run([python, "-m", "hudi_connect_stack.testing.reference_tables", str(out)], cwd=REPO,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0 and (out / COMPLETE).is_file(), \
        f"writing the reference tables in {python} (the Spark 3.5 environment, ${SPARK35_PYTHON_ENV}) failed:\n" \
        + (result.stdout + result.stderr)[-4000:]
    return out


def _rows(records: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    return row_multiset(records, DATA_COLUMNS)


def _ours(df: Any) -> Counter[tuple[Any, ...]]:
    return _rows([r.asDict() for r in df.select(*DATA_COLUMNS).collect()])


def test_the_server_and_client_are_spark_4_and_writes_name_the_bundle(spark4: SparkSession, tmp_path: Path) -> None:
    import pyspark

    assert spark4.version.split(".")[0] == "4" and pyspark.__version__.split(".")[:2] == spark4.version.split(".")[:2]
    # no Hudi on this server: HudiTable refuses by name, naming the bundle of the server's line
    line = ".".join(spark4.version.split(".")[:2])
    with pytest.raises(ServerMisconfiguredError, match=re.escape(f"hudi-spark{line}-bundle_2.13:{HUDI_VERSION}")):
        HudiTable.create(spark4, str(tmp_path / "t"), "id int, v string", record_key="id")


@pytest.mark.parametrize("name", fixture_names())
def test_fixture_tables_read_equal_hudi_rs(spark4: SparkSession, tmp_path: Path, name: str) -> None:
    base = unzip_fixture(name, tmp_path)
    reader = TableReader(spark4, str(base))
    commits = list(reader.view.timeline().write_commits())
    if not commits:  # no commit, so no schema to give rows: refused by name (hudi-rs reads nothing)
        with pytest.raises(InvalidInstantError, match="no commit with a schema"):
            reader.snapshot()
        assert rows_of_hudi_rs(base, []) == Counter()
        return
    snapshot = reader.snapshot()
    columns = [c for c in snapshot.columns if c not in META_COLUMNS]
    expected = rows_of_hudi_rs(base, columns)
    assert sum(expected.values()) > 0
    assert row_multiset((r.asDict(recursive=True) for r in snapshot.select(*columns).collect()), columns) == expected
    for instant in commits:
        ours = reader.as_of(instant).select(*columns).collect()
        assert row_multiset((r.asDict(recursive=True) for r in ours), columns) == \
            rows_of_hudi_rs(base, columns, instant.requested_time), f"as of {instant.requested_time}"


@pytest.mark.parametrize("spec", REFERENCE_TABLES, ids=lambda s: s.name)
def test_reads_of_hudis_tables_equal_hudis(spark4: SparkSession, reference: Path, spec: ReferenceTable) -> None:
    answers = load_answers(reference, spec)
    reader = TableReader(spark4, str(reference / spec.name))
    written = [c.requested_time for c in reader.view.timeline().write_commits()]
    assert set(answers.commits) <= set(written) and written == sorted(written)  # and the services' commits
    assert _ours(reader.snapshot()) == _rows(answers.snapshot)
    for commit, rows in answers.as_of.items():
        assert _ours(reader.as_of(commit)) == _rows(rows), f"as of {commit}"


@pytest.mark.parametrize("spec", REFERENCE_TABLES, ids=lambda s: s.name)
def test_changes_equal_hudis_cdc_query(spark4: SparkSession, reference: Path, spec: ReferenceTable) -> None:
    answers = load_answers(reference, spec)
    query = ChangeQuery(spark4, str(reference / spec.name))
    for begin, end in Answers.cdc_ranges(answers.completions):
        theirs = event_multiset(tuple(row) for row in answers.cdc[Answers.range_key(begin, end)])  # type: ignore[misc]
        ours = events(query.changes(begin, end))
        assert ours == theirs, f"({begin}, {end}]\nours only: {ours - theirs}\nHudi only: {theirs - ours}"
    assert sum(event_multiset(tuple(r) for r in answers.cdc["earliest.."]).values()) > 20  # type: ignore[misc]
    # COW logs its updates' images in .cdc files (read as they are); MOR with keys only infers them from log files
    assert ("AS_IS" if spec.table_type == "COPY_ON_WRITE" else "LOG_FILE") in query.explain("earliest")


def test_file_slices_through_the_metadata_table_equal_hudi_rs(spark4: SparkSession, reference: Path) -> None:
    spec = next(s for s in REFERENCE_TABLES if s.metadata_table)
    path = str(reference / spec.name)
    rs = {(f.partition_path, f.file_id, f.base_file_name, tuple(f.log_file_names))
          for f in HudiTableBuilder.from_base_uri(path).build().get_file_slices()}
    assert len(rs) >= 2  # p0 and p2 (p1 was dropped)
    for use_metadata in (True, False):
        index = FileIndex(spark4, path, use_metadata=use_metadata)
        ours = {(s.partition, s.file_id, s.base_file.name if s.base_file else None,
                 tuple(f.name for f in s.log_files))
                for snapshot in index.list_files_at() for s in snapshot.file_slices}
        assert ours == rs, f"use_metadata={use_metadata}"
        assert ("metadata" in index.counts.source) == use_metadata, index.counts


def test_cli_history_and_changes(spark4_server_url: str, reference: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = REFERENCE_TABLES[0]
    answers = load_answers(reference, spec)
    path = str(reference / spec.name)
    capsys.readouterr()
    assert main(["history", path, "--remote", spark4_server_url, "--json"]) == 0
    history = json.loads(capsys.readouterr().out)
    written = [e["requested_time"] for e in history if e["action"] in ("commit", "replacecommit")
               and e["requested_time"] in answers.commits]
    assert sorted(written) == answers.commits
    assert main(["changes", path, "--remote", spark4_server_url, "--json"]) == 0
    changes = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(changes) == len(answers.cdc["earliest.."])


def test_reverse_stream_to_kafka_files_and_postgres(
    spark4: SparkSession, reference: Path, kafka_endpoint: KafkaEndpoint, kafka_topic: str, postgres_dsn: str,
    tmp_path: Path,
) -> None:
    spec = REFERENCE_TABLES[0]
    answers = load_answers(reference, spec)
    path = str(reference / spec.name)
    state = {r["id"]: (r["id"], r["v"], r["ts"], r["part"]) for r in answers.snapshot}
    # a first batch reads the table in full: the serving table and the files hold Hudi's snapshot
    pg_table = f"serving_{uuid.uuid4().hex[:8]}"
    files = FileSink(str(tmp_path / "export"), "parquet", spark=spark4)
    full = ReverseStream(spark4, path, "serving", [files, PostgresSink(postgres_dsn, pg_table)])
    assert full.run_once().sent
    assert postgres_rows(postgres_dsn, pg_table) == state
    assert replay_files(files) == (state, 0)
    assert full.run_once().sent is False  # caught up
    # a stream whose checkpoint is the first commit sends the changes after it, as Hudi's CDC query has them; the
    # serving table and the files, which start empty, then hold what those changes leave (a replace commit deletes
    # and re-inserts the keys it moves at one instant: applied out of order, they would lose them)
    theirs = cdc_changes(tuple(r) for r in answers.cdc[Answers.range_key(answers.completions[0], None)])  # type: ignore[misc]
    left = {int(key): (row["id"], row["v"], row["ts"], row["part"]) for key, changes in theirs.items()
            if (row := changes[-1][2]) is not None and changes[-1][0] != "d"}
    pg_changes = f"changes_{uuid.uuid4().hex[:8]}"
    change_files = FileSink(str(tmp_path / "changes"), "parquet", spark=spark4)
    changes = ReverseStream(spark4, path, "changes", [KafkaSink(kafka_endpoint.bootstrap_servers, kafka_topic),
                                                      change_files, PostgresSink(postgres_dsn, pg_changes)])
    changes.set_checkpoint(answers.commits[0])
    assert changes.run_once().sent
    assert kafka_changes(read_topic(kafka_endpoint, kafka_topic)) == theirs
    assert any([op for op, *_ in c][-2:] == ["d", "c"] for c in theirs.values())  # a moved key
    assert postgres_rows(postgres_dsn, pg_changes) == left
    assert replay_files(change_files) == (left, 0)
    assert [c.kind for c in changes.checkpoints.history("changes")] == ["override", "batch"]


def test_an_empty_in_list_keeps_a_null_partition_spark_4_keeps(spark4: SparkSession) -> None:
    """Spark 4 answers ``NULL IN ()`` false (SPARK-44431; Spark 3.5 NULL), so ``NOT (p IN ())`` keeps a
    partition whose value is null: the pruner must not drop it (it leaves ``NULL IN ()`` undecided)."""
    from pyspark.sql import functions as F

    from hudi_connect.core.format.expressions import col, partition_may_match

    null = F.lit(None).cast("string")
    answer = spark4.range(1).select(null.isin().alias("is_in"), (~null.isin()).alias("not_in")).first()
    assert answer is not None and (answer.is_in, answer.not_in) == (False, True)
    assert partition_may_match(~col("p").isin(), {"p": None})


def test_the_differential_testers_spark_4_reader_holds_ours_to_rows_filtered_by_spark_4(
        spark4: SparkSession, reference: Path, tmp_path: Path) -> None:
    """The tester's Spark 4 reader (``integration.differential.spark4_reader``, a child process of the tester in
    this line's environment) on this line: ours pruned by a partition predicate equals the table's rows filtered by
    Spark 4 itself; a copy that lacks a row is found different; a predicate ANSI refuses is refused in both."""
    from integration.differential.scenario import Request
    from integration.differential.spark4_reader import Answer, Question, answer

    path = str(reference / "cow_before_after")
    reader = TableReader(spark4, path)
    commits = list(reader.view.timeline().write_commits())
    whole = reader.snapshot()
    copies = {"whole": whole, "short": whole.where("NOT (part = 'p0' AND id = 0)")}
    assert whole.where("part = 'p0' AND id = 0").count() == 1
    for name, rows in copies.items():
        rows.write.parquet(str(tmp_path / name))

    def ask(predicate: Any, copy: str, kind: Any = "snapshot") -> Any:
        request = Request(kind, predicate, spelling="sql")
        return answer(spark4, Question(path, request, commits, False, str(tmp_path / copy), False, "test"))

    # each equal answer read again through format("hudi") with Hudi's options (the copy is the latest state: a COW
    # table's read-optimized read and its time travel to the last commit are that too)
    for kind in ("snapshot", "as_of", "read_optimized"):
        assert ask(("cmp", "=", "part", "p0"), "whole", kind) == Answer("equal", data_source="equal"), kind
    assert ask(("not", ("in", "part", ("p1",))), "whole") == Answer("equal", data_source="equal")
    assert ask(("cmp", "=", "part", "p0"), "short").kind == "different"
    assert ask(("cmp", "=", "id", "abc"), "whole").kind.startswith("refused by Spark in both")  # ANSI: not a number


# the spellings a session's default collation has had on the way to Spark 4 (a conf, then statements)
DEFAULT_COLLATION_CONF = "spark.sql.session.collation.default"
DEFAULT_COLLATION_STATEMENTS = (f"SET {DEFAULT_COLLATION_CONF} = UTF8_LCASE", "SET COLLATION UTF8_LCASE",
                                "SET DEFAULT COLLATION UTF8_LCASE")


def test_collations_default_or_explicit_prune_nothing_spark_keeps(spark4: SparkSession, reference: Path) -> None:
    """A string partition predicate under a session's default collation (where the line has one) or with an
    explicit ``COLLATE``: ours pruned equals Spark's own filter of the whole snapshot, on every Spark 4 line. Our
    translators leave a collated comparison to Spark (nothing pruned); a default collation, where a line takes
    one, must not make the pruner drop a partition Spark keeps."""
    reader = TableReader(spark4, str(reference / "cow_before_after"))
    accepted = []
    try:
        for statement in DEFAULT_COLLATION_STATEMENTS:
            try:
                spark4.sql(statement).collect()
                accepted.append(statement)
            except (SparkConnectException, PySparkException):  # not this line's spelling
                continue
        for predicate in ("part = 'P0'", "part = 'P0' COLLATE UTF8_LCASE", "part COLLATE UTF8_LCASE = 'P0'",
                          "part IN ('P0', 'p1')", "part < 'P1'", "part > 'P0' COLLATE UTF8_LCASE"):
            spark_keeps = _ours(reader.snapshot().where(predicate))
            assert _ours(reader.snapshot([predicate])) == spark_keeps, (predicate, accepted)
        # the explicit collation matched p0 case-insensitively (the comparison ran under it)
        assert sum(_ours(reader.snapshot(["part = 'P0' COLLATE UTF8_LCASE"])).values()) > 0
    finally:
        spark4.conf.unset(DEFAULT_COLLATION_CONF)
    print(f"Spark {spark4.version} accepted {accepted or 'none of the default collation statements'}")


@pytest.mark.parametrize("spec", REFERENCE_TABLES, ids=lambda s: s.name)
def test_format_hudi_on_the_plain_server_reads_as_hudi_and_our_reader(spark4: SparkSession, reference: Path,
                                                                      spec: ReferenceTable) -> None:
    """The ``hudi`` Python data source the plain server registered at start (no jar, no registration by the
    client): Hudi's own read options, answered as Hudi answered them (snapshot, time travel, SQL's USING hudi,
    change queries in Hudi's CDC format) and as our DataFrame reads answer (read-optimized, incremental, and the
    change query's JSON to the character); an option it does not implement refused by name, never ignored."""
    answers = load_answers(reference, spec)
    path = str(reference / spec.name)
    assert _ours(spark4.read.format("hudi").load(path)) == _rows(answers.snapshot)
    for commit, rows in answers.as_of.items():
        assert _ours(spark4.read.format("hudi").option("as.of.instant", commit).load(path)) == _rows(rows), commit
    view = f"hudi_{spec.name}"
    spark4.sql(f"CREATE OR REPLACE TEMPORARY VIEW {view} USING hudi OPTIONS (path '{path}')")
    assert _ours(spark4.table(view)) == _rows(answers.snapshot)
    reader = TableReader(spark4, path)
    optimized = spark4.read.format("hudi").option("hoodie.datasource.query.type", "read_optimized").load(path)
    assert _ours(optimized) == _ours(reader.read_optimized())
    # "000": Hudi's quick start's "from the start", our earliest
    for begin, end in [(answers.completions[1], None), (answers.completions[0], answers.completions[3]), ("000", None)]:
        options = {"hoodie.datasource.query.type": "incremental", "hoodie.datasource.read.begin.instanttime": begin,
                   **({"hoodie.datasource.read.end.instanttime": end} if end else {})}
        incremental = spark4.read.format("hudi").options(**options).load(path)
        ours = reader.incremental("earliest" if begin == "000" else begin, end)
        assert _ours(incremental) == _ours(ours), (begin, end)
        assert sum(_ours(incremental).values()) > 0
    query = ChangeQuery(spark4, path)
    for begin, end in Answers.cdc_ranges(answers.completions):
        options = {"hoodie.datasource.query.type": "incremental", "hoodie.datasource.read.begin.instanttime": begin,
                   "hoodie.datasource.query.incremental.format": "cdc",
                   **({"hoodie.datasource.read.end.instanttime": end} if end else {})}
        changes = spark4.read.format("hudi").options(**options).load(path)
        theirs = event_multiset(tuple(row) for row in answers.cdc[Answers.range_key(begin, end)])  # type: ignore[misc]
        assert events(changes) == theirs, (begin, end)
        # and as our change query writes them, to the character: one rendering of images
        assert sorted(map(tuple, changes.collect())) == sorted(map(tuple, query.changes(begin, end).collect()))
    assert sum(events(changes).values()) > 0
    with pytest.raises(Exception, match=r"hoodie\.datasource\.read\.paths"):
        spark4.read.format("hudi").option("hoodie.datasource.read.paths", path).load(path).collect()


GO_PROGRAM = Path(__file__).with_name("go_client")
JVM_PROGRAM = Path(__file__).with_name("jvm_client") / "HudiReads.java"


CDC_COLUMNS = ("op", "ts_ms", "before", "after")


def _program_rows(stdout: str) -> dict[str, Counter[tuple[Any, ...]]]:
    """Each request's rows as the Go (JSON arrays) or JVM (JSON objects) program printed them; a change query's
    (a request named cdc...) as Hudi's CDC events."""
    found: dict[str, Counter[tuple[Any, ...]]] = {}
    for name, body in (line.split("\t", 1) for line in stdout.splitlines() if "\t" in line):
        value = json.loads(body)
        columns = CDC_COLUMNS if name.startswith("cdc") else DATA_COLUMNS
        record = value if isinstance(value, dict) else dict(zip(columns, value, strict=True))
        found.setdefault(name, Counter()).update(
            event_multiset([tuple(record.get(c) for c in CDC_COLUMNS)]) if name.startswith("cdc") else _rows([record]))
    return found


def _program_requests(spark4: SparkSession, reference: Path) -> tuple[str, list[str], dict[str, Counter[Any]]]:
    """The MOR reference table's path, the Go and JVM programs' requests of it, and each request's answer: Hudi's
    (snapshot, time travel, the change query in Hudi's CDC format) or our reader's (incremental, read-optimized)."""
    spec = next(s for s in REFERENCE_TABLES if s.table_type == "MERGE_ON_READ")
    answers = load_answers(reference, spec)
    path = str(reference / spec.name)
    reader = TableReader(spark4, path)
    first, last = sorted(answers.as_of)[0], sorted(answers.as_of)[-1]
    begin = answers.completions[1]
    requests = ["snapshot", "sql", f"first:as.of.instant={first}", f"last:as.of.instant={last}",
                f"incr:hoodie.datasource.query.type=incremental;hoodie.datasource.read.begin.instanttime={begin}",
                "ro:hoodie.datasource.query.type=read_optimized",
                "cdc:hoodie.datasource.query.type=incremental;hoodie.datasource.read.begin.instanttime=earliest;"
                "hoodie.datasource.query.incremental.format=cdc"]
    expected = {"snapshot": _rows(answers.snapshot), "sql": _rows(answers.snapshot),
                "first": _rows(answers.as_of[first]), "last": _rows(answers.as_of[last]),
                "incr": _ours(reader.incremental(begin)), "ro": _ours(reader.read_optimized()),
                "cdc": event_multiset(tuple(row) for row in answers.cdc[Answers.range_key("earliest", None)])}  # type: ignore[misc]
    assert all(sum(rows.values()) > 0 for rows in expected.values())
    return path, requests, expected


def _go_reads(env_file: Path, path: str, requests: list[str]) -> dict[str, Counter[Any]]:
    go = subprocess.run([str(provision.go_program(GO_PROGRAM)), "read", str(env_file), path, *requests],
                        capture_output=True, text=True, timeout=600)
    assert go.returncode == 0, go.stderr[-3000:]
    return _program_rows(go.stdout)


def test_go_and_jvm_clients_read_through_format_hudi_as_hudi_answers(
    spark4: SparkSession, spark4_server_url: str, reference: Path, tmp_path: Path
) -> None:
    """A Go program (spark-connect-go, given the server in an env file as ``stack up`` writes it) and a Java one
    (Spark's JVM Connect client of the server's line) read a Hudi table through ``format("hudi")`` and SQL's
    ``USING hudi`` on a plain Spark 4 server: no jar, no Python on their side. Their answers equal Hudi's
    (snapshot, time travel, the change query in Hudi's CDC format) and our reader's (incremental,
    read-optimized)."""
    path, requests, expected = _program_requests(spark4, reference)
    env_file = tmp_path / ENV_FILE
    env_file.write_text(render_env_file({"HUDI_CONNECT_SPARK4_URL": spark4_server_url}))
    assert _go_reads(env_file, path, requests) == expected

    line = SPARK4_LINES[".".join(spark4.version.split(".")[:2])]
    jars = provision.spark4_home(provision.ensure_spark4_server(line)) / "jars"
    # the line's own client jar (shaded, in the REPL's folder), then the jars it leaves to the distribution
    classpath = os.pathsep.join([str(next(jars.glob("connect-repl/spark-connect-client-jvm_*.jar"))), f"{jars}/*"])
    classes = tmp_path / "classes"
    compiled = subprocess.run([provision.require_tool("javac"), "-d", str(classes), "-cp", classpath,
                               str(JVM_PROGRAM)], capture_output=True, text=True, timeout=300)
    assert compiled.returncode == 0, compiled.stderr[-3000:]
    jvm = subprocess.run([provision.require_tool("java"), "--add-opens=java.base/java.nio=ALL-UNNAMED", "-cp",
                          os.pathsep.join([str(classes), classpath]), "HudiReads", spark4_server_url, path, *requests],
                         capture_output=True, text=True, timeout=600)
    assert jvm.returncode == 0, jvm.stderr[-3000:]
    assert _program_rows(jvm.stdout) == expected


@pytest.mark.full  # a Spark 4 server of its own (about 50 s): CI's slice gives the Go program the fixture's server
def test_the_go_program_reads_through_format_hudi_on_stack_up_spark4(
    spark4: SparkSession, spark4_server_url: str, reference: Path, tmp_path: Path
) -> None:
    """The Go program as a Go team runs it: against ``stack up --services spark4``, the env file it wrote."""
    path, requests, expected = _program_requests(spark4, reference)
    stack_dir = tmp_path / "stack"
    try:
        stack = start_stack(stack_dir, ["spark4"])
        assert stack.spark4 is not None and stack.spark4.url != spark4_server_url
        found = _go_reads(stack_dir / ENV_FILE, path, requests)
    finally:
        assert "spark-connect-spark4" in stop_stack(stack_dir)
    assert found == expected


def test_pushed_filters_prune_partitions_and_spark_applies_every_filter(spark4: SparkSession, reference: Path) -> None:
    """From Spark 4.1 the data source prunes by the filters Spark pushes (the harness's servers enable it):
    partitions by partition filters, files by the column statistics of filters on data columns; every filter is
    handed back for Spark to apply, and the rows are those of Spark's own filter over the whole read. Spark 4.0
    pushes nothing (no filter classes), and answers the same."""
    from pyspark.sql.functions import col

    from hudi_connect.core.format.read_options import ReadQuery
    from pyspark_hudi.scan import arrow_schema, read_split, scan_of
    from pyspark_hudi.source import HudiPushdownReader

    spec = next(s for s in REFERENCE_TABLES if s.table_type == "MERGE_ON_READ")
    path = str(reference / spec.name)
    whole = TableReader(spark4, path).snapshot()
    pushed = spark4.read.format("hudi").load(path).where("part = 'p0' AND id > 3")
    assert _ours(pushed) == _ours(whole.where((col("part") == "p0") & (col("id") > 3)))
    assert sum(_ours(pushed).values()) > 0

    scan = scan_of(ReadQuery(path))
    if not SPARK4_LINES[".".join(spark4.version.split(".")[:2])].pushes_filters_to_python:
        with pytest.raises(ImportError):
            from pyspark.sql.datasource import EqualTo
        return
    from pyspark.sql.datasource import EqualTo, GreaterThan, In, Not

    def files(reader: HudiPushdownReader) -> list[tuple[str, str]]:
        return [(row.partition, name) for split in reader.partitions() for row in split.value
                for name in [row.base_file, *row.log_files] if name]

    filters = [EqualTo(("part",), "p0"), GreaterThan(("id",), 3)]
    reader = HudiPushdownReader(scan)
    assert list(reader.pushFilters(filters)) == filters  # Spark applies them all again
    kept, all_files = files(reader), files(HudiPushdownReader(scan))
    assert kept and {p for p, _ in kept} == {"part=p0" if "part=" in kept[0][0] else "p0"}
    assert len(kept) < len(all_files)  # files read with the partition filter, and without
    target = arrow_schema(scan.schema)
    rows = Counter(tuple(r[c] for c in DATA_COLUMNS) for split in reader.partitions()
                   for batch in read_split(scan, split.value, target) for r in batch.to_pylist())
    assert +Counter({k: v for k, v in rows.items() if k[0] > 3}) == _ours(pushed)

    negated = HudiPushdownReader(scan)
    negated.pushFilters([Not(In(("part",), ("p0",)))])
    assert "p0" not in {p.split("=")[-1] for p, _ in files(negated)} and files(negated)

    # a filter on a data column prunes files by their column statistics (the scan planned again with it): the
    # COW table's base files hold their own records, so their footers' ranges decide
    cow = str(reference / next(s for s in REFERENCE_TABLES if s.table_type == "COPY_ON_WRITE").name)
    cow_scan = scan_of(ReadQuery(cow))
    absent, present = HudiPushdownReader(cow_scan), HudiPushdownReader(cow_scan)
    absent.pushFilters([GreaterThan(("id",), 10**6)])
    present.pushFilters([EqualTo(("id",), 0)])
    every = files(HudiPushdownReader(cow_scan))
    assert files(absent) == [] and 0 < len(files(present)) < len(every), (files(present), every)
    ours = spark4.read.format("hudi").load(cow)
    assert ours.where("id > 1000000").count() == 0
    assert _ours(ours.where("id = 0")) == _ours(TableReader(spark4, cow).snapshot().where("id = 0"))
    assert sum(_ours(ours.where("id = 0")).values()) == 1
    unprunable = HudiPushdownReader(scan)
    unprunable.pushFilters([GreaterThan(("id",), 3)])  # not a partition column: nothing pruned
    assert len(files(unprunable)) == len(all_files)


def test_a_stream_of_the_tables_commits_lands_once_in_a_file_sink(spark4: SparkSession, reference: Path,
                                                                   tmp_path: Path) -> None:
    """``readStream.format("hudi")`` into Spark's Parquet sink with a checkpoint (trigger availableNow): from the
    earliest offset it lands what our incremental read from the earliest returns; run again on its checkpoint it
    adds nothing; from the latest nothing; from a commit's completion what the incremental read from there
    returns; as change events (``incremental.format=cdc``), Hudi's CDC query's events; under
    ``maxFilesPerTrigger`` (4.2+; refused by name before), a batch a commit. Spark's own file sink reads its output
    back."""
    spec = next(s for s in REFERENCE_TABLES if s.table_type == "MERGE_ON_READ")
    answers = load_answers(reference, spec)
    path = str(reference / spec.name)
    reader = TableReader(spark4, path)

    def landed(name: str, start: str, **options: str) -> DataFrame:
        query = (spark4.readStream.format("hudi").option("hoodie.datasource.streaming.startOffset", start)
                 .options(**options).load(path).writeStream.format("parquet")
                 .option("checkpointLocation", str(tmp_path / name / "checkpoint"))
                 .option("path", str(tmp_path / name / "out")).trigger(availableNow=True).start())
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
        return spark4.read.parquet(str(tmp_path / name / "out"))

    def stream(name: str, start: str) -> Counter[tuple[Any, ...]]:
        return _ours(landed(name, start).select(*DATA_COLUMNS))

    whole = stream("earliest", "earliest")
    assert whole == _ours(reader.incremental("earliest")) and sum(whole.values()) > 0
    assert stream("earliest", "earliest") == whole  # the same checkpoint: nothing new, nothing twice
    assert sum(stream("latest", "latest").values()) == 0
    begin = answers.completions[2]
    assert stream("from", begin) == _ours(reader.incremental(begin))
    # the change stream (Hudi's CDC format, as Hudi's streaming source takes it): Hudi's change events
    changes = landed("changes", "earliest", **{"hoodie.datasource.query.type": "incremental",
                                               "hoodie.datasource.query.incremental.format": "cdc"})
    theirs = event_multiset(tuple(row) for row in answers.cdc[Answers.range_key("earliest", None)])  # type: ignore[misc]
    assert events(changes) == theirs and sum(theirs.values()) > 0

    # Spark's rate limit (4.2+): at most one commit's files a micro-batch here, so each commit is a batch of its own
    # and the stream lands each commit's records (not the latest state of several commits' records)
    limited = {"maxFilesPerTrigger": "1"}
    if not SPARK4_LINES[".".join(spark4.version.split(".")[:2])].python_read_limits:
        with pytest.raises(Exception, match=r"maxFilesPerTrigger needs Spark 4\.2"):
            landed("limited", "earliest", **limited)
        return
    by_commit = sum((_ours(reader.incremental(begin, end))
                     for begin, end in zip(["earliest", *answers.completions], answers.completions, strict=False)),
                    Counter())
    assert _ours(landed("limited", "earliest", **limited).select(*DATA_COLUMNS)) == by_commit != whole


def _landed_commit(query: Any) -> str | None:
    """The commit offset a streaming query's last micro-batch (or idle trigger) ended at."""
    progress = query.lastProgress
    if progress is None:
        return None
    found = json.loads(progress.json) if hasattr(progress, "json") else progress
    offset = found["sources"][0]["endOffset"]
    return json.loads(offset)["commit"] if isinstance(offset, str) else offset["commit"]


@pytest.mark.full
@pytest.mark.parametrize("seed", [7, 2027])
def test_streams_killed_with_their_server_restart_on_their_checkpoints_exactly_once_into_files(
    reference: Path, tmp_path: Path, seed: int, kafka_endpoint: KafkaEndpoint, kafka_topic: str
) -> None:
    """Streams of a table into Spark's Parquet sink (its change events, and the latest state of the records each
    micro-batch's commits wrote) and its Kafka sink (the change events as JSON) on a server of their own, while
    the table's commits complete one by one; the server is SIGKILLed between two of them at a seeded moment (a
    micro-batch may be under way), restarted, and the queries started again on their checkpoints. The change
    events landed in files are Hudi's CDC query's events of the whole history, each exactly once; in Kafka each
    of them at least once; each record version (key, commit) landed in files at most once, and the last version
    landed of every key is the table's snapshot row."""
    rng = random.Random(seed)
    spec = next(s for s in REFERENCE_TABLES if s.table_type == "COPY_ON_WRITE")
    answers = load_answers(reference, spec)
    table = tmp_path / "table"
    shutil.copytree(reference / spec.name, table)
    # the commits complete one by one: their data files are written, their completed instants held back (as a
    # writer that has written its files and not yet committed) and then moved into the timeline
    timeline, held = table / ".hoodie" / "timeline", tmp_path / "held"
    held.mkdir()
    completed = sorted(f.name for f in timeline.iterdir()
                       if re.fullmatch(r"\d+_\d+\.(commit|deltacommit|replacecommit)", f.name))
    for name in completed[1:]:
        (timeline / name).rename(held / name)
    streams = {"changes": {"hoodie.datasource.query.type": "incremental",
                           "hoodie.datasource.query.incremental.format": "cdc"}, "records": {}}

    def started(session: SparkSession) -> list[Any]:
        queries = [session.readStream.format("hudi").options(**options).load(str(table)).writeStream
                   .format("parquet").option("checkpointLocation", str(tmp_path / name / "checkpoint"))
                   .option("path", str(tmp_path / name / "out")).trigger(processingTime="1 second").start()
                   for name, options in streams.items()]
        to_kafka = (session.readStream.format("hudi").options(**streams["changes"]).load(str(table))
                    .select(F.to_json(F.struct("op", "ts_ms", "before", "after")).alias("value"))
                    .writeStream.format("kafka").option("kafka.bootstrap.servers", kafka_endpoint.bootstrap_servers)
                    .option("topic", kafka_topic).option("checkpointLocation", str(tmp_path / "kafka" / "checkpoint"))
                    .trigger(processingTime="1 second").start())
        return [*queries, to_kafka]

    line = next(line for line in SPARK4_LINES.values() if pyspark_version_text.startswith(line.name + "."))
    server = KillableServer(tmp_path / "server", cast(SparkFlavor, line.flavor), None)
    try:
        session = connect(server.url)
        queries = started(session)
        kill_after = rng.randrange(1, len(completed) - 1)
        for count, name in enumerate(completed[1:], 1):
            (held / name).rename(timeline / name)
            time.sleep(rng.uniform(0.2, 2.5))
            if count == kill_after:
                server.kill()
                server.restart()
                session = connect(server.url)
                queries = started(session)
        last = completed[-1].split(".")[0].split("_")[1]  # the last completion time: the stream's last offset
        deadline = time.monotonic() + 300
        while not all(_landed_commit(q) == last for q in queries):
            assert time.monotonic() < deadline, [q.lastProgress for q in queries]
            assert all(q.exception() is None for q in queries), [q.exception() for q in queries]
            time.sleep(1)
        for query in queries:
            query.stop()
        changes = session.read.parquet(str(tmp_path / "changes" / "out"))
        theirs = event_multiset(tuple(row) for row in answers.cdc[Answers.range_key("earliest", None)])  # type: ignore[misc]
        assert events(changes) == theirs and sum(theirs.values()) > 20
        sent = event_multiset(tuple(json.loads(r.value).get(c) for c in CDC_COLUMNS)
                              for r in read_topic(kafka_endpoint, kafka_topic))
        assert set(sent) == set(theirs) and all(sent[e] >= n for e, n in theirs.items())  # none lost
        print(f"seed {seed}: the kill after commit {kill_after} of {len(completed)}; Kafka received "
              f"{sum(sent.values())} events for Hudi's {sum(theirs.values())}")
        records = session.read.parquet(str(tmp_path / "records" / "out")).collect()
        versions = Counter((r["_hoodie_record_key"], r["_hoodie_commit_time"]) for r in records)
        assert max(versions.values()) == 1, [v for v, n in versions.items() if n > 1]  # none landed twice
        # the newest version landed of each key the table holds is its row (a latest-state stream sends no deletes)
        newest = {r["id"]: r for r in sorted(records, key=lambda r: r["_hoodie_commit_time"])}
        kept = {row["id"] for row in answers.snapshot}
        assert _rows([{c: newest[key][c] for c in DATA_COLUMNS} for key in kept if key in newest]) == \
            _rows(answers.snapshot)
        assert server.kills == 1
    finally:
        server.stop()
