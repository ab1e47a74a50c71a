"""Spark Connect servers as local processes: with Hudi, plain (no Hudi jar),
driving a Spark standalone cluster of one master and two workers, or with Hudi and
Lance (the jars Hudi 1.2 needs to write Lance base files, and Arrow 18 ahead of Spark's).
The ``plain-4.x`` flavors are plain servers of a Spark 4 line, installed from PyPI's
pyspark with their own workers' Python (no Hudi bundle for Spark 4 is reachable here).

Storage credentials for s3a live only in the server's environment (read by
the AWS SDK's environment credentials provider), never in a Spark conf that a
Connect client could read back.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import secrets
import sys
from collections.abc import Mapping
from pathlib import Path

import pyspark

from hudi_connect_stack import provision, versions
from hudi_connect_stack.endpoints import (
    HiveMetastoreEndpoint,
    MinioEndpoint,
    SparkConnectEndpoint,
    SparkFlavor,
    StorageEndpoints,
)
from hudi_connect_stack.process import (
    LOOPBACK,
    Jit,
    RunningService,
    ServiceProcess,
    free_port,
    jit_options,
    launch,
    log_contains,
    port_open,
    wait_until_ready,
)

READY_TIMEOUT = 120.0
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
READY_MARKER = "Spark Connect server started"

HUDI_CONFS: Mapping[str, str] = {
    "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
    "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
    "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
}


def spark_home() -> Path:
    return Path(pyspark.__file__).parent


def spark4_line(flavor: SparkFlavor) -> versions.SparkLine | None:
    """The Spark 4 line of a ``plain-4.x`` flavor; None for the Spark 3.5 flavors."""
    return next((line for line in versions.SPARK4_LINES.values() if line.flavor == flavor), None)


# the Hudi bundle of each flavour with Hudi: 1.2 but where a flavour names an earlier release (issue #32)
_EARLIER_HUDI: Mapping[str, versions.JarSet] = {"hudi-0.15": versions.HUDI_015_JARS, "hudi-1.0": versions.HUDI_10_JARS}


def with_hudi(flavor: SparkFlavor) -> bool:
    return flavor in ("hudi", "cluster", "hudi-lance", "hudi-storages", "hudi-metastore", *_EARLIER_HUDI)


def with_metastore(flavor: SparkFlavor) -> bool:
    """Whether the flavor keeps its catalog in a Hive Metastore (the others keep Spark's in-memory one)."""
    return flavor.endswith("-metastore")


def metastore_confs(metastore: HiveMetastoreEndpoint) -> dict[str, str]:
    """Spark's catalog in the Hive Metastore (through Spark's built-in Hive 2.3 client), with its warehouse."""
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.hive.metastore.uris": metastore.uri,
        "spark.sql.warehouse.dir": metastore.warehouse_dir,
    }


def server_jars(flavor: SparkFlavor) -> list[Path]:
    line = spark4_line(flavor)
    if line is not None:  # Spark's own jars come with its pyspark; the interceptor's gRPC classes are unchanged
        return [*provision.jars_of(line.jars), provision.ensure_interceptor_jar()]
    jars = provision.jars_of(versions.SPARK_CONNECT_JARS) + provision.jars_of(versions.STORAGE_AND_SINK_JARS)
    if flavor in ("hudi-storages", "plain-storages"):
        jars += provision.jars_of(versions.CLOUD_STORAGE_JARS)
    if not with_hudi(flavor):
        jars += provision.jars_of(versions.SPARK_AVRO_JARS)
    else:
        jars += provision.jars_of(_EARLIER_HUDI.get(flavor, versions.HUDI_JARS))
        jars.append(provision.ensure_server_plugin_jar())
    if flavor == "hudi-lance":
        jars += provision.jars_of(versions.LANCE_JARS)
        provision.ensure_jars(versions.LANCE_ARROW_JARS)  # not --jars: the driver's class path names them
    return [*jars, provision.ensure_interceptor_jar()]


def driver_class_path(flavor: SparkFlavor) -> str | None:
    """Jars that must come before Spark's own: Lance's Arrow 18 (Spark 3.5 ships Arrow 12), as their cache
    directory's wildcard (the JVM expands it), so that rendering a server's settings does no I/O:
    :func:`server_jars` resolves them."""
    if flavor != "hudi-lance":
        return None
    return f"{provision.jar_dir(versions.LANCE_ARROW_JARS)}/*"


def s3a_confs(minio: MinioEndpoint) -> dict[str, str]:
    """s3a pointed at MinIO; credentials come from the server's environment."""
    return {
        "spark.hadoop.fs.s3a.endpoint": minio.endpoint_url,
        "spark.hadoop.fs.s3a.endpoint.region": minio.region,
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": str(minio.endpoint_url.startswith("https")).lower(),
        # Hadoop 3.3's pool of 96 runs dry when Hudi opens many metadata-table log files at once ("Timeout
        # waiting for connection from pool", apache/hudi#2429); Hadoop 3.4 raised it to 500 (HADOOP-19015)
        "spark.hadoop.fs.s3a.connection.maximum": "500",
        "spark.hadoop.fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.aws.credentials.provider": "com.amazonaws.auth.EnvironmentVariableCredentialsProvider",
    }


def storage_env(minio: MinioEndpoint | None, storages: StorageEndpoints | None = None) -> dict[str, str]:
    """Server-side storage credentials, for the JVM's connectors and the Python workers alike."""
    env: dict[str, str] = {}
    if minio is not None and storages is None:
        env.update(AWS_ACCESS_KEY_ID=minio.access_key, AWS_SECRET_ACCESS_KEY=minio.secret_key,
                   AWS_REGION=minio.region, AWS_ENDPOINT_URL=minio.endpoint_url)
    if minio is not None and storages is not None:
        # MinIO set up the usual Hadoop way (s3a_confs_in_hadoop): its keys reach the JVM only, so the workers
        # show what a server configured so does to them. Where the credentials are not (no instance metadata
        # service on loopback: the SDK must not look for one)
        env.update(AWS_REGION=minio.region, AWS_ENDPOINT_URL=minio.endpoint_url, AWS_EC2_METADATA_DISABLED="true",
                   AWS_SHARED_CREDENTIALS_FILE="/nonexistent", AWS_CONFIG_FILE="/nonexistent")
    if storages is not None:
        env.update(STORAGE_EMULATOR_HOST=storages.gcs.endpoint_url,
                   AZURE_STORAGE_CONNECTION_STRING=storages.azure.connection_string,
                   HADOOP_CONF_DIR=storages.hdfs.conf_dir, HADOOP_USER_NAME=storages.hdfs.user)
    return env


def s3a_confs_in_hadoop(minio: MinioEndpoint) -> dict[str, str]:
    """s3a pointed at MinIO with its keys in Hadoop's configuration, as many servers are set up."""
    return {**s3a_confs(minio),
            "spark.hadoop.fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            "spark.hadoop.fs.s3a.access.key": minio.access_key, "spark.hadoop.fs.s3a.secret.key": minio.secret_key}


def storages_confs(storages: StorageEndpoints) -> dict[str, str]:
    """The JVM's connectors pointed at the GCS emulator and Azurite (HDFS needs nothing: its URIs name the
    namenode)."""
    return {
        "spark.hadoop.fs.gs.impl": "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem",
        "spark.hadoop.fs.AbstractFileSystem.gs.impl": "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFS",
        "spark.hadoop.fs.gs.storage.root.url": storages.gcs.endpoint_url + "/",
        "spark.hadoop.fs.gs.project.id": storages.gcs.project,
        "spark.hadoop.fs.gs.auth.service.account.enable": "false",
        "spark.hadoop.fs.gs.auth.null.enable": "true",
        "spark.hadoop.fs.wasb.impl": "org.apache.hadoop.fs.azure.NativeAzureFileSystem",
    }


def render_server_confs(
    flavor: SparkFlavor,
    *,
    port: int,
    work_dir: Path,
    minio: MinioEndpoint | None = None,
    storages: StorageEndpoints | None = None,
    metastore: HiveMetastoreEndpoint | None = None,
    master: str = "local[2]",
    worker_python: str = sys.executable,
    extra: Mapping[str, str] | None = None,
    jit: Jit = "full",
) -> dict[str, str]:
    """Every ``--conf`` of a Connect server of the given flavor (pure: no I/O)."""
    if (storages is not None) != flavor.endswith("-storages"):
        raise ValueError(f"a {flavor} server takes storages= exactly when its flavor ends in -storages")
    if (metastore is not None) != with_metastore(flavor):
        raise ValueError(f"a {flavor} server takes metastore= exactly when its flavor ends in -metastore")
    confs = {
        "spark.master": master,
        "spark.connect.grpc.binding.port": str(port),
        # Spark 4 binds where it is told (3.5 binds every address, so its interceptor refuses other peers)
        **({"spark.connect.grpc.binding.address": LOOPBACK} if spark4_line(flavor) else {}),
        "spark.connect.grpc.interceptor.classes": provision.INTERCEPTOR_CLASS,
        "spark.ui.enabled": "false",
        "spark.sql.catalogImplementation": "in-memory",
        "spark.sql.warehouse.dir": str(work_dir / "warehouse"),
        "spark.local.dir": str(work_dir / "tmp"),
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.host": LOOPBACK,
        "spark.driver.bindAddress": LOOPBACK,
        "spark.pyspark.python": worker_python,
    }
    if with_hudi(flavor):
        confs.update(HUDI_CONFS)
        confs["spark.plugins"] = provision.SERVER_PLUGIN_CLASS
    if minio is not None:
        confs.update(s3a_confs(minio) if storages is None else s3a_confs_in_hadoop(minio))
    if storages is not None:
        confs.update(storages_confs(storages))
    if metastore is not None:
        confs.update(metastore_confs(metastore))
    if flavor == "cluster":
        confs.update({"spark.executor.cores": "1", "spark.executor.memory": "1g", "spark.cores.max": "2"})
    java_options = " ".join(jit_options(jit))
    if java_options:  # the driver (and, on local masters, its executors); a cluster's executor JVMs too
        confs["spark.driver.extraJavaOptions"] = java_options
        if flavor == "cluster":
            confs["spark.executor.extraJavaOptions"] = java_options
    class_path = driver_class_path(flavor)
    if class_path:
        confs["spark.driver.extraClassPath"] = class_path
    extra = dict(extra or {})
    if "spark.plugins" in extra and "spark.plugins" in confs:  # a caller's plugins beside ours
        extra["spark.plugins"] = f"{confs['spark.plugins']},{extra['spark.plugins']}"
    confs.update(extra)
    return confs


def server_command(
    flavor: SparkFlavor, confs: Mapping[str, str], driver_memory: str = "2g", home: Path | None = None
) -> list[str]:
    jars = ",".join(str(jar) for jar in server_jars(flavor))
    command = [str((home or spark_home()) / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--name",
               f"hudi-connect {flavor} server", "--driver-memory", driver_memory, "--jars", jars]
    for key, value in confs.items():
        command += ["--conf", f"{key}={value}"]
    return [*command, "spark-internal"]


def spark_env(extra: Mapping[str, str] | None = None, home: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(home or spark_home()),
        PYSPARK_PYTHON=sys.executable,
        SPARK_LOCAL_IP=LOOPBACK,
        SPARK_LOG_DIR=env.get("SPARK_LOG_DIR", "/tmp"),
    )
    env.update(extra or {})
    return env


# hudi-connect's format("hudi") data source and the library it runs, as a plain Spark 4 server's Python finds them
DATA_SOURCE_PACKAGES = ("pyspark_hudi", "hudi_connect")
# From Spark 4.1 a Python data source may prune by the filters Spark pushes, once the server enables it; the data
# source is told in its environment, as it cannot read the conf (pyspark_hudi.source.filter_pushdown)
PUSHDOWN_CONFS = {"spark.sql.python.filterPushdown.enabled": "true"}
PUSHDOWN_ENV = {"HUDI_CONNECT_FILTER_PUSHDOWN": "true"}


def data_source_path(work_dir: Path) -> Path | None:
    """A directory of links to the installed ``pyspark_hudi`` and ``hudi_connect`` packages, for a plain Spark 4
    server's ``PYTHONPATH``: Spark registers the data source at start, and ``format("hudi")`` reads with it from
    every client. Only the two packages: the harness's own site-packages (another Spark line's pyspark) stay out
    of the server's Python. None where hudi-connect is not installed beside the harness."""
    locations: list[str] = []
    for name in DATA_SOURCE_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            return None
        locations.append(next(iter(spec.submodule_search_locations)))
    target = work_dir / "python-path"
    target.mkdir(parents=True, exist_ok=True)
    for name, location in zip(DATA_SOURCE_PACKAGES, locations, strict=True):
        link = target / name
        if not link.is_symlink():
            link.symlink_to(location, target_is_directory=True)
    return target


def start_spark_connect(
    run_dir: Path,
    flavor: SparkFlavor,
    *,
    minio: MinioEndpoint | None = None,
    storages: StorageEndpoints | None = None,
    metastore: HiveMetastoreEndpoint | None = None,
    master: str = "local[2]",
    extra_confs: Mapping[str, str] | None = None,
    timeout: float = READY_TIMEOUT,
    port: int | None = None,
    token: str | None = None,
    jit: Jit = "full",
) -> RunningService:
    """Start a Connect server; ``flavor`` 'plain' has no Hudi jar, 'cluster' needs a ``master`` URL.

    ``port`` and ``token`` bring a server back where clients knew it (new ones otherwise); ``jit="quick"``
    suits a server that lives briefly or is restarted (:data:`~hudi_connect_stack.process.Jit`)."""
    work_dir = run_dir / f"spark-connect-{flavor}"
    (work_dir / "tmp").mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    token = token or secrets.token_urlsafe(24)
    line = spark4_line(flavor)
    if line is not None and minio is not None:
        raise ValueError(f"the Spark {line.name} server has no s3a (hadoop-aws 3.4 is not provisioned): minio=None")
    python = provision.ensure_spark4_server(line) if line else provision.ensure_server_python()
    home = provision.spark4_home(python) if line else spark_home()
    worker_python = str(python)
    source = data_source_path(work_dir) if line is not None else None
    pushdown = source is not None and line is not None and line.pushes_filters_to_python
    confs = render_server_confs(flavor, port=port, work_dir=work_dir, minio=minio, storages=storages,
                                metastore=metastore, master=master, worker_python=worker_python,
                                extra={**(PUSHDOWN_CONFS if pushdown else {}), **(extra_confs or {})}, jit=jit)
    env = spark_env({"HUDI_CONNECT_SERVER_TOKEN": token, "PYSPARK_PYTHON": worker_python,
                     **storage_env(minio, storages), **(PUSHDOWN_ENV if pushdown else {})}, home=home)
    if source is not None:  # Spark 4 registers the Python data sources it finds at start
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(source), env.get("PYTHONPATH", "")) if p)
    log = work_dir / "server.log"
    process, popen = launch(f"spark connect ({flavor})", server_command(flavor, confs, home=home), log=log, env=env,
                            cwd=work_dir)
    wait_until_ready(process, lambda: port_open(port) and log_contains(log, READY_MARKER), timeout=timeout, popen=popen)
    return RunningService(SparkConnectEndpoint(LOOPBACK, port, token, flavor), (process,))


def start_standalone_cluster(
    run_dir: Path, *, workers: int = 2, minio: MinioEndpoint | None = None, timeout: float = READY_TIMEOUT
) -> tuple[str, tuple[ServiceProcess, ...]]:
    """A Spark standalone master and ``workers`` workers of one core each; returns the master URL."""
    home = run_dir / "spark-cluster"
    home.mkdir(parents=True, exist_ok=True)
    spark_class = str(spark_home() / "bin" / "spark-class")
    worker_python = str(provision.ensure_server_python())
    # executors inherit the workers' environment; the cluster is started for a test or two: C1 alone
    env = spark_env({"PYSPARK_PYTHON": worker_python, "SPARK_DAEMON_JAVA_OPTS": " ".join(jit_options("quick")),
                     **storage_env(minio)})
    port = free_port()
    master_url = f"spark://{LOOPBACK}:{port}"
    master_log = home / "master.log"
    master, popen = launch(
        "spark master",
        [spark_class, "org.apache.spark.deploy.master.Master", "--host", LOOPBACK, "--port", str(port),
         "--webui-port", str(free_port())],
        log=master_log, env=env, cwd=home,
    )
    processes = [master]
    try:
        wait_until_ready(master, lambda: log_contains(master_log, "I have been elected leader"),
                         timeout=timeout, popen=popen)
        for index in range(workers):
            worker_dir = home / f"worker-{index}"
            worker_dir.mkdir(exist_ok=True)
            worker_log = home / f"worker-{index}.log"
            worker, worker_popen = launch(
                f"spark worker {index}",
                [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", LOOPBACK, "--cores", "1",
                 "--memory", "2g", "--work-dir", str(worker_dir), "--webui-port", str(free_port()), master_url],
                log=worker_log, env=env, cwd=worker_dir,
            )
            processes.append(worker)
            registered = functools.partial(log_contains, worker_log, "Successfully registered with master")
            wait_until_ready(worker, registered, timeout=timeout, popen=worker_popen)
    except BaseException:
        RunningService(None, tuple(processes)).stop()
        raise
    return master_url, tuple(processes)


def start_cluster_connect(
    run_dir: Path, *, minio: MinioEndpoint | None = None, timeout: float = READY_TIMEOUT
) -> RunningService:
    """A Hudi Connect server whose tasks run in executor JVMs of a standalone cluster."""
    master_url, cluster = start_standalone_cluster(run_dir, minio=minio, timeout=timeout)
    try:
        server = start_spark_connect(run_dir, "cluster", minio=minio, master=master_url, timeout=timeout,
                                     jit="quick")
    except BaseException:
        RunningService(None, cluster).stop()
        raise
    return RunningService(server.endpoint, cluster + server.processes)
