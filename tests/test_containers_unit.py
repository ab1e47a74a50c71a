"""The docker backend without a Docker engine: engine detection, the pinned
image specs of ``testcontainers/services.toml``, and the settings it renders."""

from __future__ import annotations

import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hudi_connect_stack.azurite import BLOB_PORT, azurite_flags
from hudi_connect_stack.containers import (
    ANY_ADDRESS,
    AZURITE_DATA,
    CONTAINER_PYTHON,
    DEFAULT_IMAGES,
    HDFS_COMMAND,
    HDFS_HOME,
    HDFS_PUBLISHED,
    KAFKA_CONTROLLER_PORT,
    MINIO_PORT,
    POSTGRES_PORT,
    SPEC_FILE,
    DockerBackend,
    Image,
    container_server_confs,
    docker_available,
    hdfs_env,
    kafka_env,
    load_images,
)
from hudi_connect_stack.endpoints import (
    AzuriteEndpoint,
    GcsEndpoint,
    HdfsEndpoint,
    MinioEndpoint,
    StorageEndpoints,
)
from hudi_connect_stack.fake_gcs import fake_gcs_flags
from hudi_connect_stack.hdfs import ROLES
from hudi_connect_stack.postgres import DATABASE, DB_USER
from hudi_connect_stack.spark_connect import storage_env

from hudi_connect.core.errors import ServiceStartError
from hudi_connect_stack import versions

MINIO = MinioEndpoint("http://127.0.0.1:9000", "access-xyz", "secret-very-secret")
HDFS_PORTS = {role: 20000 + index for index, role in enumerate(ROLES)}
STORAGES = StorageEndpoints(
    GcsEndpoint("http://127.0.0.1:4443"),
    AzuriteEndpoint("http://127.0.0.1:10000/devstoreaccount1", "devstoreaccount1", "a2V5"),
    HdfsEndpoint("hdfs://127.0.0.1:20000", "127.0.0.1:20001", "/tmp/run/hdfs/client-conf"),
)


def _spec() -> dict[str, Any]:
    with SPEC_FILE.open("rb") as spec:
        return tomllib.load(spec)


NO_ENGINE = "unix:///nonexistent/hudi-connect/docker.sock"  # a socket that cannot exist


def test_docker_available_answers_false_quickly_without_an_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE)
    started = time.monotonic()
    assert docker_available() is False
    assert time.monotonic() - started < 5


def test_docker_available_gives_up_on_an_unreachable_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "tcp://192.0.2.1:2375")  # TEST-NET-1: never routed
    started = time.monotonic()
    assert docker_available() is False
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(("method", "service"), [
    ("minio", "minio"), ("kafka", "kafka"), ("postgres", "postgres"), ("gcs", "fake-gcs"), ("azurite", "azurite"),
    ("hdfs", "hdfs"),
])
def test_starting_without_an_engine_is_a_service_start_error(
    method: str, service: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE)
    with pytest.raises(ServiceStartError) as failure:  # azurite's: its port, when a local Azurite holds it
        getattr(DockerBackend(), method)(tmp_path)
    assert failure.value.service == service


@pytest.mark.parametrize(("flavor", "storages"), [("hudi-storages", None), ("hudi", STORAGES)])
def test_storages_go_exactly_to_the_storages_flavors(
    flavor: str, storages: StorageEndpoints | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE)
    with pytest.raises(ValueError, match="-storages"):
        DockerBackend().spark_connect(tmp_path, flavor, MINIO, storages)  # type: ignore[arg-type]


def test_spec_file_pins_every_image_and_matches_the_built_in_pins() -> None:
    images = load_images()
    assert images == DEFAULT_IMAGES
    assert images["minio"].reference == "minio/minio:RELEASE.2025-09-07T16-13-09Z"
    assert images["kafka"].reference == f"apache/kafka:{versions.KAFKA_BROKER_VERSION}"
    assert images["postgres"].reference == "postgres:15"
    assert images["spark-connect"].reference == "apache/spark:3.5.7-scala2.12-java17-python3-ubuntu"
    assert images["fake-gcs"].reference == f"fsouza/fake-gcs-server:{versions.FAKE_GCS_VERSION.removeprefix('v')}"
    assert images["azurite"].reference == f"mcr.microsoft.com/azure-storage/azurite:{versions.AZURITE_VERSION}"
    assert images["hdfs"].name == "apache/hadoop"
    assert all(image.tag and image.tag != "latest" for image in images.values())


def test_spec_file_describes_what_the_code_runs() -> None:
    spec = _spec()
    assert spec["minio"]["ports"] == [MINIO_PORT]
    assert spec["postgres"]["ports"] == [POSTGRES_PORT]
    assert spec["postgres"]["env"]["POSTGRES_USER"] == DB_USER
    assert spec["postgres"]["env"]["POSTGRES_DB"] == DATABASE
    assert spec["spark-connect"]["env"]["PYSPARK_PYTHON"] == CONTAINER_PYTHON
    rendered = kafka_env(29092, "cluster-id")
    for key, value in spec["kafka"]["env"].items():
        if key != "CLUSTER_ID":
            assert rendered[key] == value.replace("<port>", "29092"), key
    assert [arg.replace("<port>", "4443") for arg in spec["fake-gcs"]["command"]] == fake_gcs_flags(4443, ANY_ADDRESS)
    assert spec["azurite"]["ports"] == [BLOB_PORT]
    assert spec["azurite"]["command"] == ["azurite-blob", *azurite_flags(AZURITE_DATA, ANY_ADDRESS)]
    assert spec["hdfs"]["command"] == HDFS_COMMAND
    assert spec["hdfs"]["ports"] == [f"<{role}>" for role in HDFS_PUBLISHED]
    rendered = hdfs_env(HDFS_PORTS)
    for key, value in spec["hdfs"]["env"].items():
        for role, port in HDFS_PORTS.items():
            value = value.replace(f"<{role}>", str(port))
        assert rendered[key] == value, key
    storages_env = storage_env(MINIO, STORAGES)
    for key, value in spec["spark-connect"]["storages-env"].items():
        assert key in storages_env, key
        assert "<" in value or storages_env[key] == value, key


def test_missing_spec_file_or_entry_falls_back_to_the_built_in_pins(tmp_path: Path) -> None:
    assert load_images(tmp_path / "absent.toml") == DEFAULT_IMAGES
    spec = tmp_path / "services.toml"
    spec.write_text('[postgres]\ntag = "16"\n')
    images = load_images(spec)
    assert images["postgres"] == Image("postgres", "16")
    assert images["kafka"] == DEFAULT_IMAGES["kafka"]


def test_kafka_listens_in_the_container_and_advertises_the_host_port() -> None:
    env = kafka_env(29092, "cluster-id")
    assert env["KAFKA_LISTENERS"] == f"PLAINTEXT://0.0.0.0:29092,CONTROLLER://127.0.0.1:{KAFKA_CONTROLLER_PORT}"
    assert env["KAFKA_ADVERTISED_LISTENERS"] == "PLAINTEXT://127.0.0.1:29092"
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == f"1@127.0.0.1:{KAFKA_CONTROLLER_PORT}"
    assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "1"
    assert env["CLUSTER_ID"] == "cluster-id"
    assert all(key == "CLUSTER_ID" or key.startswith("KAFKA_") for key in env)


def test_container_server_keeps_minio_on_loopback_and_uses_container_paths() -> None:
    # The server shares the host's network: MinIO's URL needs no rewrite and
    # the loopback-and-token interceptor still applies.
    confs = container_server_confs("hudi", 15002, MINIO)
    assert confs["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert confs["spark.connect.grpc.interceptor.classes"] == "hudiconnect.LoopbackTokenInterceptor"
    assert confs["spark.connect.grpc.binding.port"] == "15002"
    assert confs["spark.pyspark.python"] == CONTAINER_PYTHON
    assert confs["spark.local.dir"].startswith("/tmp/hudi-connect/")
    assert confs["spark.master"] == container_server_confs("cluster", 1, None)["spark.master"] == "local[2]"


def test_hdfs_binds_in_its_container_and_hands_out_loopback_addresses() -> None:
    env = hdfs_env(HDFS_PORTS)
    assert env["HDFS-SITE.XML_dfs.namenode.rpc-address"] == f"127.0.0.1:{HDFS_PORTS['rpc']}"
    assert env["HDFS-SITE.XML_dfs.namenode.rpc-bind-host"] == env["HDFS-SITE.XML_dfs.namenode.http-bind-host"] \
        == "0.0.0.0"
    assert env["HDFS-SITE.XML_dfs.datanode.address"] == f"0.0.0.0:{HDFS_PORTS['datanode']}"
    assert env["HDFS-SITE.XML_dfs.datanode.hostname"] == "127.0.0.1"  # in WebHDFS redirects and block locations
    assert env["CORE-SITE.XML_fs.defaultFS"] == f"hdfs://127.0.0.1:{HDFS_PORTS['rpc']}"
    assert env["HDFS-SITE.XML_dfs.namenode.name.dir"] == (HDFS_HOME / "name").as_uri()
    assert env["ENSURE_NAMENODE_DIR"] == str(HDFS_HOME / "name")
    assert all(key == "ENSURE_NAMENODE_DIR" or key.split("_", 1)[0] in ("CORE-SITE.XML", "HDFS-SITE.XML")
               for key in env)


def test_container_storages_server_reaches_the_storages_on_loopback() -> None:
    confs = container_server_confs("plain-storages", 15002, MINIO, STORAGES)
    assert confs["spark.hadoop.fs.gs.storage.root.url"] == "http://127.0.0.1:4443/"
    assert confs["spark.hadoop.fs.s3a.aws.credentials.provider"].endswith("SimpleAWSCredentialsProvider")
    assert confs["spark.pyspark.python"] == CONTAINER_PYTHON
    assert "spark.hadoop.fs.gs.impl" not in container_server_confs("plain", 15002, MINIO)
