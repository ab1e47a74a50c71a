"""An Apache Kafka broker in KRaft mode, run from its Maven jars (no ZooKeeper)."""

from __future__ import annotations

import base64
import os
import subprocess
import uuid
from pathlib import Path

from hudi_connect.core.errors import ServiceStartError
from hudi_connect_stack import provision, versions
from hudi_connect_stack.endpoints import KafkaEndpoint
from hudi_connect_stack.process import (
    LOOPBACK,
    RunningService,
    free_port,
    launch,
    port_open,
    wait_until_ready,
)

READY_TIMEOUT = 90.0
READY_MARKER = "Kafka Server started"
LOG4J_PROPERTIES = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.org.apache.kafka.controller=WARN
log4j.logger.state.change.logger=WARN
"""


def new_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def render_server_properties(data_dir: Path, port: int, controller_port: int) -> str:
    """A single-node combined broker/controller on loopback."""
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{LOOPBACK}:{controller_port}",
        "listeners": f"PLAINTEXT://{LOOPBACK}:{port},CONTROLLER://{LOOPBACK}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{LOOPBACK}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(data_dir),
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "true",
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def java_command(main_class: str, *args: str, log4j: Path, heap: str = "512m") -> list[str]:
    classpath = os.pathsep.join(str(jar) for jar in provision.jars_of(versions.KAFKA_BROKER_JARS))
    return [
        provision.require_tool("java"), f"-Xmx{heap}", f"-Dlog4j.configuration=file:{log4j}",
        "-cp", classpath, main_class, *args,
    ]


def start_kafka(
    run_dir: Path, *, port: int | None = None, controller_port: int | None = None, timeout: float = READY_TIMEOUT
) -> RunningService:
    """Format a KRaft log directory under ``run_dir`` (once) and start the broker.

    Called again with the same ``run_dir`` and ports it restarts the same broker
    with its data, which is what fault tests need.
    """
    home = run_dir / "kafka"
    home.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    controller_port = controller_port or free_port()
    data_dir = home / "data"
    properties = home / "server.properties"
    properties.write_text(render_server_properties(data_dir, port, controller_port))
    log4j = home / "log4j.properties"
    log4j.write_text(LOG4J_PROPERTIES)
    log = home / "kafka.log"
    if not (data_dir / "meta.properties").exists():
        format_command = java_command(
            # one token: an id may start with "-", which the tool's parser would take for an option
            "kafka.tools.StorageTool", "format", f"--cluster-id={new_cluster_id()}", "-c", str(properties),
            log4j=log4j, heap="256m",
        )
        result = subprocess.run(format_command, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            output = "\n".join((result.stdout + result.stderr).splitlines()[-30:])
            reason = f"formatting the KRaft log directory failed (exit {result.returncode})"
            raise ServiceStartError("kafka", reason, output)
    start_offset = log.stat().st_size if log.exists() else 0
    process, popen = launch("kafka", java_command("kafka.Kafka", str(properties), log4j=log4j), log=log)

    def ready() -> bool:
        return port_open(port) and READY_MARKER in _read_from(log, start_offset)

    wait_until_ready(process, ready, timeout=timeout, popen=popen)
    return RunningService(KafkaEndpoint(f"{LOOPBACK}:{port}"), (process,))


def _read_from(path: Path, offset: int) -> str:
    with path.open("rb") as log:
        log.seek(offset)
        return log.read().decode("utf-8", errors="replace")

