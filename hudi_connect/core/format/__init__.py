"""Layer 1, the Hudi format: timeline, commit metadata, table configuration, schemas,
file-system view, merge rules, log blocks and the metadata table.

Pure Python over pyarrow and fastavro, with no pyspark and no I/O: it runs on the
client and, shipped as a session artifact, inside Spark's Python workers alike.
It imports nothing of hudi-connect but :mod:`hudi_connect.core.errors`.
"""
