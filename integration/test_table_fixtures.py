"""Reads of every shared fixture table (written by Apache Hudi 0.14 to 1.1) through
HudiTable equal hudi-rs's reads of the same files: the latest snapshot, and the
table as of every completed write commit."""

from __future__ import annotations

import datetime as dt
import decimal
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hudi import HudiReadOptions, HudiTableBuilder
from pyspark.sql import SparkSession

from hudi_connect.table import META_COLUMNS, HudiTable
from hudi_connect.testing.fixture_tables import fixture_names, unzip_fixture


def normalise(value: Any) -> Any:
    """One comparable form for what Spark's collect() and Arrow's to_pylist() return."""
    if isinstance(value, dict):
        return tuple(sorted((normalise(k), normalise(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(normalise(v) for v in value)
    if isinstance(value, decimal.Decimal):
        return str(value.normalize())
    if isinstance(value, float):
        return round(value, 5)
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value.isoformat()
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    return value


def rows_of_spark(table: HudiTable, columns: list[str], as_of: str | None = None) -> Counter[tuple[Any, ...]]:
    df = table.as_of(as_of) if as_of else table.snapshot()
    records = (r.asDict(recursive=True) for r in df.select(*columns).collect())
    return Counter(tuple(normalise(r[c]) for c in columns) for r in records)


def rows_of_hudi_rs(base: Path, columns: list[str], as_of: str | None = None) -> Counter[tuple[Any, ...]]:
    rs_table = HudiTableBuilder.from_base_uri(str(base)).build()
    options = HudiReadOptions().with_as_of_timestamp(as_of) if as_of else HudiReadOptions()
    batches = rs_table.read(options)
    if not batches:
        return Counter()
    arrow = pa.Table.from_batches(batches)
    records = arrow.select(columns).to_pylist(maps_as_pydicts="strict")
    return Counter(tuple(normalise(r[c]) for c in columns) for r in records)


@pytest.mark.parametrize("name", fixture_names())
def test_fixture_reads_equal_hudi_rs(spark: SparkSession, tmp_path: Path, name: str) -> None:
    base = unzip_fixture(name, tmp_path)
    table = HudiTable.open(spark, str(base))
    commits = table.timeline().write_commits()
    if len(commits) == 0:
        assert table.snapshot().count() == 0
        assert rows_of_hudi_rs(base, []) == Counter()
        return
    columns = [c for c in table.snapshot().columns if c not in META_COLUMNS]
    expected = rows_of_hudi_rs(base, columns)
    assert sum(expected.values()) > 0
    assert rows_of_spark(table, columns) == expected
    for instant in commits:
        assert rows_of_spark(table, columns, instant.requested_time) == rows_of_hudi_rs(
            base, columns, instant.requested_time
        ), f"as of {instant.requested_time}"
