"""The component versions hudi-connect is built and tested against.

One place for every pin, so that the provisioning scripts, the launchers and
the README agree. The Spark 4.0 line with ``hudi-spark4.0-bundle_2.13`` is not
served by the Maven registry this project can reach, so the pinned pair is the
newest one that is: Spark 3.5.7 (Scala 2.12) with Hudi 1.2.0. Hudi's writes run
there; the jar-free half also runs on plain Spark 4 servers (:data:`SPARK4_LINES`).
"""

from __future__ import annotations

from dataclasses import dataclass

# the Hudi release is the library's (it names the bundle in its advice); the harness provisions that one
from hudi_connect.client.server import HUDI_GROUP, hudi_bundle_artifact
from hudi_connect.client.server import HUDI_VERSION as HUDI_VERSION

SPARK_VERSION = "3.5.7"
SCALA_BINARY_VERSION = "2.12"
HADOOP_VERSION = "3.3.4"  # the Hadoop client that pyspark 3.5.7 ships
AWS_SDK_BUNDLE_VERSION = "1.12.262"  # what hadoop-aws 3.3.4 was built against
KAFKA_CLIENTS_VERSION = "3.4.1"  # what spark-sql-kafka 3.5.7 was built against
KAFKA_BROKER_VERSION = "3.9.1"
POSTGRES_JDBC_VERSION = "42.7.7"
MINIO_MODULE = "github.com/minio/minio"
MINIO_VERSION = "v0.0.0-20260212201848-7aac2a2c5b7c"
MAVEN_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"


@dataclass(frozen=True)
class MavenArtifact:
    """One Maven coordinate; ``transitive`` pulls its runtime dependencies too."""

    group: str
    artifact: str
    version: str
    transitive: bool = False
    classifier: str = ""  # a jar beside the main one (``shaded``)
    exclusions: tuple[str, ...] = ()  # ``group:artifact`` left out of a transitive resolution
    packaging: str = "jar"  # ``tar.gz`` for a distribution archive

    @property
    def coordinate(self) -> str:
        """``group:artifact:version[:classifier]``, as Maven resolves it."""
        return f"{self.group}:{self.artifact}:{self.version}" + (f":{self.classifier}" if self.classifier else "")

    @property
    def jar_name(self) -> str:
        """The jar's file name in a Maven repository (``artifact-version[-classifier].jar``)."""
        return f"{self.artifact}-{self.version}" + (f"-{self.classifier}" if self.classifier else "") \
            + f".{self.packaging}"


@dataclass(frozen=True)
class JarSet:
    """A named set of jars resolved into one directory of the cache."""

    name: str
    artifacts: tuple[MavenArtifact, ...]


_S = SCALA_BINARY_VERSION

SPARK_CONNECT_JARS = JarSet(
    "spark-connect",
    (MavenArtifact("org.apache.spark", f"spark-connect_{_S}", SPARK_VERSION),),
)

# The registry serves the 3.5 line's JVM client at 3.5.0 only (3.5.1 to 3.5.8 are refused); Connect's
# protocol is the same across 3.5, and the test proves that against the 3.5.7 server.
JVM_CLIENT_VERSION = "3.5.0"
# Spark's own JVM Connect client (no Scala compiler needed: Java programs compile against it), for the
# proof that the stack serves clients that are not Python; its dependencies (Scala's library) come along.
JVM_CLIENT_JARS = JarSet(
    "jvm-client",
    (
        MavenArtifact("org.apache.spark", f"spark-connect-client-jvm_{_S}", JVM_CLIENT_VERSION, transitive=True),
        # Arrow's allocator needs Netty's buffers, which the client's POM leaves out (Spark 3.5.0's Netty)
        MavenArtifact("io.netty", "netty-buffer", "4.1.96.Final"),
        MavenArtifact("io.netty", "netty-common", "4.1.96.Final"),
    ),
)

# Spark's Avro module (not Hudi): the plain server's from_avro decodes .cdc records in the JVM
# (hudi_connect.cdc.jvm_decoding). The Hudi server goes without it, so the suite meets both kinds of server.
SPARK_AVRO_JARS = JarSet(
    "spark-avro",
    (MavenArtifact("org.apache.spark", f"spark-avro_{_S}", SPARK_VERSION),),
)

HUDI_JARS = JarSet(
    "hudi",
    (MavenArtifact(HUDI_GROUP, f"hudi-spark3.5-bundle_{_S}", HUDI_VERSION),),
)

# Earlier Hudi releases as writers (issue #32): the tables users wrote before upgrading. 0.15.0 writes table
# version 6, 1.0.2 version 8; each serves a server flavour of its own ("hudi-0.15", "hudi-1.0").
HUDI_EARLIER_RELEASES = ("0.15.0", "1.0.2")
HUDI_015_JARS = JarSet("hudi-0.15.0", (MavenArtifact(HUDI_GROUP, f"hudi-spark3.5-bundle_{_S}", "0.15.0"),))
HUDI_10_JARS = JarSet("hudi-1.0.2", (MavenArtifact(HUDI_GROUP, f"hudi-spark3.5-bundle_{_S}", "1.0.2"),))

STORAGE_AND_SINK_JARS = JarSet(
    "storage-and-sinks",
    (
        MavenArtifact("org.apache.hadoop", "hadoop-aws", HADOOP_VERSION),
        MavenArtifact("com.amazonaws", "aws-java-sdk-bundle", AWS_SDK_BUNDLE_VERSION),
        MavenArtifact("org.apache.spark", f"spark-sql-kafka-0-10_{_S}", SPARK_VERSION),
        MavenArtifact("org.apache.spark", f"spark-token-provider-kafka-0-10_{_S}", SPARK_VERSION),
        MavenArtifact("org.apache.kafka", "kafka-clients", KAFKA_CLIENTS_VERSION),
        MavenArtifact("org.apache.commons", "commons-pool2", "2.11.1"),
        MavenArtifact("org.postgresql", "postgresql", POSTGRES_JDBC_VERSION),
    ),
)

KAFKA_BROKER_JARS = JarSet(
    "kafka-broker",
    (
        MavenArtifact("org.apache.kafka", "kafka_2.13", KAFKA_BROKER_VERSION, transitive=True),
        # The broker logs through slf4j; without a binding its log (and so the
        # readiness check's log tail) would be empty.
        MavenArtifact("org.slf4j", "slf4j-reload4j", "1.7.36", transitive=True),
    ),
)

# Hudi 1.2 writes Lance base files with these, which its bundle does not shade (Hudi's root pom pins
# lance 4.0.0, lance-spark 0.4.0, Arrow 18.3.0). Only the 'hudi-lance' server loads them.
LANCE_VERSION = "4.0.0"
LANCE_SPARK_VERSION = "0.4.0"
LANCE_ARROW_VERSION = "18.3.0"
LANCE_JARS = JarSet(
    "lance",
    (
        MavenArtifact("org.lance", "lance-core", LANCE_VERSION),  # with its JNI library for linux-x86-64
        MavenArtifact("org.lance", f"lance-spark-3.5_{_S}", LANCE_SPARK_VERSION),
        MavenArtifact("org.questdb", "jar-jni", "1.1.1"),  # unpacks lance-core's JNI library
    ),
)
# Spark 3.5 ships Arrow 12; Lance needs 18, so these go before Spark's own on the server's class path.
LANCE_ARROW_JARS = JarSet(
    "lance-arrow",
    tuple(MavenArtifact("org.apache.arrow", name, LANCE_ARROW_VERSION) for name in (
        "arrow-vector", "arrow-memory-core", "arrow-memory-netty", "arrow-memory-netty-buffer-patch",
        "arrow-format", "arrow-c-data")),
)

# The connectors a Spark server needs for the other storages (HDFS's client is in pyspark's Hadoop already):
# Google's GCS connector (shaded, for Hadoop 3) and hadoop-azure (WASB and ABFS) with the Azure SDK it was
# built against. Only the '*-storages' servers load them.
GCS_CONNECTOR_VERSION = "hadoop3-2.2.22"
CLOUD_STORAGE_JARS = JarSet(
    "cloud-storage",
    (
        MavenArtifact("com.google.cloud.bigdataoss", "gcs-connector", GCS_CONNECTOR_VERSION, classifier="shaded"),
        MavenArtifact("org.apache.hadoop", "hadoop-azure", HADOOP_VERSION),
        MavenArtifact("com.microsoft.azure", "azure-storage", "7.0.1"),
        MavenArtifact("org.eclipse.jetty", "jetty-util-ajax", "9.4.43.v20210629"),
        MavenArtifact("org.eclipse.jetty", "jetty-util", "9.4.43.v20210629"),
    ),
)

# An HDFS namenode and datanode for the tests, run from Hadoop's own jars (the server side of HDFS).
HDFS_SERVER_JARS = JarSet(
    "hdfs-server",
    (
        MavenArtifact("org.apache.hadoop", "hadoop-hdfs", HADOOP_VERSION, transitive=True),
        MavenArtifact("org.apache.hadoop", "hadoop-common", HADOOP_VERSION, transitive=True),
        # hadoop-hdfs has the client (protocols, WebHDFS) only as 'provided'
        MavenArtifact("org.apache.hadoop", "hadoop-hdfs-client", HADOOP_VERSION, transitive=True),
    ),
)

# The Hive Metastore (3.1.3: Spark 3.5's built-in Hive 2.3.9 client speaks its Thrift API; 4.0's drops
# methods that client calls) on Hadoop 3.3.4's client, with PostgreSQL's driver for its database. Its POM names
# Hadoop 3.1's HDFS server and log4j 1 bindings, which this Hadoop replaces; the bin archive holds its schema
# scripts (MetastoreSchemaTool's, which hive_metastore runs through psycopg instead of a JVM).
HIVE_METASTORE_VERSION = "3.1.3"
_NO_LOG4J1 = ("org.slf4j:slf4j-reload4j", "org.slf4j:slf4j-log4j12", "ch.qos.reload4j:reload4j", "log4j:log4j")
HIVE_METASTORE_JARS = JarSet(
    "hive-metastore",
    (
        MavenArtifact("org.apache.hive", "hive-standalone-metastore", HIVE_METASTORE_VERSION, transitive=True,
                      exclusions=("org.apache.hadoop:hadoop-hdfs", *_NO_LOG4J1)),
        MavenArtifact("org.apache.hadoop", "hadoop-common", HADOOP_VERSION, transitive=True, exclusions=_NO_LOG4J1),
        MavenArtifact("org.apache.hadoop", "hadoop-mapreduce-client-core", HADOOP_VERSION, transitive=True,
                      exclusions=_NO_LOG4J1),
        MavenArtifact("org.postgresql", "postgresql", POSTGRES_JDBC_VERSION),
        MavenArtifact("org.apache.hive", "hive-standalone-metastore", HIVE_METASTORE_VERSION, classifier="bin",
                      packaging="tar.gz"),
    ),
)

# ZooKeeper for the lock that writers on several servers share (Hudi's ZookeeperBasedLockProvider; the servers'
# Spark 3.5 ships ZooKeeper's client, the bundle its Curator); the server runs standalone, without TLS, logging
# through slf4j-simple
ZOOKEEPER_VERSION = "3.9.5"
ZOOKEEPER_JARS = JarSet(
    "zookeeper",
    (MavenArtifact("org.apache.zookeeper", "zookeeper", ZOOKEEPER_VERSION, transitive=True,
                   exclusions=("io.netty:netty-tcnative-boringssl-static",)),
     # what ZooKeeper's POM leaves to its distribution (provided): its metrics, its snapshots' codec, a logger
     MavenArtifact("io.dropwizard.metrics", "metrics-core", "4.1.12.1"),
     MavenArtifact("org.xerial.snappy", "snappy-java", "1.1.10.5"),
     MavenArtifact("org.slf4j", "slf4j-simple", "2.0.13"),
     # what its command-line client (ZooKeeperMain, zkCli.sh) parses its arguments with: the distribution's
     MavenArtifact("commons-cli", "commons-cli", "1.5.0")),
)

# The other storages' servers for the tests: fake-gcs-server (Go) and Azurite (npm)
FAKE_GCS_MODULE = "github.com/fsouza/fake-gcs-server"
FAKE_GCS_VERSION = "v1.54.0"
AZURITE_VERSION = "3.37.0"

ALL_JAR_SETS = (
    SPARK_CONNECT_JARS, SPARK_AVRO_JARS, HUDI_JARS, STORAGE_AND_SINK_JARS, KAFKA_BROKER_JARS, LANCE_JARS,
    LANCE_ARROW_JARS, JVM_CLIENT_JARS, CLOUD_STORAGE_JARS, HDFS_SERVER_JARS, HUDI_015_JARS, HIVE_METASTORE_JARS,
    ZOOKEEPER_JARS,
)

# The Python of the Spark servers' workers: what pyspark's Arrow UDFs need, plus
# fastavro for Hudi's Avro log blocks. hudi_connect itself is not installed
# there; it reaches the workers as a session artifact.
SERVER_PYTHON_PACKAGES = (
    "pyarrow==20.0.0", "pandas==2.2.3", "numpy==1.26.4", "fastavro==1.13.1",
    # Arrow's compiled Avro decoder for large log blocks (optional on a user's server: fastavro's path reads
    # them too, about 10 times slower)
    "datafusion==55.0.0",
    # the reverse streamer's executors: conditional S3 puts (checkpoint claims) and PostgreSQL merges
    "boto3==1.44.5", "pg8000==1.31.6",
    # Lance base files (Hudi 1.2's hoodie.table.base.file.format=LANCE, Lance file format 2.0)
    "pylance==4.0.0",
    # the other storages' workers: WebHDFS (fsspec, over requests), and the conditional writes pyarrow cannot
    # express on GCS and Azure (checkpoint claims)
    "fsspec==2026.9.0", "requests==2.34.2", "google-cloud-storage==3.17.1", "azure-storage-blob==12.31.1",
)


def hudi_bundle(spark_version: str) -> MavenArtifact:
    """Hudi's Spark bundle for a server of ``spark_version``, as the library names it in its advice."""
    return MavenArtifact(HUDI_GROUP, hudi_bundle_artifact(spark_version), HUDI_VERSION)


@dataclass(frozen=True)
class SparkLine:
    """A Spark 4 line whose plain Connect server runs the jar-free half: PyPI's ``pyspark`` sdist holds the
    server (spark-connect_2.13 among its jars), so no Maven download is needed for Spark itself."""

    name: str  # "4.1"
    pyspark: str  # the server (and its workers' pyspark), from PyPI
    client: str  # the pip requirement of the client line, as the extra of the same name selects it
    kafka_connector: str  # the newest spark-sql-kafka of the line Maven Central serves with its token provider
    kafka_clients: str  # what that connector was built against
    commons_pool2: str
    worker_packages: tuple[str, ...]  # the workers' Python besides pyspark: numpy 2, like the client line

    @property
    def pushes_filters_to_python(self) -> bool:
        """Whether Spark pushes filters to Python data sources on this line (from 4.1, SPARK-51271)."""
        return tuple(int(part) for part in self.name.split(".")) >= (4, 1)

    @property
    def python_read_limits(self) -> bool:
        """Whether Python streaming sources take read limits on this line (from 4.2: ``latestOffset(start,
        limit)``), so ``maxFilesPerTrigger`` reaches the data source."""
        return tuple(int(part) for part in self.name.split(".")) >= (4, 2)

    @property
    def flavor(self) -> str:
        """The server flavour of this line's plain Connect server (``plain-4.1``)."""
        return f"plain-{self.name}"

    @property
    def jars(self) -> JarSet:
        """The jars this line's plain server loads besides Spark's own: Spark's Kafka connector (for the
        Kafka sink) and PostgreSQL's JDBC driver."""
        return JarSet(
            f"spark-{self.name}-sinks",
            (
                MavenArtifact("org.apache.spark", "spark-sql-kafka-0-10_2.13", self.kafka_connector),
                MavenArtifact("org.apache.spark", "spark-token-provider-kafka-0-10_2.13", self.kafka_connector),
                MavenArtifact("org.apache.kafka", "kafka-clients", self.kafka_clients),
                MavenArtifact("org.apache.commons", "commons-pool2", self.commons_pool2),
                MavenArtifact("org.postgresql", "postgresql", POSTGRES_JDBC_VERSION),
            ),
        )


_SPARK4_WORKERS = ("pyarrow==22.0.0", "pandas==2.3.3", "numpy==2.3.5", "fastavro==1.13.1", "datafusion==55.0.0",
                   "boto3==1.44.5", "pg8000==1.31.6", "fsspec==2026.9.0", "requests==2.34.2",
                   "google-cloud-storage==3.17.1", "azure-storage-blob==12.31.1")
SPARK4_LINES: dict[str, SparkLine] = {
    "4.0": SparkLine(name="4.0", pyspark="4.0.5", client="pyspark-client>=4.0,<4.1", kafka_connector="4.0.0",
                     kafka_clients="3.9.0", commons_pool2="2.12.0", worker_packages=_SPARK4_WORKERS),
    "4.1": SparkLine(name="4.1", pyspark="4.1.3", client="pyspark-client>=4.1,<4.2", kafka_connector="4.1.1",
                     kafka_clients="3.9.1", commons_pool2="2.12.1", worker_packages=_SPARK4_WORKERS),
    "4.2": SparkLine(name="4.2", pyspark="4.2.1", client="pyspark-client>=4.2,<4.3", kafka_connector="4.2.0",
                     kafka_clients="3.9.2", commons_pool2="2.13.1", worker_packages=_SPARK4_WORKERS),
    # PyPI has no pyspark-client 4.3 (the client is pyspark's connect extra) and Maven Central no spark-sql-kafka
    # 4.3: the line's Kafka sink runs on 4.2's connector (integration/test_spark4.py proves it)
    "4.3": SparkLine(name="4.3", pyspark="4.3.0", client="pyspark[connect]>=4.3,<4.4", kafka_connector="4.2.0",
                     kafka_clients="3.9.2", commons_pool2="2.13.1", worker_packages=_SPARK4_WORKERS),
}
