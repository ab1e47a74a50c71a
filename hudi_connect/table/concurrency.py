"""Many writers, one table: the concurrency control every write through ``HudiTable`` runs with (issue #68).

Hudi's default is one writer (``SINGLE_WRITER``): no conflict detection, and a write that starts rolls back
whatever else is in flight. Two clients of a shared server writing one table then both "succeed" where their
writes meet in a file group, and the later file slice drops the other's rows: a commit returned, then lost.
So writes here run Hudi's multi-writer mode by default (``OPTIMISTIC_CONCURRENCY_CONTROL``): each write
commits under the table's lock after checking that no write completed since it began touched its file groups,
and a write that did is aborted with ``HoodieWriteConflictException`` (:class:`WriteConflictError`), nothing
of it visible. Failed writes are cleaned lazily (``hoodie.clean.failed.writes.policy=LAZY``): a write that
starts no longer rolls back another's in-flight instant, only ones whose heartbeat expired.

The lock, first that applies:

1. the one the user names in the table's or the write's options (``hoodie.write.lock.provider`` and its
   settings), as Hudi takes them;
2. the one the server declares for every writer of it: Spark confs ``spark.hoodie.write.lock.*`` (Hudi's
   keys under ``spark.``; :func:`server_lock_options`): for servers that share a storage, the Hive Metastore's
   locks where they share a metastore (the cheaper by measurement; each table's lock named by
   :func:`table_lock_options`), ZooKeeper's where they do not;
3. Hudi's in-process lock: exact for every session of one server (one JVM), which is this library's premise.

A MOR table with a simple bucket index (table version 8+) runs Hudi 1.2's non-blocking concurrency control
instead: its writers append to the same file groups' logs without conflicting, so concurrent upserts need not
fail (:func:`supports_non_blocking`).

On MOR tables a delta commit never rewrites a file group's base file (``hoodie.parquet.small.file.limit=0``:
inserts go to new file groups, updates to log files). Hudi's conflict check lets a delta commit through beside
a compaction of the same file group, which is safe for log files (they join the compaction's new slice by
completion time) but not for a base file the delta commit rewrote with its inserts: the compaction's base file,
requested later, supersedes it, and the delta commit's records were gone from a table whose write had returned.

Writers on several servers must share a distributed lock (2.), or they are as unsafe as Hudi's default.
``single_writer=True`` keeps Hudi's default for a user who guarantees one writer, and is faster.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

CONCURRENCY_MODE_KEY = "hoodie.write.concurrency.mode"
FAILED_WRITES_POLICY_KEY = "hoodie.clean.failed.writes.policy"
LOCK_PREFIX = "hoodie.write.lock."
LOCK_PROVIDER_KEY = f"{LOCK_PREFIX}provider"
# Hudi's size under which a base file takes more inserts (rewritten); 0: every insert to a new file group
SMALL_FILE_LIMIT_KEY = "hoodie.parquet.small.file.limit"
# Hudi's own retry of a write that met a conflict (the Spark datasource writer reruns it with a new instant)
CONFLICT_RETRIES_KEY = "hoodie.write.num.retries.on.conflict.failures"

IN_PROCESS_LOCK = "org.apache.hudi.client.transaction.lock.InProcessLockProvider"
# ZooKeeper, its lock's path derived from the table's base path: one server-wide setting serves every table
ZOOKEEPER_LOCK = "org.apache.hudi.client.transaction.lock.ZookeeperBasedImplicitBasePathLockProvider"
# the Hive Metastore's locks: a lock per database and table name, which Hudi asks of each writer
HIVE_METASTORE_LOCK = "org.apache.hudi.hive.transaction.lock.HiveMetastoreBasedLockProvider"
HIVE_LOCK_DATABASE_KEY = "hoodie.write.lock.hivemetastore.database"
HIVE_LOCK_TABLE_KEY = "hoodie.write.lock.hivemetastore.table"

SERVER_LOCK_PREFIX = f"spark.{LOCK_PREFIX}"

# Hudi's errors for a write aborted by the conflict check (at commit, or early at a marker)
_CONFLICT_ERRORS = ("HoodieWriteConflictException", "HoodieEarlyConflictDetectionException",
                    "Cannot resolve conflicts for overlapping writes")
_LOCK_ERRORS = ("HoodieLockException", "Unable to acquire lock", "Unable to acquire the lock")
# Hudi's abort of a write whose own heartbeat it considers lapsed (checked before the commit)
_HEARTBEAT_EXPIRED = re.compile(r"Heartbeat for instant \d+ has expired")


def server_lock_options(server_confs: Mapping[str, str]) -> dict[str, str]:
    """The lock a server declares for every writer (``spark.hoodie.write.lock.*``), as Hudi's option keys."""
    return {key.removeprefix("spark."): value for key, value in server_confs.items()
            if key.startswith(SERVER_LOCK_PREFIX)}


def table_lock_options(lock: Mapping[str, str], base_path: str) -> dict[str, str]:
    """A lock's settings for the table at ``base_path``. The Hive Metastore's lock names a database and a table,
    which a server declaring the lock once for every table cannot: each table then locks a name derived from its
    base path (as ZooKeeper's implicit provider derives its lock's path), in the metastore's ``default``
    database; names the declaration gives win. Other locks are as declared."""
    if lock.get(LOCK_PROVIDER_KEY) != HIVE_METASTORE_LOCK:
        return dict(lock)
    digest = hashlib.sha256(base_path.rstrip("/").encode()).hexdigest()[:20]
    return {HIVE_LOCK_DATABASE_KEY: "default", HIVE_LOCK_TABLE_KEY: f"hudi_lock_{digest}", **lock}


def supports_non_blocking(*, merge_on_read: bool, table_version: int, settings: Mapping[str, str]) -> bool:
    """Whether Hudi 1.2's non-blocking concurrency control fits the table: MOR, table version 8 or later, and a
    simple bucket index (``settings``: the table's properties with the writer's options over them). Writers of
    such a table append to the same file groups' logs without conflicting; readers merge them in completion-time
    order."""
    index = settings.get("hoodie.index.type", "").upper()
    engine = settings.get("hoodie.index.bucket.engine", "SIMPLE").upper()
    return merge_on_read and table_version >= 8 and index == "BUCKET" and engine == "SIMPLE"


def concurrency_options(*, single_writer: bool, server_lock: Mapping[str, str], chosen: Mapping[str, str],
                        base_path: str = "", non_blocking: bool = False, merge_on_read: bool = False
                        ) -> dict[str, str]:
    """The ``hoodie.*`` options of a write's concurrency control, beneath the user's ``chosen`` options (which
    are applied after these and win): multi-writer with a lock unless ``single_writer``; non-blocking where
    the table supports it (:func:`supports_non_blocking`), optimistic otherwise; on a MOR table, no base file
    rewritten by a delta commit (the module's docstring says why)."""
    if single_writer:
        return {CONCURRENCY_MODE_KEY: "SINGLE_WRITER", FAILED_WRITES_POLICY_KEY: "EAGER"}
    if CONCURRENCY_MODE_KEY in chosen and chosen[CONCURRENCY_MODE_KEY].upper() == "SINGLE_WRITER":
        return {}  # the user took charge by Hudi's own key
    if LOCK_PROVIDER_KEY in chosen:  # the user's lock (its options win): what it leaves unnamed for the table
        lock = {key: value for key, value in chosen.items() if key.startswith(LOCK_PREFIX)}
    else:
        lock = dict(server_lock) if LOCK_PROVIDER_KEY in server_lock else {LOCK_PROVIDER_KEY: IN_PROCESS_LOCK}
    lock = table_lock_options(lock, base_path)
    mode = "NON_BLOCKING_CONCURRENCY_CONTROL" if non_blocking else "OPTIMISTIC_CONCURRENCY_CONTROL"
    no_base_rewrites = {SMALL_FILE_LIMIT_KEY: "0"} if merge_on_read else {}
    return {CONCURRENCY_MODE_KEY: mode, FAILED_WRITES_POLICY_KEY: "LAZY", **lock, **no_base_rewrites}


def is_write_conflict(error_text: str) -> bool:
    """Whether a failed write's error is Hudi's conflict check aborting it."""
    return any(marker in error_text for marker in _CONFLICT_ERRORS)


def is_lock_timeout(error_text: str) -> bool:
    """Whether a failed write could not take the table's lock in time."""
    return any(marker in error_text for marker in _LOCK_ERRORS)


def is_heartbeat_expired(error_text: str) -> bool:
    """Whether Hudi aborted a write, before its commit, because the write's own heartbeat lapsed. Hudi 1.2.0's
    heartbeat timer stops for good after one beat it considers late (apache/hudi#18903, fixed after 1.2.0), so
    a long write on a loaded server can fail so although its writer is alive."""
    return _HEARTBEAT_EXPIRED.search(error_text) is not None


_INSTANT_IN_ERROR = re.compile(r"instantTime=(\d{14,})")


def instants_named_in(error_text: str) -> tuple[str, ...]:
    """The instant times a conflict message names (Hudi's ``ConcurrentOperation`` renders ``instantTime=``)."""
    return tuple(dict.fromkeys(_INSTANT_IN_ERROR.findall(error_text)))
