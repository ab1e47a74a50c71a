"""Which lock for writers on several servers (issue #68): one writer's upsert under each of Hudi's lock
providers the harness can serve, side by side in one run: the in-process lock (one server's sessions, the
default), ZooKeeper (``ZookeeperBasedImplicitBasePathLockProvider``) and the Hive Metastore's locks
(``HiveMetastoreBasedLockProvider``), each with the library's multi-writer defaults otherwise.

Each round upserts a batch (a tenth of the keys updated, as many new) through every provider in rotating order
into one table, so all meet the same table sizes; the medians of the rounds are compared, as ratios to the
in-process lock. Afterwards the table's snapshot (ours and Hudi's) must equal the model of every batch. Hudi's
storage-based lock (RFC-91) is not among them: its cloud modules (hudi-aws, hudi-gcp 1.2.0) are not served here.

    python benchmarks/lock_providers.py --rows 100k --batch 10k --repeat 7
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hudi_connect_stack.endpoints import HiveMetastoreEndpoint, PostgresEndpoint, ZooKeeperEndpoint
from hudi_connect_stack.hive_metastore import start_hive_metastore
from hudi_connect_stack.postgres import start_postgres
from hudi_connect_stack.process import RunningService
from hudi_connect_stack.spark_connect import start_spark_connect
from hudi_connect_stack.zookeeper import lock_confs, start_zookeeper

from benchmarks.write_concurrency import SCHEMA, batch, rotating_upserts, upsert_arguments
from hudi_connect import HudiTable, connect
from hudi_connect.table.concurrency import LOCK_PROVIDER_KEY, server_lock_options

HIVE_METASTORE_LOCK = "org.apache.hudi.hive.transaction.lock.HiveMetastoreBasedLockProvider"


def measure(table_type: str, rows: int, batch_rows: int, repeat: int) -> dict[str, float]:
    run_dir = Path(tempfile.mkdtemp(prefix="hudi-connect-bench-"))
    run_dir.chmod(0o755)
    services: list[RunningService] = []
    try:
        postgres = start_postgres(run_dir)
        services.append(postgres)
        assert isinstance(postgres.endpoint, PostgresEndpoint)
        metastore = start_hive_metastore(run_dir, postgres.endpoint)
        services.append(metastore)
        zookeeper = start_zookeeper(run_dir)
        services.append(zookeeper)
        servers = [start_spark_connect(run_dir, flavor) for flavor in ("hudi", "plain")]
        services += servers
        assert isinstance(metastore.endpoint, HiveMetastoreEndpoint)
        assert isinstance(zookeeper.endpoint, ZooKeeperEndpoint)
        hudi, plain = (connect(server.endpoint.url) for server in servers)  # type: ignore[attr-defined]
        name = f"locks_{table_type.lower()}"
        path = str(run_dir / name)
        HudiTable.create(hudi, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="part",
                         table_type=table_type).upsert(batch(hudi, 0, range(0), 0, rows))
        locks = {
            "in-process (default)": {},
            "ZooKeeper": server_lock_options(lock_confs(zookeeper.endpoint)),
            "Hive Metastore": {LOCK_PROVIDER_KEY: HIVE_METASTORE_LOCK,
                               "hoodie.write.lock.hivemetastore.uris": metastore.endpoint.uri,
                               "hoodie.write.lock.hivemetastore.database": "default",
                               "hoodie.write.lock.hivemetastore.table": name},
        }
        tables = {label: HudiTable.open(hudi, path, options=options) for label, options in locks.items()}
        medians, expected = rotating_upserts(hudi, tables, rows, batch_rows, repeat)
        for reader, count in (("ours", HudiTable.open(plain, path).snapshot().count()),
                              ("Hudi's", tables["in-process (default)"].hudi.snapshot().count())):
            assert count == expected, f"{reader} snapshot has {count} rows, the model {expected}"
        hudi.stop()
        plain.stop()
        return medians
    finally:
        for service in reversed(services):
            service.stop()
        shutil.rmtree(run_dir, ignore_errors=True)


def main() -> None:
    args = upsert_arguments(__doc__, repeat=7)
    print("| table | lock | median s | ratio to in-process |\n|---|---|---|---|")
    for table_type in args.table_types:
        medians = measure(table_type, args.rows, args.batch, args.repeat)
        base = medians["in-process (default)"]
        for label, median in medians.items():
            print(f"| {table_type} | {label} | {median:.2f} | {median / base:.3f} |", flush=True)


if __name__ == "__main__":
    main()
