"""Instants with one meaning on every path, against Hudi's own reads of the same table: ``Instant`` objects,
instant-time text in Hudi's forms, and datetimes (aware, and naive from a client in another zone)."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from hudi_connect import HudiTable
from hudi_connect.client.instants import timeline_zone
from integration.differential.runner import client_zone

SCHEMA = "id int, v string, ts long, part string"


def rows(df: DataFrame) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r) for r in df.select("id", "v", "ts", "part").collect())


def moment(instant_time: str, zone: dt.tzinfo) -> dt.datetime:
    """The aware moment an instant time stands for on a timeline written in ``zone``."""
    return dt.datetime.strptime(instant_time, "%Y%m%d%H%M%S%f").replace(tzinfo=zone)


def test_instants_given_every_way_read_as_hudis_reads(spark: SparkSession, plain_spark: SparkSession,
                                                      local_base_path: str) -> None:
    writer = HudiTable.create(spark, local_base_path, SCHEMA, record_key="id", ordering_field="ts",
                              partition_by="part", table_type="MERGE_ON_READ")
    commits = [writer.upsert(spark.createDataFrame([(k, f"v{n}", n, f"p{k % 2}") for k in range(n, n + 3)], SCHEMA))
               for n in range(3)]
    table = HudiTable.open(plain_spark, local_base_path)  # ours, on the server without Hudi's jars
    zone = timeline_zone(plain_spark, table.properties)
    first, middle, last = commits
    for commit in commits:
        theirs = rows(writer.hudi.as_of(commit))
        at = moment(commit.requested_time, zone)
        text = f"{at:%Y-%m-%d %H:%M:%S}.{at.microsecond // 1000:03d}"
        assert rows(table.as_of(commit)) == theirs
        assert rows(table.as_of(commit.requested_time)) == theirs
        assert rows(table.as_of(text)) == theirs  # Hudi's formatted form
        assert rows(writer.hudi.as_of(text)) == theirs
        assert rows(table.as_of(at)) == theirs  # an aware datetime
        assert rows(table.as_of(at.astimezone(dt.timezone(dt.timedelta(hours=-7))))) == theirs  # in any zone
        with client_zone("Asia/Kolkata"):  # a naive datetime is the client's local time
            assert rows(table.as_of(at.astimezone().replace(tzinfo=None))) == theirs
    # ranges compare completion times (version 9): a datetime of a commit's completion stands for it
    assert first.completion_time is not None and last.completion_time is not None
    theirs = rows(writer.hudi.incremental(first, last))
    assert rows(table.incremental(first, last)) == theirs != Counter()
    assert rows(table.incremental(moment(first.completion_time, zone), moment(last.completion_time, zone))) == theirs
    assert rows(writer.hudi.incremental(moment(first.completion_time, zone))) == theirs
    assert middle.completion_time is not None
    just_before_middle = moment(middle.completion_time, zone) - dt.timedelta(milliseconds=1)  # after first's
    changed = Counter(tuple(r) for r in table.changes(just_before_middle).collect())
    assert changed == Counter(tuple(r) for r in table.changes(first).collect()) != Counter()
