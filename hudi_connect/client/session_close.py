"""Closing a pyspark 3.5 Connect session without hanging the process.

pyspark 3.5's ``SparkConnectClient.close()`` (also run by ``SparkSession.__del__``)
shuts down the thread pool that *every* session shares for its ReleaseExecute
calls, joining it under a class-wide lock. When the garbage collector finalizes
a session on one of that pool's own threads (in the middle of a release call),
the join waits for itself for ever, still holding the lock, and every later
query of every session waits for the lock: the whole process hangs. The CI run
of the lost-server tests hung exactly so (a stack dump showed both threads).

:func:`guard_close` gives a session a close that shuts only its own channel;
the shared pool's daemon threads stay for the other sessions, as pyspark 4's
per-call design does anyway. pyspark 4.x clients are left as they are.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

_GUARDED = "_hudi_connect_close_guarded"


def guard_close(spark: SparkSession) -> SparkSession:
    """Make closing ``spark`` (``stop()``, or its garbage collection) close only its channel (pyspark 3.5)."""
    client = spark.client
    if hasattr(client, "set_retry_policies") or getattr(client, _GUARDED, False):  # pyspark 4.x, or done
        return spark

    def close() -> None:
        client._channel.close()
        client._closed = True

    client.close = close  # type: ignore[method-assign]  # an instance attribute: __del__ and stop() use it
    setattr(client, _GUARDED, True)
    return spark
