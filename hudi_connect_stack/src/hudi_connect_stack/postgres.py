"""PostgreSQL as a local process with a data directory of its own.

PostgreSQL refuses to run as root, so when the stack runs as root it creates
(once) an unprivileged system user and runs ``initdb`` and ``postgres`` as it.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import secrets
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from hudi_connect.core.errors import ProvisioningError, ServiceStartError
from hudi_connect_stack import provision
from hudi_connect_stack.endpoints import PostgresEndpoint
from hudi_connect_stack.process import LOOPBACK, RunningService, as_user, free_port, launch, wait_until_ready

READY_TIMEOUT = 60.0
SERVICE_USER = "hudi-connect-pg"
DATABASE = "hudi"
DB_USER = "hudi"


def service_user() -> str | None:
    """The user to run PostgreSQL as: ``None`` (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SERVICE_USER)
    except KeyError as missing:
        useradd = shutil.which("useradd")
        if useradd is None:
            raise ProvisioningError(
                "running as root but 'useradd' is missing: cannot create a user for PostgreSQL"
            ) from missing
        subprocess.run(
            [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVICE_USER],
            check=True, capture_output=True,
        )
    return SERVICE_USER


def postgres_command(bin_dir: Path, data_dir: Path, socket_dir: Path, port: int) -> list[str]:
    return [
        str(bin_dir / "postgres"), "-D", str(data_dir), "-p", str(port),
        "-c", f"listen_addresses={LOOPBACK}", "-c", f"unix_socket_directories={socket_dir}",
        "-c", "fsync=off", "-c", "max_connections=50",
    ]


def _hand_over(path: Path, user: str | None) -> None:
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(path, entry.pw_uid, entry.pw_gid)


def reachable_by(user: str, path: Path) -> bool:
    """Whether ``user`` may enter ``path`` and every directory above it (their search permission for it)."""
    entry = pwd.getpwnam(user)
    groups = set(os.getgrouplist(user, entry.pw_gid))
    for directory in (path, *path.parents):
        status = directory.stat()
        bit = stat.S_IXUSR if status.st_uid == entry.pw_uid else stat.S_IXGRP if status.st_gid in groups \
            else stat.S_IXOTH
        if not status.st_mode & bit:
            return False
    return True


def service_home(run_dir: Path, user: str | None) -> Path:
    """PostgreSQL's directory for ``run_dir``: ``run_dir/postgres``, where the service user can reach it. Under
    a directory it cannot enter (root's home, where the default run directory lies when the stack runs as
    root), the files live in a directory of the system's temporary folder named after ``run_dir`` (the same
    one on every start), and ``run_dir/postgres`` links to it."""
    home = run_dir / "postgres"
    run_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(run_dir, 0o755)  # the service user must be able to reach its directory
    if user is None or reachable_by(user, run_dir):
        home.mkdir(exist_ok=True)
        os.chmod(home, 0o755)
        return home
    digest = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:16]
    outside = Path(tempfile.gettempdir()) / f"hudi-connect-postgres-{digest}"
    outside.mkdir(exist_ok=True)
    os.chmod(outside, 0o755)
    if not home.is_symlink():
        if home.exists():
            shutil.rmtree(home)  # an earlier start's files the service user could never reach
        home.symlink_to(outside, target_is_directory=True)
    return outside


def start_postgres(run_dir: Path, *, port: int | None = None, timeout: float = READY_TIMEOUT) -> RunningService:
    """initdb (once per ``run_dir``), start the server, and create the ``hudi`` database."""
    bin_dir = provision.ensure_postgres()
    user = service_user()
    home = service_home(run_dir, user)
    data_dir, socket_dir = home / "data", home / "socket"
    password = secrets.token_hex(16)
    if not (data_dir / "PG_VERSION").exists():
        for directory in (data_dir, socket_dir):
            directory.mkdir(exist_ok=True)
            _hand_over(directory, user)
        password_file = home / "password"
        password_file.write_text(password)
        _hand_over(password_file, user)
        result = subprocess.run(
            as_user([str(bin_dir / "initdb"), "-D", str(data_dir), "-U", DB_USER, f"--pwfile={password_file}",
                     "--auth=scram-sha-256", "-E", "UTF8", "--locale=C"], user),
            capture_output=True, text=True, timeout=timeout,
        )
        password_file.unlink()
        if result.returncode != 0:
            raise ServiceStartError("postgres", f"initdb failed (exit {result.returncode})",
                                    (result.stdout + result.stderr)[-3000:])
        (home / "credentials").write_text(password)
    password = (home / "credentials").read_text().strip()
    port = port or free_port()
    process, popen = launch(
        "postgres", postgres_command(bin_dir, data_dir, socket_dir, port), log=home / "postgres.log", user=user
    )
    endpoint = PostgresEndpoint(LOOPBACK, port, DB_USER, password, DATABASE)
    pg_isready = bin_dir / "pg_isready"
    wait_until_ready(
        process,
        lambda: subprocess.run([str(pg_isready), "-q", "-h", LOOPBACK, "-p", str(port)]).returncode == 0,
        timeout=timeout,
        popen=popen,
    )
    _create_database(endpoint)
    return RunningService(endpoint, (process,))


def _create_database(endpoint: PostgresEndpoint) -> None:
    import psycopg

    with psycopg.connect(
        host=endpoint.host, port=endpoint.port, user=endpoint.user, password=endpoint.password,
        dbname="postgres", autocommit=True,
    ) as connection:
        exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", (endpoint.database,)).fetchone()
        if exists is None:
            connection.execute(f'CREATE DATABASE "{endpoint.database}"')
