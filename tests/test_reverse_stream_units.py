"""The pure parts of the reverse streamer: checkpoints, sink SQL/naming/validation and executor-side storage ops."""

from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

from hudi_connect.core.errors import HudiConnectError
from hudi_connect.core.executor.object_store import (
    OPS_SCHEMA,
    RESULTS_SCHEMA,
    StorageOp,
    StorageResult,
    _execute,
    execute_ops,
    ops_request,
)
from hudi_connect.core.executor.postgres import Connection, quote
from hudi_connect.core.format.timeline import Action, Instant, InstantState, Timeline, parse_instant_file_name
from hudi_connect.reverse.checkpoint import Checkpoint, claim_name, origin, validate_stream_name
from hudi_connect.reverse.sink import BatchContext
from hudi_connect.reverse.sinks.files import _BATCH_DIRECTORY, FileSink, batch_directory
from hudi_connect.reverse.sinks.kafka import KafkaSink
from hudi_connect.reverse.sinks.postgres import PostgresSink, merge_statements, postgres_type
from hudi_connect.reverse.streamer import unsent_commits

BEGIN = "20261122005911100"
END_REQUESTED = "20261122005911202"
END_COMPLETED = "20261122005911203"
SECRET = "s3cr3t-Pa55"


# ---------------------------------------------------------------- checkpoints


def _checkpoint() -> Checkpoint:
    return Checkpoint(stream="serving", sequence=7, kind="batch", end_requested_time=END_REQUESTED,
                      end_completion_time=END_COMPLETED, begin_completion_time=BEGIN, records=42,
                      sinks=("kafka://k:9092/t (json)", "postgresql://h:5432/db/serving"),
                      written_at="20261122005912000")


def test_checkpoint_json_round_trip_keeps_every_field() -> None:
    checkpoint = _checkpoint()
    text = checkpoint.to_json()
    assert set(json.loads(text)) == {"reverseStreamCheckpoint"}
    back = Checkpoint.from_json(text, where="claim 7")
    assert back == checkpoint
    assert isinstance(back.sinks, tuple)
    assert back.sinks == ("kafka://k:9092/t (json)", "postgresql://h:5432/db/serving")
    assert (back.stream, back.sequence, back.kind, back.records) == ("serving", 7, "batch", 42)
    assert (back.begin_completion_time, back.end_requested_time, back.end_completion_time) == (
        BEGIN, END_REQUESTED, END_COMPLETED)
    assert back.written_at == "20261122005912000"


def test_reset_checkpoint_round_trips_with_nulls() -> None:
    reset = Checkpoint("serving", 3, "reset", None, None, written_at="20261122005912000")
    assert Checkpoint.from_json(reset.to_json(), where="x") == reset


@pytest.mark.parametrize("text", [
    "not json at all",
    "[]",
    "null",
    '"a string"',
    '{"other": {}}',
    '{"reverseStreamCheckpoint": {"stream": "s"}}',
    '{"reverseStreamCheckpoint": {"stream": "s", "sequence": 1, "kind": "batch", "end_requested_time": null, '
    '"end_completion_time": null, "sinks": [], "unexpected": 1}}',
    '{"reverseStreamCheckpoint": {"stream": "s", "sequence": 1, "kind": "batch", "end_requested_time": null, '
    '"end_completion_time": null, "sinks": 5}}',
])
def test_garbage_is_not_a_checkpoint_and_the_error_names_the_place(text: str) -> None:
    where = "s3a://bucket/t/.hoodie/.aux/reverse_stream/serving/0000000004.json"
    with pytest.raises(HudiConnectError, match="reverse-stream checkpoint") as caught:
        Checkpoint.from_json(text, where=where)
    assert where in str(caught.value)


def test_successor_advances_the_sequence_and_takes_the_end_of_an_instant() -> None:
    previous = _checkpoint()
    end = Instant("20261122010000000", Action.DELTA_COMMIT, InstantState.COMPLETED, "20261122010000005")
    nxt = previous.successor("batch", end, begin=END_COMPLETED, records=5, sinks=("a",))
    assert nxt.stream == previous.stream
    assert nxt.sequence == previous.sequence + 1
    assert nxt.kind == "batch"
    assert (nxt.end_requested_time, nxt.end_completion_time) == ("20261122010000000", "20261122010000005")
    assert (nxt.begin_completion_time, nxt.records, nxt.sinks) == (END_COMPLETED, 5, ("a",))
    assert len(nxt.written_at) == 17 and nxt.written_at.isdigit()


def test_successor_reset_has_no_end() -> None:
    nxt = _checkpoint().successor("reset", None)
    assert (nxt.sequence, nxt.kind) == (8, "reset")
    assert nxt.end_requested_time is None and nxt.end_completion_time is None
    assert nxt.begin_completion_time is None
    assert nxt.position is None


def test_position() -> None:
    assert Checkpoint("s", 1, "reset", None, None).position is None
    position = _checkpoint().position
    assert position is not None
    assert (position.requested_time, position.completion_time) == (END_REQUESTED, END_COMPLETED)
    assert position.is_completed


def test_origin_is_sequence_zero_with_nothing_sent() -> None:
    start = origin("serving")
    assert (start.stream, start.sequence, start.kind) == ("serving", 0, "reset")
    assert start.position is None
    assert start.records == 0 and start.sinks == ()
    assert start.successor("batch", None).sequence == 1
    with pytest.raises(ValueError):
        origin("../x")


@pytest.mark.parametrize("name", ["serving", "a.b-c_1", "A", "x" * 64])
def test_valid_stream_names(name: str) -> None:
    assert validate_stream_name(name) == name


@pytest.mark.parametrize("name", ["", "../x", "a/b", "x" * 65, ".hidden", "_x", "-x", "a b", "a\\b", "serving\n"])
def test_invalid_stream_names(name: str) -> None:
    with pytest.raises(ValueError):
        validate_stream_name(name)


def test_claim_name() -> None:
    assert claim_name(3) == "0000000003.json"
    assert claim_name(1234567890) == "1234567890.json"


# ---------------------------------------------------------------- timeline


def test_reverse_commit_instant_is_completed_and_writes_no_data() -> None:
    parsed = parse_instant_file_name(f"{END_REQUESTED}_{END_COMPLETED}.reversecommit")
    assert parsed is not None
    assert (parsed.requested_time, parsed.completion_time) == (END_REQUESTED, END_COMPLETED)
    assert parsed.action is Action.REVERSE_COMMIT
    assert parsed.state is InstantState.COMPLETED
    instant = Instant(parsed.requested_time, parsed.action, parsed.state, parsed.completion_time)
    assert instant.is_completed
    assert not instant.writes_data


def test_reverse_commits_never_count_as_data_commits() -> None:
    names = [f"{END_REQUESTED}_{END_COMPLETED}.reversecommit", "20261122005911300_20261122005911301.commit",
             "20261122005911400.reversecommit"]  # layout 1 name, completion from the modification time
    files = [parse_instant_file_name(n, modification_time_ms=1_790_000_000_000) for n in names]
    assert all(f is not None for f in files)
    timeline = Timeline.from_files(f for f in files if f is not None)
    assert len(timeline.completed()) == 3
    assert [i.requested_time for i in timeline.write_commits()] == ["20261122005911300"]


# ---------------------------------------------------------------- PostgreSQL


@pytest.mark.parametrize(("spark_type", "expected"), [
    (T.IntegerType(), "integer"),
    (T.LongType(), "bigint"),
    (T.StringType(), "text"),
    (T.DoubleType(), "double precision"),
    (T.DecimalType(10, 2), "numeric(10,2)"),
    (T.TimestampType(), "timestamptz"),
    (T.StructType([T.StructField("a", T.IntegerType())]), "jsonb"),
    (T.ArrayType(T.StringType()), "jsonb"),
    (T.MapType(T.StringType(), T.LongType()), "jsonb"),
])
def test_postgres_type(spark_type: T.DataType, expected: str) -> None:
    assert postgres_type(spark_type) == expected


def test_quote_doubles_inner_quotes() -> None:
    assert quote('we"ird') == '"we""ird"'
    assert quote("id") == '"id"'


SCHEMA = T.StructType([
    T.StructField("id", T.LongType(), False),
    T.StructField("name", T.StringType()),
    T.StructField("amount", T.DecimalType(10, 2)),
    T.StructField("tags", T.ArrayType(T.StringType())),
])


def test_merge_statements() -> None:
    sql = merge_statements("serving", SCHEMA, ("id",))
    assert sql.create.startswith('CREATE TABLE IF NOT EXISTS "serving" (')
    assert '"id" bigint' in sql.create and '"amount" numeric(10,2)' in sql.create and '"tags" jsonb' in sql.create
    assert sql.create.endswith('PRIMARY KEY ("id"))')

    assert sql.upsert.startswith('INSERT INTO "serving" ')
    assert 'ON CONFLICT ("id") DO UPDATE SET ' in sql.upsert
    updates = sql.upsert.split("DO UPDATE SET ", 1)[1]
    for column in ("name", "amount", "tags"):
        assert f'"{column}" = EXCLUDED."{column}"' in updates
    assert '"id" = EXCLUDED' not in updates
    assert updates.count("EXCLUDED.") == 3
    assert "json_populate_recordset(NULL::\"serving\"" in sql.upsert

    assert sql.delete.startswith('DELETE FROM "serving" AS t USING ')
    assert sql.delete.endswith('WHERE t."id" = d."id"')


def test_merge_statements_with_a_composite_key() -> None:
    sql = merge_statements("serving", SCHEMA, ("id", "name"))
    assert 'PRIMARY KEY ("id", "name")' in sql.create
    assert 'ON CONFLICT ("id", "name") DO UPDATE SET ' in sql.upsert
    assert '"name" = EXCLUDED' not in sql.upsert
    assert sql.delete.endswith('WHERE t."id" = d."id" AND t."name" = d."name"')


def test_merge_statements_when_every_column_is_a_key() -> None:
    schema = T.StructType([T.StructField("a", T.StringType()), T.StructField("b", T.IntegerType())])
    sql = merge_statements("serving", schema, ("a", "b"))
    assert sql.upsert.endswith('ON CONFLICT ("a", "b") DO NOTHING')
    assert "DO UPDATE" not in sql.upsert


def test_merge_statements_quote_each_part_of_a_qualified_table() -> None:
    sql = merge_statements("public.serving", SCHEMA, ("id",))
    assert sql.create.startswith('CREATE TABLE IF NOT EXISTS "public"."serving" (')
    assert sql.upsert.startswith('INSERT INTO "public"."serving" ')
    assert 'NULL::"public"."serving"' in sql.upsert
    assert sql.delete.startswith('DELETE FROM "public"."serving" AS t')
    assert '"public.serving"' not in sql.create


def test_connection_from_dsn() -> None:
    connection = Connection.from_dsn("postgresql://u:p%40ss@h:5433/db")
    assert (connection.host, connection.port, connection.database, connection.user) == ("h", 5433, "db", "u")
    assert connection.password == "p@ss"
    assert "p@ss" not in repr(connection) and "p%40ss" not in repr(connection)
    assert Connection.from_dsn("postgres://u:x@h/db").port == 5432


@pytest.mark.parametrize("dsn", ["mysql://x", "postgresql://h", "postgresql://h/", "postgresql:///db", "h:5432/db"])
def test_bad_dsns(dsn: str) -> None:
    with pytest.raises(ValueError):
        Connection.from_dsn(dsn)


def test_postgres_sink_hides_credentials() -> None:
    sink = PostgresSink(f"postgresql://alice:{SECRET}@db.example:5433/shop", "public.serving")
    assert SECRET not in repr(sink)
    assert "alice" not in repr(sink)
    description = sink.describe()
    assert description == "postgresql://db.example:5433/shop/public.serving"
    assert SECRET not in description and "alice" not in description
    assert sink.published_end(3) is None
    with pytest.raises(ValueError):
        PostgresSink("mysql://x", "t")


# ---------------------------------------------------------------- files


def _context(sequence: int, begin: str | None) -> BatchContext:
    return BatchContext(stream="serving", sequence=sequence, table_name="trips", base_path="s3a://b/trips",
                        record_key_fields=("id",), begin_completion_time=begin, end_requested_time=END_REQUESTED,
                        end_completion_time=END_COMPLETED, unique_keys=begin is None)


def test_batch_directory_names() -> None:
    assert batch_directory(_context(2, BEGIN)) == f"0000000002_{BEGIN}_{END_COMPLETED}"
    assert batch_directory(_context(2, None)) == f"0000000002_full_{END_COMPLETED}"


def test_batch_directory_pattern() -> None:
    for context in (_context(2, BEGIN), _context(2, None), _context(123, "20261122005911")):
        name = batch_directory(context)
        match = _BATCH_DIRECTORY.match(name + "/")
        assert match is not None, name
        assert int(match["sequence"]) == context.sequence
        assert match["begin"] == (context.begin_completion_time or "full")
        assert match["end"] == END_COMPLETED
        assert _BATCH_DIRECTORY.match(name) is None  # a file, not a directory
    for other in ("_temporary/", "0000000002_x_y/", "_SUCCESS", "2_full_20261122005911203/",
                  f"0000000002_{BEGIN}_{END_COMPLETED}.json/", f"0000000002_{BEGIN}/"):
        assert _BATCH_DIRECTORY.match(other) is None, other


def test_file_sink_validates_format_and_strips_the_root() -> None:
    with pytest.raises(ValueError):
        FileSink("s3a://b/x/", "csv")  # type: ignore[arg-type]
    sink = FileSink("s3a://b/x/", "json")
    assert sink.root == "s3a://b/x"
    assert sink.describe() == "s3a://b/x (json)"
    assert FileSink("/tmp/out//").root == "/tmp/out"
    assert FileSink("/tmp/out").format == "parquet"


def test_a_file_sinks_dead_claim_is_found_by_the_timelines_task(tmp_path: Path) -> None:
    """What ``claims_op`` finds (run in the stream's timeline task) answers as ``published_end`` would: the
    range a dead run claimed for this sequence, nothing for a sequence no run claimed."""
    sink = FileSink(str(tmp_path / "out"), "json")
    assert sink.published_end_from(_execute(sink.claims_op()), 1) is None  # no claims directory yet
    claims = tmp_path / "out" / "_published"
    claims.mkdir(parents=True)
    for sequence in (1, 2):
        (claims / f"{sequence:010d}").write_text(f"{sequence:010d}_{BEGIN}_2026112200591120{sequence}")
    (claims / ".0000000003.tmp").write_text("a claim being written")
    found = _execute(sink.claims_op())
    assert sink.published_end_from(found, 2) == "20261122005911202"
    assert sink.published_end_from(found, 3) is None
    with pytest.raises(ValueError, match="no session"):  # a claim before the last is read on its own
        sink.published_end_from(found, 1)


def test_copy_data_file_copies_sparks_one_part_file_under_its_extension(tmp_path: Path) -> None:
    staging, target = tmp_path / "staging", tmp_path / "batch"
    staging.mkdir()
    (staging / "part-00000-0f1e-c000.snappy.parquet").write_bytes(b"rows")
    (staging / ".part-00000-0f1e-c000.snappy.parquet.crc").write_bytes(b"crc")
    (staging / "_SUCCESS").write_bytes(b"")
    result = _execute(StorageOp.copy_data_file(str(staging), str(target)))
    assert result.names == ("part-00000.snappy.parquet",)
    assert (target / "part-00000.snappy.parquet").read_bytes() == b"rows"
    (staging / "part-00001-0f1e-c000.snappy.parquet").write_bytes(b"more")
    with pytest.raises(ValueError, match="2 data files"):
        _execute(StorageOp.copy_data_file(str(staging), str(target)))


# ---------------------------------------------------------------- Kafka


def test_kafka_sink_rejects_unknown_formats() -> None:
    with pytest.raises(ValueError):
        KafkaSink("k:9092", "t", "avro")  # type: ignore[arg-type]
    assert KafkaSink("k:9092", "t", "debezium").format == "debezium"


def test_kafka_sink_rejects_options_without_the_kafka_prefix() -> None:
    with pytest.raises(ValueError, match="kafka"):
        KafkaSink("k:9092", "t", options={"sasl.mechanism": "PLAIN"})
    with pytest.raises(ValueError):
        KafkaSink("k:9092", "t", options={"kafka.acks": "all", "topic": "other"})


def test_kafka_sink_hides_option_values() -> None:
    jaas = f'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="{SECRET}";'
    sink = KafkaSink("k:9092", "orders", "json", options={"kafka.sasl.jaas.config": jaas,
                                                          "kafka.sasl.mechanism": "PLAIN"})
    assert SECRET not in repr(sink)
    assert "PlainLoginModule" not in repr(sink)
    assert sink.describe() == "kafka://k:9092/orders (json)"
    assert SECRET not in sink.describe()
    assert sink.published_end(1) is None


# ---------------------------------------------------------------- object store (executor side)


def test_create_is_create_if_absent(tmp_path: Path) -> None:
    target = tmp_path / "claims" / "serving" / claim_name(1)  # the parent does not exist yet
    assert _execute(StorageOp.create(str(target), "first")) == StorageResult(True)
    assert target.read_text() == "first"
    assert _execute(StorageOp.create(str(target), "second")).ok is False
    assert target.read_text() == "first"
    assert sorted(p.name for p in target.parent.iterdir()) == [claim_name(1)]  # no temporary file left


def test_create_with_a_file_uri(tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    assert _execute(StorageOp.create(f"file://{target}", "via uri")).ok
    assert target.read_text() == "via uri"


def test_put_replaces_and_get_reads(tmp_path: Path) -> None:
    target = tmp_path / "d" / "f.txt"
    assert _execute(StorageOp.put(str(target), "one")).ok
    assert _execute(StorageOp.put(str(target), "two ü")).ok
    assert target.read_text(encoding="utf-8") == "two ü"
    assert _execute(StorageOp.get(str(target))) == StorageResult(True, "two ü")
    assert sorted(p.name for p in target.parent.iterdir()) == ["f.txt"]


def test_get_of_a_missing_path(tmp_path: Path) -> None:
    found = _execute(StorageOp.get(str(tmp_path / "missing.json")))
    assert found.ok is False
    assert found.text == ""


def test_list(tmp_path: Path) -> None:
    (tmp_path / "b.json").write_text("b")
    (tmp_path / "a.json").write_text("a")
    (tmp_path / "c_dir").mkdir()
    (tmp_path / "c_dir" / "nested").write_text("n")
    (tmp_path / "_SUCCESS").write_text("")
    listing = _execute(StorageOp.list(str(tmp_path)))
    assert listing.ok
    assert listing.names == ("_SUCCESS", "a.json", "b.json", "c_dir/")
    assert _execute(StorageOp.list(str(tmp_path / "absent"))) == StorageResult(True, names=())


def test_timeline_op_lists_and_reads_the_completed_write_commits_not_known_yet(tmp_path: Path) -> None:
    files = {
        "20261124100000000_20261124100001000.commit": b"first", "20261124100002000_20261124100003000.deltacommit":
        b"\x00binary\xff", "20261124100004000_20261124100005000.replacecommit": b"replace",
        "20261124100006000.commit.requested": b"", "20261124100006000.inflight": b"", "20261124100009000.commit": b"",
        "20261124100007000_20261124100008000.clean": b"clean plan", "hoodie.properties": b"p",
    }
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    known = ["20261124100000000_20261124100001000.commit"]
    result = _execute(StorageOp.timeline(str(tmp_path), known))
    assert result.files == _execute(StorageOp.list(str(tmp_path))).files  # all of them, empty ones too
    read = dict(result.contents)
    assert read == {"20261124100002000_20261124100003000.deltacommit": b"\x00binary\xff",
                    "20261124100004000_20261124100005000.replacecommit": b"replace"}
    assert _execute(StorageOp.timeline(str(tmp_path / "absent"))) == StorageResult(True, names=())


def test_data_files_op_lists_every_file_below_the_table_outside_hoodie(tmp_path: Path) -> None:
    written = {"p=a/f1_1-0-1_001.parquet": b"12345", "p=a/.f1_001.log.1_0-1-1": b"67", "p=a-b/x/f2.parquet": b"",
               "f3.parquet": b"9", ".hoodie/hoodie.properties": b"p", ".hoodie/metadata/files/f.hfile": b"m",
               "p=a/.hoodie_partition_metadata": b"pm"}
    for name, content in written.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(content)
    result = _execute(StorageOp.data_files(str(tmp_path), 5))
    # the oracle: every file outside .hoodie, as (path relative to the table, size)
    expected = sorted((name, len(content)) for name, content in written.items() if not name.startswith(".hoodie/"))
    assert result.ok and [(name, size) for name, size, _ in result.files] == expected
    assert _execute(StorageOp.data_files(str(tmp_path), 4)) == StorageResult(False)  # more than asked for
    assert _execute(StorageOp.data_files(str(tmp_path / "absent"), 5)) == StorageResult(True)


def test_delete(tmp_path: Path) -> None:
    tree = tmp_path / "0000000002_full_20261122005911203"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "part-0.parquet").write_text("x")
    (tree / "_SUCCESS").write_text("")
    single = tmp_path / "single.txt"
    single.write_text("s")
    assert _execute(StorageOp.delete(str(tree))).ok
    assert not tree.exists()
    assert _execute(StorageOp.delete(str(single))).ok
    assert not single.exists()
    assert _execute(StorageOp.delete(str(tmp_path / "never-there"))).ok
    assert list(tmp_path.iterdir()) == []


def test_unknown_op_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        _execute(StorageOp("move", str(tmp_path / "x")))  # type: ignore[arg-type]


def test_racing_creates_have_exactly_one_winner(tmp_path: Path) -> None:
    for round_number in range(20):
        target = tmp_path / f"round{round_number}" / claim_name(round_number + 1)
        barrier = threading.Barrier(2)
        results: dict[str, bool] = {}
        errors: list[BaseException] = []

        def claim(text: str, target: Path = target, barrier: threading.Barrier = barrier,
                  results: dict[str, bool] = results, errors: list[BaseException] = errors) -> None:
            try:
                barrier.wait(timeout=10)
                results[text] = _execute(StorageOp.create(str(target), text)).ok
            except BaseException as error:  # surfaced below
                errors.append(error)

        threads = [threading.Thread(target=claim, args=(f"run-{n}",)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert errors == [], f"round {round_number}: {errors!r}"
        winners = [text for text, ok in results.items() if ok]
        assert len(results) == 2 and len(winners) == 1, f"round {round_number}: {results}"
        assert target.read_text() == winners[0]
        assert sorted(p.name for p in target.parent.iterdir()) == [target.name]


def test_copy_replaces_the_target_whole(tmp_path: Path) -> None:
    source, target = tmp_path / "staging" / "part-0.parquet", tmp_path / "batch" / "part-00000.parquet"
    source.parent.mkdir()
    source.write_text("new data")
    assert _execute(StorageOp.copy(str(source), str(target))).ok
    assert target.read_text() == "new data" and source.exists()
    source.write_text("newer data")
    _execute(StorageOp.copy(str(source), str(target)))
    assert target.read_text() == "newer data"
    assert sorted(p.name for p in target.parent.iterdir()) == ["part-00000.parquet"]  # no temporary left


def test_last_reads_the_highest_claim_and_skips_hidden_files(tmp_path: Path) -> None:
    claims = tmp_path / "claims"
    assert _execute(StorageOp.last(str(claims))) == StorageResult(True)  # no directory yet: nothing
    for sequence in (1, 2, 10):
        (claims / claim_name(sequence)).parent.mkdir(exist_ok=True)
        (claims / claim_name(sequence)).write_text(f"checkpoint {sequence}")
    (claims / ".zzz.tmp").write_text("half written")
    last = _execute(StorageOp.last(str(claims)))
    assert last.text == "checkpoint 10" and ".zzz.tmp" in last.names


def test_ops_after_a_lost_create_are_skipped(tmp_path: Path) -> None:
    import pyarrow as pa

    from hudi_connect.core.executor.object_store import execute_ops, ops_request

    claim, published = tmp_path / "claim", tmp_path / "published"
    claim.write_text("the other run's")
    ops = [StorageOp.create(str(claim), "mine"), StorageOp.put(str(published), "mine")]
    request = ops_request(ops)
    (batch,) = execute_ops([pa.RecordBatch.from_pydict({"op": [request]})])
    results = json.loads(batch.column(0)[0].as_py())
    assert [r["ok"] for r in results] == [False, False]
    assert claim.read_text() == "the other run's" and not published.exists()
    claim.unlink()
    (batch,) = execute_ops([pa.RecordBatch.from_pydict({"op": [request]})])
    assert [r["ok"] for r in json.loads(batch.column(0)[0].as_py())] == [True, True]
    assert published.read_text() == "mine"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=6), st.data())
def test_a_counted_checkpoint_holds_the_rows_the_task_was_given_however_they_arrive(
        tmp_path_factory: pytest.TempPathFactory, null_batches: list[int], data: st.DataObject) -> None:
    """The checkpoint's task counts the batch's rows (nulls beside the one request, in any batch and order, as
    Spark's union of a cache and a local relation brings them) into the claim and its publication."""
    directory = tmp_path_factory.mktemp("counted")
    new = _checkpoint()
    claim, published = directory / "claim", directory / "published"
    request = ops_request([StorageOp.create(str(claim), new.to_json(counted=True), counted=True),
                           StorageOp.put(str(published), new.to_json(counted=True), counted=True),
                           StorageOp.put(str(directory / "previous"), "as it was")])
    batches = [pa.RecordBatch.from_pydict({"op": [None] * n}, schema=OPS_SCHEMA) for n in null_batches]
    at = data.draw(st.integers(0, len(batches)))
    batches.insert(at, pa.RecordBatch.from_pydict({"op": [request]}, schema=OPS_SCHEMA))
    results = json.loads(next(iter(execute_ops(batches))).column("result")[0].as_py())
    expected = sum(null_batches)
    assert [(r["ok"], r["counted"]) for r in results] == [(True, expected), (True, expected), (True, None)]
    for path in (claim, published):
        assert Checkpoint.from_json(path.read_text(), where=str(path)) == dataclasses.replace(new, records=expected)
    assert (directory / "previous").read_text() == "as it was"


def test_a_counted_op_without_its_mark_once_is_refused(tmp_path: Path) -> None:
    for content in ("no mark", _checkpoint().to_json(counted=True) * 2):
        request = ops_request([StorageOp.put(str(tmp_path / "x"), content, counted=True)])
        with pytest.raises(ValueError, match="counted op"):
            list(execute_ops([pa.RecordBatch.from_pydict({"op": [request, None]}, schema=OPS_SCHEMA)]))
        assert not (tmp_path / "x").exists()


def test_unsent_commits_stop_before_a_hollow_commit_when_ordered_by_requested_time() -> None:
    def commit(requested: str, completed: str | None) -> Instant:
        state = InstantState.COMPLETED if completed else InstantState.REQUESTED
        return Instant(requested, Action.COMMIT, state, completed)

    first, hollow, later = commit("001", "002"), commit("003", None), commit("004", "005")
    timeline = Timeline((first, hollow, later))
    # version 6: 004 waits until 003 completes (or is rolled back), else 003 would be skipped for ever
    assert unsent_commits(timeline, None, by_completion=False) == [first]
    assert unsent_commits(timeline, first, by_completion=False) == []
    assert unsent_commits(Timeline((first, commit("003", "006"), later)), first, by_completion=False) == [
        commit("003", "006"), later]
    # version 8 orders by completion time: 003 completes after 005 and is sent then
    assert unsent_commits(timeline, first, by_completion=True) == [later]


def test_the_timeline_comes_back_a_file_per_row_never_in_one_cell(tmp_path: Path) -> None:
    """No cell grows with the table (issue #33): the results row holds no file content; each commit file read is
    a row, and a batch, of its own."""
    contents = {f"2026112410000{i}000_2026112410000{i}500.commit": bytes([i]) * (1000 * (i + 1)) for i in range(3)}
    for name, content in contents.items():
        (tmp_path / name).write_bytes(content)
    request = ops_request([StorageOp.get(str(tmp_path / "absent")), StorageOp.timeline(str(tmp_path))])
    batches = list(execute_ops(iter([pa.RecordBatch.from_pydict({"op": [request]})])))
    assert all(b.schema == RESULTS_SCHEMA and b.num_rows == 1 for b in batches) and len(batches) == 4
    results = json.loads(batches[0].column("result")[0].as_py())
    assert [r["ok"] for r in results] == [False, True] and all("contents" not in r for r in results)
    assert len(batches[0].column("result")[0].as_py()) < 1000  # the names, not the 6,000 bytes read
    rows = [(b.column("op")[0].as_py(), b.column("name")[0].as_py(), b.column("content")[0].as_py())
            for b in batches[1:]]
    assert rows == [(1, name, content) for name, content in sorted(contents.items())]


def test_ops_after_a_create_that_found_its_file_are_skipped_in_the_results(tmp_path: Path) -> None:
    target = tmp_path / "claim"
    target.write_text("taken")
    request = ops_request([StorageOp.create(str(target), "mine"), StorageOp.put(str(tmp_path / "a"), "x"),
                           StorageOp.put(str(tmp_path / "b"), "y")])
    batches = list(execute_ops(iter([pa.RecordBatch.from_pydict({"op": [request]})])))
    assert [r["ok"] for r in json.loads(batches[0].column("result")[0].as_py())] == [False, False, False]
    assert len(batches) == 1 and not (tmp_path / "a").exists() and target.read_text() == "taken"
