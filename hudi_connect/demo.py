"""The demo job: a small MOR table written, updated and deleted over Spark Connect."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from hudi_connect.format.table_schema import META_COLUMNS

DEMO_SCHEMA = "id int, name string, city string, amount double, ts long"


def hudi_options(table_name: str) -> dict[str, str]:
    return {
        "hoodie.table.name": table_name,
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.hive_style_partitioning": "true",
    }


def write(df: DataFrame, path: str, operation: str, mode: str = "append") -> None:
    options = hudi_options("demo_trips") | {"hoodie.datasource.write.operation": operation}
    df.write.format("hudi").options(**options).mode(mode).save(path)


def timeline(spark: SparkSession, path: str) -> list[tuple[str, str, str]]:
    """Completed instants as (requested time, completion time, action), oldest first.

    Hudi 1.x (table version 8+) names a completed instant file
    ``<requested>_<completed>.<action>`` under ``.hoodie/timeline``.
    """
    files = (
        spark.read.format("binaryFile").option("pathGlobFilter", "*_*.*commit")
        .load(f"{path}/.hoodie/timeline").select("path").collect()
    )
    instants = []
    for row in files:
        name = row.path.rsplit("/", 1)[1]
        times, action = name.split(".", 1)
        requested, completed = times.split("_", 1)
        instants.append((requested, completed, action))
    return sorted(instants)


def run_demo(spark: SparkSession, path: str) -> None:
    rows = [(1, "alice", "paris", 10.0, 1), (2, "bob", "lyon", 20.0, 1), (3, "carol", "paris", 30.0, 1),
            (4, "dave", "nice", 40.0, 1)]
    write(spark.createDataFrame(rows, DEMO_SCHEMA), path, "insert", mode="overwrite")
    write(spark.createDataFrame([(2, "bob", "lyon", 25.0, 2), (5, "erin", "nice", 50.0, 2)], DEMO_SCHEMA),
          path, "upsert")
    write(spark.createDataFrame([(3, "carol", "paris", 30.0, 3)], DEMO_SCHEMA), path, "delete")
    table = spark.read.format("hudi").load(path)
    print(f"Hudi MOR table at {path}: ids 2 and 5 upserted, id 3 deleted")
    table.drop(*META_COLUMNS).orderBy("id").show(truncate=False)
    print("Timeline (completed instants):")
    for requested, completed, action in timeline(spark, path):
        print(f"  {requested}  ->  {completed}  {action}")
