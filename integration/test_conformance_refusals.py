"""Every jar-free reader refuses, by name, a table feature it does not implement, on the plain server.

Tables: copies of the shared fixtures (written by Hudi), with one property of ``hoodie.properties``
changed, or with a base file of another format beside the real ones. Each entry point (snapshot, time
travel, incremental, change query, FileIndex, RecordIndex, the reverse streamer) must raise
``UnsupportedTableFeatureError`` before returning a row; none may answer with empty or partial rows.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hudi_connect_stack.testing.fixture_tables import unzip_fixture
from pyspark.sql import SparkSession

from hudi_connect.cdc import ChangeQuery
from hudi_connect.core.errors import UnsupportedTableFeatureError
from hudi_connect.core.format.table_config import parse_java_properties
from hudi_connect.reader import TableReader
from hudi_connect.reverse import ReverseStream
from hudi_connect.reverse.sinks import FileSink
from hudi_connect.table_spec import FileIndex, RecordIndex


def with_property(base: Path, key: str, value: str, also: dict[str, str] | None = None) -> None:
    path = base / ".hoodie" / "hoodie.properties"
    raw = parse_java_properties(path.read_text())
    raw[key] = value
    raw.update(also or {})
    # escape as java.util.Properties would
    path.write_text("".join(f"{k}={v.replace(':', chr(92) + ':')}\n" for k, v in raw.items()))


ENTRY_POINTS: dict[str, Callable[[SparkSession, str], Any]] = {
    "snapshot": lambda spark, base: TableReader(spark, base).snapshot().collect(),
    "read_optimized": lambda spark, base: TableReader(spark, base).read_optimized().collect(),
    "time_travel": lambda spark, base: TableReader(spark, base).as_of("99991231000000000").collect(),
    "incremental": lambda spark, base: TableReader(spark, base).incremental("earliest").collect(),
    "changes": lambda spark, base: ChangeQuery(spark, base).changes("earliest").collect(),
    "file_index": lambda spark, base: list(FileIndex(spark, base).list_files_at()),
    "record_index": lambda spark, base: RecordIndex(spark, base).tag(["TXN-001"]),
    "reverse_stream": lambda spark, base: ReverseStream(
        spark, base, "refused", [FileSink(f"{base}-export", spark=spark)]).run_once(),
}

PROPERTY_REFUSALS: list[tuple[str, str, str, dict[str, str]]] = [
    ("hoodie.table.base.file.format", "ORC", "Orc base files", {}),
    ("hoodie.table.partial.update.mode", "FILL_UNAVAILABLE", "partial updates", {}),
    ("hoodie.record.merge.mode", "CUSTOM", "custom record merger", {}),
    ("hoodie.bootstrap.index.enable", "false", "bootstrap without its index",
     {"hoodie.bootstrap.base.path": "/elsewhere"}),
]


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize(("key", "value", "feature", "also"), PROPERTY_REFUSALS,
                         ids=[r[1] for r in PROPERTY_REFUSALS])
def test_every_entry_point_refuses_by_name(plain_spark: SparkSession, tmp_path: Path, entry: str,
                                           key: str, value: str, feature: str, also: dict[str, str]) -> None:
    base = unzip_fixture("mor_avro_v9_txns_simple_meta", tmp_path)  # has a metadata table with a record index
    with_property(base, key, value, also)
    with pytest.raises(UnsupportedTableFeatureError, match=feature) as caught:
        ENTRY_POINTS[entry](plain_spark, str(base))
    assert caught.value.property == key and caught.value.value == value


@pytest.mark.parametrize("entry", ["snapshot", "changes", "file_index"])
def test_a_base_file_of_another_format_is_refused_not_skipped(plain_spark: SparkSession, tmp_path: Path,
                                                              entry: str) -> None:
    # an ORC file where Hudi would write one, in a table whose properties say nothing of it
    base = unzip_fixture("cow_v9_txns_simple_nometa", tmp_path)
    parquet = next(p for p in base.rglob("*.parquet") if ".hoodie" not in p.parts)
    shutil.copy(parquet, parquet.with_suffix(".orc"))
    with pytest.raises(UnsupportedTableFeatureError, match="Orc base files"):
        ENTRY_POINTS[entry](plain_spark, str(base))
