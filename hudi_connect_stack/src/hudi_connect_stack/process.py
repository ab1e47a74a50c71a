"""Start, watch and stop the local processes of the stack.

Each service runs in a session of its own (so that stopping it also stops the
JVM a launcher script forked) with its output in a log file; readiness is a
predicate polled until a deadline, and a failure carries the log's tail.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hudi_connect.core.errors import ServiceStartError

LOOPBACK = "127.0.0.1"

# How a JVM of the stack compiles. ``full``, the JVM's default tiers, for servers that work for the whole run:
# C2's code pays back its compilations there. ``quick``, C1 alone, for JVMs that live briefly or are restarted
# (servers a test kills, the standalone cluster): on CI's 2-core machine C2's compilations took a third of a
# fresh server's CPU time, and the kill suite ran 13 to 30% faster per configuration, the cluster's smoke test
# 47 s -> 33 s; on the shared servers C1 alone made the longer write tests 20 to 40% slower.
Jit = Literal["quick", "full"]


def jit_options(jit: Jit) -> list[str]:
    """The JVM options of a JIT setting: C1 only for ``quick``, none (the JVM's default tiers) for ``full``."""
    return ["-XX:TieredStopAtLevel=1"] if jit == "quick" else []


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port on ``host`` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def port_open(port: int, host: str = LOOPBACK, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


ERROR_LINE = re.compile(r"\b(ERROR|FATAL|SEVERE|Exception|Caused by)\b")


def log_tail(path: Path, lines: int = 40, first_errors: int = 8) -> str:
    """The last ``lines`` lines of a log, preceded by its first error lines.

    A JVM service that fails usually logs the cause and then a long shutdown,
    so the tail alone would bury the reason; the first lines that look like
    errors are shown above it. '' if the log does not exist.
    """
    try:
        with path.open("rb") as log:
            log.seek(0, os.SEEK_END)
            size = log.tell()
            log.seek(max(0, size - 4 * 1024 * 1024))
            all_lines = log.read().decode("utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return ""
    tail = all_lines[-lines:]
    earlier = all_lines[: max(0, len(all_lines) - lines)]
    errors = [line for line in earlier if ERROR_LINE.search(line)][:first_errors]
    if not errors:
        return "\n".join(tail)
    return "\n".join([*errors, "[...]", *tail])


def log_contains(path: Path, marker: str) -> bool:
    try:
        return marker in path.read_text(errors="replace")
    except FileNotFoundError:
        return False


@dataclass(frozen=True)
class ServiceProcess:
    """A process the stack started: its name, pid (= its process group) and log."""

    name: str
    pid: int
    log: Path


def as_user(argv: Sequence[str], user: str | None) -> list[str]:
    """``argv`` run as ``user`` through setpriv. Popen(user=...) would fork the whole client, and a
    forked child of a process running gRPC (a Spark Connect session) can crash before it execs."""
    if user is None:
        return list(argv)
    import pwd

    entry = pwd.getpwnam(user)
    return ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups", *argv]


def launch(
    name: str,
    argv: Sequence[str],
    *,
    log: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    user: str | None = None,
) -> tuple[ServiceProcess, subprocess.Popen[bytes]]:
    """Start ``argv`` in a new session with stdout and stderr appended to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        popen = subprocess.Popen(
            as_user(argv, user),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            cwd=str(cwd) if cwd else None,
            start_new_session=True,
        )
    return ServiceProcess(name, popen.pid, log), popen


def wait_until_ready(
    process: ServiceProcess,
    ready: Callable[[], bool],
    *,
    timeout: float,
    popen: subprocess.Popen[bytes] | None = None,
    interval: float = 0.25,
) -> None:
    """Poll ``ready`` until it holds; fail with the log tail on timeout or early exit."""
    deadline = time.monotonic() + timeout
    while True:
        if ready():
            return
        exit_code = popen.poll() if popen is not None else (None if pid_alive(process.pid) else -1)
        if exit_code is not None:
            stop(process)
            raise ServiceStartError(process.name, f"the process exited with code {exit_code}", log_tail(process.log))
        if time.monotonic() >= deadline:
            stop(process)
            raise ServiceStartError(process.name, f"not ready after {timeout:.0f}s", log_tail(process.log))
        time.sleep(interval)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie counts as gone: ours is reaped here; another's (an orphan whose new parent does not reap,
    # as under a container's bare PID 1) stays in the process table, and waiting for it would never end.
    try:
        finished, _ = os.waitpid(pid, os.WNOHANG)
        if finished:
            return False
    except ChildProcessError:
        pass
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False  # gone, or no /proc: os.kill said it exists
    return stat.rpartition(")")[2].split()[0] == "Z"  # the state follows the command name in parentheses


def stop(process: ServiceProcess, grace: float = 15.0) -> None:
    """Stop the process group the stack started: SIGTERM, then SIGKILL after ``grace``."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not pid_alive(process.pid):
            break
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


@dataclass(frozen=True)
class RunningService:
    """A started service: how to reach it and the processes to stop."""

    endpoint: object
    processes: tuple[ServiceProcess, ...]
    containers: tuple[str, ...] = ()  # ids, when the Docker backend started it

    def stop(self) -> None:
        for process in reversed(self.processes):
            stop(process)
        remove_containers(self.containers)


def remove_containers(ids: Sequence[str]) -> None:
    """Force-remove containers and their anonymous volumes; ones already gone are skipped. The Docker SDK is
    imported only when there are some, so stopping local services needs none."""
    if not ids:
        return
    import docker
    from docker.errors import NotFound

    client = docker.from_env()
    try:
        for container_id in ids:
            with contextlib.suppress(NotFound):
                client.api.remove_container(container_id, force=True, v=True)
    finally:
        client.close()


def containers_running(ids: Sequence[str]) -> bool:
    """Whether every container is running; False when the engine does not answer (a stale record, say after a
    reboot, must not pass for a live service)."""
    if not ids:
        return True
    import docker
    from docker.errors import DockerException

    try:
        client = docker.from_env()
        try:
            return all(client.api.inspect_container(i)["State"]["Running"] for i in ids)
        finally:
            client.close()
    except DockerException:
        return False
