"""Tables by name: what the server's catalog says of a table (Spark's own, or a Hive Metastore).

A name resolves through ``DESCRIBE TABLE EXTENDED``, which any Spark server answers from its catalog without
Hudi's jars, so the jar-free readers open a named table at the location the catalog gives. Tables created by
SQL (``CREATE TABLE ... USING hudi``), synced by Hudi's hive sync, or registered by ``HudiTable.create(...,
name=...)`` all resolve the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from hudi_connect.core.errors import NotAHudiTableError, TableNotFoundError, UnsupportedOperationError

HUDI_INPUT_FORMATS = ("org.apache.hudi.hadoop.HoodieParquetInputFormat",
                      "org.apache.hudi.hadoop.realtime.HoodieParquetRealtimeInputFormat")
READ_OPTIMIZED_VIEW = "hoodie.query.as.ro.table=true"  # what hive sync marks a MOR table's _ro registration with
_NAME = re.compile(r"^(?:`[^`]+`|[A-Za-z0-9_]+)(?:\.(?:`[^`]+`|[A-Za-z0-9_]+)){0,2}$")


def is_table_name(text: str) -> bool:
    """Whether ``text`` names a table (``orders``, ``db.orders``, ``catalog.db.orders``) rather than a path: a path
    holds a ``/`` or a URI scheme."""
    return "/" not in text and ":" not in text and bool(_NAME.match(text))


@dataclass(frozen=True)
class CatalogTable:
    """A table as the catalog registers it."""

    database: str
    table: str
    location: str
    provider: str | None
    hive_catalog: bool  # the catalog is a Hive Metastore: writes keep it in step through Hudi's hive sync

    @property
    def name(self) -> str:
        """``database.table``, as Hudi's procedures and SQL take it."""
        return f"{self.database}.{self.table}"


def _quoted(name: str) -> str:
    return ".".join(part if part.startswith("`") else f"`{part}`" for part in name.split("."))


def uses_hive_catalog(spark: SparkSession) -> bool:
    """Whether the server keeps its catalog in a Hive Metastore (``spark.sql.catalogImplementation=hive``)."""
    return spark.conf.get("spark.sql.catalogImplementation", "in-memory") == "hive"


def describe(spark: SparkSession, name: str) -> dict[str, str]:
    """The ``# Detailed Table Information`` rows of ``DESCRIBE TABLE EXTENDED name``; TableNotFoundError for an
    unknown name."""
    try:
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {_quoted(name)}").collect()
    except PySparkException as error:
        if "TABLE_OR_VIEW_NOT_FOUND" in str(error) or "SCHEMA_NOT_FOUND" in str(error):
            raise TableNotFoundError(f"no table named {name} in the server's catalog") from error
        raise
    details: dict[str, str] = {}
    in_details = False
    for row in rows:
        key = str(row[0] or "").strip()
        if key.startswith("# Detailed Table Information"):
            in_details = True
        elif in_details and key and not key.startswith("#"):
            details[key] = str(row[1] or "")
    return details


def resolve_table(spark: SparkSession, name: str) -> CatalogTable:
    """Where the catalog says table ``name`` is; a named error when it is missing, a view, not a Hudi table, or
    the read-optimized registration of a MERGE_ON_READ table (whose reads would not be what its name promises)."""
    details = describe(spark, name)
    location = details.get("Location")
    if details.get("Type", "").upper() == "VIEW" or not location:
        raise NotAHudiTableError(f"{name} is a view, not a table with a location: open the table it reads")
    provider = details.get("Provider") or None
    if provider != "hudi" and details.get("InputFormat") not in HUDI_INPUT_FORMATS:
        raise NotAHudiTableError(f"{name} is not a Hudi table: the catalog registers it as "
                                 f"{provider or details.get('InputFormat', 'an unknown format')} at {location}")
    database, table = details.get("Database", "default"), details.get("Table", name.rsplit(".", 1)[-1])
    if READ_OPTIMIZED_VIEW in details.get("Storage Properties", "") + details.get("Table Properties", ""):
        base = table.removesuffix("_ro")
        raise UnsupportedOperationError(
            f"{database}.{table} is the read-optimized registration hive sync makes of the MERGE_ON_READ table at "
            f"{location}: open {database}.{base} (or {database}.{base}_rt) and read it with read_optimized()")
    return CatalogTable(database, table, location, provider, uses_hive_catalog(spark))


def database_location(spark: SparkSession, database: str) -> str:
    """Where the catalog puts a database's tables (``DESCRIBE DATABASE``); TableNotFoundError if it is missing."""
    try:
        rows = spark.sql(f"DESCRIBE DATABASE {_quoted(database)}").collect()
    except PySparkException as error:
        if "SCHEMA_NOT_FOUND" in str(error):
            raise TableNotFoundError(f"no database named {database} in the server's catalog") from error
        raise
    found = {str(row[0]): str(row[1]) for row in rows}
    return found["Location"].rstrip("/")


def sql_string(value: str) -> str:
    """``value`` as a Spark SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def register(spark: SparkSession, name: str, location: str) -> None:
    """Register the Hudi table at ``location`` as ``name`` (Hudi's catalog reads its schema and partitioning
    from the table itself)."""
    spark.sql(f"CREATE TABLE {_quoted(name)} USING hudi LOCATION {sql_string(location)}").collect()
