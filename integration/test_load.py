"""Many clients on one server (issue #36, load; CI's short slice of ``benchmarks/load.py``): eight clients,
each with its own Connect session, run a mix of reads and change queries on a table for a bounded time, on
the plain server (our jar-free readers) and on the Hudi server (Hudi's own reads through :class:`HudiTable`,
beside ours; `--full`). Every answer must equal the plain-Python model's and no operation may fail."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from integration.load import LoadResult, LoadTable, hudi_queries, jar_free_queries, run_load, write_table

CLIENTS = 8
SECONDS = 10  # per server, after each client's untimed first query; the benchmark runs minutes


@pytest.fixture(scope="module")
def tables(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> list[LoadTable]:
    base = tmp_path_factory.mktemp("load")
    base.chmod(0o755)  # CI's slice: one MOR table with the metadata table (the benchmark loads three)
    return [write_table(spark, str(base / "mor_mdt"), "MERGE_ON_READ", metadata_table=True, rows=500, writes=3)]


def check(result: LoadResult, kinds: int) -> None:
    print(f"\n{result.summary()}")
    assert not result.errors, result.errors
    assert not result.wrong, result.wrong
    assert len(result.latencies) == kinds, f"every kind of query ran: {sorted(result.latencies)}"
    assert len(result.per_client) == CLIENTS and min(result.per_client.values()) >= 1, result.per_client


def test_eight_clients_on_the_plain_server(plain_server_url: str, tables: list[LoadTable]) -> None:
    queries = [query for table in tables for query in jar_free_queries(table)]
    check(run_load(plain_server_url, queries, clients=CLIENTS, seconds=SECONDS), len(queries))


@pytest.mark.full  # CI's slice is the plain server's (the cold CI of this change ran 12 s past its budget)
def test_eight_clients_on_the_hudi_server(hudi_server_url: str, tables: list[LoadTable]) -> None:
    # Hudi's reads and ours side by side on the server that also writes
    queries = [query for table in tables for query in (*hudi_queries(table), *jar_free_queries(table)[::3])]
    check(run_load(hudi_server_url, queries, clients=CLIENTS, seconds=SECONDS), len(queries))
