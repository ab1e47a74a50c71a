"""A second look costs nothing and is never stale (issue #35): what a session has read of a table (its
timeline, commit metadata, ``hoodie.properties`` and storage listing) is used again while the timeline's
names stand still, so a repeated read sends the server nothing to execute but itself; and every way a table
changes under a reader (a commit, a rollback, a restore, ``hoodie.properties`` rewritten by a write, the table
recreated at the same path) is seen: each read equals Hudi's own read of the table as it is then.

Executions are counted where the client sends them (each ExecutePlan request of the session, the request
that runs Spark jobs); a driver-side listing is an analysis request and runs none.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hudi_connect_stack.testing.compare import row_multiset
from pyspark.sql import DataFrame, SparkSession

from hudi_connect import forget_table
from hudi_connect.cdc import ChangeQuery
from hudi_connect.core.errors import UnsupportedTableFeatureError
from hudi_connect.core.format.table_config import MetadataPartition, parse_java_properties
from hudi_connect.reader import TableReader
from hudi_connect.reverse import ReverseStream
from hudi_connect.reverse.sinks import FileSink
from hudi_connect.table.hudi_table import HudiTable
from hudi_connect.table_spec import FileIndex

SCHEMA = "id int, v string, ts int, part string"


@contextmanager
def executions(spark: SparkSession) -> Iterator[list[str]]:
    """The kinds of plan ``spark`` sends to be executed while inside (one entry per ExecutePlan request)."""
    sent: list[str] = []
    client = spark.client
    original = client._execute_and_fetch_as_iterator

    def counted(request: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(request.plan.WhichOneof("op_type") or "")
        return original(request, *args, **kwargs)

    client._execute_and_fetch_as_iterator = counted  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        del client._execute_and_fetch_as_iterator


def rows(spark: SparkSession, data: list[tuple[int, str, int, str]]) -> DataFrame:
    return spark.createDataFrame(data, SCHEMA)


def multiset(df: DataFrame) -> Counter[tuple[Any, ...]]:
    columns = ["id", "v", "ts", "part"]
    return row_multiset((r.asDict() for r in df.select(*columns).collect()), columns)


def create(spark: SparkSession, path: str, *, metadata_table: bool, table_type: str = "COPY_ON_WRITE") -> HudiTable:
    return HudiTable.create(spark, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="part",
                            table_type=table_type, metadata_table=metadata_table, cdc="DATA_BEFORE_AFTER",
                            options={"hoodie.clean.automatic": "false",
                                     "hoodie.compact.inline.max.delta.commits": "100"})


# CI: COW listing storage and MOR listing through the metadata table; the other two under --full
@pytest.mark.parametrize(("table_type", "metadata_table"), [
    pytest.param(t, m, marks=() if (t == "MERGE_ON_READ") == m else pytest.mark.full,
                 id=f"{t}-{'metadata-table' if m else 'storage-listing'}")
    for t in ("COPY_ON_WRITE", "MERGE_ON_READ") for m in (False, True)])
def test_a_repeated_read_of_an_unchanged_table_executes_only_itself(
    spark: SparkSession, plain_spark: SparkSession, local_base_path: str, table_type: str, metadata_table: bool
) -> None:
    table = create(spark, local_base_path, metadata_table=metadata_table, table_type=table_type)
    first = table.insert(rows(spark, [(k, f"v{k}", 1, f"p{k % 2}") for k in range(20)]))
    table.upsert(rows(spark, [(k, f"u{k}", 2, f"p{k % 2}") for k in range(0, 20, 3)]))
    expected = multiset(table.hudi.snapshot())
    # the first reads learn the table (the timeline and its metadata, in their own tasks)
    with executions(plain_spark) as sent:
        assert multiset(TableReader(plain_spark, local_base_path).snapshot()) == expected
        changes = ChangeQuery(plain_spark, local_base_path).changes(first).count()
    assert len(sent) > 2
    # the same reads again, from new readers: one execution each, the read itself
    reads: dict[str, Callable[[], object]] = {
        "snapshot": lambda: multiset(TableReader(plain_spark, local_base_path).snapshot()),
        "changes": lambda: ChangeQuery(plain_spark, local_base_path).changes(first).count(),
        "listing": lambda: [s.file_id for p in FileIndex(plain_spark, local_base_path).list_files_at()
                            for s in p.file_slices],
    }
    # the listing (from storage with the timeline, or the whole listing through the metadata table) is used
    # again: a listing alone then executes nothing
    expected_executions = {"snapshot": 1, "changes": 1, "listing": 0}
    answers = {"snapshot": expected, "changes": changes}
    for name, read in reads.items():
        with executions(plain_spark) as sent:
            answer = read()
        assert len(sent) == expected_executions[name], f"{name}: {sent}"
        if name in answers:
            assert answer == answers[name], name
    if table_type == "COPY_ON_WRITE":
        # decoding the .cdc records in the JVM first finds their writer schemas (a job); the session keeps them
        # per commit and file, so a later query of those commits, by any decoder's choice, runs no such job
        in_jvm = lambda: ChangeQuery(plain_spark, local_base_path, avro_decoding="jvm").changes(first).count()  # noqa: E731
        for expected_count, query in ((2, in_jvm), (1, in_jvm), (1, reads["changes"])):
            with executions(plain_spark) as sent:
                assert query() == changes
            assert len(sent) == expected_count, sent
        assert "no schema job" in ChangeQuery(plain_spark, local_base_path).explain(first)


def test_each_change_under_a_reader_is_seen(spark: SparkSession, plain_spark: SparkSession,
                                            local_base_path: str) -> None:
    path = local_base_path
    table = create(spark, path, metadata_table=False)
    reader = TableReader(plain_spark, path)

    def agrees(what: str) -> None:
        hudi = multiset(spark.read.format("hudi").load(path))
        assert multiset(reader.snapshot()) == hudi, f"{what}: the reader of before"
        assert multiset(TableReader(plain_spark, path).snapshot()) == hudi, f"{what}: a new reader"

    table.insert(rows(spark, [(k, f"v{k}", 1, f"p{k % 2}") for k in range(10)]))
    agrees("the first commit")
    table.upsert(rows(spark, [(k, f"u{k}", 2, f"p{k % 2}") for k in range(5)]))
    agrees("a commit")
    catalog = f"cache_{uuid.uuid4().hex[:8]}"
    spark.sql(f"create table {catalog} using hudi location '{path}'")
    try:
        savepoint = table.upsert(rows(spark, [(k, f"w{k}", 3, f"p{k % 2}") for k in range(3, 8)]))
        agrees("a commit to savepoint")
        spark.sql(f"call create_savepoint(table => '{catalog}', commit_time => '{savepoint.requested_time}')")
        later = table.upsert(rows(spark, [(k, f"x{k}", 4, f"p{k % 2}") for k in range(8)]))
        agrees("a commit after the savepoint")
        spark.sql(f"call rollback_to_instant(table => '{catalog}', instant_time => '{later.requested_time}')")
        agrees("a rollback")
        table.upsert(rows(spark, [(k, f"y{k}", 5, f"p{k % 2}") for k in range(6, 10)]))
        agrees("a commit after the rollback")
        spark.sql(f"call rollback_to_savepoint(table => '{catalog}', instant_time => '{savepoint.requested_time}')")
        agrees("a restore")
    finally:
        spark.sql(f"drop table if exists {catalog}")
    # a write that builds the metadata table rewrites hoodie.properties: the reader lists through it then
    table.upsert(rows(spark, [(1, "z1", 6, "p1")]), options={"hoodie.metadata.enable": "true"})
    assert MetadataPartition.FILES.value in HudiTable.open(spark, path).properties.metadata_partitions
    agrees("the metadata table built")
    assert reader.index.counts.source == "metadata"
    # dropped and written again at the same path, with other keys and instants
    shutil.rmtree(path)
    again = create(spark, path, metadata_table=False, table_type="MERGE_ON_READ")
    again.insert(rows(spark, [(k, f"n{k}", 1, "p0") for k in range(100, 104)]))
    agrees("the table recreated")
    assert reader.properties.is_merge_on_read


def test_forgetting_a_table_sees_properties_rewritten_without_an_instant(
    spark: SparkSession, plain_spark: SparkSession, local_base_path: str
) -> None:
    # the one change the timeline does not show (hudi-cli's `table update-configs`): the session's cache is
    # dropped by hand, and the next reader reads hoodie.properties again
    table = create(spark, local_base_path, metadata_table=False)
    table.insert(rows(spark, [(k, f"v{k}", 1, "p0") for k in range(4)]))
    assert TableReader(plain_spark, local_base_path).snapshot().count() == 4
    properties = f"{local_base_path}/.hoodie/hoodie.properties"
    with open(properties) as file:
        raw = parse_java_properties(file.read())
    raw["hoodie.table.base.file.format"] = "ORC"
    with open(properties, "w") as file:
        file.write("".join(f"{k}={v.replace(':', chr(92) + ':')}\n" for k, v in raw.items()))
    os.remove(f"{local_base_path}/.hoodie/.hoodie.properties.crc")  # Hadoop's local checksum of the old content
    forget_table(plain_spark, local_base_path)
    with pytest.raises(UnsupportedTableFeatureError, match="Orc base files"):
        TableReader(plain_spark, local_base_path)


def test_a_polling_stream_executes_nothing_while_the_table_stands_still(
    spark: SparkSession, plain_spark: SparkSession, local_base_path: str
) -> None:
    table = create(spark, local_base_path, metadata_table=False)
    table.insert(rows(spark, [(k, f"v{k}", 1, f"p{k % 2}") for k in range(6)]))
    stream = ReverseStream(plain_spark, local_base_path, "poll", [FileSink(f"{local_base_path}-out")])
    assert stream.run_once().records == 6
    assert not stream.run_once().sent  # nothing new: learnt in one task
    with executions(plain_spark) as sent:
        assert not stream.run_once().sent
    assert sent == [], "a poll of an unchanged table and checkpoint executes nothing"
    table.upsert(rows(spark, [(0, "u0", 2, "p0")]))
    assert stream.run_once().records == 1
    assert not stream.run_once().sent
    # another run of the stream moves its checkpoint (a claim): the next poll looks, and reads the table again
    ReverseStream(plain_spark, local_base_path, "poll", [FileSink(f"{local_base_path}-out")]).reset()
    assert stream.run_once().records == 6
