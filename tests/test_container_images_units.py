"""The locally built images' tags, the engine's command, and the endpoints `stack up` writes; no engine needed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from hudi_connect.stack import images
from hudi_connect.stack.endpoints import KafkaEndpoint, MinioEndpoint, PostgresEndpoint, SparkConnectEndpoint
from hudi_connect.stack.engine import podman_command
from hudi_connect.stack.standalone import StackEndpoints, env_of, render_env_file


@pytest.fixture
def build_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "testcontainers"
    shutil.copytree(images.BUILD_FILES, copy)
    monkeypatch.setattr(images, "BUILD_FILES", copy)
    return copy


def _tags() -> dict[str, str]:
    return {service: images.service_reference(service) for service in images.SERVICES} | {
        "base": images.base_reference()}


def test_every_service_has_build_files_and_a_tag_of_its_own() -> None:
    tags = _tags()
    assert len(set(tags.values())) == len(tags)
    for service in ("base", *images.SERVICES):
        assert (images.BUILD_FILES / service / "Containerfile").is_file()
        assert tags[service].startswith(f"{images.REPOSITORY}/{service}:")
    assert tags == _tags()  # the same inputs, the same tags


def test_a_changed_build_file_retags_its_image_only(build_files: Path) -> None:
    before = _tags()
    entrypoint = build_files / "kafka" / "entrypoint.sh"
    entrypoint.write_text(entrypoint.read_text() + "\n# changed\n")
    after = _tags()
    assert after["kafka"] != before["kafka"]
    assert {k: v for k, v in after.items() if k != "kafka"} == {k: v for k, v in before.items() if k != "kafka"}


def test_a_changed_base_retags_every_image(build_files: Path) -> None:
    before = _tags()
    packages = build_files / "base" / "packages.txt"
    packages.write_text(packages.read_text() + "curl\n")
    assert "curl" in images.base_packages()
    after = _tags()
    assert all(after[name] != before[name] for name in before)


def test_the_base_has_what_the_services_run() -> None:
    packages = images.base_packages()
    assert {"openjdk-17-jre-headless", "python3", "python3-venv", "postgresql-15", "tini"} <= set(packages)
    names = {p.split("==")[0] for p in images.BASE_PYTHON_PACKAGES}
    assert {"pyarrow", "pandas", "fastavro", "boto3", "pg8000", "py4j"} <= names
    assert "pylance" not in names  # its flavor runs on the local backend only


def test_the_podman_service_serves_until_stopped_on_the_runs_socket(tmp_path: Path) -> None:
    command = podman_command(tmp_path / "podman.sock")
    assert command[1:] == ["system", "service", "--time=0", f"unix://{tmp_path / 'podman.sock'}"]


STACK = StackEndpoints(
    backend="docker",
    hudi=SparkConnectEndpoint("127.0.0.1", 15002, "tok-en_1", "hudi"),
    plain=SparkConnectEndpoint("127.0.0.1", 15003, "tok-en_2", "plain"),
    minio=MinioEndpoint("http://127.0.0.1:9000", "access", "secret"),
    kafka=KafkaEndpoint("127.0.0.1:9092"),
    postgres=PostgresEndpoint("127.0.0.1", 5432, "hudi", "p@ss word", "hudi"),
)


def test_the_env_file_reads_back_in_a_shell_as_the_endpoints(tmp_path: Path) -> None:
    env = env_of(STACK)
    assert env["HUDI_CONNECT_SPARK_URL"] == "sc://127.0.0.1:15002/;x-hudi-connect-token=tok-en_1"
    assert env["KAFKA_BOOTSTRAP_SERVERS"] == "127.0.0.1:9092"
    assert env["HUDI_CONNECT_POSTGRES_DSN"] == "postgresql://hudi:p%40ss%20word@127.0.0.1:5432/hudi"
    env_file = tmp_path / "stack.env"
    env_file.write_text(render_env_file(env))
    shown = subprocess.run(["bash", "-c", f"set -a; . {env_file}; env -0"], capture_output=True, text=True,
                           check=True, env={})
    read_back = dict(entry.split("=", 1) for entry in shown.stdout.split("\0") if "=" in entry)
    assert {key: read_back[key] for key in env} == env


def test_services_not_started_are_absent_from_the_env() -> None:
    env = env_of(StackEndpoints(backend="local", minio=STACK.minio))
    assert set(env) == {"HUDI_CONNECT_BACKEND", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                        "AWS_REGION"}
