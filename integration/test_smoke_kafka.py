"""Spark produces to and consumes from a real Kafka broker."""

from __future__ import annotations

from hudi_connect_stack.endpoints import KafkaEndpoint
from hudi_connect_stack.testing.topics import read_topic
from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def test_spark_writes_records_that_kafka_and_spark_read_back(
    spark: SparkSession, kafka_endpoint: KafkaEndpoint, kafka_topic: str
) -> None:
    expected = {f"key-{i}": f"value-{i}" for i in range(50)}
    df = spark.createDataFrame(sorted(expected.items()), "key string, value string")
    (
        df.write.format("kafka")
        .option("kafka.bootstrap.servers", kafka_endpoint.bootstrap_servers)
        .option("topic", kafka_topic)
        .save()
    )
    consumed = read_topic(kafka_endpoint, kafka_topic)
    assert {r.key.decode(): r.value.decode() for r in consumed if r.key and r.value} == expected
    assert len(consumed) == len(expected)

    read = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kafka_endpoint.bootstrap_servers)
        .option("subscribe", kafka_topic)
        .option("startingOffsets", "earliest")
        .load()
        .select(F.col("key").cast("string").alias("key"), F.col("value").cast("string").alias("value"))
        .collect()
    )
    assert {r.key: r.value for r in read} == expected
