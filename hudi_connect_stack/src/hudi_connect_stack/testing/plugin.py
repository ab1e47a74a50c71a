"""pytest fixtures for the hudi-connect stack, for our suite and for yours.

Load with ``-p hudi_connect_stack.testing.plugin``. Services start lazily, once per
test run, shared by pytest-xdist workers, and are stopped when the run ends.
Every fixture can be overridden in a conftest, and ``--hudi-connect-remote``
points the ``spark`` fixtures at a server you already run. A service that
cannot start fails the tests that need it, with its log tail: nothing skips.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from pyspark.sql import SparkSession

from hudi_connect.client.server import connect, require_hudi_server
from hudi_connect_stack.backend import Backend, LocalBackend, choose_backend
from hudi_connect_stack.endpoints import (
    AzuriteEndpoint,
    GcsEndpoint,
    HdfsEndpoint,
    HiveMetastoreEndpoint,
    KafkaEndpoint,
    MinioEndpoint,
    PostgresEndpoint,
    SparkConnectEndpoint,
    SparkFlavor,
    StorageEndpoints,
    ZooKeeperEndpoint,
)
from hudi_connect_stack.engine import stop_started_engine, use_started_engine
from hudi_connect_stack.minio import create_bucket
from hudi_connect_stack.shared import SharedServices
from hudi_connect_stack.testing.topics import create_topic
from hudi_connect_stack.versions import SPARK4_LINES

RUN_DIR_ENV = "HUDI_CONNECT_RUN_DIR"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hudi-connect")
    group.addoption("--hudi-connect-backend", default=os.environ.get("HUDI_CONNECT_BACKEND", "auto"),
                    choices=["auto", "local", "docker"], help="how to start services (default: auto)")
    group.addoption("--hudi-connect-remote", default=os.environ.get("HUDI_CONNECT_REMOTE"),
                    help="sc:// URL of an existing Hudi-enabled Connect server to use instead of starting one")
    group.addoption("--hudi-connect-keep-run-dir", action="store_true",
                    help="keep service data and logs after the run")
    group.addoption("--hudi-connect-spark4-line", default=os.environ.get("HUDI_CONNECT_SPARK4_LINE", "4.3"),
                    choices=sorted(SPARK4_LINES), help="the Spark 4 line of the spark4_* fixtures (default: 4.3)")


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    # The owning process creates the run directory; xdist workers inherit it
    # through the environment, because they are spawned after this hook.
    if not _is_xdist_worker(config) and RUN_DIR_ENV not in os.environ:
        run_dir = Path(tempfile.mkdtemp(prefix="hudi-connect-run-"))
        os.chmod(run_dir, 0o755)
        os.environ[RUN_DIR_ENV] = str(run_dir)
        config._hudi_connect_owned_run_dir = run_dir  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    run_dir: Path | None = getattr(config, "_hudi_connect_owned_run_dir", None)
    if run_dir is None:
        return
    use_started_engine(run_dir)  # the containers' engine, when a worker started podman's
    try:
        stopped = SharedServices(run_dir).stop_all()
    finally:
        stop_started_engine(run_dir)
    if stopped:
        print(f"\nhudi-connect: stopped {', '.join(stopped)}")
    if config.getoption("--hudi-connect-keep-run-dir"):
        print(f"hudi-connect: service data and logs kept in {run_dir}")
    else:
        shutil.rmtree(run_dir, ignore_errors=True)
    os.environ.pop(RUN_DIR_ENV, None)


@pytest.fixture(scope="session")
def hudi_connect_run_dir() -> Path:
    """Where services keep their data and logs for this run."""
    return Path(os.environ[RUN_DIR_ENV])


@pytest.fixture(scope="session")
def hudi_connect_backend(
    pytestconfig: pytest.Config, hudi_connect_run_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Backend:
    # Containers see the tests' temporary folders at the same paths: all xdist workers' under one parent.
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if _is_xdist_worker(pytestconfig) else base
    return choose_backend(pytestconfig.getoption("--hudi-connect-backend"), hudi_connect_run_dir, (shared,))


@pytest.fixture(scope="session")
def shared_services(hudi_connect_run_dir: Path) -> SharedServices:
    return SharedServices(hudi_connect_run_dir)


# --- services ------------------------------------------------------------------------

@pytest.fixture(scope="session")
def minio_endpoint(shared_services: SharedServices, hudi_connect_backend: Backend) -> MinioEndpoint:
    return shared_services.get("minio", MinioEndpoint, hudi_connect_backend.minio)


@pytest.fixture(scope="session")
def s3_bucket(minio_endpoint: MinioEndpoint) -> str:
    """A bucket on MinIO for this run's tables."""
    bucket = "hudi-connect-tests"
    create_bucket(minio_endpoint, bucket)
    return bucket


@pytest.fixture
def s3a_base_path(s3_bucket: str) -> str:
    """A fresh ``s3a://`` table path for one test."""
    return f"s3a://{s3_bucket}/tables/{uuid.uuid4().hex[:12]}"


@pytest.fixture
def local_base_path(tmp_path: Path) -> str:
    """A fresh table path on the local file system, readable by local servers."""
    os.chmod(tmp_path, 0o755)
    return str(tmp_path / "table")


@pytest.fixture(scope="session")
def zookeeper_endpoint(shared_services: SharedServices, hudi_connect_backend: Backend) -> ZooKeeperEndpoint:
    """A ZooKeeper server (a process or a container): the lock that writers on several servers share."""
    return shared_services.get("zookeeper", ZooKeeperEndpoint, hudi_connect_backend.zookeeper)


@pytest.fixture(scope="session")
def kafka_endpoint(shared_services: SharedServices, hudi_connect_backend: Backend) -> KafkaEndpoint:
    return shared_services.get("kafka", KafkaEndpoint, hudi_connect_backend.kafka)


@pytest.fixture
def kafka_topic(kafka_endpoint: KafkaEndpoint) -> str:
    """A new, empty topic for one test."""
    name = f"hudi-connect-{uuid.uuid4().hex[:12]}"
    create_topic(kafka_endpoint, name)
    return name


@pytest.fixture(scope="session")
def postgres_endpoint(shared_services: SharedServices, hudi_connect_backend: Backend) -> PostgresEndpoint:
    return shared_services.get("postgres", PostgresEndpoint, hudi_connect_backend.postgres)


@pytest.fixture(scope="session")
def postgres_dsn(postgres_endpoint: PostgresEndpoint) -> str:
    return postgres_endpoint.dsn


def _server(
    shared_services: SharedServices, backend: Backend, flavor: SparkFlavor, minio: MinioEndpoint | None,
    storages: StorageEndpoints | None = None, metastore: HiveMetastoreEndpoint | None = None,
) -> SparkConnectEndpoint:
    """The Connect server of ``flavor``, started once per run (``shared_services``)."""
    return shared_services.get(f"spark-connect-{flavor}", SparkConnectEndpoint,
                               lambda run_dir: backend.spark_connect(run_dir, flavor, minio, storages, metastore))


@pytest.fixture(scope="session")
def hudi_server_url(
    pytestconfig: pytest.Config,
    shared_services: SharedServices,
    hudi_connect_backend: Backend,
    request: pytest.FixtureRequest,
) -> str:
    """The ``sc://`` URL of a Spark Connect server with Hudi (s3a pointed at MinIO)."""
    remote: str | None = pytestconfig.getoption("--hudi-connect-remote")
    if remote:
        return remote
    minio = request.getfixturevalue("minio_endpoint")
    return _server(shared_services, hudi_connect_backend, "hudi", minio).url


@pytest.fixture(scope="session")
def plain_server_url(
    shared_services: SharedServices, hudi_connect_backend: Backend, minio_endpoint: MinioEndpoint
) -> str:
    """A Spark Connect server with no Hudi jar at all."""
    return _server(shared_services, hudi_connect_backend, "plain", minio_endpoint).url


@pytest.fixture(scope="session")
def cluster_server_url(
    shared_services: SharedServices, hudi_connect_backend: Backend, minio_endpoint: MinioEndpoint
) -> str:
    """A Hudi Connect server whose tasks run on a standalone cluster of two workers."""
    return _server(shared_services, hudi_connect_backend, "cluster", minio_endpoint).url


@pytest.fixture(scope="session")
def lance_server_url(
    shared_services: SharedServices, hudi_connect_backend: Backend, minio_endpoint: MinioEndpoint
) -> str:
    """A Hudi Connect server that can also write Lance base files (Hudi 1.2 with Lance's jars)."""
    return _server(shared_services, hudi_connect_backend, "hudi-lance", minio_endpoint).url


@pytest.fixture(scope="session")
def hudi_015_server_url(
    shared_services: SharedServices, hudi_connect_backend: Backend, minio_endpoint: MinioEndpoint
) -> str:
    """A Connect server whose Hudi is release 0.15.0 (writes table version 6)."""
    return _server(shared_services, hudi_connect_backend, "hudi-0.15", minio_endpoint).url


@pytest.fixture(scope="session")
def hudi_10_server_url(
    shared_services: SharedServices, hudi_connect_backend: Backend, minio_endpoint: MinioEndpoint
) -> str:
    """A Connect server whose Hudi is release 1.0.2 (writes table version 8)."""
    return _server(shared_services, hudi_connect_backend, "hudi-1.0", minio_endpoint).url


@pytest.fixture(scope="session")
def gcs_endpoint(shared_services: SharedServices, hudi_connect_backend: Backend) -> GcsEndpoint:
    """A GCS emulator (fake-gcs-server)."""
    return shared_services.get("fake-gcs", GcsEndpoint, hudi_connect_backend.gcs)


@pytest.fixture(scope="session")
def azurite_endpoint(shared_services: SharedServices, hudi_connect_backend: Backend) -> AzuriteEndpoint:
    """Azurite's Blob service, where Hadoop's WASB driver finds its storage emulator."""
    return shared_services.get("azurite", AzuriteEndpoint, hudi_connect_backend.azurite)


@pytest.fixture(scope="session")
def hdfs_endpoint(shared_services: SharedServices, hudi_connect_backend: Backend) -> HdfsEndpoint:
    """An HDFS namenode and datanode from Hadoop's jars."""
    return shared_services.get("hdfs", HdfsEndpoint, hudi_connect_backend.hdfs)


@pytest.fixture(scope="session")
def storage_endpoints(gcs_endpoint: GcsEndpoint, azurite_endpoint: AzuriteEndpoint,
                      hdfs_endpoint: HdfsEndpoint) -> StorageEndpoints:
    return StorageEndpoints(gcs_endpoint, azurite_endpoint, hdfs_endpoint)


STORAGE_CONTAINER = "hudi-connect-tests"  # the GCS bucket and the Azure container of the run's tables


@pytest.fixture(scope="session")
def storage_roots(storage_endpoints: StorageEndpoints) -> dict[str, str]:
    """Where each storage's tables go, by storage: ``gcs``, ``azure`` (WASB, as Hadoop names the emulator) and
    ``hdfs``."""
    from hudi_connect_stack.azurite import create_container
    from hudi_connect_stack.fake_gcs import create_bucket as create_gcs_bucket

    create_gcs_bucket(storage_endpoints.gcs, STORAGE_CONTAINER)
    create_container(storage_endpoints.azure, STORAGE_CONTAINER)
    return {"gcs": f"gs://{STORAGE_CONTAINER}", "azure": f"wasb://{STORAGE_CONTAINER}@storageemulator",
            "hdfs": f"{storage_endpoints.hdfs.namenode_uri}/{STORAGE_CONTAINER}"}


@pytest.fixture(scope="session")
def storages_server_url(shared_services: SharedServices, hudi_connect_backend: Backend,
                        minio_endpoint: MinioEndpoint, storage_endpoints: StorageEndpoints) -> str:
    """A Hudi server that also reaches GCS, Azure and HDFS (and MinIO with its keys in Hadoop's configuration
    only, as servers are often set up: its Python workers have none)."""
    return _server(shared_services, hudi_connect_backend, "hudi-storages", minio_endpoint, storage_endpoints).url


@pytest.fixture(scope="session")
def plain_storages_url(shared_services: SharedServices, hudi_connect_backend: Backend,
                       minio_endpoint: MinioEndpoint, storage_endpoints: StorageEndpoints) -> str:
    """The same without Hudi's jars."""
    return _server(shared_services, hudi_connect_backend, "plain-storages", minio_endpoint, storage_endpoints).url


@pytest.fixture(scope="session")
def storages_spark(storages_server_url: str) -> Iterator[SparkSession]:
    yield from _session(storages_server_url, hudi=True)


@pytest.fixture(scope="session")
def plain_storages_spark(plain_storages_url: str) -> Iterator[SparkSession]:
    yield from _session(plain_storages_url, hudi=False)


@pytest.fixture(scope="session")
def hive_metastore_endpoint(shared_services: SharedServices, hudi_connect_backend: Backend,
                            postgres_endpoint: PostgresEndpoint) -> HiveMetastoreEndpoint:
    """A Hive Metastore (standalone 3.1.3) keeping its catalog in the stack's PostgreSQL."""
    return shared_services.get("hive-metastore", HiveMetastoreEndpoint,
                               lambda run_dir: hudi_connect_backend.hive_metastore(run_dir, postgres_endpoint))


@pytest.fixture(scope="session")
def metastore_server_url(shared_services: SharedServices, hudi_connect_backend: Backend,
                         hive_metastore_endpoint: HiveMetastoreEndpoint) -> str:
    """A Hudi server whose catalog is the Hive Metastore (tables by name, shared with the plain one)."""
    return _server(shared_services, hudi_connect_backend, "hudi-metastore", None, None, hive_metastore_endpoint).url


@pytest.fixture(scope="session")
def plain_metastore_url(shared_services: SharedServices, hudi_connect_backend: Backend,
                        hive_metastore_endpoint: HiveMetastoreEndpoint) -> str:
    """A server without Hudi's jars whose catalog is the same Hive Metastore."""
    return _server(shared_services, hudi_connect_backend, "plain-metastore", None, None, hive_metastore_endpoint).url


@pytest.fixture(scope="session")
def metastore_spark(metastore_server_url: str) -> Iterator[SparkSession]:
    yield from _session(metastore_server_url, hudi=True)


@pytest.fixture(scope="session")
def plain_metastore_spark(plain_metastore_url: str) -> Iterator[SparkSession]:
    yield from _session(plain_metastore_url, hudi=False)


@pytest.fixture(scope="session")
def spark4_server_url(pytestconfig: pytest.Config, shared_services: SharedServices) -> str:
    """A plain Connect server of a Spark 4 line (no Hudi jar, no s3a), for a client of the same line; a local
    process whatever the backend (no container image holds Spark 4)."""
    import pyspark

    line = SPARK4_LINES[pytestconfig.getoption("--hudi-connect-spark4-line")]
    if not pyspark.__version__.startswith(line.name + "."):
        raise pytest.UsageError(
            f"a Spark {line.name} server needs a client of its line ({line.client}), not pyspark "
            f"{pyspark.__version__}: run these tests with `ci/test.sh --spark4`"
        )
    return spark4_server(shared_services, line.name).url


def spark4_server(shared_services: SharedServices, line: str) -> SparkConnectEndpoint:
    """The run's plain Connect server of Spark 4 line ``line`` (a local process), started if needed; its clients
    are of its line (the differential tester's Spark 4 reader is a child process in that line's environment)."""
    flavor = cast(SparkFlavor, SPARK4_LINES[line].flavor)
    return shared_services.get(f"spark-connect-{flavor}", SparkConnectEndpoint,
                               lambda run_dir: LocalBackend().spark_connect(run_dir, flavor, None))


@pytest.fixture(scope="session")
def spark4(spark4_server_url: str) -> Iterator[SparkSession]:
    """A Connect session on a plain Spark 4 server."""
    yield from _session(spark4_server_url, hudi=False)


def _session(url: str, *, hudi: bool) -> Iterator[SparkSession]:
    session = connect(url)
    if hudi:
        require_hudi_server(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark(hudi_server_url: str) -> Iterator[SparkSession]:
    """A Connect session on the Hudi server, checked to be set up for Hudi."""
    yield from _session(hudi_server_url, hudi=True)


@pytest.fixture(scope="session")
def plain_spark(plain_server_url: str) -> Iterator[SparkSession]:
    yield from _session(plain_server_url, hudi=False)


@pytest.fixture(scope="session")
def lance_spark(lance_server_url: str) -> Iterator[SparkSession]:
    yield from _session(lance_server_url, hudi=True)


@pytest.fixture(scope="session")
def hudi_015_spark(hudi_015_server_url: str) -> Iterator[SparkSession]:
    yield from _session(hudi_015_server_url, hudi=True)


@pytest.fixture(scope="session")
def hudi_10_spark(hudi_10_server_url: str) -> Iterator[SparkSession]:
    yield from _session(hudi_10_server_url, hudi=True)


@pytest.fixture(scope="session")
def cluster_spark(cluster_server_url: str) -> Iterator[SparkSession]:
    yield from _session(cluster_server_url, hudi=True)
