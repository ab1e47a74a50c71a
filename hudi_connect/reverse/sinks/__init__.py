"""Reverse-stream sinks: Kafka, files (local, S3/MinIO) and PostgreSQL."""

from hudi_connect.reverse.sinks.files import FileSink
from hudi_connect.reverse.sinks.kafka import KafkaSink
from hudi_connect.reverse.sinks.postgres import PostgresSink

__all__ = ["FileSink", "KafkaSink", "PostgresSink"]
