"""Kafka topic helpers for tests: create a topic, read everything in it."""

from __future__ import annotations

from dataclasses import dataclass

from hudi_connect_stack.endpoints import KafkaEndpoint


@dataclass(frozen=True)
class KafkaRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]


def create_topic(endpoint: KafkaEndpoint, name: str, partitions: int = 1) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=endpoint.bootstrap_servers, client_id="hudi-connect-tests")
    try:
        admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
    finally:
        admin.close()


def read_topic(endpoint: KafkaEndpoint, name: str, timeout_ms: int = 5000) -> list[KafkaRecord]:
    """Every record of ``name`` from the beginning, ordered by partition and offset."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        name,
        bootstrap_servers=endpoint.bootstrap_servers,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=timeout_ms,
    )
    try:
        records = [
            KafkaRecord(m.topic, m.partition, m.offset, m.key, m.value, tuple(m.headers or ()))
            for m in consumer
        ]
    finally:
        consumer.close()
    return sorted(records, key=lambda r: (r.partition, r.offset))
