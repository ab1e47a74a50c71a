"""The locally built images' tags, the engine's command, and the endpoints `stack up` writes; no engine needed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hudi_connect_stack.containers import hdfs_env
from hudi_connect_stack.endpoints import (
    AzuriteEndpoint,
    GcsEndpoint,
    HdfsEndpoint,
    HiveMetastoreEndpoint,
    KafkaEndpoint,
    MinioEndpoint,
    PostgresEndpoint,
    SparkConnectEndpoint,
    ZooKeeperEndpoint,
)
from hudi_connect_stack.engine import podman_command
from hudi_connect_stack.standalone import StackEndpoints, env_of, render_env_file

from hudi_connect_stack import images


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
    assert {"openjdk-17-jre-headless", "python3", "python3-venv", "postgresql-15", "tini", "nodejs"} <= set(packages)
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
    gcs=GcsEndpoint("http://127.0.0.1:4443"),
    azurite=AzuriteEndpoint("http://127.0.0.1:10000/devstoreaccount1", "devstoreaccount1", "a2V5+/=="),
    hdfs=HdfsEndpoint("hdfs://127.0.0.1:8020", "127.0.0.1:9870", "/tmp/run dir/hdfs/client-conf"),
    hudi_storages=SparkConnectEndpoint("127.0.0.1", 15004, "tok-en_3", "hudi-storages"),
    hive_metastore=HiveMetastoreEndpoint("thrift://127.0.0.1:9083", "file:///tmp/run/hive-warehouse"),
    plain_metastore=SparkConnectEndpoint("127.0.0.1", 15005, "tok-en_4", "plain-metastore"),
    zookeeper=ZooKeeperEndpoint("127.0.0.1", 2181),
)


def test_the_env_file_reads_back_in_a_shell_as_the_endpoints(tmp_path: Path) -> None:
    env = env_of(STACK)
    assert env["HUDI_CONNECT_SPARK_URL"] == "sc://127.0.0.1:15002/;x-hudi-connect-token=tok-en_1"
    assert env["KAFKA_BOOTSTRAP_SERVERS"] == "127.0.0.1:9092"
    assert env["HUDI_CONNECT_POSTGRES_DSN"] == "postgresql://hudi:p%40ss%20word@127.0.0.1:5432/hudi"
    # the variables the storages' own clients read, as the servers' workers do
    assert env["STORAGE_EMULATOR_HOST"] == "http://127.0.0.1:4443"
    assert "BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;" in env["AZURE_STORAGE_CONNECTION_STRING"]
    assert env["HADOOP_CONF_DIR"] == "/tmp/run dir/hdfs/client-conf" and env["HADOOP_USER_NAME"] == "hudi"
    assert env["HUDI_CONNECT_HDFS_URI"] == "hdfs://127.0.0.1:8020"
    assert env["HUDI_CONNECT_STORAGES_SPARK_URL"].startswith("sc://127.0.0.1:15004/")
    assert "HUDI_CONNECT_PLAIN_STORAGES_SPARK_URL" not in env
    assert env["HIVE_METASTORE_URIS"] == "thrift://127.0.0.1:9083"
    assert env["HUDI_CONNECT_PLAIN_METASTORE_SPARK_URL"].startswith("sc://127.0.0.1:15005/")
    assert "HUDI_CONNECT_METASTORE_SPARK_URL" not in env
    assert env["HUDI_CONNECT_ZOOKEEPER"] == "127.0.0.1:2181"
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


def test_the_hdfs_image_writes_its_configuration_from_the_environment(tmp_path: Path) -> None:
    # the apache/hadoop image's interface, as testcontainers/hdfs/entrypoint.sh implements it
    env = {**hdfs_env({"rpc": 1, "http": 2, "datanode": 3, "datanode_ipc": 4, "datanode_http": 5}),
           "HDFS-SITE.XML_x.escaped": "a&b<c>", "NOT-A.XML": "ignored", "HADOOP_CONF_DIR": str(tmp_path),
           "PATH": "/usr/bin:/bin"}
    env.pop("ENSURE_NAMENODE_DIR")  # formatting needs the image's hdfs command
    entrypoint = images.BUILD_FILES / "hdfs" / "entrypoint.sh"
    done = subprocess.run(["bash", str(entrypoint), "echo", "ran"], env=env, capture_output=True, text=True,
                          check=True)
    assert done.stdout == "ran\n"
    import xml.etree.ElementTree as ElementTree

    def settings(name: str) -> dict[str, str]:
        root = ElementTree.parse(tmp_path / name).getroot()
        return {str(p.findtext("name")): str(p.findtext("value")) for p in root.iter("property")}

    assert settings("core-site.xml") == {k.split("_", 1)[1]: v for k, v in env.items() if k.startswith("CORE-SITE")}
    hdfs = settings("hdfs-site.xml")
    assert hdfs == {k.split("_", 1)[1]: v for k, v in env.items() if k.startswith("HDFS-SITE")}
    assert hdfs["x.escaped"] == "a&b<c>"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["core-site.xml", "hdfs-site.xml"]
