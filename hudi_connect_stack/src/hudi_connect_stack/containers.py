"""Every service of the stack as a Docker container, through testcontainers-python.

The docker backend of :mod:`hudi_connect_stack.backend`: the same endpoints as
the local processes, from the pinned images of ``testcontainers/services.toml``.

- Containers outlive the Python process that started them: pytest-xdist
  workers share them, and the harness removes them by id at the end of the run
  (:func:`remove_containers`), so testcontainers' Ryuk reaper is turned off.
- Ports are published on 127.0.0.1 only, on host ports chosen like the local
  backend's (:func:`free_port`), so the engine must run on this machine.
  Services that hand out their own address (Kafka's advertised listener,
  fake-gcs-server's upload URLs, HDFS's datanode) use the same port numbers
  inside and outside; Azurite's is 10000, where Hadoop's WASB driver looks.
- The Spark Connect server shares the host's network: ``127.0.0.1`` then means
  the same inside it as outside, for the MinIO, Kafka, PostgreSQL and storage
  endpoints tests hand it and for the loopback-and-token interceptor, which
  keeps guarding it exactly as it guards the local server.
- Images: the public ones ``services.toml`` pins when the engine has or can pull
  them, else the stack's own, built here (:mod:`hudi_connect_stack.images`);
  ``HUDI_CONNECT_IMAGES=public|built`` forces one kind.
- Host folders named in ``mounts`` (the tests' temporary folders) are mounted at
  the same paths in the Spark container, so a local table path means the same
  to the server as to the test; so is the HDFS client configuration, which the
  tests' own clients read too (``HADOOP_CONF_DIR``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from hudi_connect.core.errors import ServiceStartError
from hudi_connect_stack import versions
from hudi_connect_stack.checkout import checkout_root
from hudi_connect_stack.endpoints import (
    GcsEndpoint,
    HiveMetastoreEndpoint,
    KafkaEndpoint,
    MinioEndpoint,
    PostgresEndpoint,
    SparkConnectEndpoint,
    SparkFlavor,
    StorageEndpoints,
    ZooKeeperEndpoint,
)
from hudi_connect_stack.engine import engine_answers
from hudi_connect_stack.minio import require_room_for_writes
from hudi_connect_stack.process import LOOPBACK, RunningService, free_port, port_open

if TYPE_CHECKING:
    from testcontainers.core.container import DockerContainer

SPEC_FILE = checkout_root() / "testcontainers" / "services.toml"
READY_TIMEOUT = 120.0  # after the image pull, which testcontainers does first
IMAGES_ENV = "HUDI_CONNECT_IMAGES"  # auto (default), public or built
LABEL = "hudi-connect.service"  # `docker ps --filter label=hudi-connect.service` finds strays
MINIO_PORT = 9000
POSTGRES_PORT = 5432
KAFKA_CONTROLLER_PORT = 9093
KAFKA_DATA_DIR = Path("/tmp/kraft-combined-logs")  # writable by the image's appuser
SPARK_SUBMIT = "/opt/spark/bin/spark-submit"
CONTAINER_JARS = PurePosixPath("/opt/hudi-connect/jars")
CONTAINER_METASTORE_JARS = PurePosixPath("/opt/hudi-connect/hive-metastore")
CONTAINER_ZOOKEEPER_JARS = PurePosixPath("/opt/hudi-connect/zookeeper")
CONTAINER_WORK_DIR = Path("/tmp/hudi-connect")  # writable by the image's spark user
CONTAINER_PYTHON = "python3"
ANY_ADDRESS = "0.0.0.0"  # what a service binds in its container: published ports reach it there
AZURITE_DATA = Path("/data")
HDFS_HOME = Path("/tmp/hadoop")  # writable by the apache/hadoop image's hadoop user
HDFS_PUBLISHED = ("rpc", "http", "datanode", "datanode_http")  # the roles clients reach; the datanode's IPC stays in
# The apache/hadoop image runs one daemon per command; both share this container (and its published ports).
HDFS_COMMAND = ["sh", "-c", "hdfs namenode & exec hdfs datanode"]
UNREACHABLE_HINT = (
    "; if its log says the server started, the engine's host network is not this machine's"
    " (Docker Desktop: enable host networking under Settings > Resources > Network)"
)


@dataclass(frozen=True)
class Image:
    """A pinned container image: repository name and tag."""

    name: str
    tag: str

    @property
    def reference(self) -> str:
        return f"{self.name}:{self.tag}"


# Used when services.toml is absent (an installed wheel has no testcontainers/ folder).
DEFAULT_IMAGES: Mapping[str, Image] = {
    "minio": Image("minio/minio", "RELEASE.2025-09-07T16-13-09Z"),
    "kafka": Image("apache/kafka", versions.KAFKA_BROKER_VERSION),
    "postgres": Image("postgres", "15"),
    "spark-connect": Image(
        "apache/spark", f"{versions.SPARK_VERSION}-scala{versions.SCALA_BINARY_VERSION}-java17-python3-ubuntu"
    ),
    "fake-gcs": Image("fsouza/fake-gcs-server", versions.FAKE_GCS_VERSION.removeprefix("v")),
    "azurite": Image("mcr.microsoft.com/azure-storage/azurite", versions.AZURITE_VERSION),
    # the nearest published 3.3 release: the built image runs versions.HADOOP_VERSION's jars
    "hdfs": Image("apache/hadoop", "3.3.6"),
}


def load_images(spec_file: Path = SPEC_FILE) -> dict[str, Image]:
    """The image of each service: ``spec_file``'s ``image`` and ``tag``, else the built-in pins."""
    images = dict(DEFAULT_IMAGES)
    if not spec_file.is_file():
        return images
    with spec_file.open("rb") as spec:
        services = tomllib.load(spec)
    for service, default in DEFAULT_IMAGES.items():
        entry = services.get(service, {})
        images[service] = Image(str(entry.get("image", default.name)), str(entry.get("tag", default.tag)))
    return images


def docker_available() -> bool:
    """Whether a Docker engine (or podman's Docker API) answers at ``DOCKER_HOST`` or the default socket."""
    return engine_answers()


def image_for(service: str, public: Image, choice: str) -> str:
    """The reference to run ``service`` from: ``public`` when the engine has it or pulls it (``auto``,
    ``public``), else the stack's own image, built on this machine when missing (``auto``, ``built``)."""
    import docker
    from docker.errors import DockerException

    from hudi_connect_stack.images import ensure_service_image

    if choice not in ("auto", "public", "built"):
        raise ValueError(f"{IMAGES_ENV}={choice!r}: choose auto, public or built")
    client = docker.from_env()
    try:
        if choice != "built":
            try:
                client.images.get(public.reference)
                return public.reference
            except DockerException:
                try:
                    client.images.pull(public.name, tag=public.tag)
                    return public.reference
                except DockerException:
                    if choice == "public":
                        raise
        return ensure_service_image(client, service)
    finally:
        client.close()


def kafka_env(port: int, cluster_id: str) -> dict[str, str]:
    """The apache/kafka image's settings for the local broker's KRaft node, advertised on ``127.0.0.1:port``.

    The image turns ``KAFKA_<PROPERTY>`` variables into ``server.properties``
    ('.' -> '_', '_' -> '__', '-' -> '___'). The broker listens on every
    interface of the container (Docker forwards the published port to it) on
    the same port number as the host's, so the advertised address works.
    """
    from hudi_connect_stack.kafka import render_server_properties

    lines = render_server_properties(KAFKA_DATA_DIR, port, KAFKA_CONTROLLER_PORT).splitlines()
    settings = dict(line.split("=", 1) for line in lines)
    settings["listeners"] = f"PLAINTEXT://0.0.0.0:{port},CONTROLLER://{LOOPBACK}:{KAFKA_CONTROLLER_PORT}"
    env = {
        "KAFKA_" + key.replace("_", "__").replace("-", "___").replace(".", "_").upper(): value
        for key, value in settings.items()
    }
    return {**env, "CLUSTER_ID": cluster_id}


def hdfs_env(ports: Mapping[str, int]) -> dict[str, str]:
    """The apache/hadoop image's settings for the local cluster's namenode and datanode on ``ports``.

    The image writes each ``<FILE>.XML_<key>`` variable into ``<file>.xml`` and
    formats the namenode where ``ENSURE_NAMENODE_DIR`` is missing. The daemons
    bind every address of the container, on the same port numbers as the
    host's, and the datanode calls itself ``127.0.0.1``, so the addresses the
    namenode hands out (WebHDFS redirects, block locations) work outside.
    """
    from hudi_connect_stack.hdfs import core_site, hdfs_site

    site = hdfs_site(HDFS_HOME, ports) | {
        "dfs.namenode.rpc-bind-host": ANY_ADDRESS,
        "dfs.namenode.http-bind-host": ANY_ADDRESS,
        **{key: f"{ANY_ADDRESS}:{ports[role]}" for key, role in (
            ("dfs.datanode.address", "datanode"), ("dfs.datanode.ipc.address", "datanode_ipc"),
            ("dfs.datanode.http.address", "datanode_http"))},
    }
    core = core_site(f"hdfs://{LOOPBACK}:{ports['rpc']}", HDFS_HOME)
    return {**{f"CORE-SITE.XML_{key}": value for key, value in core.items()},
            **{f"HDFS-SITE.XML_{key}": value for key, value in site.items()},
            "ENSURE_NAMENODE_DIR": str(HDFS_HOME / "name")}


def container_server_confs(flavor: SparkFlavor, port: int, minio: MinioEndpoint | None,
                           storages: StorageEndpoints | None = None,
                           metastore: HiveMetastoreEndpoint | None = None) -> dict[str, str]:
    """The local server's confs with the container's paths and interpreter.

    The server shares the host's network, so its loopback addresses (driver,
    MinIO, the storages, interceptor) stay as they are. The 'cluster' flavor
    runs on ``local[2]`` here: a multi-container standalone cluster is future
    work.
    """
    from hudi_connect_stack.spark_connect import render_server_confs

    return render_server_confs(
        flavor, port=port, work_dir=CONTAINER_WORK_DIR, minio=minio, storages=storages, metastore=metastore,
        extra={"spark.pyspark.python": CONTAINER_PYTHON},
    )


def _publish_on_loopback(container: DockerContainer, port: int, host_port: int) -> None:
    # docker-py takes (host_ip, host_port); testcontainers' annotation only admits a port.
    container.ports[str(port)] = (LOOPBACK, host_port)  # type: ignore[assignment]


def _logs(container: DockerContainer | None, tail: int | None = None) -> str:
    if container is None:
        return ""
    try:
        raw = container.get_wrapped_container().logs(tail=tail if tail is not None else "all")
    except Exception:  # not created yet, or already gone
        return ""
    return str(raw.decode("utf-8", errors="replace")).rstrip()


def _start(
    service: str,
    create: Callable[[], DockerContainer],
    ready: Callable[[DockerContainer], bool] | None = None,
    *,
    timeout: float = READY_TIMEOUT,
    hint: str = "",
) -> str:
    """Create and start a container, then poll ``ready``; on any failure remove it and raise with its log tail.

    ``create`` runs inside the error handling too: testcontainers connects to
    the engine when a container object is made.
    """
    container: DockerContainer | None = None
    try:
        container = create()
        container.start()  # pulls the image, then runs the testcontainers module's own wait
        deadline = time.monotonic() + timeout
        while ready is not None and not ready(container):
            container.reload()
            if container.status not in ("created", "running"):
                raise ServiceStartError(service, f"the container is {container.status}", _logs(container, 40))
            if time.monotonic() >= deadline:
                raise ServiceStartError(service, f"not ready after {timeout:.0f}s{hint}", _logs(container, 40))
            time.sleep(0.5)
        return container.get_container_id()
    except BaseException as error:
        tail = _logs(container, 40)
        if container is not None:
            with contextlib.suppress(Exception):
                container.stop()  # removes it: a failed service must not outlive the run
        if isinstance(error, Exception) and not isinstance(error, ServiceStartError):
            raise ServiceStartError(service, f"{type(error).__name__}: {error}", tail) from error
        raise


class DockerBackend:
    """Every service as a container from a pinned image (see ``testcontainers/README.md``)."""

    name = "docker"

    def __init__(self, images: Mapping[str, Image] | None = None, mounts: Sequence[Path] = ()) -> None:
        from testcontainers.core.config import testcontainers_config

        # Ryuk would remove the containers when this process exits, but other
        # xdist workers still use them; the harness removes them by id instead.
        testcontainers_config.ryuk_disabled = True
        # Every endpoint is this machine's loopback (the engine runs here), even when this process itself
        # runs in a container, where testcontainers would otherwise look for a gateway or bridge address.
        from testcontainers.core.config import ConnectionMode

        testcontainers_config.connection_mode_override = ConnectionMode.docker_host
        testcontainers_config.tc_host_override = LOOPBACK
        self.images = dict(images) if images is not None else load_images()
        self.mounts = tuple(mounts)
        self.image_choice = os.environ.get(IMAGES_ENV, "auto")

    def _image(self, service: str) -> str:
        return image_for(service, self.images[service], self.image_choice)

    def minio(self, run_dir: Path) -> RunningService:
        from testcontainers.community.minio import MinioContainer

        require_room_for_writes(run_dir)  # the engine's storage is on the same machine
        port = free_port()
        endpoint = MinioEndpoint(
            endpoint_url=f"http://{LOOPBACK}:{port}",
            access_key="hudi-" + secrets.token_hex(6),
            secret_key=secrets.token_hex(20),
        )

        def create() -> DockerContainer:
            container = MinioContainer(
                self._image("minio"), port=MINIO_PORT, access_key=endpoint.access_key,
                secret_key=endpoint.secret_key, labels={LABEL: "minio"},
            )
            # testcontainers sets the pre-2021 key variables; current MinIO reads these.
            container.with_envs(MINIO_ROOT_USER=endpoint.access_key, MINIO_ROOT_PASSWORD=endpoint.secret_key,
                                MINIO_BROWSER="off", MINIO_UPDATE="off")
            _publish_on_loopback(container, MINIO_PORT, port)
            return container

        return RunningService(endpoint, (), (_start("minio", create),))

    def kafka(self, run_dir: Path) -> RunningService:
        from testcontainers.core.container import DockerContainer

        from hudi_connect_stack.kafka import READY_MARKER, new_cluster_id

        port = free_port()  # the same number inside and outside, for advertised.listeners

        def create() -> DockerContainer:
            container = DockerContainer(
                self._image("kafka"), env=kafka_env(port, new_cluster_id()), labels={LABEL: "kafka"}
            )
            _publish_on_loopback(container, port, port)
            return container

        container_id = _start("kafka", create, lambda container: port_open(port) and READY_MARKER in _logs(container))
        return RunningService(KafkaEndpoint(f"{LOOPBACK}:{port}"), (), (container_id,))

    def postgres(self, run_dir: Path) -> RunningService:
        from testcontainers.community.postgres import PostgresContainer

        from hudi_connect_stack.postgres import DATABASE, DB_USER

        port = free_port()
        endpoint = PostgresEndpoint(LOOPBACK, port, DB_USER, secrets.token_hex(16), DATABASE)

        def create() -> DockerContainer:
            # PostgresContainer waits until psql inside the container can query the database.
            container = PostgresContainer(
                self._image("postgres"), port=POSTGRES_PORT, username=endpoint.user,
                password=endpoint.password, dbname=endpoint.database, driver=None, labels={LABEL: "postgres"},
            )
            container.with_command(["postgres", "-c", "fsync=off", "-c", "max_connections=50"])
            _publish_on_loopback(container, POSTGRES_PORT, port)
            return container

        return RunningService(endpoint, (), (_start("postgres", create),))

    def gcs(self, run_dir: Path) -> RunningService:
        from testcontainers.core.container import DockerContainer

        from hudi_connect_stack.fake_gcs import api_answers, fake_gcs_flags

        port = free_port()  # the same number inside and outside, for the upload URLs it hands out
        endpoint = GcsEndpoint(endpoint_url=f"http://{LOOPBACK}:{port}")

        def create() -> DockerContainer:
            container = DockerContainer(self._image("fake-gcs"), labels={LABEL: "fake-gcs"})
            container.with_command(fake_gcs_flags(port, bind=ANY_ADDRESS))
            _publish_on_loopback(container, port, port)
            return container

        container_id = _start("fake-gcs", create, lambda _: api_answers(endpoint.endpoint_url))
        return RunningService(endpoint, (), (container_id,))

    def azurite(self, run_dir: Path) -> RunningService:
        from testcontainers.core.container import DockerContainer

        from hudi_connect_stack.azurite import BLOB_PORT, answers, azurite_flags, emulator_endpoint

        endpoint = emulator_endpoint()  # 127.0.0.1:10000, refused while anything listens there

        def create() -> DockerContainer:
            container = DockerContainer(self._image("azurite"), labels={LABEL: "azurite"})
            container.with_command(["azurite-blob", *azurite_flags(AZURITE_DATA, bind=ANY_ADDRESS)])
            _publish_on_loopback(container, BLOB_PORT, BLOB_PORT)
            return container

        container_id = _start("azurite", create, lambda _: answers(endpoint.blob_endpoint))
        return RunningService(endpoint, (), (container_id,))

    def hdfs(self, run_dir: Path) -> RunningService:
        from testcontainers.core.container import DockerContainer

        from hudi_connect_stack.hdfs import client_endpoint, cluster_ready, free_ports

        ports = free_ports()  # the same numbers inside and outside: the namenode hands out the datanode's
        endpoint = client_endpoint(run_dir / "hdfs", ports)  # its client configuration, on this machine

        def create() -> DockerContainer:
            container = DockerContainer(self._image("hdfs"), env=hdfs_env(ports), labels={LABEL: "hdfs"})
            container.with_command(HDFS_COMMAND)
            for role in HDFS_PUBLISHED:
                _publish_on_loopback(container, ports[role], ports[role])
            return container

        container_id = _start("hdfs", create, lambda _: cluster_ready(endpoint, ports["http"]))
        return RunningService(endpoint, (), (container_id,))

    def hive_metastore(self, run_dir: Path, postgres: PostgresEndpoint) -> RunningService:
        """The metastore's JVM in the Spark image (it has the Java it needs), from the provisioned jars mounted
        read-only, on the host's network (its PostgreSQL is published on loopback); the warehouse folder at the
        same path as on the host, where the Spark containers mount it too."""
        from testcontainers.core.container import DockerContainer

        from hudi_connect_stack.hive_metastore import (
            answers,
            ensure_hive_metastore,
            init_schema,
            java_command,
            metastore_site,
            write_conf,
        )

        home, warehouse = run_dir / "hive-metastore", run_dir / "hive-warehouse"
        warehouse.mkdir(parents=True, exist_ok=True)
        os.chmod(warehouse, 0o777)  # the containers' spark user creates the databases' folders
        jars = ensure_hive_metastore()
        init_schema(postgres)
        port = free_port()
        write_conf(home / "conf", metastore_site(postgres, port, warehouse.as_uri()))
        command = java_command(home / "conf", [str(CONTAINER_METASTORE_JARS / jar.name) for jar in jars], port)

        def create() -> DockerContainer:
            container = DockerContainer(self._image("spark-connect"), network_mode="host",
                                        labels={LABEL: "hive-metastore"})
            container.with_command(command)
            for jar in jars:
                container.with_volume_mapping(str(jar), str(CONTAINER_METASTORE_JARS / jar.name), "ro")
            container.with_volume_mapping(str(home / "conf"), str(home / "conf"), "ro")
            container.with_volume_mapping(str(warehouse), str(warehouse), "rw")
            return container

        container_id = _start("hive-metastore", create, lambda _: answers(LOOPBACK, port))
        endpoint = HiveMetastoreEndpoint(f"thrift://{LOOPBACK}:{port}", warehouse.as_uri())
        return RunningService(endpoint, (), (container_id,))

    def zookeeper(self, run_dir: Path) -> RunningService:
        """ZooKeeper's JVM in the Spark image (it has the Java it needs) from the provisioned jars mounted
        read-only, on the host's network, its data in the run's folder as the local process keeps it."""
        from testcontainers.core.container import DockerContainer

        from hudi_connect_stack.zookeeper import answers, java_command, prepare_home, server_jars

        port = free_port()  # bound on the host's network
        home = prepare_home(run_dir, port)
        os.chmod(home / "data", 0o777)  # the image's spark user writes it
        jars = server_jars()
        command = java_command("java", [str(CONTAINER_ZOOKEEPER_JARS / jar.name) for jar in jars], home / "zoo.cfg")

        def create() -> DockerContainer:
            container = DockerContainer(self._image("spark-connect"), network_mode="host", labels={LABEL: "zookeeper"})
            container.with_command(command)
            for jar in jars:
                container.with_volume_mapping(str(jar), str(CONTAINER_ZOOKEEPER_JARS / jar.name), "ro")
            container.with_volume_mapping(str(home), str(home), "rw")
            return container

        container_id = _start("zookeeper", create, lambda _: answers(LOOPBACK, port))
        return RunningService(ZooKeeperEndpoint(LOOPBACK, port), (), (container_id,))

    def spark_connect(self, run_dir: Path, flavor: SparkFlavor, minio: MinioEndpoint | None,
                      storages: StorageEndpoints | None = None,
                      metastore: HiveMetastoreEndpoint | None = None) -> RunningService:
        from testcontainers.core.container import DockerContainer

        from hudi_connect_stack.spark_connect import READY_MARKER, server_command, server_jars, storage_env

        service = f"spark connect ({flavor}, docker)"
        if flavor == "hudi-lance":  # its Arrow 18 must precede Spark's on the class path: no image does that yet
            raise ServiceStartError(service, "the hudi-lance server runs on the local backend only")
        if flavor.startswith("plain-4"):  # the image holds Spark 3.5
            raise ServiceStartError(service, "the Spark 4 servers run on the local backend only")
        if (storages is not None) != flavor.endswith("-storages"):
            raise ValueError(f"a {flavor} server takes storages= exactly when its flavor ends in -storages")
        port = free_port()  # the server binds it on the host's network
        token = secrets.token_urlsafe(24)
        jars = {jar.name: jar for jar in server_jars(flavor)}
        command = server_command(flavor, container_server_confs(flavor, port, minio, storages, metastore))
        # The local command with the image's spark-submit and the jars where they are mounted.
        command[0] = SPARK_SUBMIT
        command[command.index("--jars") + 1] = ",".join(str(CONTAINER_JARS / name) for name in jars)

        def create() -> DockerContainer:
            container = DockerContainer(
                self._image("spark-connect"),
                env={"HUDI_CONNECT_SERVER_TOKEN": token, "PYSPARK_PYTHON": CONTAINER_PYTHON,
                     **storage_env(minio, storages)},
                network_mode="host", labels={LABEL: f"spark-connect-{flavor}"},
            )
            container.with_command(command)
            for name, jar in jars.items():
                container.with_volume_mapping(jar, str(CONTAINER_JARS / name), "ro")
            for folder in self.mounts:
                container.with_volume_mapping(str(folder), str(folder), "rw")
            if storages is not None:  # HADOOP_CONF_DIR names it: the same path inside
                container.with_volume_mapping(storages.hdfs.conf_dir, storages.hdfs.conf_dir, "ro")
            if metastore is not None:  # the tables' folders, where the metastore says they are
                warehouse = metastore.warehouse_dir.removeprefix("file://")
                container.with_volume_mapping(warehouse, warehouse, "rw")
            return container

        def ready(container: DockerContainer) -> bool:
            return port_open(port) and READY_MARKER in _logs(container)

        container_id = _start(service, create, ready, hint=UNREACHABLE_HINT)
        return RunningService(SparkConnectEndpoint(LOOPBACK, port, token, flavor), (), (container_id,))
