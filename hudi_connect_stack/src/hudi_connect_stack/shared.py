"""Start each service once per test run and share it between processes.

pytest-xdist runs tests in several worker processes; the first worker that
needs a service starts it under a file lock and records its endpoint and
processes in a state file; the others read it. The process that owns the run
(the xdist controller, or pytest itself without xdist) stops everything at
the end. A service that failed to start is recorded as failed, so every
worker reports the same error instead of each retrying for minutes.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hudi_connect.core.errors import ServiceStartError
from hudi_connect_stack.endpoints import E, endpoint_from_json, endpoint_to_json
from hudi_connect_stack.process import RunningService, ServiceProcess, containers_running, pid_alive


class SharedServices:
    """A directory of started services: ``<name>.json`` each, guarded by ``<name>.lock``."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.state_dir = run_dir / "services"
        self.state_dir.mkdir(parents=True, exist_ok=True)

    @contextmanager
    def _locked(self, name: str) -> Iterator[None]:
        with (self.state_dir / f"{name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def get(self, name: str, kind: type[E], start: Callable[[Path], RunningService]) -> E:
        """The endpoint of service ``name``, starting it with ``start(run_dir)`` if needed."""
        state_file = self.state_dir / f"{name}.json"
        with self._locked(name):
            if state_file.exists():
                state = json.loads(state_file.read_text())
                if "error" in state:
                    raise ServiceStartError(name, state["error"])
                if all(pid_alive(p["pid"]) for p in state["processes"]) and containers_running(
                    state.get("containers", [])
                ):
                    return endpoint_from_json(kind, state["endpoint"])
                with contextlib.suppress(Exception):  # its engine may be gone with it
                    _stop_recorded(state)  # a half-dead service: replace it
            try:
                running = start(self.run_dir)
            except ServiceStartError as error:
                state_file.write_text(json.dumps({"error": str(error)}))
                raise
            if not isinstance(running.endpoint, kind):
                raise TypeError(f"service {name} started a {type(running.endpoint).__name__}, not a {kind.__name__}")
            state_file.write_text(json.dumps(_state_of(running)))
            return running.endpoint

    def stop_all(self) -> list[str]:
        """Stop every recorded service; returns their names."""
        stopped = []
        for state_file in sorted(self.state_dir.glob("*.json")):
            with self._locked(state_file.stem):
                state = json.loads(state_file.read_text())
                _stop_recorded(state)
                state_file.unlink()
            stopped.append(state_file.stem)
        return stopped


def _state_of(running: RunningService) -> dict[str, Any]:
    return {
        "endpoint": endpoint_to_json(running.endpoint),  # type: ignore[arg-type]
        "processes": [{"name": p.name, "pid": p.pid, "log": str(p.log)} for p in running.processes],
        "containers": list(running.containers),
    }


def _stop_recorded(state: dict[str, Any]) -> None:
    processes = tuple(ServiceProcess(p["name"], p["pid"], Path(p["log"])) for p in state.get("processes", []))
    RunningService(None, processes, tuple(state.get("containers", []))).stop()
