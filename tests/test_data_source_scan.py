"""The ``format("hudi")`` data source's scan without a server: planned by ``TableReader`` from this process
(``LocalFileAccess``, no Spark session) and read split by split as Spark's workers read it, equal to hudi-rs on
every shared fixture table (Hudi 0.14 to 1.1), latest and as of every commit; and Hudi's read options, each
refused by name where it would change the answer and is not implemented."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hudi_connect_stack.testing.compare import arrow_multiset
from hudi_connect_stack.testing.fixture_tables import fixture_names, unzip_fixture
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_connect.core.errors import (
    InvalidInstantError,
    InvalidOptionError,
    UnsupportedOperationError,
    UnsupportedTableFeatureError,
)
from hudi_connect.core.executor.cdc_events import change_events
from hudi_connect.core.executor.contracts import CDC_SPLITS, CdcSplitRow
from hudi_connect.core.executor.file_access import LocalFileAccess
from hudi_connect.core.executor.image_json import check_renderable
from hudi_connect.core.format.read_options import QueryType, ReadQuery, StreamQuery, read_query, stream_query
from hudi_connect.core.format.table_schema import META_COLUMNS
from hudi_connect.core.format.timeline import range_time
from hudi_connect.reader import TableReader
from integration.test_table_fixtures import rows_of_hudi_rs
from pyspark_hudi.changes import ChangeScan, file_group_splits
from pyspark_hudi.offsets import latest_commit_time
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
    assert read_query({"path": "/t", "hoodie.datasource.query.type": "incremental",
                       "hoodie.datasource.read.begin.instanttime": "earliest",
                       "hoodie.datasource.query.incremental.format": "CDC"}) == \
        ReadQuery("/t", QueryType.INCREMENTAL, begin="earliest", changes=True)
    for start in ("000", "0", " 00000000000000000 "):  # Hudi's own "from the start"
        assert read_query({"path": "/t", "hoodie.datasource.query.type": "incremental",
                           "hoodie.datasource.read.begin.instanttime": start}).begin == "earliest"


@pytest.mark.parametrize(("options", "error", "named"), [
    ({"path": "/t", "hoodie.datasource.read.paths": "/a,/b"}, UnsupportedOperationError,
     "hoodie.datasource.read.paths"),
    ({"path": "/t", "hoodie.datasource.query.type": "incremental", "hoodie.datasource.read.begin.instanttime": "0",
      "hoodie.datasource.query.incremental.format": "json"}, InvalidOptionError, "latest_state and cdc"),
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
    # a change stream as Hudi's streaming source takes it: an incremental query in the cdc format, no begin
    changes = {"path": "/t", "hoodie.datasource.query.type": "incremental",
               "hoodie.datasource.query.incremental.format": "cdc"}
    assert stream_query(changes) == StreamQuery("/t", "earliest", changes=True)
    with pytest.raises(InvalidOptionError, match=r"begin\.instanttime"):
        read_query(changes)  # a batch change query needs its range
    with pytest.raises(InvalidOptionError, match="a stream starts at"):
        stream_query({**changes, "hoodie.datasource.read.end.instanttime": "1"})
    assert stream_query({"path": "/t", "maxFilesPerTrigger": "3"}) == StreamQuery("/t", max_files=3)
    for bad in ("0", "-1", "two"):
        with pytest.raises(InvalidOptionError, match="maxfilespertrigger"):
            stream_query({"path": "/t", "maxFilesPerTrigger": bad})


def test_a_rate_limited_stream_takes_whole_commits_up_to_the_files_they_wrote(tmp_path: Path) -> None:
    """Under ``maxFilesPerTrigger`` a micro-batch ends at the last commit whose files, with those of the commits
    before it in the batch, fit the limit; a commit is never split, so a batch takes at least one."""
    base = str(unzip_fixture("cow_v9_txns_simple_meta", tmp_path))
    view = TableReader(LocalFileAccess(), base).view
    commits = sorted(c for c in view.timeline().write_commits() if c.is_completed)
    times = sorted(range_time(c, by_completion=True) for c in commits)
    files = {range_time(c, by_completion=True): len(m.write_stats) for c, m in view.commit_metadata(commits).items()}
    assert len(times) >= 3 and min(files.values()) >= 1
    assert latest_commit_time(base) == times[-1] == latest_commit_time(base, times[0], 10**6)
    assert latest_commit_time(base, max_files=1) == times[0]  # never less than one commit
    assert latest_commit_time(base, times[-1], 1) == times[-1]  # nothing after the last: the start stays
    for n, start in enumerate(times[:-1]):
        budget = files[times[n + 1]] + (files[times[n + 2]] if n + 2 < len(times) else 0)
        expected = times[n + 2] if n + 2 < len(times) else times[n + 1]
        assert latest_commit_time(base, start, budget) == expected


@settings(max_examples=200, deadline=None)
@given(groups=st.lists(st.integers(1, 6), max_size=30), tasks=st.integers(1, 8))
def test_a_change_querys_splits_keep_each_file_group_whole_and_in_commit_order(groups: list[int],
                                                                              tasks: int) -> None:
    rows = [_change_row(f"p{g % 3}", f"fg{g}", f"{commit:03d}") for g, size in enumerate(groups)
            for commit in range(size)]
    splits = file_group_splits(rows, tasks)
    assert len(splits) == min(tasks, len(groups))
    assert sorted(r for split in splits for r in split) == sorted(rows)  # every row once
    for split in splits:
        for group in {(r.partition, r.file_id) for r in split}:
            mine = [r for r in split if (r.partition, r.file_id) == group]
            assert mine == [r for r in rows if (r.partition, r.file_id) == group]  # whole, in commit order
    if splits:  # as even as whole groups allow: no split exceeds another by more than its smallest group...
        loads = sorted(len(split) for split in splits)
        assert loads[-1] - loads[0] <= max(groups)


def _change_row(partition: str, file_id: str, instant: str) -> CdcSplitRow:
    return CdcSplitRow(instant, instant, partition, file_id, None, [], [], False, f"{file_id}_{instant}.parquet",
                       [], [instant], True, False, False, [], None)


@pytest.mark.parametrize("name", fixture_names())
def test_the_data_sources_change_events_replay_to_hudi_rs_snapshots(tmp_path: Path, name: str) -> None:
    """The change scan planned without a session, its events computed split by split as Spark's workers compute
    them: replayed commit by commit (deletes first), they give hudi-rs's snapshot as of each commit; the same
    splits in Hudi's CDC schema hold as many events, every image JSON."""
    base = str(unzip_fixture(name, tmp_path))
    commits = list(TableReader(LocalFileAccess(), base).view.timeline().write_commits())
    query = ReadQuery(base, QueryType.INCREMENTAL, begin="earliest", changes=True)
    if not commits:
        with pytest.raises(InvalidInstantError, match="no commit with a schema"):
            scan_of(query)
        return
    scan = scan_of(query, splits=3)
    assert isinstance(scan, ChangeScan) and len(scan.splits) <= 3
    typed = [e for split in scan.splits for b in change_events(scan.config, [CDC_SPLITS.batch(split)])
             for e in b.to_pylist()]
    target = arrow_schema(scan.schema)
    hudi_rows = [r for split in scan.splits for b in read_split(scan, split, target) for r in b.to_pylist()]
    assert len(hudi_rows) == len(typed) > 0
    assert all(json.loads(r[side]) is not None for r in hudi_rows for side in ("before", "after") if r[side])
    by_completion = TableReader(LocalFileAccess(), base).properties.ranges_by_completion
    state: dict[str, dict[str, Any]] = {}
    columns = [f.name for f in scan.config.output_schema if f.name not in META_COLUMNS]
    for commit in commits:
        time = commit.completion_time if by_completion else commit.requested_time
        mine = sorted((e for e in typed if (e["completion_time"] if by_completion else e["ts_ms"]) == time),
                      key=lambda e: e["op"] != "d")
        for event in mine:
            if event["op"] == "d":
                state.pop(event["record_key"])
            else:
                state[event["record_key"]] = event["after"]
        replayed = pa.Table.from_pylist(list(state.values()), schema=scan.config.output_schema)
        assert arrow_multiset(replayed, columns) == rows_of_hudi_rs(Path(base), columns, commit.requested_time), \
            f"as of {commit.requested_time}"


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


def test_images_the_worker_cannot_render_are_refused_when_planned() -> None:
    """A change query whose images hold a type Spark's ``to_json`` spells by object identity (a map keyed by
    binary) is refused by name when it is planned, by the rule the worker renders with."""
    check_renderable(pa.schema([("id", pa.int64()), ("tags", pa.map_(pa.string(), pa.list_(pa.int32())))]))
    with pytest.raises(UnsupportedTableFeatureError, match="by object identity"):
        check_renderable(pa.schema([("id", pa.int64()), ("blobs", pa.map_(pa.binary(), pa.int32()))]))
