"""The ``format("hudi")`` data source's scan without a server: planned by ``TableReader`` from this process
(``LocalFileAccess``, no Spark session) and read split by split as Spark's workers read it, equal to hudi-rs on
every shared fixture table (Hudi 0.14 to 1.1), latest and as of every commit; and Hudi's read options, each
refused by name where it would change the answer and is not implemented."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hudi_connect_stack.testing.compare import arrow_multiset
from hudi_connect_stack.testing.fixture_tables import fixture_names, unzip_fixture

from hudi_connect.core.errors import InvalidInstantError, InvalidOptionError, UnsupportedOperationError
from hudi_connect.core.executor.file_access import LocalFileAccess
from hudi_connect.core.format.read_options import QueryType, ReadQuery, StreamQuery, read_query, stream_query
from hudi_connect.core.format.table_schema import META_COLUMNS
from hudi_connect.reader import TableReader
from integration.test_table_fixtures import rows_of_hudi_rs
from pyspark_hudi.scan import Scan, arrow_schema, current_scan, read_split, scan_of


def _rows(scan: Scan, columns: list[str]) -> Counter[tuple[Any, ...]]:
    target = arrow_schema(scan.schema)
    batches = [b for split in scan.splits for b in read_split(scan, split, target)]
    return arrow_multiset(pa.Table.from_batches(batches, schema=target), columns) if batches else Counter()


@pytest.mark.parametrize("name", fixture_names())
def test_the_data_sources_scan_equals_hudi_rs(tmp_path: Path, name: str) -> None:
    base = str(unzip_fixture(name, tmp_path))
    commits = list(TableReader(LocalFileAccess(), base).view.timeline().write_commits())
    if not commits:  # no commit, so no schema: refused by name
        with pytest.raises(InvalidInstantError, match="no commit with a schema"):
            scan_of(ReadQuery(base))
        return
    scan = scan_of(ReadQuery(base), splits=3)
    columns = [f.name for f in scan.schema.fields if f.name not in META_COLUMNS]
    expected = rows_of_hudi_rs(Path(base), columns)
    assert sum(expected.values()) > 0 and len(scan.splits) <= 3
    assert _rows(scan, columns) == expected
    for instant in commits:
        as_of = scan_of(ReadQuery(base, as_of=instant.requested_time))
        assert _rows(as_of, columns) == rows_of_hudi_rs(Path(base), columns, instant.requested_time), \
            f"as of {instant.requested_time}"


def test_hudis_read_options_become_the_query() -> None:
    assert read_query({"path": "/t"}) == ReadQuery("/t")
    assert read_query({"PATH": "/t", "Hoodie.Datasource.Query.Type": "READ_OPTIMIZED",
                       "hoodie.metadata.enable": "false"}) == ReadQuery("/t", QueryType.READ_OPTIMIZED)
    assert read_query({"path": "/t", "as.of.instant": "2024-01-01 00:00:00"}) == \
        ReadQuery("/t", as_of="2024-01-01 00:00:00")
    assert read_query({"path": "/t", "hoodie.datasource.query.type": "incremental",
                       "hoodie.datasource.read.begin.instanttime": "001",
                       "hoodie.datasource.read.end.instanttime": "002",
                       "hoodie.datasource.read.incr.fallback.fulltablescan.enable": "false"}) == \
        ReadQuery("/t", QueryType.INCREMENTAL, begin="001", end="002", fallback_to_full_scan=False)


@pytest.mark.parametrize(("options", "error", "named"), [
    ({"path": "/t", "hoodie.datasource.read.paths": "/a,/b"}, UnsupportedOperationError,
     "hoodie.datasource.read.paths"),
    ({"path": "/t", "hoodie.datasource.query.type": "incremental", "hoodie.datasource.read.begin.instanttime": "0",
      "hoodie.datasource.query.incremental.format": "cdc"}, UnsupportedOperationError, "format=cdc"),
    ({"path": "/t", "hoodie.datasource.query.type": "incremental"}, InvalidOptionError, "begin.instanttime"),
    ({"path": "/t", "hoodie.datasource.query.type": "bogus"}, InvalidOptionError, "bogus"),
    ({"path": "/t", "hoodie.datasource.read.begin.instanttime": "0"}, InvalidOptionError, "only apply to"),
    ({"path": "/t", "hoodie.datasource.query.type": "read_optimized", "as.of.instant": "1"},
     UnsupportedOperationError, "as.of.instant"),
    ({"paths": '["/a", "/b"]'}, UnsupportedOperationError, "several tables"),
    ({}, InvalidOptionError, "needs the table's path"),
])
def test_options_that_would_change_the_answer_are_refused_by_name(options: dict[str, str], error: type[Exception],
                                                                  named: str) -> None:
    with pytest.raises(error, match=named):
        read_query(options)


def test_a_streams_start_offset_is_hudis() -> None:
    start = "hoodie.datasource.streaming.startOffset"
    assert stream_query({"path": "/t"}) == StreamQuery("/t", "earliest")
    assert stream_query({"path": "/t", start.upper(): "LATEST"}) == StreamQuery("/t", "latest")
    assert stream_query({"path": "/t", start: "2026-03-07 16:24:34.124"}) == StreamQuery("/t", "20260307162434124")
    assert read_query({"path": "/t", start: "latest"}) == ReadQuery("/t")  # a batch read takes no start offset
    with pytest.raises(UnsupportedOperationError, match="read_optimized"):
        stream_query({"path": "/t", "hoodie.datasource.query.type": "read_optimized"})
    with pytest.raises(UnsupportedOperationError, match="skip_compact"):
        stream_query({"path": "/t", "hoodie.datasource.read.incr.skip_compact": "true"})


def test_a_scan_kept_from_schema_is_read_only_while_the_timeline_is_unchanged(tmp_path: Path) -> None:
    """Spark keeps the data source (and so the scan ``schema()`` planned) in a view's plan: once the timeline
    changed, the scan is planned again."""
    base = unzip_fixture("cow_v9_txns_simple_meta", tmp_path)
    query = ReadQuery(str(base))
    planned = scan_of(query)
    assert planned.timeline_names and current_scan(query, planned) is planned
    timeline = base / ".hoodie" / "timeline"
    begun = "29990101000000000.commit.requested"
    (timeline / begun).write_bytes(b"")  # a writer began a commit
    again = current_scan(query, planned)
    assert again is not planned and again.timeline_names == planned.timeline_names | {begun}
