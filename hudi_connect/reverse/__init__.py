"""The reverse streamer (RFC-70): stream a Hudi table out to Kafka, files and PostgreSQL."""

from hudi_connect.reverse.checkpoint import Checkpoint, CheckpointStore
from hudi_connect.reverse.sinks import FileSink, KafkaSink, PostgresSink
from hudi_connect.reverse.streamer import BatchResult, ReverseStream

__all__ = ["BatchResult", "Checkpoint", "CheckpointStore", "FileSink", "KafkaSink", "PostgresSink", "ReverseStream"]
