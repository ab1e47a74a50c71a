"""Tables written through Spark SQL (CREATE TABLE, INSERT, UPDATE, DELETE, MERGE INTO with full and partial
SETs), read jar-free and compared with Hudi's own reads of the same tables at every commit.

On MOR tables of version 8 and later, MERGE INTO with a partial SET writes partial-update log blocks
(``IS_PARTIAL``): each block's records carry only the assigned columns, merged over the older record by
ordering value (a stale partial update is dropped whole).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hudi_connect_stack.testing.cdc_history import events
from pyspark.sql import DataFrame, SparkSession

from hudi_connect.cdc import ChangeQuery
from hudi_connect.core.format.expressions import col
from hudi_connect.core.format.log.format import HeaderKey, read_log_blocks
from hudi_connect.reader import TableReader
from hudi_connect.table.hudi_table import HudiTable
from hudi_connect.table_spec import FileIndex


def _records(df: DataFrame) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(sorted((k, v) for k, v in row.asDict().items() if not k.startswith("_hoodie")))
                   for row in df.collect())


def _partial_blocks(path: str) -> int:
    found = 0
    for log in Path(path).rglob(".*.log.*"):
        if not log.name.endswith((".crc", ".cdc")):
            found += sum(b.headers.get(HeaderKey.IS_PARTIAL) == "true" for b in read_log_blocks(log.read_bytes()))
    return found


@pytest.mark.parametrize("table_type", ["mor", pytest.param("cow", marks=pytest.mark.full)])
def test_sql_written_tables_read_as_hudi_reads_them(
    spark: SparkSession, plain_spark: SparkSession, local_base_path: str, table_type: str
) -> None:
    name = f"sql_{table_type}_{abs(hash(local_base_path)) % 10**8}"
    spark.sql(f"""CREATE TABLE {name} (id int, name string, price double, ts long, part string) USING hudi
        PARTITIONED BY (part) LOCATION '{local_base_path}'
        TBLPROPERTIES (type = '{table_type}', primaryKey = 'id', preCombineField = 'ts',
                       'hoodie.table.cdc.enabled' = 'true',
                       'hoodie.table.cdc.supplemental.logging.mode' = 'DATA_BEFORE_AFTER')""")
    statements = [
        f"INSERT INTO {name} VALUES (1, 'a', 10.0, 1, 'p0'), (2, 'b', 20.0, 1, 'p0'), (3, 'c', 30.0, 1, 'p1'),"
        " (4, 'd', 40.0, 1, 'p1')",
        # partial SETs: only price and ts assigned
        f"""MERGE INTO {name} t USING (SELECT * FROM VALUES (1, 11.0D, 2L, 'p0'), (3, 33.0D, 2L, 'p1')
            AS s(id, price, ts, part)) s ON t.id = s.id
            WHEN MATCHED THEN UPDATE SET t.price = s.price, t.ts = s.ts""",
        f"UPDATE {name} SET name = 'bb', ts = 3 WHERE id = 2",
        # a stale partial update (lower ordering value) and one assigning an explicit null
        f"""MERGE INTO {name} t USING (SELECT * FROM VALUES (1, 5.0D, 1L, 'p0'), (3, CAST(NULL AS DOUBLE), 4L, 'p1')
            AS s(id, price, ts, part)) s ON t.id = s.id
            WHEN MATCHED THEN UPDATE SET t.price = s.price, t.ts = s.ts""",
        f"DELETE FROM {name} WHERE id = 4",
        # a full SET and an insert of a new key
        f"""MERGE INTO {name} t USING (SELECT * FROM VALUES (2, 'B', 22.0D, 5L, 'p0'), (5, 'e', 50.0D, 5L, 'p1')
            AS s(id, name, price, ts, part)) s ON t.id = s.id
            WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""",
        f"""MERGE INTO {name} t USING (SELECT * FROM VALUES (5, 'E', 6L, 'p1') AS s(id, name, ts, part)) s
            ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.name = s.name, t.ts = s.ts""",
    ]
    for statement in statements:
        spark.sql(statement)
    if table_type == "mor":
        assert _partial_blocks(local_base_path) >= 3, "MERGE INTO wrote no partial-update log blocks"
    table = HudiTable.open(spark, local_base_path)
    commits = list(table.timeline().write_commits())
    assert len(commits) >= len(statements)
    reader = TableReader(plain_spark, local_base_path)
    theirs = _records(table.hudi.snapshot())
    assert _records(reader.snapshot()) == theirs
    assert {row[0][1]: dict(row) for row in theirs}[1]["price"] == 11.0  # the stale partial update lost
    for commit in commits:
        hudi = _records(spark.read.format("hudi").option("as.of.instant", commit.requested_time)
                        .load(local_base_path))
        assert _records(reader.as_of(commit)) == hudi, f"as of {commit.requested_time}"
    timeline = reader.view.timeline()
    for begin, end in (("earliest", None), (commits[1], None), (commits[0], commits[3]), (commits[2], commits[4])):
        ours = _records(reader.incremental(begin, end))
        # the model: the state as of the range's last commit (its values equal Hudi's time travel, above), the
        # records the range wrote. (Its commit times follow Hudi's partialMerge: the newer record's meta fields.
        # Hudi's own time travel agreed on a fresh session; once, late in a long one, it gave a partially
        # updated record an older commit time.)
        in_range = [c.requested_time for c in timeline.commits_between(begin, end, by_completion=True)]
        state = reader.as_of(max(in_range))
        assert ours == _records(state.where(state["_hoodie_commit_time"].isin(in_range))), (begin, end)
        if table_type == "cow":  # Hudi 1.2's incremental query returns corrupt rows over partial-update blocks
            assert ours == _records(table.hudi.incremental(begin, end)), (begin, end)
    query = ChangeQuery(plain_spark, local_base_path)
    for begin, end in (("earliest", None), (commits[1], commits[4])):
        ours, hudis = events(query.changes(begin, end)), events(table.hudi.cdc(begin, end))
        assert ours == hudis, f"({begin}, {end}]\nours only: {ours - hudis}\nHudi only: {hudis - ours}"
    spark.sql(f"DROP TABLE {name}")


def test_statistics_never_prune_a_record_merged_from_two_files(
    spark: SparkSession, plain_spark: SparkSession, local_base_path: str
) -> None:
    # A partial SET leaves `name` in the base file and puts the new `price` in a log file: the merged record
    # matches `price = 99 AND name = 'a'` while neither file's column statistics admit the conjunction. Hudi
    # 1.2's own read with data skipping (its default) returns no row here; the oracle is its read without.
    name = f"sql_stats_{abs(hash(local_base_path)) % 10**8}"
    spark.sql(f"""CREATE TABLE {name} (id int, name string, price double, ts long) USING hudi
        LOCATION '{local_base_path}'
        TBLPROPERTIES (type = 'mor', primaryKey = 'id', preCombineField = 'ts',
                       'hoodie.metadata.index.column.stats.enable' = 'true')""")
    spark.sql(f"INSERT INTO {name} VALUES (1, 'a', 10.0, 1), (2, 'b', 20.0, 1)")
    spark.sql(f"""MERGE INTO {name} t USING (SELECT * FROM VALUES (1, 99.0D, 2L) AS s(id, price, ts)) s
        ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.price = s.price, t.ts = s.ts""")
    assert _partial_blocks(local_base_path) == 1
    wanted = (col("price") == 99.0) & (col("name") == "a")
    theirs = _records(spark.read.format("hudi").option("hoodie.enable.data.skipping", "false")
                      .load(local_base_path).where("price = 99.0 AND name = 'a'"))
    assert sum(theirs.values()) == 1
    index = FileIndex(plain_spark, local_base_path)
    assert index.view.properties.raw.get("hoodie.table.metadata.partitions", "").count("column_stats") == 1
    for alone in (col("price") == 99.0, col("name") == "a"):  # each column alone: statistics keep the slice
        assert sum(len(s.file_slices) for s in index.list_files_at(predicates=[alone])) == 1
    assert _records(TableReader(plain_spark, local_base_path).snapshot(predicates=[wanted])) == theirs
    # HudiTable's reads through Hudi turn its data skipping off on such tables
    hudis = HudiTable.open(spark, local_base_path).hudi.snapshot()
    assert _records(hudis.where("price = 99.0 AND name = 'a'")) == theirs
    spark.sql(f"DROP TABLE {name}")
