"""Reading a Hudi table as a Spark DataFrame without Hudi's jars: snapshot, read-optimized, time travel and
incremental queries."""

from hudi_connect.reader.table_reader import ReadPlan, TableReader

__all__ = ["ReadPlan", "TableReader"]
