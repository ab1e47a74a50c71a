"""The executor-side slice reader, run locally without Spark: merging every fixture
table's file slices gives hudi-rs's snapshot, latest and as of every commit; a base
file reads as Arrow's plain read of it."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hudi import HudiReadOptions, HudiTableBuilder
from hudi_connect_stack.testing.compare import arrow_multiset
from hudi_connect_stack.testing.fixture_tables import LocalTableView, fixture_names, local_table_view, unzip_fixture
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_connect.core.executor.slices import SliceReadConfig, read_slice
from hudi_connect.core.format.fs_view import file_slices_at, replaced_file_groups, valid_block_instants
from hudi_connect.core.format.merge import KEY, ORD, SEQ, LogRecords, merge_slice
from hudi_connect.core.format.parquet_files import _dictionary_encoded_strings, plain_strings, read_parquet
from hudi_connect.core.format.table_schema import record_schema

MOR_AND_COW = [n for n in fixture_names() if n != "cow_v6_empty"]


def read_locally(base: Path, view: LocalTableView, as_of: str | None = None) -> pa.Table:
    commits = [i for i in view.timeline.write_commits() if as_of is None or i.requested_time <= as_of]
    writer_schema = view.metadata[commits[-1]].schema_json
    assert writer_schema
    schema = record_schema(writer_schema, meta_fields=view.properties.populate_meta_fields)
    config = SliceReadConfig(
        base_uri=str(base), output_schema=schema, record_key_fields=view.properties.record_key_fields,
        ordering_fields=view.properties.ordering_fields,
        event_time_ordering=view.properties.record_merge_mode != "COMMIT_TIME_ORDERING",
        valid_instants=valid_block_instants(view.timeline, as_of),
    )
    replaced = replaced_file_groups(view.metadata, as_of)
    slices = file_slices_at(view.files, view.timeline, table_version=view.properties.version,
                            replaced=replaced, as_of=as_of)
    tables = [read_slice(config, s.partition, s.base_file.name if s.base_file else None,
                         [f.name for f in s.log_files]) for s in slices]
    return pa.concat_tables(tables) if tables else schema.empty_table()


@pytest.mark.parametrize("name", MOR_AND_COW)
def test_local_merge_equals_hudi_rs(tmp_path: Path, name: str) -> None:
    base = unzip_fixture(name, tmp_path)
    view = local_table_view(base)
    rs_table = HudiTableBuilder.from_base_uri(str(base)).build()
    for as_of in [None, *(i.requested_time for i in view.timeline.write_commits())]:
        ours = read_locally(base, view, as_of)
        options = HudiReadOptions().with_as_of_timestamp(as_of) if as_of else HudiReadOptions()
        theirs = pa.Table.from_batches(rs_table.read(options))
        columns = [c for c in ours.column_names if c in theirs.column_names and c != "_hoodie_file_name"]
        assert arrow_multiset(ours, columns) == arrow_multiset(theirs, columns), f"as of {as_of}"


def _logs(rows: list[tuple[str, int | None, int, bool]]) -> LogRecords:
    """(key, ordering, seq, is_delete) in log order."""
    data = [r for r in rows if not r[3]]
    deletes = [r for r in rows if r[3]]
    return LogRecords(
        pa.table({"v": [f"{k}@{s}" for k, _, s, _ in data], KEY: [k for k, *_ in data],
                  ORD: pa.array([o for _, o, _, _ in data], pa.int64()), SEQ: [s for _, _, s, _ in data]}),
        pa.table({KEY: pa.array([k for k, *_ in deletes], pa.string()),
                  ORD: pa.array([o for _, o, _, _ in deletes], pa.int64()),
                  SEQ: pa.array([s for _, _, s, _ in deletes], pa.int64())}),
    )


def _base(rows: list[tuple[str, int]]) -> pa.Table:
    return pa.table({"v": [f"{k}@base" for k, _ in rows], KEY: [k for k, _ in rows],
                     ORD: pa.array([o for _, o in rows], pa.int64()), SEQ: [0] * len(rows)})


def test_event_time_ordering_rules() -> None:
    base = _base([("a", 5), ("b", 5), ("c", 5), ("d", 5), ("e", 5), ("g", 5), ("h", 1)])
    logs = _logs([
        ("a", 3, 1, False),     # older event: base wins
        ("b", 5, 2, False),     # tie: the later (log) wins
        ("c", None, 3, True),   # natural delete: gone
        # deleted, then re-inserted with a lower ordering value than the base record's: the late record
        # replaces the delete, then loses to the base record, which comes back (Hudi 1.2's finalMerge)
        ("d", None, 4, True), ("d", 1, 5, False),
        ("g", None, 9, True), ("g", 9, 10, True),  # an ordered delete after a natural one: still natural, gone
        ("h", None, 11, True), ("h", 2, 12, True), ("h", 3, 13, False),  # then a record: it meets the base
        ("e", 9, 6, True),      # delete with a greater ordering value: gone
        ("f", 1, 7, False), ("f", 0, 8, False),    # new key: greatest ordering wins
    ])
    merged = {r["v"].split("@")[0]: r["v"] for r in merge_slice(base, logs).to_pylist()}
    assert merged == {"a": "a@base", "b": "b@2", "d": "d@base", "f": "f@7", "h": "h@13"}


def test_a_key_the_base_file_holds_twice_meets_the_log_once() -> None:
    """An `insert` may write a key twice into one base file: Hudi's reader merges a key's log record into the
    first base row of it only (differential run, seed 2001: a delete left the second row in Hudi 1.2's read)."""
    base = _base([("k", 33), ("k", 34), ("m", 5)])
    base = base.set_column(0, "v", pa.array(["k@first", "k@second", "m@base"]))
    merged = sorted(r["v"] for r in merge_slice(base, _logs([("k", None, 1, True), ("m", 9, 2, False)])).to_pylist())
    assert merged == ["k@second", "m@2"]


def test_commit_time_ordering_takes_the_latest() -> None:
    base = _base([("a", 5)])
    merged = merge_slice(base, _logs([("a", 1, 1, False), ("b", 9, 2, False), ("b", 1, 3, False)]),
                         event_time_ordering=False)
    assert sorted(r["v"] for r in merged.to_pylist()) == ["a@1", "b@3"]


@pytest.mark.parametrize("kind", ["base file", "log file"])
def test_a_planned_file_gone_when_read_is_refused_by_name(tmp_path: Path, kind: str) -> None:
    """A file the plan named, removed before the worker reads it (the cleaner, a rollback), is never read as
    empty: ConcurrentTableChangeError names it and the instant the read was planned at, and reaches the client
    as that class from the worker's text."""
    import traceback

    from hudi_connect.client.worker_errors import worker_refusal
    from hudi_connect.core.errors import ConcurrentTableChangeError
    from hudi_connect.core.executor.contracts import SLICES, SliceRow
    from hudi_connect.core.executor.slices import read_file_slices

    base = unzip_fixture("mor_avro_v9_txns_simple_meta", tmp_path)
    view = local_table_view(base)
    latest = view.timeline.write_commits().last()
    assert latest is not None
    schema = record_schema(view.metadata[latest].schema_json or "", meta_fields=True)
    config = SliceReadConfig(base_uri=str(base), output_schema=schema,
                             record_key_fields=view.properties.record_key_fields,
                             ordering_fields=view.properties.ordering_fields,
                             event_time_ordering=True, valid_instants=valid_block_instants(view.timeline, None),
                             planned_at=latest.requested_time)
    slices = file_slices_at(view.files, view.timeline, table_version=view.properties.version)
    chosen = next(s for s in slices if s.base_file and s.log_files)
    assert chosen.base_file is not None
    gone = chosen.base_file.name if kind == "base file" else chosen.log_files[-1].name
    (base / chosen.partition / gone).unlink()
    rows = SLICES.batch([SliceRow(chosen.partition, chosen.file_id, chosen.base_file.name,
                                  [f.name for f in chosen.log_files])])
    with pytest.raises(ConcurrentTableChangeError) as refused:
        list(read_file_slices(config, [rows]))
    assert refused.value.path.endswith(f"{chosen.partition}/{gone}")
    assert refused.value.planned_at == latest.requested_time
    assert f"planned at instant {latest.requested_time}" in str(refused.value)
    printed = "".join(traceback.format_exception(refused.value))  # as the worker prints it for the client
    arrived = worker_refusal(RuntimeError(printed))
    assert isinstance(arrived, ConcurrentTableChangeError) and gone in str(arrived)


_TEXTS = st.one_of(st.none(), st.sampled_from(["", "a", "20261130151843123", "x" * 70]), st.text(max_size=8))


@settings(max_examples=150, deadline=None, database=None)
@given(data=st.data(), rows=st.integers(0, 300), dictionary=st.sampled_from([True, False, ["few"], ["many"]]),
       version=st.sampled_from(["1.0", "2.6"]), page_version=st.sampled_from(["1.0", "2.0"]),
       row_group=st.integers(1, 200), dictionary_limit=st.sampled_from([64, 1 << 20]))
def test_a_base_file_reads_as_arrows_plain_read(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject,
                                                rows: int, dictionary: bool | list[str], version: str,
                                                page_version: str, row_group: int, dictionary_limit: int) -> None:
    """``read_parquet`` (string columns written with a dictionary throughout read as dictionaries, then
    expanded) equals Arrow's plain read of the file, types and values: few and many distinct strings, nulls,
    several row groups, dictionaries that overflow to plain pages (a small dictionary page limit), the
    encodings' names of Parquet 1 (as Hudi's writer names them) and 2, pages of both versions. Read with its
    string columns kept as dictionaries (as a merge reads them), the same once expanded."""
    few = data.draw(st.lists(_TEXTS, min_size=rows, max_size=rows))
    table = pa.table({
        "few": pa.array([few[i % 3] if few else None for i in range(rows)], pa.string()),
        "many": pa.array(few, pa.string()),
        "large": pa.array(few, pa.large_string()),
        "n": pa.array(range(rows), pa.int64()),
    })
    path = tmp_path_factory.mktemp("parquet") / "base.parquet"
    pq.write_table(table, path, use_dictionary=dictionary, version=version, data_page_version=page_version,
                   row_group_size=row_group, dictionary_pagesize_limit=dictionary_limit)
    expected = pq.ParquetFile(path).read(use_threads=False)
    if rows and version == "1.0" and dictionary in (True, ["few"]) and dictionary_limit > 64:
        assert "few" in _dictionary_encoded_strings(pq.ParquetFile(path))  # the path under test is taken
    read = read_parquet(pa.OSFile(str(path)))
    assert read.schema == expected.schema and read.equals(expected)
    kept = read_parquet(pa.OSFile(str(path)), dictionaries=["few", "many", "large"])
    if "few" in _dictionary_encoded_strings(pq.ParquetFile(path)):
        assert pa.types.is_dictionary(kept.schema.field("few").type)
    expanded = plain_strings(kept, expected.schema)
    assert expanded.schema == expected.schema and expanded.equals(expected)
