"""``hudi-connect history|changes|files`` on the plain server (no Hudi jar), each against an oracle on the
same table: Hudi's ``show_commits`` procedure, Hudi's own CDC query, and hudi-rs's file slices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hudi import HudiTableBuilder
from pyspark.sql import SparkSession

from hudi_connect.cli import main
from hudi_connect.table.hudi_table import HudiTable

SCHEMA = "id int, v string, ts long, part string"
DATA_COLUMNS = ("id", "v", "ts", "part")


def _rows(spark: SparkSession, ids: range, ts: int, tag: str):  # type: ignore[no-untyped-def]
    return spark.createDataFrame([(i, f"{tag}{i}", ts, f"p{i % 3}") for i in ids], SCHEMA)


@pytest.fixture(scope="module")
def table_path(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A COW table with CDC logging (so Hudi's own CDC query can check ours): insert, upsert, delete."""
    path = str(tmp_path_factory.mktemp("cli") / "t")
    table = HudiTable.create(spark, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="part",
                             table_type="COPY_ON_WRITE", cdc="DATA_BEFORE_AFTER",
                             options={"hoodie.parquet.small.file.limit": "0"})
    table.insert(_rows(spark, range(0, 12), 1, "a"))
    table.upsert(_rows(spark, range(8, 16), 2, "b"))
    table.delete(_rows(spark, range(0, 3), 3, "c"))
    return path


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_history_equals_hudis_show_commits(spark: SparkSession, plain_server_url: str, table_path: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    ours = json.loads(_cli(capsys, "history", table_path, "--remote", plain_server_url, "--json"))
    spark.sql(f"create table if not exists cli_history using hudi location '{table_path}'")
    try:
        theirs = {r.commit_time: r for r in spark.sql("call show_commits(table => 'cli_history')").collect()}
    finally:
        spark.sql("drop table if exists cli_history")
    assert [e["requested_time"] for e in ours] == sorted(theirs, reverse=True)  # newest first, every commit
    assert [e["operation_type"] for e in ours][:3] == ["DELETE", "UPSERT", "INSERT"]  # then create's empty commit
    assert len(ours) == 4
    for entry in ours:
        commit = theirs[entry["requested_time"]]
        assert entry["action"] == commit.action == "commit"
        assert entry["records_written"] == commit.total_records_written
        assert entry["updates"] == commit.total_update_records_written
        assert entry["bytes_written"] == commit.total_bytes_written
        assert entry["partitions_written"] == commit.total_partitions_written
        assert entry["files_written"] == commit.total_files_added + commit.total_files_updated
    table = _cli(capsys, "history", table_path, "--remote", plain_server_url, "--limit", "2")
    lines = table.splitlines()
    assert "requested_time" in lines[0] and "operation_type" in lines[0]
    assert len(lines) == 2 + 2 and ours[0]["requested_time"] in lines[2]  # header, rule, two instants


def test_changes_equal_hudis_cdc_query(spark: SparkSession, plain_server_url: str, table_path: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    out = _cli(capsys, "changes", table_path, "--remote", plain_server_url, "--json")
    ours = sorted((c["op"], c["requested_time"], json.dumps(c["before"] and {k: c["before"][k] for k in DATA_COLUMNS}),
                   json.dumps(c["after"] and {k: c["after"][k] for k in DATA_COLUMNS}))
                  for c in map(json.loads, out.splitlines()))

    def image(text: str | None) -> str:
        parsed = json.loads(text) if text else None  # Hudi writes a missing image as null or 'null'
        return json.dumps(parsed and {k: parsed[k] for k in DATA_COLUMNS})

    theirs = sorted((r.op, r.ts_ms, image(r.before), image(r.after))
                    for r in HudiTable.open(spark, table_path).hudi.cdc("earliest").collect())
    assert ours == theirs
    assert [op for op, *_ in ours].count("i") == 16 and len(ours) == 16 + 4 + 3  # inserts, updates, deletes

    shown = _cli(capsys, "changes", table_path, "--remote", plain_server_url, "--limit", "5")
    assert len(shown.splitlines()) == 2 + 5 + 1 and "more than 5 changes" in shown
    explained = _cli(capsys, "changes", table_path, "--remote", plain_server_url, "--explain")
    assert "AS_IS" in explained


def test_files_equal_hudi_rs_file_slices(plain_server_url: str, table_path: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    ours = json.loads(_cli(capsys, "files", table_path, "--remote", plain_server_url, "--json"))
    rs = HudiTableBuilder.from_base_uri(table_path).build().get_file_slices()
    assert {(s["partition"], s["file_id"], s["base_file"], tuple(s["log_files"])) for s in ours} == \
        {(f.partition_path, f.file_id, f.base_file_name, tuple(f.log_file_names)) for f in rs}
    assert len(ours) >= 3  # one partition each of p0, p1, p2 at least
    table = _cli(capsys, "files", table_path, "--remote", plain_server_url)
    assert all(s["file_id"] in table for s in ours)


def test_a_path_without_a_table_is_refused_by_name(plain_server_url: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", str(tmp_path / "nothing"), "--remote", plain_server_url]) == 1
    assert "nothing" in capsys.readouterr().err
