"""The stack outside pytest, for end-to-end suites in any language (``hudi-connect stack up|down``).

The services start through the same backends and state files as the pytest
plugin's (:class:`SharedServices` in a run directory), so ``stack down`` from
another shell finds and stops what ``stack up`` left running. Endpoints are
written as an env file and as JSON: a Java, Go or Rust suite reads either.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hudi_connect_stack.backend import BackendName, choose_backend
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
from hudi_connect_stack.provision import provision
from hudi_connect_stack.shared import SharedServices
from hudi_connect_stack.spark_connect import start_spark_connect

# hudi and plain: the two Spark Connect servers; gcs, azurite and hdfs: the storage servers beside MinIO;
# hudi-storages and plain-storages: Connect servers that also reach those three (and start them)
# hive-metastore: the Hive Metastore (on the stack's PostgreSQL); hudi-metastore and plain-metastore: Connect
# servers keeping their catalog there (and starting it)
# zookeeper: the lock writers on several servers share (a process, or a container of the Spark image)
# spark4: a plain Spark 4.3 server whose Python carries format("hudi") (hudi-connect's data source) for clients of
# any language; a local process on either backend (no image holds Spark 4), its 450 MB provisioned on first use
SERVICES = ("minio", "kafka", "postgres", "hudi", "plain", "gcs", "azurite", "hdfs", "hudi-storages",
            "plain-storages", "hive-metastore", "hudi-metastore", "plain-metastore", "zookeeper", "spark4")
SPARK4_SERVICE_LINE = "4.3"
SPARK4_SERVICE_FLAVOR: SparkFlavor = "plain-4.3"  # the line's plain server
DEFAULT_SERVICES = ("minio", "kafka", "postgres", "hudi", "plain")
STORAGES = ("gcs", "azurite", "hdfs")
STORAGE_SERVERS: tuple[SparkFlavor, ...] = ("hudi-storages", "plain-storages")
METASTORE_SERVERS: tuple[SparkFlavor, ...] = ("hudi-metastore", "plain-metastore")
ENV_FILE = "stack.env"
JSON_FILE = "stack.json"


def default_run_dir() -> Path:
    from hudi_connect_stack.provision import cache_dir

    return cache_dir() / "stack"


@dataclass(frozen=True)
class StackEndpoints:
    """What ``stack up`` started; None for a service not asked for."""

    backend: str
    hudi: SparkConnectEndpoint | None = None
    plain: SparkConnectEndpoint | None = None
    minio: MinioEndpoint | None = None
    kafka: KafkaEndpoint | None = None
    postgres: PostgresEndpoint | None = None
    gcs: GcsEndpoint | None = None
    azurite: AzuriteEndpoint | None = None
    hdfs: HdfsEndpoint | None = None
    hudi_storages: SparkConnectEndpoint | None = None
    plain_storages: SparkConnectEndpoint | None = None
    hive_metastore: HiveMetastoreEndpoint | None = None
    hudi_metastore: SparkConnectEndpoint | None = None
    plain_metastore: SparkConnectEndpoint | None = None
    zookeeper: ZooKeeperEndpoint | None = None
    spark4: SparkConnectEndpoint | None = None


def env_of(stack: StackEndpoints) -> dict[str, str]:
    """The endpoints as environment variables: the names AWS SDKs and ``hudi-connect reverse-stream`` read, and
    for the other storages those Google's and Azure's SDKs and Hadoop's clients read (as the servers' workers do)."""
    env = {"HUDI_CONNECT_BACKEND": stack.backend}
    if stack.hudi is not None:
        env["HUDI_CONNECT_SPARK_URL"] = stack.hudi.url
    if stack.plain is not None:
        env["HUDI_CONNECT_PLAIN_SPARK_URL"] = stack.plain.url
    if stack.minio is not None:
        env.update(AWS_ENDPOINT_URL=stack.minio.endpoint_url, AWS_ACCESS_KEY_ID=stack.minio.access_key,
                   AWS_SECRET_ACCESS_KEY=stack.minio.secret_key, AWS_REGION=stack.minio.region)
    if stack.kafka is not None:
        env["KAFKA_BOOTSTRAP_SERVERS"] = stack.kafka.bootstrap_servers
    if stack.postgres is not None:
        env.update(HUDI_CONNECT_POSTGRES_DSN=stack.postgres.dsn, HUDI_CONNECT_POSTGRES_JDBC_URL=stack.postgres.jdbc_url,
                   PGUSER=stack.postgres.user, PGPASSWORD=stack.postgres.password)
    if stack.gcs is not None:
        env["STORAGE_EMULATOR_HOST"] = stack.gcs.endpoint_url
    if stack.azurite is not None:
        env["AZURE_STORAGE_CONNECTION_STRING"] = stack.azurite.connection_string
    if stack.hdfs is not None:
        env.update(HUDI_CONNECT_HDFS_URI=stack.hdfs.namenode_uri,
                   HUDI_CONNECT_WEBHDFS_ADDRESS=stack.hdfs.webhdfs_address,
                   HADOOP_CONF_DIR=stack.hdfs.conf_dir, HADOOP_USER_NAME=stack.hdfs.user)
    if stack.hudi_storages is not None:
        env["HUDI_CONNECT_STORAGES_SPARK_URL"] = stack.hudi_storages.url
    if stack.plain_storages is not None:
        env["HUDI_CONNECT_PLAIN_STORAGES_SPARK_URL"] = stack.plain_storages.url
    if stack.hive_metastore is not None:
        env.update(HIVE_METASTORE_URIS=stack.hive_metastore.uri,
                   HUDI_CONNECT_WAREHOUSE_DIR=stack.hive_metastore.warehouse_dir)
    if stack.hudi_metastore is not None:
        env["HUDI_CONNECT_METASTORE_SPARK_URL"] = stack.hudi_metastore.url
    if stack.plain_metastore is not None:
        env["HUDI_CONNECT_PLAIN_METASTORE_SPARK_URL"] = stack.plain_metastore.url
    if stack.zookeeper is not None:
        env["HUDI_CONNECT_ZOOKEEPER"] = stack.zookeeper.connect_string
    if stack.spark4 is not None:
        env["HUDI_CONNECT_SPARK4_URL"] = stack.spark4.url
    return env


def render_env_file(env: Mapping[str, str]) -> str:
    """``KEY=value`` lines quoted for a shell (the URLs hold ';'): ``set -a; . stack.env`` exports them."""
    return "".join(f"{key}={shlex.quote(value)}\n" for key, value in env.items())


def running_services(run_dir: Path) -> list[str]:
    """The services a stack in ``run_dir`` has recorded (started, or failed to start)."""
    return sorted(f.stem for f in (run_dir / "services").glob("*.json")) if (run_dir / "services").is_dir() else []


def start_stack(
    run_dir: Path, services: Sequence[str] = DEFAULT_SERVICES, backend: BackendName = "local",
    mounts: Sequence[Path] = (),
) -> StackEndpoints:
    """Start ``services`` (each once: those already running in ``run_dir`` are reused), write
    ``stack.env`` and ``stack.json`` there, and return the endpoints. A ``*-storages`` server starts the GCS,
    Azure and HDFS servers it reaches too."""
    unknown = sorted(set(services) - set(SERVICES))
    if unknown:
        raise ValueError(f"unknown services {unknown}: choose from {', '.join(SERVICES)}")
    if set(services) & set(STORAGE_SERVERS):
        services = [*services, *STORAGES]
    if set(services) & set(METASTORE_SERVERS):
        services = [*services, "hive-metastore"]
    if "hive-metastore" in services:
        services = [*services, "postgres"]  # its database
    run_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(run_dir, 0o755)  # PostgreSQL's service user must reach its directory
    needed: list[str] = []
    if {"hudi", "plain", *STORAGE_SERVERS, *METASTORE_SERVERS} & set(services):
        needed += ["jars", "interceptor", "server-python"]  # the servers' jars, also mounted into containers
    elif {"kafka", "hdfs", "hive-metastore", "zookeeper"} & set(services):
        needed.append("jars")  # the broker's, HDFS's, the metastore's and ZooKeeper's jars come with Spark's
    if "minio" in services:
        needed.append("minio")  # the binary, or the docker backend's image of it
    if "postgres" in services and backend != "docker":
        needed.append("postgres")
    if {"gcs", "azurite"} & set(services):
        needed.append("storage-servers")  # fake-gcs-server and Azurite (the HDFS daemons' jars come with "jars")
    if "spark4" in services:
        needed.append(f"spark-{SPARK4_SERVICE_LINE}")
    provision(needed)
    chosen = choose_backend(backend, run_dir, mounts)
    shared = SharedServices(run_dir)
    minio = shared.get("minio", MinioEndpoint, chosen.minio) if "minio" in services else None
    gcs = shared.get("fake-gcs", GcsEndpoint, chosen.gcs) if "gcs" in services else None
    azurite = shared.get("azurite", AzuriteEndpoint, chosen.azurite) if "azurite" in services else None
    hdfs = shared.get("hdfs", HdfsEndpoint, chosen.hdfs) if "hdfs" in services else None
    storages = StorageEndpoints(gcs, azurite, hdfs) if gcs and azurite and hdfs else None
    postgres = shared.get("postgres", PostgresEndpoint, chosen.postgres) if "postgres" in services else None
    metastore = shared.get("hive-metastore", HiveMetastoreEndpoint,
                           lambda directory: chosen.hive_metastore(directory, postgres)) \
        if "hive-metastore" in services and postgres is not None else None

    def server(flavor: SparkFlavor) -> SparkConnectEndpoint | None:
        if flavor not in services:
            return None
        reached = storages if flavor in STORAGE_SERVERS else None
        catalog = metastore if flavor in METASTORE_SERVERS else None
        reaches_minio = None if catalog is not None else minio  # the metastore's servers keep tables in its warehouse
        return shared.get(f"spark-connect-{flavor}", SparkConnectEndpoint,
                          lambda directory: chosen.spark_connect(directory, flavor, reaches_minio, reached, catalog))

    stack = StackEndpoints(
        backend=chosen.name,
        minio=minio,
        kafka=shared.get("kafka", KafkaEndpoint, chosen.kafka) if "kafka" in services else None,
        postgres=postgres,
        hudi=server("hudi"),
        plain=server("plain"),
        gcs=gcs,
        azurite=azurite,
        hdfs=hdfs,
        hudi_storages=server("hudi-storages"),
        plain_storages=server("plain-storages"),
        hive_metastore=metastore,
        hudi_metastore=server("hudi-metastore"),
        plain_metastore=server("plain-metastore"),
        zookeeper=shared.get("zookeeper", ZooKeeperEndpoint, chosen.zookeeper) if "zookeeper" in services else None,
        spark4=shared.get("spark-connect-spark4", SparkConnectEndpoint,
                          lambda directory: start_spark_connect(directory, SPARK4_SERVICE_FLAVOR))
        if "spark4" in services else None,
    )
    env = env_of(stack)
    (run_dir / ENV_FILE).write_text(render_env_file(env))
    (run_dir / JSON_FILE).write_text(json.dumps(env, indent=2) + "\n")
    return stack


def stop_stack(run_dir: Path) -> list[str]:
    """Stop everything ``start_stack`` started in ``run_dir`` (and podman's service, if it started one)."""
    stopped: list[str] = []
    use_started_engine(run_dir)
    try:
        if (run_dir / "services").is_dir():
            stopped = SharedServices(run_dir).stop_all()
    finally:
        stop_started_engine(run_dir)
    for name in (ENV_FILE, JSON_FILE):
        (run_dir / name).unlink(missing_ok=True)
    return stopped
