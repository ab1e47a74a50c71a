"""Tables we refused and Hudi reads (issue #70), each a fixed scenario of the differential tester held to Hudi
1.2's own read of the same table, plus the rows it must return, so that a test cannot pass on an empty answer:

- several ordering fields on MOR (``precombine.field = 'ts,ts2'``): log records merged with the base and with
  each other field by field, as Hudi's ``ArrayComparable`` compares them (a null field as Hudi's default 0);
- log compaction on MOR (``hoodie.log.compaction.inline``): a compacted block read in place of the blocks it
  merged, in every read, and the blocks themselves in a time travel from before it.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from hudi_connect.cdc import ChangeQuery
from hudi_connect.core.format.bootstrap import FULL_BOOTSTRAP_INSTANT, METADATA_BOOTSTRAP_INSTANT
from hudi_connect.core.format.log.format import HeaderKey, read_log_blocks
from hudi_connect.reader import TableReader
from integration.differential.scenario import Record, Request, Scenario, Service, Write
from integration.test_silent_answers import run, shape


@pytest.mark.full  # the rule is drawn against a plain model in tests/test_merge_ordering.py; the tester draws it
@pytest.mark.parametrize("cdc", ["DATA_BEFORE_AFTER", "off"])
def test_several_ordering_fields_on_mor_merge_field_by_field_as_hudi(
    spark: SparkSession, plain_spark: SparkSession, tmp_path: Path, cdc: str
) -> None:
    """Base (5, 1) for every key. Key 0: (5, 2) wins on the second field; key 1: (5, 0) loses, then (5, 1) ties
    and, later, wins; key 2: (5, null) is (5, 0) and loses; key 3: (4, 9) loses on the first field, then a
    delete by key (Hudi's datasource writes it without an ordering value: a natural delete) removes it; key 0's
    soft delete at (5, 1) is older than its (5, 2) and loses."""
    def record(key: int, ts: int, ts2: int | None, v: str) -> Record:
        return Record(key, "a", ts, key, v, key, ts2)

    every = (Request("snapshot", None), Request("read_optimized", None), Request("as_of", None, commit=-2),
             Request("incremental", None, begin=1),
             *((Request("changes", None, begin=1), Request("changes", None, begin=0)) if cdc != "off" else ()))
    scenario = Scenario(
        shape(table_type="MERGE_ON_READ", index="BLOOM", ordering_fields=2, cdc=cdc),
        (Write("insert", tuple(record(k, 5, 1, "base") for k in range(4))),
         Write("upsert", (record(0, 5, 2, "second"), record(1, 5, 0, "lower"), record(2, 5, None, "null"),
                          record(3, 4, 9, "first"))),
         Write("delete", (record(3, 6, 0, "gone"),)),
         Write("soft_delete", (record(0, 5, 1, "stale"),)),
         Write("upsert", (record(1, 5, 1, "tie"),)),
         Service("compact")),
        (every[:1], every, every, every, every, every))
    path = str(tmp_path / "t")
    run(spark, plain_spark, path, scenario)
    assert {(r.key, r.v) for r in TableReader(plain_spark, path).snapshot().collect()} == {
        (0, "second"), (1, "tie"), (2, "base")}


def compacted_blocks(path: str) -> list[str]:
    """The instants each compacted log block of the table at ``path`` replaces."""
    return [block.headers[HeaderKey.COMPACTED_BLOCK_TIMES]
            for name in glob.glob(f"{path}/**/.*.log.*", recursive=True) if not name.endswith(".crc")
            for block in read_log_blocks(Path(name).read_bytes(), source=name)
            if HeaderKey.COMPACTED_BLOCK_TIMES in block.headers]


@pytest.mark.parametrize(("merge", "cdc"), [("event_time", "DATA_BEFORE_AFTER"),
                                             pytest.param("commit_time", "off", marks=pytest.mark.full)])
def test_log_compacted_mor_reads_equal_hudis(
    spark: SparkSession, plain_spark: SparkSession, tmp_path: Path, merge: str, cdc: str
) -> None:
    """Four upserts of one file group, each its own log block; Hudi compacts the log after a write that leaves two
    blocks or more, so later reads meet compacted blocks, one compacting another; a late record (ts 1) and a
    delete among them, and a time travel before each compaction."""
    every = (Request("snapshot", None), Request("read_optimized", None), Request("as_of", None, commit=-2),
             Request("as_of", None, commit=-3), Request("incremental", None, begin=1),
             Request("incremental", None, begin=2, commit=-2),
             *((Request("changes", None, begin=1), Request("changes", None, begin=0)) if cdc != "off" else ()))
    scenario = Scenario(
        shape(table_type="MERGE_ON_READ", index="BLOOM", merge=merge, cdc=cdc, log_compaction=True),
        (Write("insert", tuple(Record(k, "a", 5, k, "base", k) for k in range(4))),
         Write("upsert", (Record(0, "a", 6, 10, "one", 0),)),
         Write("upsert", (Record(1, "a", 6, 11, "two", 1), Record(0, "a", 1, 12, "late", 0))),
         Write("delete", (Record(2, "a", 7, 13, "gone", 2),)),
         Write("upsert", (Record(3, "a", 8, 14, "four", 3), Record(2, "a", 8, 15, "back", 2))),
         Write("upsert", (Record(1, "a", 9, 16, "five", 1),))),
        # every kind of read after the last step, as of each state before it; snapshots in between
        (every[:1],) * 5 + (every,))
    path = str(tmp_path / "t")
    run(spark, plain_spark, path, scenario)
    assert compacted_blocks(path), "Hudi compacted no log block: the test would not read one"
    late = "one" if merge == "event_time" else "late"
    assert {(r.key, r.v) for r in TableReader(plain_spark, path).snapshot().collect()} == {
        (0, late), (1, "five"), (2, "back"), (3, "four")}


@pytest.mark.parametrize(("table_type", "bootstrap"), [
    ("MERGE_ON_READ", "bootstrap"), pytest.param("COPY_ON_WRITE", "bootstrap", marks=pytest.mark.full),
    *(pytest.param(kind, "full_bootstrap", marks=pytest.mark.full) for kind in ("MERGE_ON_READ", "COPY_ON_WRITE"))])
def test_a_bootstrapped_table_reads_equal_hudis(
    spark: SparkSession, plain_spark: SparkSession, tmp_path: Path, table_type: str, bootstrap: str
) -> None:
    """A Parquet folder of two hive-style partitions made a table by Hudi's bootstrap, then upserts, a delete and
    a compaction on it: metadata-only (skeleton files joined with their source files by position, the partition
    column read from the path), or full-record (Hudi's own base files of the source's records); change queries
    (the bootstrap's records inserts of its commit) on a CDC table."""
    every = (Request("snapshot", None), Request("as_of", None, commit=-1), Request("incremental", None, begin=0),
             Request("snapshot", ("cmp", "=", "part", "b")), Request("changes", None, begin=0),
             *((Request("read_optimized", None),) if table_type == "MERGE_ON_READ" else ()))
    later = (*every, Request("as_of", None, commit=-2), Request("incremental", None, begin=1),
             Request("changes", None, begin=1))
    cdc = "OP_KEY_ONLY" if table_type == "MERGE_ON_READ" else "DATA_BEFORE_AFTER"
    scenario = Scenario(
        shape(table_type=table_type, index="BLOOM", hive_style=True, cdc=cdc),
        (Write(bootstrap, tuple(Record(k, "ab"[k % 2], 5, k, "source", k) for k in range(6))),
         Write("upsert", (Record(1, "b", 6, 10, "one", 1), Record(7, "b", 6, 11, "new", 7))),
         Write("delete", (Record(2, "a", 7, 12, "gone", 2),)),
         *((Service("compact"),) if table_type == "MERGE_ON_READ" else ())),
        (every, every[:1], every[:1], later)[:4] if table_type == "MERGE_ON_READ" else (every, every[:1], later))
    path = str(tmp_path / "t")
    run(spark, plain_spark, path, scenario)
    reader = TableReader(plain_spark, path)
    assert {(r.key, r.v) for r in reader.snapshot().collect()} == {
        (0, "source"), (1, "one"), (3, "source"), (4, "source"), (5, "source"), (7, "new")}
    # the bootstrap Hudi ran: its instant (metadata-only 00000000000001, full-record 00000000000002) alone
    bootstraps = {c.requested_time for c in reader.view.timeline().write_commits()} & {
        METADATA_BOOTSTRAP_INSTANT, FULL_BOOTSTRAP_INSTANT}
    assert bootstraps == {FULL_BOOTSTRAP_INSTANT if bootstrap == "full_bootstrap" else METADATA_BOOTSTRAP_INSTANT}
    # the bootstrap's records, whole, are the inserts of its commit (Hudi's change query shows a metadata-only
    # bootstrap's as their meta columns alone; ours equals its time travel: run() held it so)
    inserted = [json.loads(r.after) for r in ChangeQuery(plain_spark, path).changes("earliest").collect()
                if r.ts_ms == next(iter(bootstraps))]
    assert sorted((image["key"], image["v"]) for image in inserted) == [(k, "source") for k in range(6)]
