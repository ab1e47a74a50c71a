"""The core: the Hudi format in pure Python (``format``), the functions Spark's Python workers run
(``executor``) and the one error hierarchy (``errors``). No pyspark here: this folder, and only it, is zipped
for the workers (:mod:`hudi_connect.client.artifacts`); the client imports it too."""
