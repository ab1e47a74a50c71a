"""Tables by name through a real Hive Metastore, and Hudi's SQL writes (UPDATE, MERGE INTO).

Two Connect servers keep their catalog in one Hive Metastore (standalone 3.1.3 on the stack's PostgreSQL): one
with Hudi's bundle, one without. What a table is, by name, is settled by the metastore itself; what it holds,
by Hudi's own reads on the Hudi server and a plain-Python model.

Dataset histories, each in its test: a table created by SQL and written by SQL (insert, update) on the Hudi
server; a table written by Hudi's datasource with hive sync (mode hms) and never registered otherwise; a table
created by name through ``HudiTable.create`` and then upserted, widened by a new column and cut by a partition
drop; random sequences of updates and merges (Hypothesis) against a model.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

import psycopg
import pytest
from hudi_connect_stack.endpoints import HiveMetastoreEndpoint, PostgresEndpoint
from hudi_connect_stack.hive_metastore import DATABASE as METASTORE_DATABASE
from hudi_connect_stack.testing.cdc_history import events
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession

from hudi_connect import HudiTable
from hudi_connect.core.errors import NotAHudiTableError, TableNotFoundError, UnsupportedOperationError

DB = "hc_catalog"
META = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
        "_hoodie_file_name")


@pytest.fixture(scope="module")
def database(metastore_spark: SparkSession) -> str:
    metastore_spark.sql(f"CREATE DATABASE IF NOT EXISTS {DB}").collect()
    return DB


def fresh_name(database: str) -> str:
    return f"{database}.t_{uuid.uuid4().hex[:10]}"


def rows(df: DataFrame) -> list[tuple[object, ...]]:
    data = df.drop(*[c for c in df.columns if c in META])
    return sorted((tuple(r) for r in data.select(*sorted(data.columns)).collect()),
                  key=lambda row: [(value is not None, value) for value in row])


def metastore_partitions(postgres: PostgresEndpoint, name: str) -> set[str]:
    """The partitions the metastore itself records for ``db.table`` (its own database: the oracle)."""
    database, table = name.split(".")
    with psycopg.connect(host=postgres.host, port=postgres.port, user=postgres.user, password=postgres.password,
                         dbname=METASTORE_DATABASE) as connection:
        found = connection.execute(
            'SELECT p."PART_NAME" FROM "PARTITIONS" p JOIN "TBLS" t ON p."TBL_ID" = t."TBL_ID" '
            'JOIN "DBS" d ON t."DB_ID" = d."DB_ID" WHERE d."NAME" = %s AND t."TBL_NAME" = %s', (database, table),
        ).fetchall()
    return {str(part) for (part,) in found}


def catalog_columns(spark: SparkSession, name: str) -> dict[str, str]:
    """The data columns the catalog records (``DESCRIBE``, before its partition section), meta columns aside."""
    columns: dict[str, str] = {}
    for row in spark.sql(f"DESCRIBE TABLE {name}").collect():
        if not row.col_name or row.col_name.startswith("#"):
            break
        if row.col_name not in META:
            columns[row.col_name] = row.data_type
    return columns


def tables_in(spark: SparkSession, database: str) -> set[str]:
    return {r.tableName for r in spark.sql(f"SHOW TABLES IN {database}").collect()}


# CI: MOR (and in the container leg); COW under --full
@pytest.mark.parametrize("table_type", [pytest.param("cow", marks=pytest.mark.full), "mor"])
def test_a_table_created_by_sql_on_one_server_is_read_by_name_on_the_other(
    metastore_spark: SparkSession, plain_metastore_spark: SparkSession, database: str, table_type: str,
) -> None:
    name = fresh_name(database)
    metastore_spark.sql(f"CREATE TABLE {name} (id int, amount double, ts long, city string) USING hudi "
                        f"PARTITIONED BY (city) TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', "
                        f"type = '{table_type}')").collect()
    metastore_spark.sql(f"INSERT INTO {name} VALUES (1, 1.0, 1, 'paris'), (2, 2.0, 1, 'rome'), "
                        "(3, 3.0, 1, 'rome')").collect()
    metastore_spark.sql(f"UPDATE {name} SET amount = amount * 10 WHERE city = 'rome'").collect()

    table = HudiTable.open(plain_metastore_spark, name)  # no Hudi jar: the jar-free reader at the catalog's location
    assert table.name == name
    expected = rows(metastore_spark.table(name))  # Hudi's own read of the name
    assert expected == [(1.0, "paris", 1, 1), (20.0, "rome", 2, 1), (30.0, "rome", 3, 1)]
    assert rows(table.snapshot()) == expected
    first = table.timeline().write_commits().first()
    assert first is not None
    hudi_side = HudiTable.open(metastore_spark, name)
    assert rows(table.incremental(first)) == rows(hudi_side.hudi.incremental(first)) == [
        (20.0, "rome", 2, 1), (30.0, "rome", 3, 1)]


@pytest.mark.full
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_table_hudi_synced_to_the_metastore_is_read_jar_free_by_name(
    metastore_spark: SparkSession, plain_metastore_spark: SparkSession, database: str,
    hive_metastore_endpoint: HiveMetastoreEndpoint, postgres_endpoint: PostgresEndpoint, table_type: str,
) -> None:
    synced = fresh_name(database).split(".")[1]
    path = f"{hive_metastore_endpoint.warehouse_dir}/synced/{synced}"
    data = metastore_spark.createDataFrame([(1, "a", 1, "x"), (2, "b", 1, "y"), (3, "c", 1, "y")],
                                           "id int, v string, ts long, part string")
    options = {
        "hoodie.table.name": synced, "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "part",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.hive_sync.enable": "true", "hoodie.datasource.hive_sync.mode": "hms",
        "hoodie.datasource.hive_sync.database": database, "hoodie.datasource.hive_sync.table": synced,
        "hoodie.datasource.hive_sync.partition_fields": "part",
        "hoodie.datasource.hive_sync.partition_extractor_class": "org.apache.hudi.hive.MultiPartKeysValueExtractor",
    }
    data.write.format("hudi").options(**options).mode("append").save(path)
    update = metastore_spark.createDataFrame([(2, "B", 2, "y")], "id int, v string, ts long, part string")
    update.write.format("hudi").options(**options).mode("append").save(path)

    registered = tables_in(plain_metastore_spark, database)
    # Hudi's sync registers a COW table under its name, a MOR table as <name>_ro and <name>_rt
    name = f"{database}.{synced}" if table_type == "COPY_ON_WRITE" else f"{database}.{synced}_rt"
    assert name.split(".")[1] in registered
    table = HudiTable.open(plain_metastore_spark, name)
    assert rows(table.snapshot()) == rows(HudiTable.open(metastore_spark, path).hudi.snapshot()) == [
        (1, "x", 1, "a"), (2, "y", 2, "B"), (3, "y", 1, "c")]
    assert metastore_partitions(postgres_endpoint, name) == {"part=x", "part=y"}
    if table_type == "MERGE_ON_READ":  # the read-optimized registration would not read what its name says
        with pytest.raises(UnsupportedOperationError, match="read_optimized"):
            HudiTable.open(plain_metastore_spark, f"{database}.{synced}_ro")


@pytest.mark.full  # CI's time: the catalog's slice keeps reads by name, SQL writes, UPDATE and MERGE
def test_the_catalog_follows_the_tables_writes_new_columns_and_partition_drops(
    metastore_spark: SparkSession, plain_metastore_spark: SparkSession, database: str,
    postgres_endpoint: PostgresEndpoint,
) -> None:
    name = fresh_name(database)
    table = HudiTable.create(metastore_spark, name, "id int, v string, ts long, part string", record_key="id",
                             ordering_field="ts", partition_by="part", table_type="COPY_ON_WRITE")
    assert table.name == name and table.base_path.endswith(f"/{name.replace('.', '.db/')}")

    def hudi_columns() -> dict[str, str]:
        return {f.name: f.dataType.simpleString() for f in table.hudi.snapshot().schema.fields}

    def hudi_partitions() -> set[str]:
        paths = table.hudi.snapshot(with_meta_columns=True).select("_hoodie_partition_path").distinct().collect()
        return {r[0] for r in paths}

    table.upsert(metastore_spark.createDataFrame([(1, "a", 1, "x"), (2, "b", 1, "y"), (3, "c", 1, "z")],
                                                 "id int, v string, ts long, part string"))
    assert catalog_columns(plain_metastore_spark, name) == hudi_columns()
    assert metastore_partitions(postgres_endpoint, name) == hudi_partitions() == {"part=x", "part=y", "part=z"}

    table.upsert(metastore_spark.createDataFrame([(4, "d", 2, "x", 7)], "id int, v string, ts long, part string, "
                                                 "extra int"))  # a new column: Hudi evolves the schema
    assert "extra" in hudi_columns()
    assert catalog_columns(plain_metastore_spark, name) == hudi_columns()

    table.delete_partitions(["part=z"])
    assert metastore_partitions(postgres_endpoint, name) == hudi_partitions() == {"part=x", "part=y"}
    reopened = HudiTable.open(plain_metastore_spark, name)
    assert rows(reopened.snapshot()) == rows(table.hudi.snapshot())


def test_names_that_are_missing_or_not_hudi_tables_and_path_tables_sql_writes_are_refused_by_name(
    metastore_spark: SparkSession, plain_metastore_spark: SparkSession, database: str,
    hive_metastore_endpoint: HiveMetastoreEndpoint,
) -> None:
    with pytest.raises(TableNotFoundError, match="no table named"):
        HudiTable.open(plain_metastore_spark, f"{database}.missing_table")
    with pytest.raises(TableNotFoundError, match=r"no (database|table) named"):
        HudiTable.open(plain_metastore_spark, "no_such_database.orders")
    parquet = fresh_name(database)
    metastore_spark.sql(f"CREATE TABLE {parquet} (id int) USING parquet").collect()
    with pytest.raises(NotAHudiTableError, match="not a Hudi table"):
        HudiTable.open(plain_metastore_spark, parquet)
    assert not HudiTable.exists(plain_metastore_spark, f"{database}.missing_table")

    path = f"{hive_metastore_endpoint.warehouse_dir}/by-path/{uuid.uuid4().hex[:10]}"
    by_path = HudiTable.create(metastore_spark, path, "id int, v string, ts long", record_key="id",
                               ordering_field="ts", table_type="COPY_ON_WRITE")
    before = tables_in(metastore_spark, database) | tables_in(metastore_spark, "default")
    with pytest.raises(UnsupportedOperationError, match="register"):
        by_path.update({"v": "'x'"})
    with pytest.raises(UnsupportedOperationError, match="shared Hive Metastore"):
        by_path.clean()  # Hudi's run_clean takes a catalog name: nothing is registered behind the user's back
    assert tables_in(metastore_spark, database) | tables_in(metastore_spark, "default") == before


@pytest.mark.full  # CI's slice keeps the refusals above (about 40 s of synced writes here)
def test_a_path_table_registered_later_writes_and_cleans_by_its_name_and_registers_nothing_else(
    metastore_spark: SparkSession, database: str, hive_metastore_endpoint: HiveMetastoreEndpoint,
) -> None:
    path = f"{hive_metastore_endpoint.warehouse_dir}/by-path/{uuid.uuid4().hex[:10]}"
    by_path = HudiTable.create(metastore_spark, path, "id int, v string, ts long", record_key="id",
                               ordering_field="ts", table_type="COPY_ON_WRITE")
    named = by_path.register(fresh_name(database))
    named.upsert(metastore_spark.createDataFrame([(1, "a", 1)], "id int, v string, ts long"))
    named.upsert(metastore_spark.createDataFrame([(1, "b", 2)], "id int, v string, ts long"))
    after = tables_in(metastore_spark, database) | tables_in(metastore_spark, "default")
    named.clean(retain_commits=1)  # by its name
    assert tables_in(metastore_spark, database) | tables_in(metastore_spark, "default") == after


# --- update and merge against a model -------------------------------------------------------------------

SCHEMA = "id int, amount int, note string, ts long, part string"


@dataclass(frozen=True)
class Row:
    amount: int
    note: str
    ts: int


def part_of(key: int) -> str:
    return f"p{key % 2}"


Model = dict[int, Row]


def model_rows(model: Model) -> list[tuple[object, ...]]:
    # sorted columns: amount, id, note, part, ts
    return sorted(((r.amount, k, r.note, part_of(k), r.ts) for k, r in model.items()),
                  key=lambda row: [(value is not None, value) for value in row])


@st.composite
def operations(draw: st.DrawFn) -> list[tuple[str, object]]:
    """Updates and merges; every source row carries an ordering value above any before it (Hudi keeps a stored
    record that orders after an incoming one, a rule of its own the model need not repeat here)."""
    steps: list[tuple[str, object]] = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            steps.append(("update", (draw(st.integers(2, 3)), draw(st.integers(0, 1)), draw(st.integers(1, 9)))))
            continue
        keys = draw(st.lists(st.integers(0, 9), min_size=1, max_size=5, unique=True))
        source = [(k, draw(st.integers(-3, 20))) for k in keys]
        clauses = draw(st.lists(st.sampled_from(["delete_negative", "update_partial_big", "update_all",
                                                 "insert_all", "insert_some"]), min_size=1, max_size=4, unique=True))
        steps.append(("merge", (source, clauses)))
    return steps


CLAUSE_ORDER = ["delete_negative", "update_partial_big", "update_all", "insert_some", "insert_all"]


def apply_merge(model: Model, source: list[tuple[int, int]], clauses: list[str], ts: int) -> None:
    """SQL's rule: for each source row, the first clause (in the order given) whose condition holds acts."""
    for key, amount in source:
        matched = key in model
        for clause in clauses:
            if matched and clause == "delete_negative" and amount < 0:
                del model[key]
                break
            if matched and clause == "update_partial_big" and amount > 10:
                model[key] = Row(amount, model[key].note, ts)  # the note is kept: a partial update
                break
            if matched and clause == "update_all":
                model[key] = Row(amount, f"m{key}", ts)
                break
            if not matched and clause == "insert_some" and amount % 2 == 0:
                model[key] = Row(amount, "inserted", ts)
                break
            if not matched and clause == "insert_all":
                model[key] = Row(amount, f"m{key}", ts)
                break


def build_merge(table: HudiTable, source: DataFrame, clauses: list[str]) -> object:
    merge = table.merge(source, "t.id = s.id")
    matched = [c for c in clauses if c in CLAUSE_ORDER[:3]]
    for clause in clauses:
        last = clause in matched and clause == matched[-1]
        if clause == "delete_negative":
            merge = merge.when_matched_delete("s.amount < 0")
        elif clause == "update_partial_big":
            merge = merge.when_matched_update({"amount": "s.amount", "ts": "s.ts"}, "s.amount > 10")
        elif clause == "update_all":
            merge = merge.when_matched_update_all(None if last else "TRUE")
        elif clause == "insert_some":
            merge = merge.when_not_matched_insert(
                {"id": "s.id", "amount": "s.amount", "note": "'inserted'", "ts": "s.ts", "part": "s.part"},
                "s.amount % 2 = 0")
        else:
            unmatched = [c for c in clauses if c not in CLAUSE_ORDER[:3]]
            merge = merge.when_not_matched_insert_all(None if clause == unmatched[-1] else "TRUE")
    return merge


# CI: two fixed examples on MOR (where Hudi's partial updates go wrong); --full: three on COW and MOR and twelve
# more of each from a seed
@pytest.mark.parametrize(("table_type", "examples"), [
    pytest.param("COPY_ON_WRITE", 3, marks=pytest.mark.full), ("MERGE_ON_READ", 2),
    pytest.param("MERGE_ON_READ", 3, marks=pytest.mark.full),
    *(pytest.param(table_type, 12, marks=pytest.mark.full) for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ")),
])
def test_update_and_merge_equal_a_model_and_hudis_reads_and_our_changes_equal_hudis_cdc(
    metastore_spark: SparkSession, plain_metastore_spark: SparkSession, database: str, table_type: str,
    examples: int,
) -> None:
    @seed(20261128)
    @settings(max_examples=examples, deadline=None, derandomize=examples < 12, database=None,
              suppress_health_check=list(HealthCheck))
    @given(steps=operations())
    def run(steps: list[tuple[str, object]]) -> None:
        name = fresh_name(database)
        table = HudiTable.create(metastore_spark, name, SCHEMA, record_key="id", ordering_field="ts",
                                 partition_by="part", table_type=table_type, cdc="DATA_BEFORE_AFTER")
        model: Model = {k: Row(k, f"n{k}", 1) for k in range(6)}
        table.upsert(metastore_spark.createDataFrame(
            [(k, r.amount, r.note, r.ts, part_of(k)) for k, r in model.items()], SCHEMA))
        reader = HudiTable.open(plain_metastore_spark, name)  # ours, jar-free, by name
        for ts, (kind, arguments) in enumerate(steps, start=2):
            before = table.timeline().write_commits().last()
            if kind == "update":
                modulus, remainder, added = arguments  # type: ignore[misc]
                committed = table.update({"amount": f"amount + {added}"}, f"id % {modulus} = {remainder}")
                for key, row in list(model.items()):
                    if key % modulus == remainder:
                        model[key] = Row(row.amount + added, row.note, row.ts)
            else:
                source_rows, clauses = arguments  # type: ignore[misc]
                source = metastore_spark.createDataFrame(
                    [(k, a, f"m{k}", ts, part_of(k)) for k, a in source_rows], SCHEMA)
                merge = build_merge(table, source, clauses)
                partial = "update_partial_big" in clauses
                unmatched = any(k not in model for k, _ in source_rows)
                if table_type == "MERGE_ON_READ" and partial and ("update_all" in clauses or unmatched):
                    with pytest.raises(UnsupportedOperationError, match="would lose data"):
                        merge.execute()  # type: ignore[attr-defined]
                    committed = None  # refused before anything was written: the model stays
                else:
                    committed = merge.execute()  # type: ignore[attr-defined]
                    apply_merge(model, source_rows, clauses, ts)
            note = f"{kind} {json.dumps(arguments)}"
            assert rows(reader.refresh().snapshot()) == model_rows(model), note
            assert rows(table.hudi.snapshot()) == model_rows(model), note
            if committed is not None and before is not None:
                ours, hudis = events(reader.changes(before, committed)), events(table.hudi.cdc(before, committed))
                assert ours == hudis, f"{note}\nours only: {ours - hudis}\nHudi only: {hudis - ours}"

    run()


def fresh_mor_table(spark: SparkSession, database: str, *, keys: int) -> tuple[str, HudiTable]:
    """A MOR table by name holding keys 0..keys-1 in base files only."""
    name = fresh_name(database)
    table = HudiTable.create(spark, name, SCHEMA, record_key="id", ordering_field="ts", partition_by="part",
                             table_type="MERGE_ON_READ")
    table.upsert(spark.createDataFrame([(k, k, f"n{k}", 1, part_of(k)) for k in range(keys)], SCHEMA))
    return name, table


@pytest.mark.full  # CI's time (about 16 s): it watches Hudi's behaviour behind a refusal, not ours
def test_hudis_merge_on_read_merge_writes_a_partial_update_wrongly_beside_a_whole_update_or_an_unmatched_row(
    metastore_spark: SparkSession, database: str,
) -> None:
    """Why the builder refuses that merge on MOR (``partial_update_loses_columns``): Hudi 1.2 itself, given the
    statement directly, writes NULL into the columns the partial clause leaves out. Should a Hudi release fix
    it, this fails, and the refusal can be narrowed."""
    name, table = fresh_mor_table(metastore_spark, database, keys=4)
    metastore_spark.createDataFrame([(0, 0, "m0", 3, "p0"), (2, 18, "m2", 3, "p0")], SCHEMA) \
        .createOrReplaceTempView("hudi_partial_source")
    metastore_spark.sql(f"MERGE INTO {name} t USING hudi_partial_source s ON t.id = s.id "
                        "WHEN MATCHED AND s.amount > 10 THEN UPDATE SET amount = s.amount, ts = s.ts "
                        "WHEN MATCHED THEN UPDATE SET *").collect()
    by_amount = {r.amount: r for r in table.hudi.snapshot().collect()}
    assert by_amount[18].note is None and by_amount[18].id is None  # the model says: id 2, note 'n2'
    with pytest.raises(UnsupportedOperationError, match="would lose data"):
        table.merge(metastore_spark.table("hudi_partial_source"), "t.id = s.id") \
            .when_matched_update({"amount": "s.amount", "ts": "s.ts"}, "s.amount > 10") \
            .when_matched_update_all().execute()

    # a partial update alone, beside a source row that matches no record (key 8, same partition), into file
    # groups of base files only: Hudi puts the partial record's values in the wrong columns
    name, table = fresh_mor_table(metastore_spark, database, keys=6)
    metastore_spark.createDataFrame([(8, 0, "m8", 4, "p0"), (0, 14, "m0", 4, "p0")], SCHEMA) \
        .createOrReplaceTempView("hudi_unmatched_source")
    metastore_spark.sql(f"MERGE INTO {name} t USING hudi_unmatched_source s ON t.id = s.id "
                        "WHEN MATCHED THEN UPDATE SET amount = s.amount, ts = s.ts").collect()
    assert 14 not in {r.amount for r in table.hudi.snapshot().collect()}  # the model says: id 0, amount 14
    with pytest.raises(UnsupportedOperationError, match="match no record"):
        table.merge(metastore_spark.table("hudi_unmatched_source"), "t.id = s.id") \
            .when_matched_update({"amount": "s.amount", "ts": "s.ts"}).execute()
