"""The Hive Metastore (standalone, 3.1.3) as a local JVM, its database in the stack's PostgreSQL.

Hudi's hive sync registers tables there, and the Spark servers that are asked to (the ``*-metastore`` flavors)
keep their catalog there, so a table one server creates is known by name to the others. The schema is Hive's
own script for PostgreSQL from the release's bin archive, run once per database; the health check asks the
server for its databases over Thrift, as a client does.
"""

from __future__ import annotations

import os
import socket
import struct
import tarfile
from collections.abc import Mapping
from pathlib import Path

from hudi_connect.core.errors import ServiceStartError
from hudi_connect.table.concurrency import HIVE_METASTORE_LOCK, LOCK_PROVIDER_KEY, SERVER_LOCK_PREFIX
from hudi_connect_stack import provision, versions
from hudi_connect_stack.endpoints import HiveMetastoreEndpoint, PostgresEndpoint
from hudi_connect_stack.hdfs import render_site
from hudi_connect_stack.process import LOOPBACK, RunningService, free_port, jit_options, launch, wait_until_ready

READY_TIMEOUT = 120.0
HEAP = "384m"
SERVER_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
DATABASE = "hive_metastore"  # beside the stack's own database, in the same PostgreSQL
SCHEMA_SCRIPT = "scripts/metastore/upgrade/postgres/hive-schema-3.1.0.postgres.sql"
LOG4J2_PROPERTIES = """\
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %p %c{2}: %m%n
logger.datanucleus.name = DataNucleus
logger.datanucleus.level = WARN
"""


def ensure_hive_metastore() -> list[Path]:
    """Provision the metastore's jars and its bin archive (``versions.HIVE_METASTORE_JARS``); returns the jars."""
    return provision.jars_of(versions.HIVE_METASTORE_JARS)


def schema_script() -> str:
    """Hive's schema script for PostgreSQL, from the release's bin archive in the jar cache."""
    archive = next(a for a in versions.HIVE_METASTORE_JARS.artifacts if a.packaging == "tar.gz")
    with tarfile.open(provision.ensure_jars(versions.HIVE_METASTORE_JARS) / archive.jar_name) as bundle:
        member = next(m for m in bundle.getmembers() if m.name.endswith("/" + SCHEMA_SCRIPT))
        extracted = bundle.extractfile(member)
        if extracted is None:
            raise ServiceStartError("hive-metastore", f"{SCHEMA_SCRIPT} is not a file in {archive.jar_name}")
        return extracted.read().decode()


def init_schema(postgres: PostgresEndpoint, database: str = DATABASE) -> None:
    """Create the metastore's database and its tables, once (a database whose VERSION table exists is kept)."""
    import psycopg

    connect = dict(host=postgres.host, port=postgres.port, user=postgres.user, password=postgres.password,
                   autocommit=True)
    with psycopg.connect(dbname="postgres", **connect) as connection:  # type: ignore[arg-type]
        if connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone() is None:
            connection.execute(f'CREATE DATABASE "{database}"')
    with psycopg.connect(dbname=database, **connect) as connection:  # type: ignore[arg-type]
        if connection.execute("SELECT to_regclass('public.\"VERSION\"')").fetchone() == (None,):
            connection.execute(schema_script().encode())  # many statements: the simple query protocol


def metastore_site(postgres: PostgresEndpoint, port: int, warehouse: str, database: str = DATABASE) -> dict[str, str]:
    """The server's ``metastore-site.xml``: its PostgreSQL database, Thrift port and warehouse."""
    return {
        "javax.jdo.option.ConnectionURL": f"jdbc:postgresql://{postgres.host}:{postgres.port}/{database}",
        "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "javax.jdo.option.ConnectionUserName": postgres.user,
        "javax.jdo.option.ConnectionPassword": postgres.password,
        "metastore.thrift.port": str(port),
        "metastore.warehouse.dir": warehouse,
        "metastore.schema.verification": "true",  # the schema is Hive's script's, never DataNucleus' guess
        "datanucleus.schema.autoCreateAll": "false",
        "metastore.event.db.notification.api.auth": "false",
        # partition pruning by expression without Hive's query language on the class path
        "metastore.expression.proxy": "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy",
        # its default task threads need Hive's full server; the event cleaner is the one this server can run
        "metastore.task.threads.always": "org.apache.hadoop.hive.metastore.events.EventCleanerTask",
    }


def lock_confs(metastore: HiveMetastoreEndpoint) -> dict[str, str]:
    """The Spark confs of a server whose writers lock tables through ``metastore``'s locks: Hudi's lock settings
    under ``spark.``; hudi-connect names each table's lock (:func:`hudi_connect.table.concurrency.
    table_lock_options`)."""
    return {f"spark.{LOCK_PROVIDER_KEY}": HIVE_METASTORE_LOCK, f"{SERVER_LOCK_PREFIX}hivemetastore.uris": metastore.uri}


def write_conf(conf_dir: Path, settings: Mapping[str, str]) -> None:
    conf_dir.mkdir(parents=True, exist_ok=True)
    (conf_dir / "metastore-site.xml").write_text(render_site(settings))
    (conf_dir / "metastore-log4j2.properties").write_text(LOG4J2_PROPERTIES)
    os.chmod(conf_dir / "metastore-site.xml", 0o644)


def java_command(conf_dir: Path | str, jars: list[str], port: int, java: str = "java") -> list[str]:
    """The server's command line; ``conf_dir`` first on the class path, where it looks for its settings."""
    classpath = os.pathsep.join([str(conf_dir), *jars])
    return [java, f"-Xmx{HEAP}", *jit_options("quick"), "-Djava.net.preferIPv4Stack=true",
            f"-Dlog4j.configurationFile={conf_dir}/metastore-log4j2.properties",
            "-cp", classpath, SERVER_CLASS, "-p", str(port)]


def _thrift_call(name: str) -> bytes:
    """A Thrift binary-protocol call (strict, sequence id 1) of a method without arguments."""
    encoded = name.encode()
    return struct.pack(">Ii", 0x80010001, len(encoded)) + encoded + struct.pack(">i", 1) + b"\x00"


def _databases_in_reply(reply: bytes) -> list[str]:
    """The list of strings a ``get_all_databases`` reply carries; IndexError/struct.error while incomplete."""
    version, name_length = struct.unpack_from(">Ii", reply, 0)
    if version & 0xFFFF0000 != 0x80010000 or version & 0xFF != 2:  # a REPLY, not an EXCEPTION
        raise ValueError(f"not a Thrift reply (header {version:#x})")
    offset = 8 + name_length + 4  # the method name, then the sequence id
    field_type, field_id = reply[offset], struct.unpack_from(">h", reply, offset + 1)[0]
    if (field_type, field_id) != (15, 0):  # field 0 (success) holding a list
        raise ValueError(f"the reply carries field {field_id} of type {field_type}, not the list of databases")
    count = struct.unpack_from(">i", reply, offset + 4)[0]
    offset += 8
    names = []
    for _ in range(count):
        length = struct.unpack_from(">i", reply, offset)[0]
        if offset + 4 + length > len(reply):
            raise IndexError("incomplete")
        names.append(reply[offset + 4:offset + 4 + length].decode())
        offset += 4 + length
    return names


def databases(host: str, port: int, timeout: float = 5.0) -> list[str]:
    """The metastore's databases (Thrift ``get_all_databases``): the health check, which needs the server's
    database too, not just its port."""
    with socket.create_connection((host, port), timeout=timeout) as connection:
        connection.sendall(_thrift_call("get_all_databases"))
        reply = b""
        while chunk := connection.recv(65536):
            reply += chunk
            try:
                return _databases_in_reply(reply)
            except (IndexError, struct.error):
                continue
    raise ConnectionError("the metastore closed the connection without a whole reply")


def answers(host: str, port: int) -> bool:
    try:
        return "default" in databases(host, port, timeout=2.0)
    except (OSError, ValueError):
        return False


def start_hive_metastore(run_dir: Path, postgres: PostgresEndpoint, *, timeout: float = READY_TIMEOUT
                         ) -> RunningService:
    """Create the schema (once), start the metastore on a free port, and wait until it lists its databases.
    Its warehouse is ``run_dir/hive-warehouse``, which every server using it shares."""
    home = run_dir / "hive-metastore"
    warehouse = run_dir / "hive-warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    os.chmod(warehouse, 0o777)  # the servers' users create their databases' folders there
    jars = [str(jar) for jar in ensure_hive_metastore()]
    init_schema(postgres)
    port = free_port()
    write_conf(home / "conf", metastore_site(postgres, port, warehouse.as_uri()))
    process, popen = launch("hive-metastore", java_command(home / "conf", jars, port, provision.require_tool("java")),
                            log=home / "metastore.log", cwd=home)
    wait_until_ready(process, lambda: answers(LOOPBACK, port), timeout=timeout, popen=popen)
    return RunningService(HiveMetastoreEndpoint(f"thrift://{LOOPBACK}:{port}", warehouse.as_uri()), (process,))
