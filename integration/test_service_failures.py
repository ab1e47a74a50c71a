"""A service that cannot start fails loudly, naming itself and showing its log."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from hudi_connect_stack.kafka import start_kafka
from hudi_connect_stack.minio import start_minio

from hudi_connect.core.errors import ServiceStartError


def _occupied_port() -> socket.socket:
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    return blocker


def test_kafka_on_a_taken_port_fails_with_its_log_tail(tmp_path: Path) -> None:
    with _occupied_port() as blocker, pytest.raises(ServiceStartError) as raised:
        start_kafka(tmp_path, port=blocker.getsockname()[1], timeout=60)
    assert raised.value.service == "kafka"
    assert "Address already in use" in raised.value.log_tail


def test_minio_on_a_taken_port_fails_with_its_log_tail(tmp_path: Path) -> None:
    with _occupied_port() as blocker, pytest.raises(ServiceStartError) as raised:
        start_minio(tmp_path, port=blocker.getsockname()[1], timeout=30)
    assert raised.value.service == "minio"
    assert "port is already in use" in raised.value.log_tail
