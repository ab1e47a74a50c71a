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
    KafkaEndpoint,
    MinioEndpoint,
    PostgresEndpoint,
    SparkConnectEndpoint,
    SparkFlavor,
    StorageEndpoints,
)
from hudi_connect_stack.engine import stop_started_engine, use_started_engine
from hudi_connect_stack.provision import provision
from hudi_connect_stack.shared import SharedServices

# hudi and plain: the two Spark Connect servers; gcs, azurite and hdfs: the storage servers beside MinIO;
# hudi-storages and plain-storages: Connect servers that also reach those three (and start them)
SERVICES = ("minio", "kafka", "postgres", "hudi", "plain", "gcs", "azurite", "hdfs", "hudi-storages",
            "plain-storages")
DEFAULT_SERVICES = ("minio", "kafka", "postgres", "hudi", "plain")
STORAGES = ("gcs", "azurite", "hdfs")
STORAGE_SERVERS: tuple[SparkFlavor, ...] = ("hudi-storages", "plain-storages")
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
    run_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(run_dir, 0o755)  # PostgreSQL's service user must reach its directory
    needed: list[str] = []
    if {"hudi", "plain", *STORAGE_SERVERS} & set(services):
        needed += ["jars", "interceptor", "server-python"]  # the servers' jars, also mounted into containers
    elif {"kafka", "hdfs"} & set(services):
        needed.append("jars")  # the broker's and the HDFS daemons' jars come with Spark's
    if "minio" in services:
        needed.append("minio")  # the binary, or the docker backend's image of it
    if "postgres" in services and backend != "docker":
        needed.append("postgres")
    if {"gcs", "azurite"} & set(services):
        needed.append("storage-servers")  # fake-gcs-server and Azurite (the HDFS daemons' jars come with "jars")
    provision(needed)
    chosen = choose_backend(backend, run_dir, mounts)
    shared = SharedServices(run_dir)
    minio = shared.get("minio", MinioEndpoint, chosen.minio) if "minio" in services else None
    gcs = shared.get("fake-gcs", GcsEndpoint, chosen.gcs) if "gcs" in services else None
    azurite = shared.get("azurite", AzuriteEndpoint, chosen.azurite) if "azurite" in services else None
    hdfs = shared.get("hdfs", HdfsEndpoint, chosen.hdfs) if "hdfs" in services else None
    storages = StorageEndpoints(gcs, azurite, hdfs) if gcs and azurite and hdfs else None

    def server(flavor: SparkFlavor) -> SparkConnectEndpoint | None:
        if flavor not in services:
            return None
        reached = storages if flavor in STORAGE_SERVERS else None
        return shared.get(f"spark-connect-{flavor}", SparkConnectEndpoint,
                          lambda directory: chosen.spark_connect(directory, flavor, minio, reached))

    stack = StackEndpoints(
        backend=chosen.name,
        minio=minio,
        kafka=shared.get("kafka", KafkaEndpoint, chosen.kafka) if "kafka" in services else None,
        postgres=shared.get("postgres", PostgresEndpoint, chosen.postgres) if "postgres" in services else None,
        hudi=server("hudi"),
        plain=server("plain"),
        gcs=gcs,
        azurite=azurite,
        hdfs=hdfs,
        hudi_storages=server("hudi-storages"),
        plain_storages=server("plain-storages"),
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
