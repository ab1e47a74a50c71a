"""Connecting to a Spark Connect server and checking that it can serve Hudi.

A server without ``HoodieSparkSessionExtension`` (or without the Kryo settings
Hudi needs) does not refuse Hudi reads over Connect: some of them silently
return zero rows. :func:`require_hudi_server` turns that into a loud error.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import SparkSession

from hudi_connect.errors import ServerMisconfiguredError

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


def connect(url: str) -> SparkSession:
    """A new Spark Connect session to ``url`` (``sc://host:port/;params``)."""
    return SparkSession.builder.remote(url).create()


def missing_hudi_confs(server_confs: Mapping[str, str | None]) -> list[str]:
    """The required Hudi confs a server lacks, each with what it has and why it matters."""
    problems = []
    for key, (needed, why) in REQUIRED_HUDI_CONFS.items():
        actual = server_confs.get(key)
        if actual is None or needed not in actual:
            problems.append(f"{key} must include {needed} ({why}); the server has {actual!r}")
    return problems


def require_hudi_server(spark: SparkSession) -> None:
    """Fail with :class:`ServerMisconfiguredError` unless the server is set up for Hudi."""
    server_confs = {key: spark.conf.get(key, None) for key in REQUIRED_HUDI_CONFS}
    problems = missing_hudi_confs(server_confs)
    if problems:
        raise ServerMisconfiguredError(
            "the Spark Connect server is not set up for Hudi: " + "; ".join(problems)
            + ". Start it with these --conf settings and the Hudi Spark bundle on its classpath."
        )
