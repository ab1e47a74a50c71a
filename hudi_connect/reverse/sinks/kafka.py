"""Kafka sink: one record per change, keyed by the record key, through Spark's Kafka sink.

Headers carry ``op`` (r/c/u/d), ``commit_time`` and ``completion_time``. The
value is the row as JSON (``json``: the after image, or the before image of a
delete) or a Debezium envelope (``debezium``). With ``tombstones`` a delete is
(``json``) or is followed by (``debezium``) a record with a null value, as log
compaction expects. Records of one key stay in commit order: a key's changes
go to one task, sorted, and the producer is idempotent. Delivery is at least
once: a batch retried after a failure may repeat records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from hudi_connect.cdc.query import instant_millis
from hudi_connect.core.executor.image_json import JSON_OPTIONS
from hudi_connect.reverse.changes import in_commit_order, row_image
from hudi_connect.reverse.sink import BatchContext, sink_failure

KafkaFormat = Literal["json", "debezium"]
# ordered, exactly-once per partition within a producer session
PRODUCER_DEFAULTS = {"kafka.acks": "all", "kafka.enable.idempotence": "true",
                     "kafka.max.in.flight.requests.per.connection": "5"}


@dataclass(frozen=True)
class KafkaSink:
    """A reverse-stream (RFC-70) sink sending one Kafka record per change, keyed by the record key.

    Written through Spark's Kafka sink (``spark-sql-kafka`` on the server) with an idempotent producer; a
    key's records stay in commit order. At least once: a retried batch may repeat records.

    Example::

        sink = KafkaSink("broker:9092", "trips", "debezium", tombstones=True)
        ReverseStream(spark, "s3a://lake/trips", "trips-to-kafka", [sink]).run_once()
    """

    bootstrap_servers: str
    topic: str
    format: KafkaFormat = "json"
    tombstones: bool = False
    # further producer settings (``kafka.*``, e.g. SASL): sent to the server, never logged nor checkpointed
    options: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.format not in ("json", "debezium"):
            raise ValueError(f"Kafka format {self.format!r}: choose 'json' or 'debezium'")
        bad = [k for k in self.options if not k.startswith("kafka.")]
        if bad:
            raise ValueError(f"Kafka producer options must start with 'kafka.': {sorted(bad)}")

    def describe(self) -> str:
        """The brokers, topic and format (never the producer options, which may hold credentials)."""
        return f"kafka://{self.bootstrap_servers}/{self.topic} ({self.format})"

    def published_end(self, sequence: int) -> str | None:
        """Always None: Kafka keeps no record of which batch it received."""
        return None  # Kafka keeps no batch identity: a retried batch is sent again (at least once)

    def records(self, batch: DataFrame, context: BatchContext) -> DataFrame:
        """The Kafka rows (key, value, headers) of a batch, in per-key commit order (pure plan)."""
        ordered = batch if context.unique_keys else in_commit_order(batch)
        headers = F.array(*(F.struct(F.lit(name).alias("key"), F.col(column).cast("binary").alias("value"))
                            for name, column in (("op", "op"), ("commit_time", "commit_time"),
                                                 ("completion_time", "completion_time"))))
        deleted = F.col("op") == "d"
        key = F.col("record_key").cast("binary").alias("key")
        if self.format == "json":
            value: Column = F.to_json(row_image(), JSON_OPTIONS)
            if self.tombstones:
                value = F.when(deleted, F.lit(None).cast("string")).otherwise(value)
            return ordered.select(key, value.alias("value"), headers.alias("headers"))
        envelope = F.to_json(F.struct(
            "before", "after", "op",
            F.struct(F.lit("hudi").alias("connector"), F.lit(context.table_name).alias("table"),
                     F.col("commit_time"), F.col("completion_time")).alias("source"),
            instant_millis(F.col("completion_time"), context.timeline_zone).alias("ts_ms"),
        ), JSON_OPTIONS)
        if not self.tombstones:
            return ordered.select(key, envelope.alias("value"), headers.alias("headers"))
        # Debezium follows a delete with a tombstone: two records from one change, in that order
        values = F.when(deleted, F.array(envelope, F.lit(None).cast("string"))).otherwise(F.array(envelope))
        return ordered.select(key, F.explode(values).alias("value"), headers.alias("headers"))

    def write(self, batch: DataFrame, context: BatchContext) -> None:
        """Send the batch's :meth:`records` to the topic; SinkError if Spark's Kafka write fails."""
        rows = self.records(batch, context)
        options = PRODUCER_DEFAULTS | dict(self.options) | {"kafka.bootstrap.servers": self.bootstrap_servers,
                                                            "topic": self.topic}
        try:
            rows.write.format("kafka").options(**options).save()
        except PySparkException as error:
            raise sink_failure(self, context, error, "records already sent are sent again on retry") from error
