"""The file-system view agrees with hudi-rs's file slices on every fixture table."""

from __future__ import annotations

import itertools
from pathlib import Path

import pyarrow as pa
import pytest
from hudi import HudiTableBuilder
from hudi_connect_stack.testing.fixture_tables import fixture_names, local_table_view, unzip_fixture
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_connect.core.executor.contracts import GROUPED_FILES, SLICES
from hudi_connect.core.executor.slicing import ListingSlicing, file_groups_of_listing, slices_of_listing
from hudi_connect.core.format.fs_view import (
    BaseFile,
    LogFile,
    SliceChoice,
    StoredFile,
    file_slices_at,
    parse_data_file,
    recorded_rows,
)
from hudi_connect.core.format.timeline import Timeline, parse_instant_file_name
from hudi_connect.table_spec.file_index import _listed_partitions


def test_file_names_parse() -> None:
    base = parse_data_file(StoredFile("p", "c1690aed-ab5b-4e4a-aa70-d8de21cdf5df-0_0-70-148_20260307135840975.parquet"))
    assert base == BaseFile("p", "c1690aed-ab5b-4e4a-aa70-d8de21cdf5df-0", "20260307135840975",
                            "c1690aed-ab5b-4e4a-aa70-d8de21cdf5df-0_0-70-148_20260307135840975.parquet")
    log = parse_data_file(StoredFile("p", ".9c6ed25b-6c9d-4793-ad27-1c8518086b6a-0_20260307135835748.log.1_0-38-83"))
    assert isinstance(log, LogFile)
    assert (log.file_id, log.instant_time, log.version, log.write_token) == (
        "9c6ed25b-6c9d-4793-ad27-1c8518086b6a-0", "20260307135835748", 1, "0-38-83")
    cdc = parse_data_file(StoredFile("p", ".f1-0_20250101000000000.log.2_1-2-3.cdc"))
    assert isinstance(cdc, LogFile) and cdc.is_cdc
    for other in (".hoodie_partition_metadata", "x.parquet.crc", "._SUCCESS"):
        assert parse_data_file(StoredFile("p", other)) is None


@pytest.mark.parametrize("name", fixture_names())
def test_latest_file_slices_equal_hudi_rs(tmp_path: Path, name: str) -> None:
    base = unzip_fixture(name, tmp_path)
    view = local_table_view(base)
    props, timeline, files, replaced = view.properties, view.timeline, view.files, view.replaced
    ours = {
        (s.partition, s.file_id, s.base_file.name if s.base_file else "", tuple(sorted(f.name for f in s.log_files)))
        for s in file_slices_at(files, timeline, table_version=props.version, replaced=replaced)
    }
    rs_table = HudiTableBuilder.from_base_uri(str(base)).build()
    theirs = {
        (s.partition_path, s.file_id, s.base_file_name or "", tuple(sorted(s.log_file_names)))
        for s in rs_table.get_file_slices()
    }
    assert ours == theirs


# a data instant (seconds or milliseconds), then the suffixes a version-6 metadata table adds for its own actions
_DATA_INSTANTS = st.one_of(st.integers(20200101000000, 20991231235959), st.integers(20200101000000000,
                                                                                   20991231235959999)).map(str)
_SUFFIX_STACKS = st.lists(st.sampled_from(["001", "002", "003", "004", "010", "011", "012"]), max_size=3)


@given(data_instant=_DATA_INSTANTS, suffixes=_SUFFIX_STACKS)
def test_a_version_6_metadata_tables_own_instants_stack_their_suffixes(data_instant: str, suffixes: list[str]) -> None:
    # Hudi 0.x names a version-6 metadata table's own instants after a data instant plus a three-digit suffix
    # (compaction 001, clean 002, a partition's initialization 010, ...), and they stack: a compaction right after
    # a partition was initialized has 23 digits. Missing such a compaction left an older slice of the files
    # partition, so a read listed none of the files written since (the differential run's seed 455009);
    # missing the 20-digit ones once left only the table's first, empty slice
    compaction = data_instant + "".join(suffixes) + "001"
    parsed = parse_instant_file_name(f"{compaction}.commit")
    assert parsed is not None and parsed.requested_time == compaction
    timeline = Timeline.from_files([parsed, parse_instant_file_name("00000000000000010.deltacommit")])
    log = f".files-0000-0_{compaction}.log.1_2-1434-6371"
    stored = [StoredFile("files", "files-0000-0_0-1243-4833_00000000000000010.hfile", 1),
              StoredFile("files", f"files-0000-0_0-1405-5963_{compaction}.hfile", 1), StoredFile("files", log, 1)]
    [latest] = file_slices_at(stored, timeline, table_version=6)
    assert latest.base_file is not None and latest.base_file.instant_time == compaction
    assert [f.name for f in latest.log_files] == [log]


def test_log_files_named_before_an_upgrade_from_version_6_stay_in_their_slice() -> None:
    # Hudi 1.x upgrades a version-6 table to 9 in place; its older log files keep version 6's names (the slice's
    # base instant, here archived since): their blocks are the slice's, not an already-compacted deltacommit's
    base = "fg-0_0-1-1_20260101000000000.parquet"
    log = ".fg-0_20260101000000000.log.1_0-2-2"
    timeline = Timeline.from_files([parse_instant_file_name("20260102000000000_20260102000000500.commit")])
    [latest] = file_slices_at([StoredFile("", base, 1), StoredFile("", log, 1)], timeline, table_version=9,
                              as_of="20260101000000500")
    assert latest.base_file is not None and [f.name for f in latest.log_files] == [log]


@pytest.mark.parametrize("name", fixture_names())
def test_slices_made_on_the_executors_equal_the_clients(tmp_path: Path, name: str) -> None:
    """The workers that make a large read's slices (files tagged with their group, shuffled by group, sliced
    batch by batch) give the slices the client makes of the whole listing, at every instant, with statistics
    pruning, for incremental and read-optimized reads."""
    base = unzip_fixture(name, tmp_path)
    view = local_table_view(base)
    version, timeline = view.properties.version, view.timeline
    files = sorted(view.files, key=lambda f: (f.partition, f.name))
    excluded = {f.name for f in files[::3]}
    listing = pa.Table.from_pylist([{"partition": f.partition, "name": f.name, "size": f.size, "source": "storage",
                                     "may_match": f.name not in excluded} for f in files])
    grouped = pa.Table.from_batches(list(file_groups_of_listing(listing.to_batches(max_chunksize=5))),
                                    GROUPED_FILES.schema)
    by_group = grouped.sort_by([("partition", "ascending"), ("file_id", "ascending")])

    def executors(slicing: ListingSlicing, chunk: int) -> set[tuple[object, ...]]:
        rows = [row for batch in slices_of_listing(slicing, by_group.to_batches(max_chunksize=chunk))
                for row in SLICES.rows(batch)]
        return {(r.partition, r.file_id, r.base_file, tuple(r.log_files)) for r in rows}

    def client(choice: SliceChoice, touched: frozenset[tuple[str, str]] | None = None,
               base_only: bool = False) -> set[tuple[object, ...]]:
        kept, _ = choice.slices(files, excluded)
        return {(s.partition, s.file_id, s.base_file.name if s.base_file else None,
                 () if base_only else tuple(f.name for f in s.log_files))
                for s in kept if (touched is None or (s.partition, s.file_id) in touched)
                and (s.base_file or not base_only)}

    for as_of in [None, *(i.requested_time for i in timeline.write_commits())]:
        choice = SliceChoice(timeline, version, view.replaced, as_of, keep_logged=True)
        expected = client(choice)
        assert expected or as_of is not None or not files
        for chunk in (1, 2, 7, 1000):  # a file group's files split across batches, or all in one
            assert executors(ListingSlicing(choice), chunk) == expected, (as_of, chunk)
        touched = frozenset(list({(p, f) for p, f, _, _ in expected})[:2])
        assert executors(ListingSlicing(choice, touched), 3) == client(choice, touched)
        assert executors(ListingSlicing(choice, base_only=True), 3) == client(choice, base_only=True)


@pytest.mark.parametrize("name", fixture_names())
def test_rows_recorded_by_the_write_stats_equal_hudi_rs_snapshot_count(tmp_path: Path, name: str) -> None:
    # a reverse stream's full export takes its count from them rather than from a count job beside its write
    base = unzip_fixture(name, tmp_path)
    view = local_table_view(base)
    slices = file_slices_at(view.files, view.timeline, table_version=view.properties.version, replaced=view.replaced)
    recorded = recorded_rows(slices, view.metadata)
    if any(s.log_files for s in slices):
        assert recorded is None  # merging decides a slice with log files
        return
    rs_table = HudiTableBuilder.from_base_uri(str(base)).build()
    assert recorded == sum(batch.num_rows for batch in rs_table.read())
    # a base file no write stat names (its commit archived, say) leaves the count unknown
    oldest = min((s for s in slices if s.base_file), key=lambda s: s.base_instant or "", default=None)
    if oldest is not None:
        kept = {i: m for i, m in view.metadata.items() if i.requested_time != oldest.base_instant}
        assert recorded_rows(slices, kept) is None


# --- the client's listing, partition by partition ---------------------------------------------------------------

_LISTING_ROWS = st.lists(st.tuples(st.sampled_from(["", "a=1", "a=2", "b=x/c=3"]), st.booleans()), max_size=40)


@settings(max_examples=200, deadline=None)
@given(rows=_LISTING_ROWS, cuts=st.lists(st.integers(0, 40), max_size=4),
       source=st.sampled_from(["metadata", "storage"]))
def test_a_streamed_listing_groups_into_the_partitions_a_plain_grouping_makes(
        rows: list[tuple[str, bool]], cuts: list[int], source: str) -> None:
    """However the server cuts the sorted listing into Arrow tables and batches, the client's grouping (runs of
    the partition column, names and sizes as lists, excluded names from may_match) equals a plain groupby."""
    listed = sorted((partition, f"f{n}.parquet", n, may_match) for n, (partition, may_match) in enumerate(rows))
    table = pa.table({"partition": [r[0] for r in listed], "name": [r[1] for r in listed],
                      "size": [r[2] for r in listed], "source": [source] * len(listed),
                      "may_match": [r[3] for r in listed]})
    bounds = sorted({0, len(listed), *(c for c in cuts if c <= len(listed))})
    tables = [table.slice(a, b - a) for a, b in itertools.pairwise(bounds)]
    tables = [pa.concat_tables([t.slice(0, len(t) // 2), t.slice(len(t) // 2)]) for t in tables]  # two chunks each
    expected = [(partition, [r[1] for r in group], [r[2] for r in group], {r[1] for r in group if not r[3]})
                for partition, group in ((p, list(g)) for p, g in itertools.groupby(listed, key=lambda r: r[0]))]
    found = [(p.partition, p.names, p.sizes, p.excluded, p.source) for p in _listed_partitions(tables)]
    assert [f[:4] for f in found] == expected
    assert {f[4] for f in found} <= {source}
