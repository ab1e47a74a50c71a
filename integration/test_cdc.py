"""The CDC engine against Hudi's own CDC query, and against time travel.

Each CDC-enabled table (COW or MOR, each supplemental logging mode) gets the
history of :mod:`hudi_connect_stack.testing.cdc_history`, or a seeded random one. Our
change stream (plain server, no Hudi jar) must equal Hudi's CDC query (Hudi
server) row for row as multisets, for the whole history and for ranges that
start and end in the middle.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hudi_connect_stack.testing.cdc_history import IGNORED, SCHEMA, events, write_history
from hudi_connect_stack.testing.compare import row_multiset
from hudi_connect_stack.testing.fixture_tables import unzip_fixture
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from hudi_connect import forget_table
from hudi_connect.cdc import ChangeQuery
from hudi_connect.core.errors import ServerMisconfiguredError
from hudi_connect.core.executor import file_access
from hudi_connect.core.format.timeline import Instant
from hudi_connect.reader import TableReader
from hudi_connect.table.hudi_table import HudiTable
from hudi_connect.table_spec import col

CDC_IN_CI: set[tuple[str, str]] = set()  # CI runs MOR OP_KEY_ONLY in the container leg (its time budget)
# CI: COW with the least logged (every image inferred); MOR's DATA_BEFORE_AFTER against Hudi's CDC is in CI's
# catalog test and conformance slice, the rest under --full (CI's time)
RANDOM_IN_CI = {("COPY_ON_WRITE", "OP_KEY_ONLY")}


# CI: COW where its .cdc files hold both images (the JVM and the Python decoders); MOR with the least logged runs in
# CI's container leg (ci/test.sh names it); every pair under --full
@pytest.mark.parametrize(("table_type", "mode"), [
    pytest.param(t, m, marks=() if (t, m) in CDC_IN_CI else pytest.mark.full)
    for t in ("COPY_ON_WRITE", "MERGE_ON_READ") for m in ("OP_KEY_ONLY", "DATA_BEFORE", "DATA_BEFORE_AFTER")])
def test_change_stream_equals_hudis_cdc_query(
    spark: SparkSession, plain_spark: SparkSession, local_base_path: str, table_type: str, mode: str
) -> None:
    table = HudiTable.create(spark, local_base_path, SCHEMA, record_key="id", ordering_field="ts",
                             partition_by="part", table_type=table_type, cdc=mode, metadata_table=False,
                             # Hudi's own CDC query fails ("There should be a cdc log file") when an
                             # insert is packed into an existing small file: keep inserts apart.
                             options={"hoodie.clean.automatic": "false", "hoodie.parquet.small.file.limit": "0"})
    commits = write_history(spark, table)
    query = ChangeQuery(plain_spark, local_base_path)
    # whole events in .cdc files (COW, DATA_BEFORE_AFTER): auto decodes this small table's in Python until the
    # session has learned their writer schemas; the plain server (spark-avro) decodes them in the JVM when asked,
    # over every range too (and from then on, auto does too)
    whole_events = table_type == "COPY_ON_WRITE" and mode == "DATA_BEFORE_AFTER"
    in_jvm = ChangeQuery(plain_spark, local_base_path, avro_decoding="jvm")
    if whole_events:
        assert "decoded in Python workers: the .cdc files are small" in query.explain("earliest")
    for begin, end in (("earliest", None), (commits[0], commits[3]), (commits[2], commits[5]),
                       (commits[4], None)):
        theirs = events(table.hudi.cdc(begin, end))
        for reader in (query, in_jvm) if whole_events else (query,):
            ours = events(reader.changes(begin, end))
            assert ours == theirs, f"({begin}, {end}]\nours only: {ours - theirs}\nHudi only: {theirs - ours}"
    assert sum(events(query.changes("earliest")).values()) > 20
    if table_type == "COPY_ON_WRITE":  # updates of a CDC-enabled COW table are logged in .cdc files
        assert "AS_IS" in query.explain("earliest")
    if whole_events:
        # the JVM path when asked; auto, python, or a server without spark-avro (the Hudi server): the same
        # events decoded in Python
        assert "decoded in the JVM (spark-avro's from_avro)" in in_jvm.explain("earliest")
        assert "known from an earlier query of these commits: no schema job" in query.explain("earliest")
        theirs = events(table.hudi.cdc("earliest"))
        in_python = ChangeQuery(plain_spark, local_base_path, avro_decoding="python")
        assert "decoded in Python workers: avro_decoding='python' asks for it" in in_python.explain("earliest")
        assert events(in_python.changes("earliest")) == theirs
        columns = ["op", "record_key", "requested_time", "completion_time", "before", "after"]
        typed = [row_multiset((r.asDict(recursive=True) for r in q.changes("earliest", format="typed").collect()),
                              columns) for q in (in_jvm, in_python)]
        assert typed[0] == typed[1] and sum(typed[0].values()) > 20
        without_avro = ChangeQuery(spark, local_base_path)
        assert "decoded in Python workers: the server has no spark-avro" in without_avro.explain("earliest")
        assert events(without_avro.changes("earliest")) == theirs
        with pytest.raises(ServerMisconfiguredError, match="spark-avro"):
            ChangeQuery(spark, local_base_path, avro_decoding="jvm").changes("earliest")


OPERATIONS = ("insert", "upsert", "upsert", "delete", "overwrite", "drop", "service")


def random_history(rng: random.Random, spark: SparkSession, table: HudiTable, steps: int) -> list[Instant]:
    """A seeded sequence of writes over keys 0..19 (partition p{key % 3}), with the table
    services in between. Ordering values grow, except for upserts drawn to lose."""
    rows = lambda data: spark.createDataFrame(data, SCHEMA)  # noqa: E731
    live: set[int] = set()
    commits: list[Instant] = []
    for step in range(steps):
        ts = 100 * (step + 1)
        absent = sorted(set(range(20)) - live)
        choice = rng.choice(OPERATIONS) if live else "insert"
        if choice == "insert" and absent:
            keys = rng.sample(absent, min(len(absent), rng.randint(1, 5)))
            commits.append(table.insert(rows([(k, f"i{step}", ts, f"p{k % 3}") for k in keys])))
            live |= set(keys)
        elif choice == "upsert":
            keys = rng.sample(range(20), rng.randint(1, 6))
            lose = {k for k in keys if k in live and rng.random() < 0.3}
            commits.append(table.upsert(rows([(k, f"u{step}", 1 if k in lose else ts, f"p{k % 3}") for k in keys])))
            live |= set(keys)
        elif choice == "delete":
            keys = rng.sample(range(20), rng.randint(1, 4))  # some may be absent: they yield nothing
            commits.append(table.delete(spark.createDataFrame([(k,) for k in keys], "id int")))
            live -= set(keys)
        elif choice == "overwrite":
            partition = rng.randrange(3)
            keys = [k for k in rng.sample(range(20), 4) if k % 3 == partition] or [partition]
            commits.append(table.insert_overwrite(rows([(k, f"o{step}", ts, f"p{partition}") for k in keys])))
            live = {k for k in live if k % 3 != partition} | set(keys)
        elif choice == "drop":
            partition = rng.randrange(3)
            commits.append(table.delete_partitions([f"p{partition}"]))
            live = {k for k in live if k % 3 != partition}
        elif table.properties.is_merge_on_read and rng.random() < 0.5:
            table.compaction.schedule()
            table.compaction.run()
        else:
            table.cluster()
    return commits


@pytest.mark.parametrize("seed", [11, pytest.param(23, marks=pytest.mark.full)])  # a second seed under --full
# CI: RANDOM_IN_CI; every pair under --full
@pytest.mark.parametrize(("table_type", "mode"), [
    pytest.param(t, m, marks=() if (t, m) in RANDOM_IN_CI else pytest.mark.full)
    for t in ("COPY_ON_WRITE", "MERGE_ON_READ") for m in ("OP_KEY_ONLY", "DATA_BEFORE", "DATA_BEFORE_AFTER")])
def test_random_histories_equal_hudis_cdc_query(
    spark: SparkSession, plain_spark: SparkSession, local_base_path: str, table_type: str, mode: str, seed: int
) -> None:
    rng = random.Random(f"{table_type}/{mode}/{seed}")
    table = HudiTable.create(spark, local_base_path, SCHEMA, record_key="id", ordering_field="ts",
                             partition_by="part", table_type=table_type, cdc=mode, metadata_table=False,
                             options={"hoodie.clean.automatic": "false", "hoodie.parquet.small.file.limit": "0"})
    commits = random_history(rng, spark, table, steps=8)
    assert len(commits) >= 4, "the history must have commits to query"
    query = ChangeQuery(plain_spark, local_base_path)
    first, last = sorted(rng.sample(range(len(commits)), 2))
    for begin, end in (("earliest", None), (commits[first], commits[last]), (commits[last - 1], None)):
        ours = events(query.changes(begin, end))
        theirs = events(table.hudi.cdc(begin, end))
        assert ours == theirs, (f"seed {seed} ({begin}, {end}]\n{query.explain(begin, end)}\n"
                                f"ours only: {ours - theirs}\nHudi only: {theirs - ours}")


def net_effect(changes: DataFrame) -> Counter[tuple[Any, ...]]:
    """Events per key folded to their net effect: a replace commit deletes a key from
    its old file group and inserts it into a new one (as Hudi's CDC says), which a
    difference of snapshots sees as one update."""
    by_key: dict[str, list[tuple[str, Any, Any]]] = {}
    for r in changes.collect():
        by_key.setdefault(r.record_key, []).append((r.op, _record(r.before), _record(r.after)))
    folded: Counter[tuple[Any, ...]] = Counter()
    for key_events in by_key.values():
        ops = sorted(op for op, _, _ in key_events)
        if ops == ["d", "i"]:
            before = next(b for op, b, _ in key_events if op == "d")
            after = next(a for op, _, a in key_events if op == "i")
            folded[("u", before, after)] += 1
        else:
            folded.update(key_events)
    return folded


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return bytes(value) if isinstance(value, bytearray) else value


def _record(row: Row | None) -> Any:
    """A typed image or snapshot row, as Spark hands both to Python, minus where it was found."""
    if row is None:
        return None
    return tuple(sorted((k, _hashable(v)) for k, v in row.asDict(recursive=True).items() if k not in IGNORED))


def _snapshot(df: DataFrame) -> dict[str, Any]:
    return {r["_hoodie_record_key"]: _record(r) for r in df.collect()}


@pytest.mark.parametrize("name", ["cow_v9_txns_simple_nometa", "mor_avro_v9_txns_simple_nometa",
                                  "mor_avro_v6_trips_8i3d", "cow_v6_simplekeygen_nonhivestyle_overwritetable"])
def test_changes_without_cdc_equal_the_difference_of_snapshots(
    plain_spark: SparkSession, tmp_path: Path, name: str
) -> None:
    base = unzip_fixture(name, tmp_path)
    query = ChangeQuery(plain_spark, str(base))
    reader = TableReader(plain_spark, str(base))
    commits = list(reader.view.timeline().write_commits())
    previous: dict[str, Any] = {}
    for instant in commits:
        current = _snapshot(reader.as_of(instant))
        expected: Counter[tuple[Any, ...]] = Counter()
        for key in current.keys() - previous.keys():
            expected[("i", None, current[key])] += 1
        for key in previous.keys() - current.keys():
            expected[("d", previous[key], None)] += 1
        for key in current.keys() & previous.keys():
            if dict(current[key]).get("_hoodie_commit_time") == instant.requested_time:
                expected[("u", previous[key], current[key])] += 1
        begin = commits[commits.index(instant) - 1] if commits.index(instant) else "earliest"
        got = net_effect(query.changes(begin, instant, format="typed"))
        assert got == expected, f"{name} at {instant.requested_time}\n{query.explain(begin, instant)}"
        previous = current


@pytest.mark.parametrize("name", ["mor_avro_v9_txns_simple_nometa",  # CI's slice; the other under --full
                                  pytest.param("cow_v6_simplekeygen_nonhivestyle_overwritetable",
                                               marks=pytest.mark.full)])
def test_changes_of_a_table_too_large_to_list_whole_read_only_the_touched_files(
    plain_spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Past a batched listing's limit a change query lists only the partitions its range touched and keeps
    only the touched file groups' files (issue #33): the changes are the same as from the whole listing."""
    base = str(unzip_fixture(name, tmp_path))
    commits = list(TableReader(plain_spark, base).view.timeline().write_commits())
    ranges = [("earliest", None), (commits[0], commits[len(commits) // 2]), (commits[len(commits) // 2], None)]
    expected = [net_effect(ChangeQuery(plain_spark, base).changes(b, e, format="typed")) for b, e in ranges]
    assert expected[0]
    monkeypatch.setattr(file_access, "MAX_BATCHED_FILES", 0)
    forget_table(plain_spark, base)  # else the session plans on the listing it kept
    query = ChangeQuery(plain_spark, base)
    assert [net_effect(query.changes(b, e, format="typed")) for b, e in ranges] == expected
    assert TableReader(plain_spark, base).view.files_over_limit  # the session state the query left


def test_explain_names_the_cases(plain_spark: SparkSession, tmp_path: Path) -> None:
    base = unzip_fixture("cow_v6_simplekeygen_nonhivestyle_overwritetable", tmp_path)
    text = ChangeQuery(plain_spark, str(base)).explain("earliest")
    assert "BASE_FILE_INSERT" in text and "REPLACE_COMMIT" in text
    assert row_multiset([], []) == Counter()


def test_typed_and_debezium_formats(plain_spark: SparkSession, tmp_path: Path) -> None:
    base = unzip_fixture("mor_avro_v9_txns_simple_nometa", tmp_path)
    query = ChangeQuery(plain_spark, str(base))
    hudi_rows = query.changes("earliest").collect()
    typed = query.changes("earliest", format="typed").collect()
    assert Counter(r.op for r in typed) == Counter(r.op for r in hudi_rows)
    updates = [r for r in typed if r.op == "u"]
    assert updates and all(r.before.txn_id == r.after.txn_id == r.record_key for r in updates)
    assert all(r.requested_time < r.completion_time for r in typed)
    debezium = query.changes("earliest", format="debezium").collect()
    assert Counter(r.op for r in debezium) == Counter("c" if r.op == "i" else r.op for r in hudi_rows)
    assert {r.source.table for r in debezium} == {"v9_txns_mor_simple_nometa"}
    assert all(r.ts_ms > 0 for r in debezium)
    with pytest.raises(ValueError, match="unknown change format"):
        query.changes("earliest", format="avro")  # type: ignore[arg-type]


def test_predicates_prune_and_filter_changes(plain_spark: SparkSession, tmp_path: Path) -> None:
    base = unzip_fixture("mor_avro_v9_txns_simple_meta", tmp_path)
    query = ChangeQuery(plain_spark, str(base))
    everything = query.changes("earliest", format="typed").collect()

    def matches(image: Row | None) -> bool:
        return image is not None and image.region == "eu" and image.amount > 100

    expected = Counter((r.op, r.record_key, _record(r.before), _record(r.after))
                       for r in everything if matches(r.before) or matches(r.after))
    assert expected and len(expected) < len(everything)
    # our tree, a pyspark Column and SQL, as users write them (issue #53), all to the same changes
    spellings: dict[str, Any] = {
        "ours": [col("region") == "eu", col("amount") > 100],
        "column": (F.col("region") == "eu") & (F.col("amount") > 100),
        "sql": "region = 'eu' AND amount > 100",
    }
    for spelling, predicates in spellings.items():
        got = query.changes("earliest", format="typed", predicates=predicates).collect()
        assert Counter((r.op, r.record_key, _record(r.before), _record(r.after)) for r in got) == expected, spelling
        assert sum(1 for _ in query.changes("earliest", predicates=predicates).collect()) == len(got), spelling


def spark_shaped(hudi_events: Counter[tuple[Any, ...]], completion_of: dict[str, str], mode: str,
                 compute_updates: bool) -> Counter[tuple[Any, ...]]:
    """A plain-Python model of Spark 4.2's change rows and post-processing (SPARK-55668's rules), applied to
    Hudi's own CDC events: (change type, commit version, data columns) of each row."""
    rows: list[tuple[Any, int, int, str, Any]] = []  # (key, version, side, type, data)
    for (op, ts_ms, before, after), count in hudi_events.items():
        version = int(completion_of[str(ts_ms)])
        for _ in range(count):
            if op in "ud":
                rows.append((_key(before), version, 0, "update_preimage" if op == "u" else "delete", _data(before)))
            if op in "ui":
                rows.append((_key(after), version, 1, "update_postimage" if op == "u" else "insert", _data(after)))
    by_commit: dict[tuple[Any, int], list[tuple[Any, int, int, str, Any]]] = {}
    for row in rows:
        by_commit.setdefault((row[0], row[1]), []).append(row)
    rows = []
    for group in by_commit.values():
        kinds = sorted(r[3] for r in group)
        if kinds == ["delete", "insert"]:  # a replace commit moved the record
            if mode != "none" and group[0][4] == group[1][4]:
                continue  # a carry-over
            if compute_updates:
                group = [(k, v, s, "update_preimage" if t == "delete" else "update_postimage", d)
                         for k, v, s, t, d in group]
        rows.extend(group)
    if mode == "netChanges":
        by_key: dict[Any, list[tuple[Any, int, int, str, Any]]] = {}
        for row in sorted(rows, key=lambda r: (r[1], r[2])):
            by_key.setdefault(row[0], []).append(row)
        rows = []
        for changes in by_key.values():
            existed = changes[0][3] in ("delete", "update_preimage")
            exists = changes[-1][3] in ("insert", "update_postimage")
            first, last = changes[0], changes[-1]
            if existed and exists:
                rows += [(*first[:3], "update_preimage" if compute_updates else "delete", first[4]),
                         (*last[:3], "update_postimage" if compute_updates else "insert", last[4])]
            elif existed:
                rows.append((*first[:3], "delete", first[4]))
            elif exists:
                rows.append((*last[:3], "insert", last[4]))
    return Counter((kind, version, data) for _, version, _, kind, data in rows)


def _data(image: Any) -> Any:
    return tuple((k, v) for k, v in image if not k.startswith("_hoodie_"))


def _key(image: Any) -> Any:
    return dict(image)["id"]


# CI: netChanges with updates computed (carry-overs dropped, pairs relabelled, keys folded); each mode under --full
@pytest.mark.parametrize(("mode", "compute_updates"), [
    pytest.param(m, u, marks=() if (m, u) == ("netChanges", True) else pytest.mark.full)
    for m, u in (("none", False), ("dropCarryovers", False), ("dropCarryovers", True), ("netChanges", False),
                 ("netChanges", True))])
def test_spark_shaped_changes_equal_sparks_rules_over_hudis_cdc(
    spark: SparkSession, plain_spark: SparkSession, local_base_path: str, mode: str, compute_updates: bool
) -> None:
    table = HudiTable.create(spark, local_base_path, SCHEMA, record_key="id", ordering_field="ts",
                             partition_by="part", table_type="COPY_ON_WRITE", cdc="DATA_BEFORE_AFTER",
                             metadata_table=False,
                             options={"hoodie.clean.automatic": "false", "hoodie.parquet.small.file.limit": "0"})
    commits = write_history(spark, table)
    # a replace commit rewriting key 6 as it is (a carry-over) and moving key 3 with a new value (an update)
    commits.append(table.insert_overwrite(spark.createDataFrame(
        [(6, "u6", 50, "p0"), (3, "moved", 60, "p0"), (15, "n15", 60, "p0")], SCHEMA)))
    # Hudi's ts_ms names a commit by its requested time
    completion_of = {i.requested_time: str(i.completion_time) for i in table.timeline()}
    query = ChangeQuery(plain_spark, local_base_path)
    data_columns = ["id", "v", "ts", "part"]
    for begin, end in (("earliest", None), (commits[1], commits[5])):
        rows = query.changes(begin, end, format="spark", deduplication_mode=mode,  # type: ignore[arg-type]
                             compute_updates=compute_updates).collect()
        assert rows and list(rows[0].asDict()) == [*data_columns, "_change_type", "_commit_version",
                                                   "_commit_timestamp"]
        ours = Counter((r._change_type, r._commit_version,
                        tuple(sorted((c, r[c]) for c in data_columns if r[c] is not None))) for r in rows)
        theirs = spark_shaped(events(table.hudi.cdc(begin, end)), completion_of, mode, compute_updates)
        assert ours == theirs, f"({begin}, {end}]\nours only: {ours - theirs}\nmodel only: {theirs - ours}"
        for r in rows:  # one timestamp per commit: its completion time
            assert r._commit_timestamp.strftime("%Y%m%d%H%M%S%f")[:17] == str(r._commit_version)
    kinds = Counter(r._change_type for r in query.changes(commits[0], format="spark",
                                                          deduplication_mode=mode,  # type: ignore[arg-type]
                                                          compute_updates=compute_updates).collect())
    if mode == "netChanges" and not compute_updates:  # a key changed over the range: a delete and an insert
        assert kinds["update_preimage"] == kinds["update_postimage"] == 0 and kinds["delete"] and kinds["insert"]
    else:
        assert kinds["update_preimage"] == kinds["update_postimage"] > 0


def test_spark_shaped_options_are_refused_as_spark_refuses_them(plain_spark: SparkSession, tmp_path: Path) -> None:
    query = ChangeQuery(plain_spark, str(unzip_fixture("cow_v9_txns_simple_nometa", tmp_path)))
    with pytest.raises(ValueError, match="UPDATE_DETECTION_REQUIRES_CARRY_OVER_REMOVAL"):
        query.changes("earliest", format="spark", deduplication_mode="none", compute_updates=True)
    with pytest.raises(ValueError, match="INVALID_DEDUPLICATION_MODE"):
        query.changes("earliest", format="spark", deduplication_mode="latest")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="format='spark'"):
        query.changes("earliest", deduplication_mode="netChanges")
