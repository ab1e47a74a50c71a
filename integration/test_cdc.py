"""The CDC engine against Hudi's own CDC query, and against time travel.

Each CDC-enabled table (COW or MOR, each supplemental logging mode) gets the
history of :mod:`hudi_connect.testing.cdc_history`, or a seeded random one. Our
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
from pyspark.sql import DataFrame, Row, SparkSession

from hudi_connect.cdc import ChangeQuery
from hudi_connect.errors import ServerMisconfiguredError
from hudi_connect.format.timeline import Instant
from hudi_connect.reader import TableReader
from hudi_connect.spec import col
from hudi_connect.table.hudi_table import HudiTable
from hudi_connect.testing.cdc_history import IGNORED, SCHEMA, events, write_history
from hudi_connect.testing.compare import row_multiset
from hudi_connect.testing.fixture_tables import unzip_fixture

CDC_IN_CI = {("COPY_ON_WRITE", "DATA_BEFORE_AFTER"), ("MERGE_ON_READ", "OP_KEY_ONLY")}
RANDOM_IN_CI = {("COPY_ON_WRITE", "OP_KEY_ONLY"), ("MERGE_ON_READ", "DATA_BEFORE_AFTER")}


# CI: each table type once, COW where its .cdc files hold both images (the JVM and the Python decoders), MOR with
# the least logged; every pair under --full
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
    # whole events in .cdc files (COW, DATA_BEFORE_AFTER): auto decodes this small table's in Python;
    # the plain server (spark-avro) decodes them in the JVM when asked, over every range too
    whole_events = table_type == "COPY_ON_WRITE" and mode == "DATA_BEFORE_AFTER"
    in_jvm = ChangeQuery(plain_spark, local_base_path, avro_decoding="jvm")
    for begin, end in (("earliest", None), (commits[0], commits[3]), (commits[2], commits[5]),
                       (commits[4], None)):
        theirs = events(table.hudi_cdc(begin, end))
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
        assert "decoded in Python workers: the .cdc files are small" in query.explain("earliest")
        theirs = events(table.hudi_cdc("earliest"))
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
# CI: each table type once, with the modes the test above leaves out there; every pair under --full
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
        theirs = events(table.hudi_cdc(begin, end))
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
    predicates = [col("region") == "eu", col("amount") > 100]
    got = query.changes("earliest", format="typed", predicates=predicates).collect()
    assert Counter((r.op, r.record_key, _record(r.before), _record(r.after)) for r in got) == expected
    assert expected and len(expected) < len(everything)
    assert sum(1 for _ in query.changes("earliest", predicates=predicates).collect()) == len(got)
