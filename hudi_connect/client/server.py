"""Connecting to a Spark Connect server and checking that it can serve Hudi.

A server without ``HoodieSparkSessionExtension`` (or without the Kryo settings
Hudi needs) does not refuse Hudi reads over Connect: some of them silently
return zero rows. :func:`require_hudi_server` turns that into a loud error.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from pyspark.sql import SparkSession

from hudi_connect.client.server_loss import DEFAULT_SERVER_TIMEOUT, bound_server_wait, is_server_lost, server_timeout
from hudi_connect.core.errors import ServerMisconfiguredError

# The Hudi release hudi-connect is built and tested against (the harness provisions this one too).
HUDI_VERSION = "1.2.0"
HUDI_GROUP = "org.apache.hudi"


def hudi_bundle_artifact(spark_version: str) -> str:
    """Hudi's Spark bundle for a server of ``spark_version``: one per Spark line (``hudi-spark3.5-bundle_2.12``,
    ``hudi-spark4.1-bundle_2.13``); Spark 4 is built for Scala 2.13 only."""
    major, minor = spark_version.split(".")[:2]
    return f"hudi-spark{major}.{minor}-bundle_{'2.12' if major == '3' else '2.13'}"


# conf key -> (a value the server must contain, why Hudi needs it)
REQUIRED_HUDI_CONFS: Mapping[str, tuple[str, str]] = {
    "spark.sql.extensions": (
        "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
        "Hudi's planner rules; without them some Hudi reads over Connect return zero rows",
    ),
    "spark.serializer": ("org.apache.spark.serializer.KryoSerializer", "Hudi's records are serialized with Kryo"),
    "spark.kryo.registrator": ("org.apache.spark.HoodieSparkKryoRegistrar", "registers Hudi's classes with Kryo"),
    "spark.sql.catalog.spark_catalog": (
        "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
        "Hudi's catalog for tables and procedures",
    ),
}


_URL_ATTRIBUTE = "_hudi_connect_url"

# gRPC shares connections to one address between channels, with their reconnect backoff (up to 120 s): a new
# session to a server that just came back would wait out the backoff its dead predecessor built up.
CHANNEL_OPTIONS: Mapping[str, int] = {
    "grpc.use_local_subchannel_pool": 1,  # each session connects on its own
    "grpc.max_reconnect_backoff_ms": 2000,  # and notices a server that is back within seconds
}


def connect(url: str, *, server_timeout: float = DEFAULT_SERVER_TIMEOUT) -> SparkSession:
    """A new Spark Connect session to ``url`` (``sc://host:port/;params``).

    Every call on it gives up on an unreachable server after about ``server_timeout`` seconds of retrying
    (pyspark's own default is ten minutes), with ``ServerUnavailableError`` from hudi-connect's calls.
    """
    session = _session_without_calls(url)
    bound_server_wait(session, server_timeout)  # before the first call, so every call has the bound; guards close
    setattr(session.client, _URL_ATTRIBUTE, url)
    return session


def _session_without_calls(url: str) -> SparkSession:
    """A Connect session that has not talked to its server yet. ``builder.remote(url).create()`` would set
    ``spark.remote`` on the server first, retrying a dead one for ten minutes and then only warning."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    try:  # pyspark 4.x
        from pyspark.sql.connect.client import DefaultChannelBuilder as Channel  # type: ignore[attr-defined]
    except ImportError:  # pyspark 3.5
        from pyspark.sql.connect.client import ChannelBuilder as Channel
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"  # as builder.remote() marks the process a Connect client
    channel = Channel(url, channelOptions=list(CHANNEL_OPTIONS.items()))
    session: SparkSession = ConnectSession.builder.channelBuilder(channel).create()  # type: ignore[attr-defined]
    return session


def reconnector(spark: SparkSession) -> Callable[[], SparkSession] | None:
    """How to open a new session like ``spark`` (same URL and bound), for sessions made by :func:`connect`."""
    url = getattr(spark.client, _URL_ATTRIBUTE, None)
    if url is None:
        return None
    timeout = server_timeout(spark)
    return lambda: connect(url, server_timeout=DEFAULT_SERVER_TIMEOUT if timeout is None else timeout)


def missing_hudi_confs(server_confs: Mapping[str, str | None]) -> list[str]:
    """The required Hudi confs a server lacks, each with what it has and why it matters."""
    problems = []
    for key, (needed, why) in REQUIRED_HUDI_CONFS.items():
        actual = server_confs.get(key)
        if actual is None or needed not in actual:
            problems.append(f"{key} must include {needed} ({why}); the server has {actual!r}")
    return problems


def bundle_advice(spark_version: str) -> str:
    """Which Hudi bundle a server of ``spark_version`` needs, and where it may come from."""
    bundle = f"{HUDI_GROUP}:{hudi_bundle_artifact(spark_version)}:{HUDI_VERSION}"
    advice = f"Hudi's bundle for Spark {'.'.join(spark_version.split('.')[:2])} on its classpath (--packages {bundle})"
    if not spark_version.startswith("3."):
        advice += ("; Spark 4 bundles are missing from some Maven mirrors: take the jar from your own repository "
                   "(--jars, or --repositories with your repository's URL)")
    return advice


def require_hudi_server(spark: SparkSession) -> None:
    """Fail with :class:`ServerMisconfiguredError` unless the server is set up for Hudi."""
    server_confs = {key: spark.conf.get(key, None) for key in REQUIRED_HUDI_CONFS}
    problems = missing_hudi_confs(server_confs)
    if problems:
        raise ServerMisconfiguredError(
            "the Spark Connect server is not set up for Hudi: " + "; ".join(problems)
            + f". Start it with these --conf settings and {bundle_advice(spark.version)}."
        )


def server_confs_with_prefix(spark: SparkSession, prefix: str) -> dict[str, str]:
    """The server's settings whose keys start with ``prefix`` (its Spark conf, as the session sees it). ``SET``
    lists the keys, but redacts values whose key matches Spark's redaction patterns (a ZooKeeper ``...url``
    among them), so each value is read by its key."""
    from pyspark.sql import functions as F

    keys = [str(row["key"]) for row in spark.sql("SET").where(F.col("key").startswith(prefix)).collect()]
    return {key: str(spark.conf.get(key)) for key in keys}


_SERVER_ZONES: dict[str, str] = {}  # session id -> its server JVM's default zone (fixed for the JVM's life)


def server_time_zone(spark: SparkSession) -> str:
    """The server JVM's default time zone (``ZoneId.systemDefault()``): the zone a Hudi writer on that JVM writes
    instant times in under ``hoodie.table.timeline.timezone=LOCAL``. Not the session's
    ``spark.sql.session.timeZone``, which any session may set; asked once per session."""
    session = str(getattr(spark, "session_id", id(spark)))  # a Connect session's id
    if session not in _SERVER_ZONES:
        try:
            zone = spark.sql("SELECT reflect('java.time.ZoneId', 'systemDefault') AS zone").first()
        except Exception as refused:  # a server that forbids reflection: no guess at the zone
            if is_server_lost(refused):
                raise
            raise ServerMisconfiguredError(
                "reading the server JVM's time zone (reflect('java.time.ZoneId', 'systemDefault')) was refused, "
                "and a table whose timeline is on the writer's local clock needs it to place a datetime: give the "
                f"instant as text (yyyyMMddHHmmssSSS) or as an Instant. Cause: {refused}") from refused
        _SERVER_ZONES[session] = str(zone["zone"]) if zone is not None else "UTC"
    return _SERVER_ZONES[session]
