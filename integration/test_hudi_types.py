"""Hudi 1.2's new column types (RFC-99), written by Hudi 1.2 itself through the DataFrame writer with the
``hudi_type`` field metadata its users set (issue #32). BLOB, a record of type, inline data and an external
reference, reads equal to Hudi's own reads, COW and MOR (base files and log blocks). VECTOR, fixed-size bytes
that Hudi reads as an array of numbers, is refused by name by every jar-free entry point, before any row, while
Hudi reads it; VARIANT, which Hudi's own Spark 3.5 reader refuses, is refused by name too (unit tests: Spark 3.5
cannot write it)."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    FloatType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from hudi_connect.cdc import ChangeQuery
from hudi_connect.core.errors import UnsupportedTableFeatureError
from hudi_connect.reader import TableReader
from hudi_connect.table.hudi_table import HudiTable
from integration.test_conformance_matrix import IGNORED, multiset
from integration.test_conformance_refusals import ENTRY_POINTS

REFERENCE = StructType([StructField("external_path", StringType()), StructField("offset", LongType()),
                        StructField("length", LongType()), StructField("managed", BooleanType())])
BLOB = StructField("content", StructType([StructField("type", StringType()), StructField("data", BinaryType()),
                                          StructField("reference", REFERENCE)]), True, {"hudi_type": "BLOB"})
VECTOR = StructField("embedding", ArrayType(FloatType(), containsNull=False), True, {"hudi_type": "VECTOR(4)"})


def _blob(key: int, ts: int) -> tuple[Any, ...] | None:
    if key % 3 == 0:
        return ("INLINE", bytearray(b"\x89PNG" + bytes([key, ts])), None)
    if key % 3 == 1:
        return ("OUT_OF_LINE", None, (f"s3://bucket/k{key}.bin", ts * 10, 100 + key, ts % 2 == 0))
    return None


def _write(spark: SparkSession, path: str, table_type: str, column: StructField, value: Any, *,
           cdc: bool = True) -> None:
    schema = StructType([StructField("id", StringType(), False), StructField("ts", LongType()),
                         StructField("part", StringType()), column])
    for ts, keys in ((1, range(6)), (2, range(3, 9)), (3, range(0, 9, 2))):  # inserts, then updates in log blocks
        rows = [(f"k{k}", ts, "ab"[k % 2], value(k, ts)) for k in keys]
        (spark.createDataFrame(rows, schema).write.format("hudi")
         .option("hoodie.table.name", "typed").option("hoodie.datasource.write.recordkey.field", "id")
         .option("hoodie.datasource.write.precombine.field", "ts")
         .option("hoodie.datasource.write.partitionpath.field", "part")
         .option("hoodie.datasource.write.table.type", table_type).option("hoodie.table.cdc.enabled", str(cdc).lower())
         .option("hoodie.parquet.small.file.limit", "0").mode("append").save(path))


@pytest.mark.parametrize("table_type", [pytest.param("COPY_ON_WRITE", marks=pytest.mark.full), "MERGE_ON_READ"])
def test_blob_columns_read_equal_hudis(spark: SparkSession, plain_spark: SparkSession, local_base_path: str,
                                       table_type: str) -> None:
    _write(spark, local_base_path, table_type, BLOB, _blob)
    hudi = HudiTable.open(spark, local_base_path)
    reader = TableReader(plain_spark, local_base_path)
    ours = reader.snapshot()
    assert ours.schema["content"].dataType == hudi.hudi.snapshot().schema["content"].dataType
    columns = sorted(set(ours.columns) - IGNORED)
    mine, theirs = multiset(ours, columns), multiset(hudi.hudi.snapshot(with_meta_columns=True), columns)
    assert mine == theirs and len(mine) == 9, (mine - theirs, theirs - mine)
    assert {r.content.type for r in ours.collect() if r.content} == {"INLINE", "OUT_OF_LINE"}
    commits = list(reader.view.timeline().write_commits())
    for commit in commits:
        assert multiset(reader.as_of(commit), columns) == multiset(hudi.hudi.as_of(commit, with_meta_columns=True),
                                                                   columns), commit
    assert multiset(reader.incremental(commits[0]), columns) == \
        multiset(hudi.hudi.incremental(commits[0], with_meta_columns=True), columns)
    changes = ChangeQuery(plain_spark, local_base_path).changes("earliest")
    assert changes.count() == hudi.hudi.cdc("earliest").count() > 0


@pytest.mark.parametrize("table_type", [pytest.param("COPY_ON_WRITE", marks=pytest.mark.full), "MERGE_ON_READ"])
def test_vector_columns_are_refused_by_name_where_hudi_reads_them(
    spark: SparkSession, plain_spark: SparkSession, local_base_path: str, table_type: str,
) -> None:
    # Hudi 1.2's own upsert of a COW table with CDC fails on a VECTOR column ("Error upserting bucketType UPDATE"):
    # that table is written without CDC, and the change query is refused for that reason first
    cdc = table_type == "MERGE_ON_READ"
    _write(spark, local_base_path, table_type, VECTOR, lambda k, ts: [float(k), ts / 4, -1.0, 2.5], cdc=cdc)
    theirs = HudiTable.open(spark, local_base_path).hudi.snapshot()
    assert sorted(r.embedding[:2] for r in theirs.collect()) == sorted([float(k), 0.75 if k % 2 == 0 and k in
                                                                        range(0, 9, 2) else 0.5 if k > 2 else 0.25]
                                                                       for k in range(9))
    for name in ("snapshot", "read_optimized", "time_travel", "incremental", *(("changes",) if cdc else ()),
                 "reverse_stream"):
        with pytest.raises(UnsupportedTableFeatureError, match=r"VECTOR columns .*column embedding's Avro logicalType"):
            ENTRY_POINTS[name](plain_spark, local_base_path)
