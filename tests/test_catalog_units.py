"""Tables by name and Hudi's SQL writes, the parts that need no server: names against paths, the hive-sync
options of a named table's writes, the UPDATE and MERGE INTO statements, the metastore's settings, Thrift
health check and jar set. The servers' side is in integration/test_catalog.py."""

from __future__ import annotations

import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hudi_connect_stack.endpoints import HiveMetastoreEndpoint, PostgresEndpoint
from hudi_connect_stack.hive_metastore import _databases_in_reply, _thrift_call, metastore_site
from hudi_connect_stack.spark_connect import render_server_confs
from hudi_connect_stack.versions import HIVE_METASTORE_JARS, JarSet, MavenArtifact

from hudi_connect.client.catalog import is_table_name
from hudi_connect.core.format.table_config import TableProperties
from hudi_connect.table import options as opts
from hudi_connect.table.merge import MergeClause, merge_statement, partial_update_loses_columns, update_statement
from hudi_connect_stack import provision

NS = {"m": "http://maven.apache.org/POM/4.0.0"}
COLUMNS = ("id", "amount", "note", "ts", "part")
PARTIAL = MergeClause("update", None, (("amount", "s.amount"), ("ts", "s.ts")))
METASTORE = HiveMetastoreEndpoint("thrift://127.0.0.1:9083", "file:///run/hive-warehouse")


@pytest.mark.parametrize(("text", "is_name"), [
    ("orders", True), ("db.orders", True), ("spark_catalog.db.orders", True), ("`my db`.`orders-1`", True),
    ("s3a://lake/orders", False), ("/tmp/orders", False), ("file:/tmp/orders", False), ("orders/", False),
    ("relative/orders", False), ("a.b.c.d", False), ("", False),
])
def test_a_name_is_told_from_a_path(text: str, is_name: bool) -> None:
    assert is_table_name(text) is is_name


def _props(partitions: str) -> TableProperties:
    return TableProperties.from_properties({"hoodie.table.version": "9", "hoodie.table.name": "orders",
                                            "hoodie.table.recordkey.fields": "id",
                                            "hoodie.table.partition.fields": partitions})


def test_writes_of_a_named_table_sync_the_catalog_as_hudis_sql_writes_do() -> None:
    synced = opts.catalog_sync_options("lake", "orders", _props("city,day"))
    assert synced["hoodie.datasource.hive_sync.mode"] == "hms"
    assert (synced["hoodie.datasource.hive_sync.database"], synced["hoodie.datasource.hive_sync.table"]) == (
        "lake", "orders")
    assert synced["hoodie.datasource.hive_sync.partition_fields"] == "city,day"
    assert synced["hoodie.datasource.hive_sync.partition_extractor_class"].endswith("MultiPartKeysValueExtractor")
    unpartitioned = opts.catalog_sync_options("lake", "orders", _props(""))
    assert unpartitioned["hoodie.datasource.hive_sync.partition_extractor_class"].endswith("NonPartitionedExtractor")


def test_update_sets_the_columns_given_where_the_condition_holds() -> None:
    assert update_statement("lake.orders", {"amount": "amount * 2", "note": "'x'"}, "city = 'paris'") == (
        "UPDATE lake.orders SET `amount` = amount * 2, `note` = 'x' WHERE city = 'paris'")
    assert update_statement("lake.orders", {"amount": "0"}, None) == "UPDATE lake.orders SET `amount` = 0"
    with pytest.raises(ValueError, match="at least one column"):
        update_statement("lake.orders", {}, None)


def test_a_merge_keeps_sqls_first_matching_clause_rule_whatever_order_hudi_tries_them_in() -> None:
    statement = merge_statement("lake.orders", "src", "t.id = s.id", (
        MergeClause("insert_all"),
        MergeClause("delete", "s.deleted"),
        MergeClause("update", "s.amount > 10", (("amount", "s.amount"),)),
        MergeClause("update_all"),
    ))
    assert statement == (
        "MERGE INTO lake.orders AS `t` USING `src` AS `s` ON t.id = s.id "
        "WHEN MATCHED AND (s.deleted) THEN DELETE "
        "WHEN MATCHED AND NOT COALESCE((s.deleted), FALSE) AND (s.amount > 10) THEN UPDATE SET `amount` = s.amount "
        "WHEN MATCHED AND NOT COALESCE((s.deleted), FALSE) AND NOT COALESCE((s.amount > 10), FALSE) "
        "THEN UPDATE SET * "
        "WHEN NOT MATCHED THEN INSERT *")


@pytest.mark.parametrize(("clauses", "version", "unmatched", "refused"), [
    ((PARTIAL,), 9, False, None),                               # Hudi's partial-update log blocks keep the rest
    ((PARTIAL, MergeClause("update_all")), 9, False, "set every column"),
    ((PARTIAL, MergeClause("update", None, (("note", "s.note"), ("id", "s.id"), ("part", "s.part")))), 9, False,
     "set every column"),
    ((PARTIAL,), 9, True, "match no record"),
    ((PARTIAL,), 6, False, "table version 6"),
    ((MergeClause("update_all"), MergeClause("insert_all")), 9, True, None),  # no partial update: whole records
])
def test_a_merge_on_read_merge_hudi_would_write_wrongly_is_named(
    clauses: tuple[MergeClause, ...], version: int, unmatched: bool, refused: str | None,
) -> None:
    asked: list[bool] = []

    def source_has_unmatched_rows() -> bool:
        asked.append(True)
        return unmatched

    reason = partial_update_loses_columns(clauses, COLUMNS, merge_on_read=True, table_version=version,
                                          source_has_unmatched_rows=source_has_unmatched_rows)
    assert (reason is None) if refused is None else (refused in str(reason))
    assert partial_update_loses_columns(clauses, COLUMNS, merge_on_read=False, table_version=version,
                                        source_has_unmatched_rows=source_has_unmatched_rows) is None  # COW
    if not any(c.kind == "update" for c in clauses):
        assert not asked  # the source is looked at only when a partial update makes it matter


def test_a_merge_refuses_clauses_that_could_never_act_and_an_empty_merge() -> None:
    with pytest.raises(ValueError, match="only the last"):
        merge_statement("t", "v", "t.id = s.id", (MergeClause("update_all"), MergeClause("delete", "s.x")))
    with pytest.raises(ValueError, match="at least one"):
        merge_statement("t", "v", "t.id = s.id", ())
    insert = MergeClause("insert", "s.ok", (("id", "s.id"), ("amount", "0")))
    assert "WHEN NOT MATCHED AND (s.ok) THEN INSERT (`id`, `amount`) VALUES (s.id, 0)" in merge_statement(
        "t", "v", "t.id = s.id", (insert,))


def test_the_metastore_keeps_hives_own_schema_in_postgres_and_prunes_without_hives_query_language() -> None:
    site = metastore_site(PostgresEndpoint("127.0.0.1", 5432, "hudi", "pw", "hudi"), 9083, "file:///w")
    assert site["javax.jdo.option.ConnectionURL"] == "jdbc:postgresql://127.0.0.1:5432/hive_metastore"
    assert site["datanucleus.schema.autoCreateAll"] == "false" and site["metastore.schema.verification"] == "true"
    assert site["metastore.expression.proxy"].endswith("DefaultPartitionExpressionProxy")
    assert site["metastore.thrift.port"] == "9083"


def test_the_metastore_servers_keep_their_catalog_there_and_the_others_in_memory() -> None:
    for flavor in ("hudi-metastore", "plain-metastore"):
        confs = render_server_confs(flavor, port=1, work_dir=Path("/w"), metastore=METASTORE)
        assert confs["spark.sql.catalogImplementation"] == "hive"
        assert confs["spark.hadoop.hive.metastore.uris"] == "thrift://127.0.0.1:9083"
        assert confs["spark.sql.warehouse.dir"] == METASTORE.warehouse_dir  # where the metastore puts databases
    assert render_server_confs("hudi", port=1, work_dir=Path("/w"))["spark.sql.catalogImplementation"] == "in-memory"
    with pytest.raises(ValueError, match="metastore="):
        render_server_confs("hudi-metastore", port=1, work_dir=Path("/w"))


def _reply(names: list[str]) -> bytes:
    method = b"get_all_databases"
    body = b"".join(struct.pack(">i", len(n.encode())) + n.encode() for n in names)
    return (struct.pack(">Ii", 0x80010002, len(method)) + method + struct.pack(">i", 1)
            + bytes([15]) + struct.pack(">h", 0) + bytes([11]) + struct.pack(">i", len(names)) + body + b"\x00")


def test_the_health_check_reads_the_databases_of_a_thrift_reply_and_waits_for_a_whole_one() -> None:
    assert _thrift_call("get_all_databases").startswith(struct.pack(">I", 0x80010001))
    reply = _reply(["default", "lake"])
    assert _databases_in_reply(reply) == ["default", "lake"]
    with pytest.raises((IndexError, struct.error)):
        _databases_in_reply(reply[:-8])
    exception = bytearray(reply)
    exception[3] = 3  # an EXCEPTION message
    with pytest.raises(ValueError, match="not a Thrift reply"):
        _databases_in_reply(bytes(exception))


def test_a_transitive_artifacts_exclusions_and_an_archive_reach_the_pom() -> None:
    jar_set = JarSet("x", (MavenArtifact("g", "tree", "1", transitive=True, exclusions=("h:old", "l:log")),
                           MavenArtifact("g", "tree", "1", classifier="bin", packaging="tar.gz")))
    dependencies = ET.fromstring(provision.render_pom(jar_set)).findall("m:dependencies/m:dependency", NS)
    excluded = [(e.findtext("m:groupId", namespaces=NS), e.findtext("m:artifactId", namespaces=NS))
                for e in dependencies[0].findall("m:exclusions/m:exclusion", NS)]
    assert excluded == [("h", "old"), ("l", "log")]
    assert dependencies[1].findtext("m:type", namespaces=NS) == "tar.gz"
    assert jar_set.artifacts[1].jar_name == "tree-1-bin.tar.gz"
    archive = [a for a in HIVE_METASTORE_JARS.artifacts if a.packaging == "tar.gz"]
    assert len(archive) == 1 and archive[0].classifier == "bin"  # the schema scripts' source
