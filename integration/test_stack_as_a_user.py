"""`hudi-connect stack up` as an unprivileged user runs it, with every default: no --run-dir, no cache setting, the
user's own home. (As root, `test_stack_cli.py` runs it with its default run directory.)

The user gets a copy of this run's Python environment and of the sources, as a user who installed the harness
would have them; the stack's run directory must then land in the user's own cache and work there.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg

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
    for name in ("hudi_connect", "hudi_connect_stack/src/hudi_connect_stack"):
        shutil.copytree(REPO / name, place / "src" / Path(name).name, symlinks=True)
    subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", str(place)], check=True)
    os.chmod(place, 0o755)
    return str(place / "venv" / "bin" / "python"), str(place / "src")


def _as_user(user: pwd.struct_passwd, python: str, pythonpath: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"HOME": user.pw_dir, "USER": user.pw_name, "PATH": os.environ["PATH"], "PYTHONPATH": pythonpath}
    command = [python, "-m", "hudi_connect", "stack", *args]
    if os.geteuid() == 0:
        command = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups", *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, cwd=user.pw_dir)


def test_stack_up_with_every_default_as_an_unprivileged_user() -> None:
    user = _user()
    place = Path(f"/tmp/hudi-connect-user-python-{os.getpid()}")
    python, pythonpath = _python_for(user, place)
    env_file = Path(user.pw_dir) / "stack.env"
    try:
        up = _as_user(user, python, pythonpath, "up", "--services", "postgres", "--backend", "local", "--detach",
                      "--env-file", str(env_file))
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
            down = _as_user(user, python, pythonpath, "down")
        assert down.returncode == 0, down.stderr[-3000:]
        assert "postgres" in down.stdout and not (run_dir / "stack.env").exists()
    finally:
        shutil.rmtree(place, ignore_errors=True)
        if os.geteuid() == 0:
            shutil.rmtree(Path(user.pw_dir) / ".cache" / "hudi-connect", ignore_errors=True)
