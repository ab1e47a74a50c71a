"""ZooKeeper (3.9, standalone), a JVM from its Maven jars: the distributed lock of writers on several Spark servers.

Writers of one table in one server's JVM share Hudi's in-process lock; writers on several servers (Spark
applications sharing a storage) need a lock all of them reach. Hudi's ``ZookeeperBasedImplicitBasePathLockProvider``
derives each table's lock from its base path, so one server-wide setting (:func:`lock_confs`) serves every
table; hudi-connect's writes take a lock a server declares so (:mod:`hudi_connect.table.concurrency`). The
health check is ZooKeeper's own ``srvr`` command. The local backend runs it as a process
(:func:`start_zookeeper`), the docker backend as a container of the same command.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from hudi_connect.table.concurrency import LOCK_PROVIDER_KEY, SERVER_LOCK_PREFIX, ZOOKEEPER_LOCK
from hudi_connect_stack import provision, versions
from hudi_connect_stack.endpoints import ZooKeeperEndpoint
from hudi_connect_stack.process import LOOPBACK, RunningService, free_port, jit_options, launch, wait_until_ready

READY_TIMEOUT = 60.0
HEAP = "128m"
SERVER_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"


def render_config(data_dir: Path | str, port: int, address: str = LOOPBACK) -> str:
    """``zoo.cfg`` of a standalone server: its data, its client address, ``srvr`` allowed, no admin server."""
    return "\n".join([
        "tickTime=2000", f"dataDir={data_dir}", f"clientPort={port}", f"clientPortAddress={address}",
        "admin.enableServer=false", "4lw.commands.whitelist=srvr", "",
    ])


def answers(host: str, port: int) -> bool:
    """ZooKeeper's ``srvr``: its version and mode from a server that serves requests (``ruok`` answers ``imok``
    as soon as the port listens, even when the server then failed to start)."""
    try:
        with socket.create_connection((host, port), timeout=2.0) as connection:
            connection.sendall(b"srvr")
            reply = b""
            while chunk := connection.recv(4096):
                reply += chunk
    except OSError:
        return False
    return reply.startswith(b"Zookeeper version") and b"Mode: standalone" in reply


def lock_confs(zookeeper: ZooKeeperEndpoint) -> dict[str, str]:
    """The Spark confs of a server whose writers lock tables through ``zookeeper``: Hudi's lock settings under
    ``spark.``, which hudi-connect's writes on that server take (any Hudi writer can be given the same)."""
    return {
        f"spark.{LOCK_PROVIDER_KEY}": ZOOKEEPER_LOCK,
        f"{SERVER_LOCK_PREFIX}zookeeper.url": zookeeper.connect_string,  # Curator's connect string: host:port
        f"{SERVER_LOCK_PREFIX}zookeeper.port": str(zookeeper.port),
    }


def server_jars() -> list[Path]:
    """ZooKeeper's server jars and what they need, provisioned from Maven Central."""
    return provision.jars_of(versions.ZOOKEEPER_JARS)


def java_command(java: str, classpath: list[str], config: Path | str) -> list[str]:
    """The standalone server's command line: ``java`` with ``classpath`` (the jars where the server sees them),
    serving ``config``."""
    return [java, f"-Xmx{HEAP}", *jit_options("quick"), "-Djava.net.preferIPv4Stack=true",
            "-cp", os.pathsep.join(classpath), SERVER_CLASS, str(config)]


def prepare_home(run_dir: Path, port: int) -> Path:
    """``run_dir/zookeeper`` with an empty data folder and the ``zoo.cfg`` of a server on ``port``."""
    home = run_dir / "zookeeper"
    (home / "data").mkdir(parents=True, exist_ok=True)
    (home / "zoo.cfg").write_text(render_config(home / "data", port))
    return home


def start_zookeeper(run_dir: Path, *, timeout: float = READY_TIMEOUT) -> RunningService:
    """Start a standalone ZooKeeper on a free loopback port and wait until it serves (``srvr``)."""
    port = free_port()
    home = prepare_home(run_dir, port)
    command = java_command(provision.require_tool("java"), [str(jar) for jar in server_jars()], home / "zoo.cfg")
    process, popen = launch("zookeeper", command, log=home / "zookeeper.log", cwd=home)
    wait_until_ready(process, lambda: answers(LOOPBACK, port), timeout=timeout, popen=popen)
    return RunningService(ZooKeeperEndpoint(LOOPBACK, port), (process,))
