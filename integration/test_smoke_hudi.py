"""Hudi COW and MOR tables written and read back through Spark Connect.

History of each table: insert ids 0..n-1 (value = id, ts = 1), upsert the even
ids with value = 100 + id and ts = 2 plus one new id n, delete id 1. The model
below applies the same steps to a dict.
"""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

SCHEMA = "id int, value int, part string, ts long"
N = 20


def _options(table_type: str) -> dict[str, str]:
    return {
        "hoodie.table.name": f"smoke_{table_type.lower()}",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "part",
    }


def _write(spark: SparkSession, rows: list[tuple[int, int, str, int]], path: str, table_type: str,
           operation: str, mode: str = "append") -> None:
    options = _options(table_type) | {"hoodie.datasource.write.operation": operation}
    spark.createDataFrame(rows, SCHEMA).write.format("hudi").options(**options).mode(mode).save(path)


def _part(key: int) -> str:
    return f"p{key % 3}"


def write_history_and_model(spark: SparkSession, path: str, table_type: str) -> dict[int, tuple[int, str]]:
    model: dict[int, tuple[int, str]] = {}
    inserts = [(i, i, _part(i), 1) for i in range(N)]
    _write(spark, inserts, path, table_type, "insert", mode="overwrite")
    model.update({i: (v, p) for i, v, p, _ in inserts})
    upserts = [(i, 100 + i, _part(i), 2) for i in range(0, N, 2)] + [(N, N, _part(N), 2)]
    _write(spark, upserts, path, table_type, "upsert")
    model.update({i: (v, p) for i, v, p, _ in upserts})
    _write(spark, [(1, 1, _part(1), 3)], path, table_type, "delete")
    del model[1]
    return model


def read_back(spark: SparkSession, path: str) -> dict[int, tuple[int, str]]:
    rows = spark.read.format("hudi").load(path).select("id", "value", "part").collect()
    return {r.id: (r.value, r.part) for r in rows}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_table_on_minio_reads_back_equal_to_the_model(spark: SparkSession, s3a_base_path: str, table_type: str) -> None:
    model = write_history_and_model(spark, s3a_base_path, table_type)
    assert read_back(spark, s3a_base_path) == model


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_table_on_local_fs_reads_back_equal_to_the_model(
    spark: SparkSession, local_base_path: str, table_type: str
) -> None:
    model = write_history_and_model(spark, local_base_path, table_type)
    assert read_back(spark, local_base_path) == model
