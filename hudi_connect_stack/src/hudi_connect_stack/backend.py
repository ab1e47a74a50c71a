"""Which backend starts the services: local processes or containers.

``auto`` picks containers (testcontainers) when a Docker engine answers and
local processes otherwise. ``docker`` insists on containers: with no engine
answering it starts podman's Docker API for the run (:mod:`.engine`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol

from hudi_connect_stack.endpoints import (
    HiveMetastoreEndpoint,
    MinioEndpoint,
    PostgresEndpoint,
    SparkFlavor,
    StorageEndpoints,
)
from hudi_connect_stack.process import RunningService

BackendName = Literal["auto", "local", "docker"]


class Backend(Protocol):
    name: str

    def minio(self, run_dir: Path) -> RunningService: ...

    def kafka(self, run_dir: Path) -> RunningService: ...

    def postgres(self, run_dir: Path) -> RunningService: ...

    def gcs(self, run_dir: Path) -> RunningService: ...

    def azurite(self, run_dir: Path) -> RunningService: ...

    def hdfs(self, run_dir: Path) -> RunningService: ...

    def hive_metastore(self, run_dir: Path, postgres: PostgresEndpoint) -> RunningService: ...

    def zookeeper(self, run_dir: Path) -> RunningService: ...

    def spark_connect(self, run_dir: Path, flavor: SparkFlavor, minio: MinioEndpoint | None,
                      storages: StorageEndpoints | None = None,
                      metastore: HiveMetastoreEndpoint | None = None) -> RunningService: ...


class LocalBackend:
    """Every service as a local process built or downloaded by ``provision``."""

    name = "local"

    def minio(self, run_dir: Path) -> RunningService:
        from hudi_connect_stack.minio import start_minio

        return start_minio(run_dir)

    def kafka(self, run_dir: Path) -> RunningService:
        from hudi_connect_stack.kafka import start_kafka

        return start_kafka(run_dir)

    def postgres(self, run_dir: Path) -> RunningService:
        from hudi_connect_stack.postgres import start_postgres

        return start_postgres(run_dir)

    def gcs(self, run_dir: Path) -> RunningService:
        from hudi_connect_stack.fake_gcs import start_fake_gcs

        return start_fake_gcs(run_dir)

    def azurite(self, run_dir: Path) -> RunningService:
        from hudi_connect_stack.azurite import start_azurite

        return start_azurite(run_dir)

    def hdfs(self, run_dir: Path) -> RunningService:
        from hudi_connect_stack.hdfs import start_hdfs

        return start_hdfs(run_dir)

    def hive_metastore(self, run_dir: Path, postgres: PostgresEndpoint) -> RunningService:
        from hudi_connect_stack.hive_metastore import start_hive_metastore

        return start_hive_metastore(run_dir, postgres)

    def zookeeper(self, run_dir: Path) -> RunningService:
        from hudi_connect_stack.zookeeper import start_zookeeper

        return start_zookeeper(run_dir)

    def spark_connect(self, run_dir: Path, flavor: SparkFlavor, minio: MinioEndpoint | None,
                      storages: StorageEndpoints | None = None,
                      metastore: HiveMetastoreEndpoint | None = None) -> RunningService:
        from hudi_connect_stack.spark_connect import start_cluster_connect, start_spark_connect

        if flavor == "cluster":
            return start_cluster_connect(run_dir, minio=minio)
        return start_spark_connect(run_dir, flavor, minio=minio, storages=storages, metastore=metastore)


def choose_backend(
    requested: BackendName = "auto", run_dir: Path | None = None, mounts: Sequence[Path] = ()
) -> Backend:
    """The backend ``requested``; ``run_dir`` hosts podman's socket when ``docker`` must start it, and
    ``mounts`` are host folders the Spark container sees at the same paths."""
    if requested not in ("auto", "local", "docker"):
        raise ValueError(f"unknown backend {requested!r}: choose 'auto', 'local' or 'docker'")
    from hudi_connect_stack.containers import DockerBackend, docker_available
    from hudi_connect_stack.engine import ensure_engine

    if requested == "docker" and run_dir is not None:
        ensure_engine(run_dir)
    if requested == "docker" or (requested == "auto" and docker_available()):
        return DockerBackend(mounts=mounts)
    return LocalBackend()
