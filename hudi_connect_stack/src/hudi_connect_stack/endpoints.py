"""How to reach each service of the stack, whichever backend started it.

These are plain frozen values so that they can be written to a state file and
shared between pytest-xdist workers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, TypeVar
from urllib.parse import quote

# plain-4.0 to plain-4.3: plain servers of a Spark 4 line (versions.SPARK4_LINES); hudi-storages and
# plain-storages: the Hudi and plain servers wired to the GCS, Azure and HDFS servers too (StorageEndpoints)
# hudi-metastore and plain-metastore: the Hudi and plain servers keeping their catalog in the Hive Metastore
SparkFlavor = Literal["hudi", "plain", "cluster", "hudi-lance", "plain-4.0", "plain-4.1", "plain-4.2", "plain-4.3",
                      "hudi-storages", "plain-storages", "hudi-0.15", "hudi-1.0", "hudi-metastore", "plain-metastore"]

TOKEN_HEADER = "x-hudi-connect-token"


@dataclass(frozen=True)
class MinioEndpoint:
    endpoint_url: str  # http://127.0.0.1:port
    access_key: str
    secret_key: str
    region: str = "us-east-1"


@dataclass(frozen=True)
class GcsEndpoint:
    """A GCS emulator (fake-gcs-server): its JSON API at ``endpoint_url``, no credentials."""

    endpoint_url: str  # http://127.0.0.1:port
    project: str = "hudi-connect"


@dataclass(frozen=True)
class AzuriteEndpoint:
    """Azurite's Blob service. Hadoop's WASB driver reaches it as the storage emulator (account host
    ``storageemulator``, always http://127.0.0.1:10000); SDKs through the connection string."""

    blob_endpoint: str  # http://127.0.0.1:10000/devstoreaccount1
    account_name: str
    account_key: str

    @property
    def connection_string(self) -> str:
        return (f"DefaultEndpointsProtocol=http;AccountName={self.account_name};AccountKey={self.account_key};"
                f"BlobEndpoint={self.blob_endpoint};")


@dataclass(frozen=True)
class HdfsEndpoint:
    """An HDFS namenode and datanode: ``hdfs://`` at ``namenode_uri``, WebHDFS at ``webhdfs_address``; its
    client configuration (hdfs-site.xml, for HADOOP_CONF_DIR: no fs.defaultFS) in ``conf_dir``."""

    namenode_uri: str  # hdfs://127.0.0.1:port
    webhdfs_address: str  # 127.0.0.1:port
    conf_dir: str
    user: str = "hudi"


@dataclass(frozen=True)
class StorageEndpoints:
    """The storages beside MinIO that the ``*-storages`` servers reach: GCS, Azure and HDFS."""

    gcs: GcsEndpoint
    azure: AzuriteEndpoint
    hdfs: HdfsEndpoint


@dataclass(frozen=True)
class KafkaEndpoint:
    bootstrap_servers: str  # host:port

    def get_bootstrap_server(self) -> str:
        return self.bootstrap_servers


@dataclass(frozen=True)
class PostgresEndpoint:
    host: str
    port: int
    user: str
    password: str
    database: str

    @property
    def dsn(self) -> str:
        return (
            f"postgresql://{quote(self.user)}:{quote(self.password)}@{self.host}:{self.port}/"
            f"{quote(self.database)}"
        )

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{self.database}"


@dataclass(frozen=True)
class HiveMetastoreEndpoint:
    """A Hive Metastore's Thrift address and the warehouse its databases' folders go in (every server using it
    must reach the same one)."""

    uri: str  # thrift://127.0.0.1:port
    warehouse_dir: str  # file:///...


@dataclass(frozen=True)
class ZooKeeperEndpoint:
    """A ZooKeeper server's client address (``host:port``, what Curator's connect string takes)."""

    host: str
    port: int

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class SparkConnectEndpoint:
    host: str
    port: int
    token: str
    flavor: SparkFlavor

    @property
    def url(self) -> str:
        """The ``sc://`` address, carrying the token as a gRPC header."""
        return f"sc://{self.host}:{self.port}/;{TOKEN_HEADER}={self.token}"

    def __repr__(self) -> str:  # never print the token
        return f"SparkConnectEndpoint(host={self.host!r}, port={self.port}, flavor={self.flavor!r})"


Endpoint = (MinioEndpoint | KafkaEndpoint | PostgresEndpoint | SparkConnectEndpoint | GcsEndpoint | AzuriteEndpoint
            | HdfsEndpoint | HiveMetastoreEndpoint | ZooKeeperEndpoint)
E = TypeVar("E", MinioEndpoint, KafkaEndpoint, PostgresEndpoint, SparkConnectEndpoint, GcsEndpoint, AzuriteEndpoint,
            HdfsEndpoint, HiveMetastoreEndpoint, ZooKeeperEndpoint)


def endpoint_to_json(endpoint: Endpoint) -> dict[str, Any]:
    return asdict(endpoint)


def endpoint_from_json(kind: type[E], data: dict[str, Any]) -> E:
    return kind(**data)
