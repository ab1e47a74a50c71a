"""The container engine: a Docker engine that answers, or podman's Docker API started for the run.

Where no Docker engine answers but podman is installed (``provision podman``),
:func:`ensure_engine` starts ``podman system service`` on a socket in the run
directory, points ``DOCKER_HOST`` at it for this process (testcontainers and
the Docker SDK read it), and :func:`stop_started_engine` stops it after the
run's containers are gone.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from pathlib import Path

from hudi_connect.core.errors import ServiceStartError
from hudi_connect_stack.process import ServiceProcess, launch, log_tail, stop

PING_TIMEOUT = 3.0
ENGINE_READY_TIMEOUT = 30.0
PODMAN_SOCKET = "podman.sock"
PODMAN_PID = "podman-service.pid"
MAX_SOCKET_PATH = 107  # sun_path holds 108 bytes with the terminating NUL


def engine_answers(docker_host: str | None = None, timeout: float = PING_TIMEOUT) -> bool:
    """Whether a Docker API (Docker, or podman's) answers a ping within ``timeout`` seconds."""
    try:
        import docker

        client = docker.DockerClient(base_url=docker_host, timeout=int(timeout)) if docker_host else \
            docker.from_env(timeout=int(timeout))
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:  # no SDK, no socket, refused, timed out: all mean "no engine"
        return False


def podman_command(socket: Path) -> list[str]:
    # --time=0: serve until stopped, however long a test runs without calling it
    return [shutil.which("podman") or "podman", "system", "service", "--time=0", f"unix://{socket}"]


def ensure_engine(run_dir: Path) -> None:
    """A Docker API for this run: the one ``DOCKER_HOST`` (or the default socket) names if it answers, else a
    podman service of the run's own, started once under a lock and shared by pytest-xdist's workers."""
    if engine_answers():
        return
    socket = run_dir / PODMAN_SOCKET
    docker_host = f"unix://{socket}"
    if len(str(socket)) > MAX_SOCKET_PATH:
        raise ServiceStartError("container engine", f"the socket path {socket} is longer than a unix socket "
                                f"allows ({MAX_SOCKET_PATH} bytes): use a shorter run directory")
    if shutil.which("podman") is None:
        raise ServiceStartError(
            "container engine", "no Docker engine answers and podman is not installed: run "
            "`python -m hudi_connect_stack.provision podman` (Debian, root) or start Docker"
        )
    with (run_dir / "podman-service.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not engine_answers(docker_host):
            process, popen = launch("podman", podman_command(socket), log=run_dir / "podman-service.log")
            (run_dir / PODMAN_PID).write_text(str(process.pid))
            deadline = time.monotonic() + ENGINE_READY_TIMEOUT
            while not engine_answers(docker_host, timeout=1.0):
                if popen.poll() is not None or time.monotonic() > deadline:
                    stop_started_engine(run_dir)
                    raise ServiceStartError("container engine", "podman system service did not answer",
                                            log_tail(run_dir / "podman-service.log"))
                time.sleep(0.2)
    os.environ["DOCKER_HOST"] = docker_host


def use_started_engine(run_dir: Path) -> None:
    """Point ``DOCKER_HOST`` at the podman service another process started for ``run_dir``, if one did."""
    if (run_dir / PODMAN_PID).is_file():
        os.environ["DOCKER_HOST"] = f"unix://{run_dir / PODMAN_SOCKET}"


def stop_started_engine(run_dir: Path) -> None:
    """Stop the podman service :func:`ensure_engine` started for ``run_dir``, if it did."""
    pid_file = run_dir / PODMAN_PID
    if not pid_file.is_file():
        return
    stop(ServiceProcess("podman", int(pid_file.read_text()), run_dir / "podman-service.log"))
    pid_file.unlink()
