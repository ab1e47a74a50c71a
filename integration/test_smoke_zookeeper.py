"""ZooKeeper (a process, or a container on the docker backend) serves a client's writes and reads: the lock
writers on several servers share stands on it (Hudi's lock provider is a Curator lock recipe over znodes)."""

from __future__ import annotations

import os
import subprocess
import uuid

from hudi_connect_stack.endpoints import ZooKeeperEndpoint
from hudi_connect_stack.zookeeper import server_jars

from hudi_connect_stack import provision

CLIENT_CLASS = "org.apache.zookeeper.ZooKeeperMain"


def zookeeper_cli(endpoint: ZooKeeperEndpoint, *command: str) -> str:
    """ZooKeeper's own command-line client, run once against ``endpoint``; its output."""
    classpath = os.pathsep.join(str(jar) for jar in server_jars())
    done = subprocess.run(
        [provision.require_tool("java"), "-cp", classpath, CLIENT_CLASS, "-server", endpoint.connect_string, *command],
        capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


def test_a_znode_written_is_read_back(zookeeper_endpoint: ZooKeeperEndpoint) -> None:
    node, value = f"/hudi-connect-smoke-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    zookeeper_cli(zookeeper_endpoint, "create", node, value)
    assert value in zookeeper_cli(zookeeper_endpoint, "get", node).splitlines()
    assert node.lstrip("/") in zookeeper_cli(zookeeper_endpoint, "ls", "/")
