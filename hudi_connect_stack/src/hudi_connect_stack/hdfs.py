"""An HDFS namenode and datanode as two local JVMs, run from Hadoop's own jars (hadoop-hdfs on Maven Central).

Everything binds to loopback on free ports; the datanode calls itself ``127.0.0.1`` so that WebHDFS redirects
and ``hdfs://`` clients reach it; permissions are off (any user may write) and blocks have one replica.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from xml.sax.saxutils import escape

from hudi_connect.core.errors import ServiceStartError
from hudi_connect_stack import provision, versions
from hudi_connect_stack.endpoints import HdfsEndpoint
from hudi_connect_stack.process import (
    LOOPBACK,
    RunningService,
    ServiceProcess,
    free_port,
    jit_options,
    launch,
    log_tail,
    port_open,
    stop,
    wait_until_ready,
)

READY_TIMEOUT = 120.0
HEAP = "256m"
NAMENODE_CLASS = "org.apache.hadoop.hdfs.server.namenode.NameNode"
DATANODE_CLASS = "org.apache.hadoop.hdfs.server.datanode.DataNode"
READY_PROBE = "/tmp/.hudi-connect-ready"
USER = "hudi"  # who clients write as (permissions are off)
ROLES = ("rpc", "http", "datanode", "datanode_ipc", "datanode_http")
CLIENT_SETTINGS = ("dfs.namenode.rpc-address", "dfs.namenode.http-address", "dfs.client.use.datanode.hostname")
# Java 17: the JAXB that Jersey's WADL uses in WebHDFS injects accessor classes through ClassLoader.defineClass
JAVA17_OPTIONS = ["--add-opens=java.base/java.lang=ALL-UNNAMED"]
LOG4J_PROPERTIES = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
log4j.logger.BlockStateChange=WARN
log4j.logger.org.apache.hadoop.hdfs.StateChange=WARN
log4j.logger.org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit=WARN
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
"""


def ensure_hdfs() -> list[Path]:
    """Provision the namenode's and datanode's jars (``versions.HDFS_SERVER_JARS``); returns them."""
    return provision.jars_of(versions.HDFS_SERVER_JARS)


def render_site(settings: Mapping[str, str]) -> str:
    """A Hadoop ``*-site.xml`` holding ``settings``."""
    properties = "".join(
        f"  <property><name>{escape(key)}</name><value>{escape(value)}</value></property>\n"
        for key, value in settings.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{properties}</configuration>\n'


def core_site(namenode_uri: str, home: Path) -> dict[str, str]:
    return {
        "fs.defaultFS": namenode_uri,
        "hadoop.tmp.dir": str(home / "tmp"),
        # no groups for anyone (permissions are off): the default forks `id <user>` for each new user
        "hadoop.security.group.mapping": "org.apache.hadoop.security.NullGroupsMapping",
    }


def hdfs_site(home: Path, ports: Mapping[str, int]) -> dict[str, str]:
    """Server and client settings of a one-datanode cluster on loopback; ``ports`` by role."""
    return {
        "dfs.namenode.rpc-address": f"{LOOPBACK}:{ports['rpc']}",
        "dfs.namenode.http-address": f"{LOOPBACK}:{ports['http']}",
        "dfs.namenode.https-address": f"{LOOPBACK}:0",
        "dfs.namenode.secondary.http-address": f"{LOOPBACK}:0",
        "dfs.namenode.name.dir": (home / "name").as_uri(),
        "dfs.namenode.safemode.extension": "0",
        "dfs.namenode.datanode.registration.ip-hostname-check": "false",
        "dfs.namenode.resource.du.reserved": str(16 * 1024 * 1024),
        "dfs.datanode.data.dir": (home / "data").as_uri(),
        "dfs.datanode.address": f"{LOOPBACK}:{ports['datanode']}",
        "dfs.datanode.ipc.address": f"{LOOPBACK}:{ports['datanode_ipc']}",
        "dfs.datanode.http.address": f"{LOOPBACK}:{ports['datanode_http']}",
        "dfs.datanode.https.address": f"{LOOPBACK}:0",
        # the name the namenode hands out in WebHDFS redirects and block locations
        "dfs.datanode.hostname": LOOPBACK,
        "dfs.client.use.datanode.hostname": "true",
        # one datanode: a pipeline that loses it cannot be rebuilt on another, so do not try (appends)
        "dfs.client.block.write.replace-datanode-on-failure.enable": "false",
        "dfs.heartbeat.interval": "1",
        "dfs.replication": "1",
        "dfs.permissions.enabled": "false",
        "dfs.webhdfs.enabled": "true",
    }


def web_apps(home: Path) -> Path:
    """A classpath root with the ``webapps/<name>`` directories the daemons' HTTP servers look up. The jars on
    Maven Central leave the web UI out; WebHDFS and JMX are servlets registered in code, so empty ones serve."""
    root = home / "webapps-root"
    for name in ("hdfs", "datanode", "secondary", "static"):
        (root / "webapps" / name).mkdir(parents=True, exist_ok=True)
    return root


def java_command(main_class: str, *args: str, home: Path, conf_dir: Path) -> list[str]:
    classpath = os.pathsep.join([str(conf_dir), str(web_apps(home)), *(str(jar) for jar in ensure_hdfs())])
    return [
        provision.require_tool("java"), f"-Xmx{HEAP}", *jit_options("quick"), *JAVA17_OPTIONS,
        "-Djava.net.preferIPv4Stack=true", f"-Dhadoop.log.dir={home / 'logs'}", f"-Dhadoop.home.dir={home}",
        f"-Dlog4j.configuration=file:{conf_dir / 'log4j.properties'}",
        "-cp", classpath, main_class, *args,
    ]


def format_namenode(home: Path, conf_dir: Path, timeout: float) -> None:
    """Format the namenode's directory, once: a restart on the same ``run_dir`` keeps its files."""
    if (home / "name" / "current" / "VERSION").exists():
        return
    command = java_command(NAMENODE_CLASS, "-format", "-nonInteractive", "-force", home=home, conf_dir=conf_dir)
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        output = "\n".join((result.stdout + result.stderr).splitlines()[-30:])
        raise ServiceStartError("hdfs-namenode", f"formatting the namenode failed (exit {result.returncode})", output)


def cluster_state(http_port: int) -> dict[str, object]:
    """The namenode's FSNamesystemState JMX bean ({} when it does not answer yet)."""
    url = f"http://{LOOPBACK}:{http_port}/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState"
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            beans = json.load(response).get("beans", [])
    except (OSError, ValueError):
        return {}
    return dict(beans[0]) if beans else {}


def webhdfs_round_trip(endpoint: HdfsEndpoint) -> bool:
    """Whether a file can be created through WebHDFS (the namenode names a datanode, which takes the bytes)."""
    base = f"http://{endpoint.webhdfs_address}/webhdfs/v1{READY_PROBE}?user.name={endpoint.user}"
    try:
        ask = urllib.request.Request(f"{base}&op=CREATE&overwrite=true&noredirect=true", method="PUT")
        with urllib.request.urlopen(ask, timeout=5) as response:
            location = str(json.load(response)["Location"])
        with urllib.request.urlopen(urllib.request.Request(location, data=b"ready", method="PUT"), timeout=5) as put:
            created = int(put.status) == 201
        with urllib.request.urlopen(urllib.request.Request(f"{base}&op=DELETE", method="DELETE"), timeout=5):
            pass
    except (OSError, ValueError, KeyError):
        return False
    return created


def cluster_ready(endpoint: HdfsEndpoint, http_port: int) -> bool:
    state = cluster_state(http_port)
    live = state.get("NumLiveDataNodes", 0)
    operational = state.get("FSState") == "Operational" and isinstance(live, int) and live >= 1
    return operational and webhdfs_round_trip(endpoint)


def free_ports() -> dict[str, int]:
    """A free loopback port for each of the cluster's roles (the keys :func:`hdfs_site` reads)."""
    return {role: free_port() for role in ROLES}


def client_endpoint(home: Path, ports: Mapping[str, int], user: str = USER) -> HdfsEndpoint:
    """The endpoint of a cluster on ``ports``, with the client configuration written to ``home / "client-conf"``:
    what a client needs (Spark's JVM and the workers' WebHDFS, by HADOOP_CONF_DIR), and no fs.defaultFS, which
    would send every path without a scheme to HDFS."""
    endpoint = HdfsEndpoint(
        namenode_uri=f"hdfs://{LOOPBACK}:{ports['rpc']}",
        webhdfs_address=f"{LOOPBACK}:{ports['http']}",
        conf_dir=str(home / "client-conf"),
        user=user,
    )
    client_dir = Path(endpoint.conf_dir)
    client_dir.mkdir(parents=True, exist_ok=True)
    (client_dir / "hdfs-site.xml").write_text(render_site({
        key: value for key, value in hdfs_site(home, ports).items() if key in CLIENT_SETTINGS}))
    return endpoint


def start_hdfs(run_dir: Path, *, timeout: float = READY_TIMEOUT, user: str = USER) -> RunningService:
    """Format a namenode under ``run_dir`` (once), start it and a datanode, and wait until a file can be written
    through WebHDFS. Clients need no settings beyond the endpoint's addresses; ``endpoint.conf_dir`` serves as
    ``HADOOP_CONF_DIR`` for tools that want one (its ``fs.defaultFS`` is this namenode).

    Example::

        service = start_hdfs(tmp_path)
        try:
            df.write.format("hudi").options(**options).save(f"{service.endpoint.namenode_uri}/tables/t")
        finally:
            service.stop()
    """
    home = run_dir / "hdfs"
    conf_dir = home / "conf"
    conf_dir.mkdir(parents=True, exist_ok=True)
    ports = free_ports()
    endpoint = client_endpoint(home, ports, user)
    (conf_dir / "core-site.xml").write_text(render_site(core_site(endpoint.namenode_uri, home)))
    (conf_dir / "hdfs-site.xml").write_text(render_site(hdfs_site(home, ports)))
    (conf_dir / "log4j.properties").write_text(LOG4J_PROPERTIES)
    format_namenode(home, conf_dir, timeout)
    started: list[ServiceProcess] = []
    try:
        namenode, namenode_popen = launch(
            "hdfs-namenode", java_command(NAMENODE_CLASS, home=home, conf_dir=conf_dir), log=home / "namenode.log"
        )
        started.append(namenode)
        datanode, datanode_popen = launch(
            "hdfs-datanode", java_command(DATANODE_CLASS, home=home, conf_dir=conf_dir), log=home / "datanode.log"
        )
        started.append(datanode)
        deadline = time.monotonic() + timeout
        wait_until_ready(namenode, lambda: port_open(ports["rpc"]), timeout=timeout, popen=namenode_popen)
        wait_until_ready(datanode, lambda: cluster_ready(endpoint, ports["http"]),
                         timeout=max(1.0, deadline - time.monotonic()), popen=datanode_popen)
    except BaseException as error:
        for process in reversed(started):
            stop(process)
        if isinstance(error, ServiceStartError):  # either daemon may be the cause: show both logs
            tails = "\n".join(f"--- {process.name} ---\n{log_tail(process.log, lines=25)}" for process in started)
            raise ServiceStartError("hdfs", f"{error.service}: {error.reason}", tails) from error
        raise
    return RunningService(endpoint, (namenode, datanode))
