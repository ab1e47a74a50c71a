"""The concurrency control a write runs with (:mod:`hudi_connect.table.concurrency`), without a server."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from hudi_connect.table.concurrency import (
    CONCURRENCY_MODE_KEY,
    FAILED_WRITES_POLICY_KEY,
    HIVE_LOCK_DATABASE_KEY,
    HIVE_LOCK_TABLE_KEY,
    HIVE_METASTORE_LOCK,
    IN_PROCESS_LOCK,
    LOCK_PROVIDER_KEY,
    SMALL_FILE_LIMIT_KEY,
    ZOOKEEPER_LOCK,
    concurrency_options,
    instants_named_in,
    is_heartbeat_expired,
    is_lock_timeout,
    is_write_conflict,
    server_lock_options,
    supports_non_blocking,
)

ZOOKEEPER_SERVER = {
    "spark.hoodie.write.lock.provider": ZOOKEEPER_LOCK,
    "spark.hoodie.write.lock.zookeeper.url": "zk.internal",
    "spark.hoodie.write.lock.zookeeper.port": "2181",
    "spark.sql.shuffle.partitions": "4",
    "spark.hoodie.write.lockless": "not a lock setting",
}

lock_keys = st.sampled_from([LOCK_PROVIDER_KEY, "hoodie.write.lock.zookeeper.url", "hoodie.write.lock.wait_time_ms",
                             FAILED_WRITES_POLICY_KEY, "hoodie.table.name"])
user_options = st.dictionaries(lock_keys, st.text(min_size=1, max_size=8))
server_locks = st.sampled_from([{}, server_lock_options(ZOOKEEPER_SERVER)])


def test_a_server_declares_its_lock_under_spark_hoodie_write_lock() -> None:
    assert server_lock_options(ZOOKEEPER_SERVER) == {
        LOCK_PROVIDER_KEY: ZOOKEEPER_LOCK,
        "hoodie.write.lock.zookeeper.url": "zk.internal",
        "hoodie.write.lock.zookeeper.port": "2181",
    }


@given(server_lock=server_locks, chosen=user_options)
def test_writes_are_multi_writer_by_default_with_the_users_then_the_servers_then_the_in_process_lock(
    server_lock: dict[str, str], chosen: dict[str, str]
) -> None:
    applied = concurrency_options(single_writer=False, server_lock=server_lock, chosen=chosen) | chosen
    assert applied[CONCURRENCY_MODE_KEY] == "OPTIMISTIC_CONCURRENCY_CONTROL"
    expected_lock = chosen.get(LOCK_PROVIDER_KEY) or server_lock.get(LOCK_PROVIDER_KEY) or IN_PROCESS_LOCK
    assert applied[LOCK_PROVIDER_KEY] == expected_lock
    assert applied[FAILED_WRITES_POLICY_KEY] == chosen.get(FAILED_WRITES_POLICY_KEY, "LAZY")
    if LOCK_PROVIDER_KEY not in server_lock:  # nothing of a lock the server did not declare
        assert "hoodie.write.lock.zookeeper.port" not in applied


HIVE_SERVER = {"spark.hoodie.write.lock.provider": HIVE_METASTORE_LOCK,
               "spark.hoodie.write.lock.hivemetastore.uris": "thrift://metastore:9083"}
base_paths = st.builds(lambda scheme, parts: f"{scheme}://lake/" + "/".join(parts),
                       st.sampled_from(["s3a", "file", "gs", "hdfs"]),
                       st.lists(st.text("abcxyz-_=.0123456789", min_size=1, max_size=6), min_size=1, max_size=3))


@given(first=base_paths, second=base_paths, names=st.dictionaries(
    st.sampled_from([HIVE_LOCK_DATABASE_KEY, HIVE_LOCK_TABLE_KEY]), st.sampled_from(["lake", "locks"])),
    by_user=st.booleans())
def test_a_hive_metastore_lock_declared_once_locks_a_name_of_each_tables_own(
    first: str, second: str, names: dict[str, str], by_user: bool
) -> None:
    """Hudi's Hive Metastore lock needs a database and table name; declared once for a server's every table
    (or chosen without them), each table locks a name derived from its base path, and names given win."""
    declared = server_lock_options(HIVE_SERVER) | ({} if by_user else names)
    chosen = (server_lock_options(HIVE_SERVER) | names) if by_user else {}

    def lock_of(path: str) -> dict[str, str]:
        return concurrency_options(single_writer=False, server_lock=declared, chosen=chosen, base_path=path) | chosen

    applied = lock_of(first)
    assert applied[LOCK_PROVIDER_KEY] == HIVE_METASTORE_LOCK
    assert applied["hoodie.write.lock.hivemetastore.uris"] == "thrift://metastore:9083"
    assert applied[HIVE_LOCK_DATABASE_KEY] == names.get(HIVE_LOCK_DATABASE_KEY, "default")
    table = applied[HIVE_LOCK_TABLE_KEY]
    if HIVE_LOCK_TABLE_KEY in names:
        assert table == names[HIVE_LOCK_TABLE_KEY]
    else:  # a Hive identifier, one per table: the same for its path written with a trailing slash
        assert re.fullmatch(r"[a-z0-9_]{1,128}", table)
        assert lock_of(first + "/")[HIVE_LOCK_TABLE_KEY] == table
        assert (lock_of(second)[HIVE_LOCK_TABLE_KEY] == table) == (second.rstrip("/") == first.rstrip("/"))


@given(server_lock=server_locks, chosen=user_options)
def test_single_writer_is_hudis_default_and_takes_no_lock(server_lock: dict[str, str], chosen: dict[str, str]) -> None:
    options = concurrency_options(single_writer=True, server_lock=server_lock, chosen=chosen)
    assert options == {CONCURRENCY_MODE_KEY: "SINGLE_WRITER", FAILED_WRITES_POLICY_KEY: "EAGER"}


def test_a_user_naming_single_writer_by_hudis_key_gets_nothing_added() -> None:
    chosen = {CONCURRENCY_MODE_KEY: "single_writer"}
    assert concurrency_options(single_writer=False, server_lock={}, chosen=chosen) == {}


def test_hudis_conflict_and_lock_errors_are_recognised() -> None:
    conflict = ("org.apache.hudi.exception.HoodieWriteConflictException: java.util.ConcurrentModificationException: "
                "Cannot resolve conflicts for overlapping writes between first operation = {actionType=commit, "
                "instantTime=20261128211500123, actionState=INFLIGHT'}, second operation = {actionType=commit, "
                "instantTime=20261128211459876, actionState=COMPLETED'}")
    assert is_write_conflict(conflict)
    assert instants_named_in(conflict) == ("20261128211500123", "20261128211459876")
    assert is_write_conflict("HoodieEarlyConflictDetectionException: Early conflict detected")
    assert not is_write_conflict("HoodieUpsertException: Failed to upsert for commit time 20261128211500123")
    assert is_lock_timeout("org.apache.hudi.exception.HoodieLockException: Unable to acquire lock, lock object null")
    assert not is_lock_timeout(conflict)
    # as a server on MinIO under eight writers raised it (Hudi 1.2.0, apache/hudi#18903)
    assert is_heartbeat_expired("org.apache.hudi.exception.HoodieException: Heartbeat for instant 20261129113445371 "
                                "has expired, last heartbeat 1795952085000")
    assert not is_heartbeat_expired(conflict)


@given(merge_on_read=st.booleans(), version=st.sampled_from([6, 8, 9]),
       index=st.sampled_from(["", "BUCKET", "bucket", "SIMPLE", "RECORD_INDEX"]),
       engine=st.sampled_from([None, "SIMPLE", "CONSISTENT_HASHING"]))
def test_non_blocking_concurrency_control_only_where_hudi_supports_it(
    merge_on_read: bool, version: int, index: str, engine: str | None
) -> None:
    settings = {"hoodie.index.type": index} | ({"hoodie.index.bucket.engine": engine} if engine else {})
    expected = merge_on_read and version >= 8 and index.upper() == "BUCKET" and engine in (None, "SIMPLE")
    assert supports_non_blocking(merge_on_read=merge_on_read, table_version=version, settings=settings) is expected
    mode = concurrency_options(single_writer=False, server_lock={}, chosen={}, non_blocking=expected)
    assert mode[CONCURRENCY_MODE_KEY] == ("NON_BLOCKING_CONCURRENCY_CONTROL" if expected
                                          else "OPTIMISTIC_CONCURRENCY_CONTROL")


def test_the_harness_zookeeper_lock_is_what_the_library_takes_from_the_server() -> None:
    from hudi_connect_stack.endpoints import ZooKeeperEndpoint
    from hudi_connect_stack.zookeeper import lock_confs

    lock = server_lock_options(lock_confs(ZooKeeperEndpoint("127.0.0.1", 34963)))
    applied = concurrency_options(single_writer=False, server_lock=lock, chosen={})
    assert applied[LOCK_PROVIDER_KEY] == ZOOKEEPER_LOCK
    assert applied["hoodie.write.lock.zookeeper.url"] == "127.0.0.1:34963"  # Curator's connect string


@given(merge_on_read=st.booleans(), single_writer=st.booleans(), non_blocking=st.booleans(),
       chosen=st.dictionaries(st.sampled_from([SMALL_FILE_LIMIT_KEY, CONCURRENCY_MODE_KEY, LOCK_PROVIDER_KEY]),
                              st.sampled_from(["single_writer", "OPTIMISTIC_CONCURRENCY_CONTROL", "104857600"])))
def test_a_mor_delta_commit_beside_other_writers_rewrites_no_base_file(
    merge_on_read: bool, single_writer: bool, non_blocking: bool, chosen: dict[str, str]
) -> None:
    """A compaction requested beside a delta commit supersedes a base file the delta commit rewrote (Hudi's
    conflict check lets the two through): multi-writer MOR writes send inserts to new file groups instead;
    a user's own setting wins."""
    applied = concurrency_options(single_writer=single_writer, server_lock={}, chosen=chosen, non_blocking=non_blocking,
                                  merge_on_read=merge_on_read) | chosen
    multi_writer = not single_writer and chosen.get(CONCURRENCY_MODE_KEY, "").upper() != "SINGLE_WRITER"
    expected = "0" if merge_on_read and multi_writer else None
    assert applied.get(SMALL_FILE_LIMIT_KEY) == chosen.get(SMALL_FILE_LIMIT_KEY, expected)
