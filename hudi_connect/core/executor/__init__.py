"""Layer 2, what runs inside Spark's Python workers (``mapInArrow`` bodies): listing
storage, reading and merging file slices, computing change events, reading the
metadata table, small-object operations and the PostgreSQL sink's transaction.

Imports only :mod:`hudi_connect.core.format`, :mod:`hudi_connect.core.errors` and the
workers' own libraries (pyarrow, fastavro, boto3, pg8000); never pyspark. It and
the format are all the session artifact ships (:mod:`hudi_connect.client.artifacts`).
"""
