"""``format("hudi")`` for every Spark Connect client: hudi-connect's reader as a Spark 4 Python data source.

Installed into a Spark 4.0+ server's Python, this package is found when the server starts (Spark registers the
``DefaultSource`` of every top-level ``pyspark_*`` module), and ``spark.read.format("hudi").load(path)`` from a
Python, Go, Java or Scala client, or SQL's ``CREATE TEMPORARY VIEW v USING hudi OPTIONS (path '...')``, reads the
table with hudi-connect's planning and workers. A server that carries Hudi's own jar keeps Hudi's ``hudi``.
Spark 3.5 has no Python data sources: there the package defines no ``DefaultSource`` (its scan stays importable).
"""

import pyspark

if int(pyspark.__version__.split(".")[0]) >= 4:
    from pyspark_hudi.source import HudiDataSource

    DefaultSource = HudiDataSource
    __all__ = ["DefaultSource", "HudiDataSource"]
