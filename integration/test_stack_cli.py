"""`hudi-connect stack up|down`: the stack for suites in other languages, on the run's backend.

Started detached in a run directory of its own, its env file must name
endpoints that answer (MinIO with its credentials, PostgreSQL by its DSN,
Spark Connect with its token, the Hive Metastore and a server keeping its
catalog there), and `stack down` must stop all of it.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest
from hudi_connect_stack.hive_metastore import databases
from hudi_connect_stack.process import port_open
from minio import Minio

from hudi_connect.client.server import connect


def _stack(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hudi_connect", "stack", *args], capture_output=True, text=True,
                          timeout=600)


def _env_file(path: Path) -> dict[str, str]:
    # read by a real shell, as a user's `set -a; . stack.env` would
    shown = subprocess.run(["bash", "-c", f"set -a; . {path}; env -0"], capture_output=True, text=True, check=True,
                           env={"PATH": os.environ["PATH"]})
    return dict(entry.split("=", 1) for entry in shown.stdout.split("\0") if "=" in entry)


def test_stack_up_writes_endpoints_that_answer_and_stack_down_stops_them(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    backend = pytestconfig.getoption("--hudi-connect-backend")
    backend = "local" if backend == "auto" else backend
    # outside pytest's private temporary folders: PostgreSQL's unprivileged service user must reach it
    run_dir = Path(tempfile.mkdtemp(prefix="hudi-connect-stack-test-"))
    up = _stack("up", "--services", "minio,postgres,plain,plain-metastore", "--backend", backend, "--detach",
                "--run-dir", str(run_dir), "--env-file", str(tmp_path / "my.env"))
    try:
        assert up.returncode == 0, up.stderr[-3000:]
        assert "HUDI_CONNECT_PLAIN_SPARK_URL" in up.stdout and "stack down" in up.stdout
        env = _env_file(tmp_path / "my.env")
        assert env["HUDI_CONNECT_BACKEND"] == backend
        assert (run_dir / "stack.json").is_file()

        s3 = Minio(env["AWS_ENDPOINT_URL"].split("://", 1)[1], access_key=env["AWS_ACCESS_KEY_ID"],
                   secret_key=env["AWS_SECRET_ACCESS_KEY"], region=env["AWS_REGION"], secure=False)
        s3.make_bucket("stack-check")
        s3.put_object("stack-check", "k", io.BytesIO(b"v"), 1)
        assert s3.get_object("stack-check", "k").read() == b"v"

        port = int(env["HUDI_CONNECT_POSTGRES_DSN"].rsplit(":", 1)[1].split("/")[0])
        with psycopg.connect(env["HUDI_CONNECT_POSTGRES_DSN"]) as connection:
            assert connection.execute("select 40 + 2").fetchone() == (42,)

        spark = connect(env["HUDI_CONNECT_PLAIN_SPARK_URL"])
        try:
            assert spark.range(5).count() == 5
        finally:
            spark.stop()

        # the Hive Metastore, and a server keeping its catalog there: what it creates, the metastore lists
        host, metastore_port = env["HIVE_METASTORE_URIS"].removeprefix("thrift://").split(":")
        catalogued = connect(env["HUDI_CONNECT_PLAIN_METASTORE_SPARK_URL"])
        try:
            catalogued.sql("CREATE DATABASE stack_check").collect()
        finally:
            catalogued.stop()
        assert {"default", "stack_check"} <= set(databases(host, int(metastore_port)))
    finally:
        down = _stack("down", "--run-dir", str(run_dir))
    assert down.returncode == 0, down.stderr[-3000:]
    assert {"minio", "postgres", "spark-connect-plain", "hive-metastore", "spark-connect-plain-metastore"} <= set(
        down.stdout.split(": ", 1)[1].strip().split(", "))
    assert not port_open(port)
    assert not (run_dir / "stack.env").exists()
    shutil.rmtree(run_dir, ignore_errors=True)


def test_stack_up_with_its_default_run_directory(tmp_path: Path, pytestconfig: pytest.Config) -> None:
    """As the README shows it: no --run-dir, so the stack's files go under the cache (in root's home, which
    PostgreSQL's unprivileged service user cannot enter, when the stack runs as root, as CI does)."""
    backend = pytestconfig.getoption("--hudi-connect-backend")
    backend = "local" if backend == "auto" else backend
    up = _stack("up", "--services", "postgres", "--backend", backend, "--detach",
                "--env-file", str(tmp_path / "stack.env"))
    try:
        assert up.returncode == 0, up.stderr[-3000:]
        env = _env_file(tmp_path / "stack.env")
        with psycopg.connect(env["HUDI_CONNECT_POSTGRES_DSN"]) as connection:
            assert connection.execute("select 40 + 2").fetchone() == (42,)
    finally:
        down = _stack("down")
    assert down.returncode == 0, down.stderr[-3000:]
    assert "postgres" in down.stdout
