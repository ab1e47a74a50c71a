"""PostgreSQL as a local process with a data directory of its own.

PostgreSQL refuses to run as root, so when the stack runs as root it creates
(once) an unprivileged system user and runs ``initdb`` and ``postgres`` as it.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
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


def start_postgres(run_dir: Path, *, port: int | None = None, timeout: float = READY_TIMEOUT) -> RunningService:
    """initdb (once per ``run_dir``), start the server, and create the ``hudi`` database."""
    bin_dir = provision.ensure_postgres()
    user = service_user()
    home = run_dir / "postgres"
    home.mkdir(parents=True, exist_ok=True)
    os.chmod(run_dir, 0o755)  # the service user must be able to reach its directory
    os.chmod(home, 0o755)
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
