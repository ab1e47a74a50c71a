"""Spark writes to and reads from a real PostgreSQL over JDBC."""

from __future__ import annotations

import uuid

import psycopg
from hudi_connect_stack.endpoints import PostgresEndpoint
from pyspark.sql import SparkSession


def test_spark_jdbc_round_trip_agrees_with_psycopg(spark: SparkSession, postgres_endpoint: PostgresEndpoint) -> None:
    table = f"smoke_{uuid.uuid4().hex[:8]}"
    rows = [(i, f"name-{i}", i * 1.5) for i in range(100)]
    jdbc = {
        "url": postgres_endpoint.jdbc_url,
        "user": postgres_endpoint.user,
        "password": postgres_endpoint.password,
        "driver": "org.postgresql.Driver",
        "dbtable": table,
    }
    spark.createDataFrame(rows, "id int, name string, score double").write.format("jdbc").options(**jdbc).save()

    with psycopg.connect(postgres_endpoint.dsn) as connection:
        stored = connection.execute(f"SELECT id, name, score FROM {table} ORDER BY id").fetchall()
    assert stored == rows

    read = spark.read.format("jdbc").options(**jdbc).load().orderBy("id").collect()
    assert [tuple(r) for r in read] == rows
