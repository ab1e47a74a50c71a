"""Reads of every shared fixture table (written by Apache Hudi 0.14 to 1.1) through
HudiTable equal hudi-rs's reads of the same files: the latest snapshot, and the
table as of every completed write commit."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hudi import HudiReadOptions, HudiTableBuilder
from hudi_connect_stack.testing.compare import arrow_multiset, row_multiset
from hudi_connect_stack.testing.fixture_tables import fixture_names, unzip_fixture
from pyspark.sql import SparkSession

from hudi_connect.core.format.table_schema import META_COLUMNS
from hudi_connect.table.hudi_table import HudiTable


def rows_of_spark(table: HudiTable, columns: list[str], as_of: str | None = None) -> Counter[tuple[Any, ...]]:
    df = table.hudi.as_of(as_of) if as_of else table.hudi.snapshot()
    return row_multiset((r.asDict(recursive=True) for r in df.select(*columns).collect()), columns)


def rows_of_hudi_rs(base: Path, columns: list[str], as_of: str | None = None) -> Counter[tuple[Any, ...]]:
    rs_table = HudiTableBuilder.from_base_uri(str(base)).build()
    options = HudiReadOptions().with_as_of_timestamp(as_of) if as_of else HudiReadOptions()
    batches = rs_table.read(options)
    if not batches:
        return Counter()
    return arrow_multiset(pa.Table.from_batches(batches), columns)


@pytest.mark.parametrize("name", fixture_names())
def test_fixture_reads_equal_hudi_rs(spark: SparkSession, tmp_path: Path, name: str) -> None:
    base = unzip_fixture(name, tmp_path)
    table = HudiTable.open(spark, str(base))
    commits = table.timeline().write_commits()
    if len(commits) == 0:
        assert table.hudi.snapshot().count() == 0
        assert rows_of_hudi_rs(base, []) == Counter()
        return
    columns = [c for c in table.hudi.snapshot().columns if c not in META_COLUMNS]
    expected = rows_of_hudi_rs(base, columns)
    assert sum(expected.values()) > 0
    assert rows_of_spark(table, columns) == expected
    for instant in commits:
        assert rows_of_spark(table, columns, instant.requested_time) == rows_of_hudi_rs(
            base, columns, instant.requested_time
        ), f"as of {instant.requested_time}"
