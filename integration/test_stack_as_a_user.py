"""`hudi-connect stack up` as an unprivileged user runs it, with every default: no --run-dir, no cache setting, the
user's own home. (As root, `test_stack_cli.py` runs it with its default run directory.)

The user gets a copy of this run's Python environment and of the sources, as a user who installed the harness
would have them; the stack's run directory must then land in the user's own cache and work there.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from hudi_connect_stack.engine import PODMAN_SOCKET, engine_answers, podman_command
from hudi_connect_stack.process import launch, stop

USER = "hudi-connect-user"
REPO = Path(__file__).resolve().parent.parent


def _user() -> pwd.struct_passwd:
    """An unprivileged account with a home (created once; as a user already, the current one)."""
    if os.geteuid() != 0:
        return pwd.getpwuid(os.geteuid())
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", USER], check=True)
        return pwd.getpwnam(USER)


def _python_for(user: pwd.struct_passwd, place: Path) -> tuple[str, str]:
    """A Python the user can run with the harness importable: (interpreter, PYTHONPATH)."""
    if os.geteuid() != 0:
        return sys.executable, os.environ.get("PYTHONPATH", "")
    shutil.copytree(sys.prefix, place / "venv", symlinks=True)
    checkout = place / "checkout"  # laid out as the repository is, as an editable install runs from it
    for name in ("hudi_connect", "hudi_connect_stack/src/hudi_connect_stack", "testcontainers"):
        shutil.copytree(REPO / name, checkout / name, symlinks=True)
    subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", str(place)], check=True)
    os.chmod(place, 0o755)
    return str(place / "venv" / "bin" / "python"), f"{checkout}{os.pathsep}{checkout / 'hudi_connect_stack' / 'src'}"


@contextlib.contextmanager
def _engine_for(user: pwd.struct_passwd) -> Iterator[dict[str, str]]:
    """A Docker API the user may use (as the docker group gives one): podman's service on a socket of the user's
    (the run's own engine, wherever it is, may sit in a directory the user cannot enter)."""
    if os.geteuid() != 0:
        yield {name: os.environ[name] for name in ("DOCKER_HOST",) if name in os.environ}
        return
    directory = Path(tempfile.mkdtemp(prefix="hc-engine-"))
    os.chmod(directory, 0o755)
    socket = directory / PODMAN_SOCKET
    process, _ = launch("podman", podman_command(socket), log=directory / "podman.log")
    try:
        deadline = time.monotonic() + 30
        while not engine_answers(f"unix://{socket}", timeout=1.0):
            assert time.monotonic() < deadline, (directory / "podman.log").read_text()[-2000:]
            time.sleep(0.2)
        os.chown(socket, user.pw_uid, user.pw_gid)
        yield {"DOCKER_HOST": f"unix://{socket}"}
    finally:
        stop(process)
        shutil.rmtree(directory, ignore_errors=True)


def _as_user(user: pwd.struct_passwd, python: str, pythonpath: str, *args: str,
             extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {"HOME": user.pw_dir, "USER": user.pw_name, "PATH": os.environ["PATH"], "PYTHONPATH": pythonpath,
           **{name: os.environ[name] for name in ("HUDI_CONNECT_IMAGES",) if name in os.environ}, **(extra or {})}
    command = [python, "-m", "hudi_connect", "stack", *args]
    if os.geteuid() == 0:
        command = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups", *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, cwd=user.pw_dir)


def test_stack_up_with_every_default_as_an_unprivileged_user(pytestconfig: pytest.Config) -> None:
    """On the run's backend: local (leg 1) or docker (the container leg, through an engine the user may use)."""
    backend = pytestconfig.getoption("--hudi-connect-backend")
    backend = "local" if backend == "auto" else backend
    user = _user()
    place = Path(f"/tmp/hudi-connect-user-python-{os.getpid()}")
    python, pythonpath = _python_for(user, place)
    env_file = Path(user.pw_dir) / "stack.env"
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, place, ignore_errors=True)
        if os.geteuid() == 0:
            cleanup.callback(shutil.rmtree, Path(user.pw_dir) / ".cache" / "hudi-connect", ignore_errors=True)
        engine = cleanup.enter_context(_engine_for(user)) if backend == "docker" else {}
        _stack_up_and_down(user, python, pythonpath, backend, env_file, engine)


def _stack_up_and_down(user: pwd.struct_passwd, python: str, pythonpath: str, backend: str, env_file: Path,
                       engine: dict[str, str]) -> None:
    up = _as_user(user, python, pythonpath, "up", "--services", "postgres", "--backend", backend, "--detach",
                  "--env-file", str(env_file), extra=engine)
    try:
        assert up.returncode == 0, up.stderr[-3000:]
        run_dir = Path(user.pw_dir) / ".cache" / "hudi-connect" / "stack"
        assert (run_dir / "stack.env").is_file()  # the default: the user's own cache
        assert os.stat(run_dir / "stack.env").st_uid == user.pw_uid
        dsn = next(line.split("=", 1)[1].strip("'") for line in env_file.read_text().splitlines()
                   if line.startswith("HUDI_CONNECT_POSTGRES_DSN="))
        with psycopg.connect(dsn) as connection:
            assert connection.execute("select current_user").fetchone() is not None
    finally:
        down = _as_user(user, python, pythonpath, "down", extra=engine)
    assert down.returncode == 0, down.stderr[-3000:]
    assert "postgres" in down.stdout and not (run_dir / "stack.env").exists()
