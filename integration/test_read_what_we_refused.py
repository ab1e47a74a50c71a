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
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from hudi_connect.cdc import ChangeQuery
from hudi_connect.core.format.bootstrap import FULL_BOOTSTRAP_INSTANT, METADATA_BOOTSTRAP_INSTANT, is_skeleton
from hudi_connect.core.format.fs_view import FileSlice
from hudi_connect.core.format.log.format import HeaderKey, read_log_blocks
from hudi_connect.reader import TableReader
from hudi_connect.table_spec import FileIndex
from integration.differential.scenario import Record, Request, Scenario, Service, Shape, Write
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


def _source_files_of(slices: list[FileSlice], path: str) -> set[tuple[str, str]]:
    """The source files the skeletons among ``slices`` hold the records of: the source folder's files whose
    rows' keys are the skeleton's (the skeleton has the source's rows, in order)."""
    found = set()
    for piece in slices:
        if piece.base_file is None or not is_skeleton(piece.base_file.name):
            continue
        keys = pq.read_table(f"{path}/{piece.partition}/{piece.base_file.name}").column("_hoodie_record_key")
        for name in os.listdir(f"{path}-source/{piece.partition}"):
            if name.endswith(".parquet") and pq.read_table(f"{path}-source/{piece.partition}/{name}").column(
                    "key").to_pylist() == [int(k) for k in keys.to_pylist()]:
                found.add((piece.partition, name))
    return found


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
    # FileIndex lists both files of a skeleton's slice: the skeleton, and the source file it joins
    slices = [s for snapshot in FileIndex(plain_spark, path).list_files_at() for s in snapshot.file_slices]
    sources = {(s.partition, s.base_file.bootstrap_source) for s in slices
               if s.base_file is not None and s.base_file.bootstrap_source is not None}
    assert {(p, name) for p, name in sources} == {
        (part, f"file://{path}-source/{part}/{name}") for part, name in _source_files_of(slices, path)}
    assert (len(sources) > 0) == (bootstrap == "bootstrap")  # a full-record bootstrap has no skeleton


@pytest.mark.full
def test_a_bootstrapped_mor_table_whose_skeleton_group_takes_an_insert_keeps_its_columns(
        spark: SparkSession, plain_spark: SparkSession, tmp_path: Path) -> None:
    """The shrunk seed 73006 (the 62-minute run on Hudi 1.2 of 2026-11-29): an insert into a MOR table bootstrapped
    from a folder of one int partition makes Hudi rewrite a skeleton's file group into a new base file, whose
    bootstrapped records it writes with a null ``key`` and the key's value in ``part``. Hudi's read takes the
    partition column from the path (2023); ours showed the stored 5 and 6, and now reads it as Hudi does."""
    shape_ = Shape(table_type="MERGE_ON_READ", version=8, partition_type="int", hive_style=True, url_encode=False,
                   ordering_type="int", merge="event_time", index="BLOOM", metadata=False, column_stats=False,
                   key_generator="simple", cdc="off", archival=True, ordering_fields=2, log_compaction=True)
    steps = (Write("bootstrap", (Record(0, 2023, None, 107, "p", None, 1), Record(4, 2023, 6, 194, "p", 7, None),
                                 Record(5, 2023, 0, 113, "r", None, 1), Record(6, 2023, 18, 264, "r", None, None))),
             Write("insert", (Record(1, 2023, 10, 7, "q", None, 0),)))
    snapshot = (Request("snapshot", None),)
    path = str(tmp_path / "t")
    run(spark, plain_spark, path, Scenario(shape_, steps, (snapshot, snapshot)))
    rows = TableReader(plain_spark, path).snapshot().collect()
    assert {(r._hoodie_record_key, r.part) for r in rows} == {(str(k), 2023) for k in (0, 1, 4, 5, 6)}
    assert sum(r.key is None for r in rows) == 2  # Hudi's rewrite lost two keys' values: the file holds nulls
