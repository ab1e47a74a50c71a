"""Closing a pyspark 3.5 Connect session without hanging the process.

pyspark 3.5's ``SparkConnectClient.close()`` (also run by ``SparkSession.__del__``)
shuts down the thread pool that *every* session shares for its ReleaseExecute
calls, joining it under a class-wide lock. When the garbage collector finalizes
a session on one of that pool's own threads (in the middle of a release call),
the join waits for itself for ever, still holding the lock, and every later
query of every session waits for the lock: the whole process hangs. The CI run
of the lost-server tests hung exactly so (a stack dump showed both threads).

:func:`guard_close` gives a session a close that shuts only its own channel;
the shared pool's daemon threads stay for the other sessions. Releases of the
session's last results that are still under way then fail with pyspark's
"ReleaseExecute failed" warning (harmless: the server drops them with the
session). pyspark 4.x clients are left as they are. A session hudi-connect never
sees (one the user closes without passing it to hudi-connect) keeps pyspark's
own close.
"""

from __future__ import annotations

import functools
from typing import Any

from pyspark.sql import SparkSession


def guard_close(spark: SparkSession) -> SparkSession:
    """Make closing ``spark`` (``stop()``, or its garbage collection) close only its channel (pyspark 3.5).

    The client's class becomes a subclass with that close: no closure that would tie the client into a
    reference cycle, which only the cyclic collector (the one that runs on any thread) could free."""
    client = spark.client
    if hasattr(client, "set_retry_policies") or getattr(type(client), "_hudi_connect_guarded", False):
        return spark  # pyspark 4.x, or guarded already
    client.__class__ = _guarded(type(client))  # type: ignore[arg-type]
    return spark


@functools.cache
def _guarded(base: type) -> type:
    def close(self: Any) -> None:
        self._channel.close()  # this session's channel only; its releases still under way give up with a warning
        self._closed = True

    return type(f"Guarded{base.__name__}", (base,), {"close": close, "_hudi_connect_guarded": True})
