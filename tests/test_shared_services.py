"""Sharing services between processes: started once, failures recorded, all stopped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hudi_connect_stack.endpoints import KafkaEndpoint
from hudi_connect_stack.process import RunningService, ServiceProcess, launch, pid_alive, stop
from hudi_connect_stack.shared import SharedServices

from hudi_connect.core.errors import ServiceStartError


def _sleeper(run_dir: Path) -> RunningService:
    process, _ = launch("sleeper", ["sleep", "120"], log=run_dir / "sleeper.log")
    return RunningService(KafkaEndpoint("127.0.0.1:1"), (process,))


def test_a_service_starts_once_and_is_stopped_by_stop_all(tmp_path: Path) -> None:
    starts: list[int] = []

    def start(run_dir: Path) -> RunningService:
        starts.append(1)
        return _sleeper(run_dir)

    services = SharedServices(tmp_path)
    first = services.get("kafka", KafkaEndpoint, start)
    # a second process sees the same state directory
    second = SharedServices(tmp_path).get("kafka", KafkaEndpoint, start)
    assert first == second == KafkaEndpoint("127.0.0.1:1")
    assert len(starts) == 1
    pid = json.loads((tmp_path / "services" / "kafka.json").read_text())["processes"][0]["pid"]
    assert pid_alive(pid)
    assert services.stop_all() == ["kafka"]
    assert not pid_alive(pid)
    assert not (tmp_path / "services" / "kafka.json").exists()


def test_a_dead_service_is_started_again(tmp_path: Path) -> None:
    services = SharedServices(tmp_path)
    services.get("kafka", KafkaEndpoint, _sleeper)
    state = json.loads((tmp_path / "services" / "kafka.json").read_text())
    stop(ServiceProcess("sleeper", state["processes"][0]["pid"], Path(state["processes"][0]["log"])))
    services.get("kafka", KafkaEndpoint, _sleeper)
    new_state = json.loads((tmp_path / "services" / "kafka.json").read_text())
    assert new_state["processes"][0]["pid"] != state["processes"][0]["pid"]
    services.stop_all()


def test_a_failed_start_is_reported_to_every_later_caller(tmp_path: Path) -> None:
    calls: list[int] = []

    def broken(run_dir: Path) -> RunningService:
        calls.append(1)
        raise ServiceStartError("kafka", "port in use", "bind failed")

    services = SharedServices(tmp_path)
    with pytest.raises(ServiceStartError, match="port in use"):
        services.get("kafka", KafkaEndpoint, broken)
    with pytest.raises(ServiceStartError, match="kafka did not start"):
        services.get("kafka", KafkaEndpoint, broken)
    assert len(calls) == 1
