"""The conformance matrix: every cell (a table Hudi writes, :mod:`integration.conformance_matrix`) ends
*equal* (our jar-free reads on the plain server equal Hudi's own reads on the Hudi server) or *refused by
name* (every entry point raises ``UnsupportedTableFeatureError``). There is no third outcome.

Compared per cell: the snapshot, time travel to every commit (archived ones too), incremental reads over
three ranges and, on CDC-enabled tables, the change stream (op, commit time, and each image's plain columns:
Hudi renders decimals, dates and binary in its CDC JSON differently from case to case, see the README). On
cells with aggressive archival the ranges reach archived history: incremental reads answer as Hudi's full-scan
fallback does, and change queries into it are refused by name exactly where Hudi's own CDC query fails. CI runs a
slice of the cells (``ci_slice``); ``ci/test.sh --full`` runs them all.

Set ``HUDI_CONNECT_CONFORMANCE_REPORT=FILE`` to have the outcome of each cell written there as Markdown.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hudi import HudiTableBuilder
from hudi_connect_stack.testing.compare import arrow_multiset, row_multiset
from pyspark.errors.exceptions.connect import SparkConnectGrpcException
from pyspark.sql import DataFrame, SparkSession

from hudi_connect.cdc import ChangeQuery
from hudi_connect.core.errors import HistoryUnavailableError, UnsupportedTableFeatureError
from hudi_connect.core.format.table_features import partial_updates, unsupported_features
from hudi_connect.core.format.timeline import Timeline
from hudi_connect.reader import TableReader
from hudi_connect.table.hudi_table import HudiTable
from hudi_connect.table_spec import FileIndex
from integration.conformance_matrix import (
    DIMENSIONS,
    FEATURE_DIMENSIONS,
    Cell,
    cells,
    ci_slice,
    feature_cells,
    write_history,
)

ALL_CELLS = cells() + feature_cells()
# the pairwise cells' slice, and one cell of the features' own (log compaction on a version-9 MOR table)
CI_CELLS = {*ci_slice(cells()), feature_cells()[2]}
IGNORED = {"_hoodie_file_name", "_hoodie_commit_seqno"}  # where a reader found a record, not what it is
PLAIN_IMAGE_COLUMNS = ("id", "k2", "part", "ts", "name", "extra")


def multiset(df: DataFrame, columns: list[str]) -> Counter[tuple[Any, ...]]:
    return row_multiset((r.asDict(recursive=True) for r in df.select(*columns).collect()), columns)


def change_events(df: DataFrame) -> Counter[tuple[Any, ...]]:
    def image(text: str | None) -> Any:
        loaded = json.loads(text) if text is not None else None
        # a field Hudi leaves out of an image (a null, or a column added later) counts as null
        return None if loaded is None else tuple((c, loaded.get(c)) for c in PLAIN_IMAGE_COLUMNS)
    return Counter((r.op, r.ts_ms, image(r.before), image(r.after)) for r in df.collect())


@pytest.fixture(scope="module")
def outcomes() -> Iterator[dict[Cell, str]]:
    found: dict[Cell, str] = {}
    yield found
    target = os.environ.get("HUDI_CONNECT_CONFORMANCE_REPORT")
    if target and found:
        Path(target).write_text(report(found))


def report(found: dict[Cell, str]) -> str:
    """Markdown: per dimension value, how its cells ended; then every cell."""
    lines = ["| feature | value | cells | outcome |", "|---|---|---|---|"]
    for name, values in (DIMENSIONS | FEATURE_DIMENSIONS).items():
        for value in values:
            ends = Counter(outcome for cell, outcome in found.items() if getattr(cell, name) == value)
            if ends:
                summary = "; ".join(f"{outcome} ({n})" if len(ends) > 1 else outcome for outcome, n in ends.items())
                lines.append(f"| {name} | {value} | {sum(ends.values())} | {summary} |")
    lines += ["", "| " + " | ".join(asdict(next(iter(found)))) + " | outcome |",
              "|" + "---|" * (len(asdict(next(iter(found)))) + 1)]
    lines += [f"| {' | '.join(str(v) for v in asdict(cell).values())} | {outcome} |" for cell, outcome in found.items()]
    return "\n".join(lines) + "\n"


def assert_refused_everywhere(plain_spark: SparkSession, path: str, feature: str) -> None:
    attempts = {
        "snapshot": lambda: TableReader(plain_spark, path).snapshot().collect(),
        "incremental": lambda: TableReader(plain_spark, path).incremental("earliest").collect(),
        "changes": lambda: ChangeQuery(plain_spark, path).changes("earliest").collect(),
        "file_index": lambda: list(FileIndex(plain_spark, path).list_files_at()),
    }
    for name, attempt in attempts.items():
        with pytest.raises(UnsupportedTableFeatureError) as caught:
            attempt()
        assert caught.value.feature == feature, name


def assert_equal_reads(plain_spark: SparkSession, table: HudiTable, cell: Cell,
                       torn_in_hudi: Collection[str] = ()) -> str:
    """Asserts our reads equal Hudi's, or that we refuse by name (``HistoryUnavailableError``) where Hudi's own
    query fails (a range into archived history); returns the cell's outcome. ``torn_in_hudi``: instants whose
    time travel in Hudi shows only part of the commit; the caller checks ours there against a model."""
    path = table.base_path
    reader = TableReader(plain_spark, path)
    timeline = reader.view.timeline()
    archived = reader.view.archived_timeline(timeline).write_commits()
    assert bool(archived) == (cell.archival == "aggressive"), f"archived commits: {archived}"
    commits = [*archived, *timeline.write_commits()]
    refused: list[str] = []

    def compare(ours: DataFrame, theirs: DataFrame, what: str, unmatched: frozenset[str] = frozenset()) -> None:
        assert set(ours.columns) - IGNORED == set(theirs.columns) - IGNORED, what
        columns = sorted(set(ours.columns) - IGNORED - unmatched)
        # (a timestamp key generator's partition column too: a string of the stored value in both)
        types = {f.name: f.dataType.simpleString() for f in theirs.schema.fields if f.name in columns}
        assert {f.name: f.dataType.simpleString() for f in ours.schema.fields if f.name in types} == types, what
        mine, hudis = multiset(ours, columns), multiset(theirs, columns)
        assert mine == hudis, f"{what}\nours only: {mine - hudis}\nHudi only: {hudis - mine}"

    compare(reader.snapshot(), table.hudi.snapshot(with_meta_columns=True), "snapshot")
    for commit in commits:
        # Hudi finds no InternalSchema for an archived instant (it looks in the active timeline only), so it reads
        # a renamed column of older files as null; ours maps it by id, as it does for active instants
        unmatched = frozenset({"title"}) if cell.schema_change == "schema_on_read" and commit in archived \
            else frozenset()
        if commit.requested_time in torn_in_hudi:
            continue
        compare(reader.as_of(commit), table.hudi.as_of(commit, with_meta_columns=True), f"as of {commit}", unmatched)
        if unmatched:
            renamed_values = {r.title for r in reader.as_of(commit).collect()} - {None}
            assert renamed_values, f"as of {commit}: the renamed column has no values"
    history = reader.view.archived_timeline(timeline)
    by_completion = table.properties.version >= 8
    # SQL's partial SETs leave partial-update log blocks on MOR tables of version 8+
    partial_sets = cell.writer == "sql" and cell.is_mor and cell.version != "6"
    for begin, end in (("earliest", commits[1]), (commits[1], None), (commits[0], commits[3])):
        what = f"incremental ({begin}, {end}]"
        selected = [c.requested_time for c in Timeline(tuple(commits)).commits_between(
            begin, end, by_completion=by_completion)]
        if history.commits_between(begin, end):
            # a range reaching archived commits: Hudi's full-scan fallback, whose rule is the latest snapshot's
            # records written by the range's commits. (Hudi's own fallback pushes that filter into Parquet log
            # blocks too and returns the older record where a later commit updated one; over partial-update
            # blocks it took the server down.)
            state = table.hudi.snapshot(with_meta_columns=True)
        elif partial_sets:  # Hudi's incremental query fails there: its time travel to the range's end instead
            state = table.hudi.as_of(max(selected), with_meta_columns=True)
        else:
            try:
                compare(reader.incremental(begin, end), table.hudi.incremental(begin, end, with_meta_columns=True),
                        what)
                continue
            except AssertionError:  # Hudi's merges the range's log blocks alone (docs): its time travel decides
                state = table.hudi.as_of(max(selected), with_meta_columns=True)
        compare(reader.incremental(begin, end), state.where(state["_hoodie_commit_time"].isin(selected)), what)
    outcome = "equal"
    if cell.schema_change == "schema_on_read" and archived:
        outcome += "; as of archived commits Hudi reads the renamed column as null (compared without it)"
    if cell.cdc == "off":
        pass
    elif partial_updates(table.properties)[0]:
        with pytest.raises(UnsupportedTableFeatureError, match="partial updates"):
            ChangeQuery(plain_spark, path)
        outcome += "; change queries refused (partial updates)"
    elif cell.schema_change == "schema_on_read":
        begin = archived[-1] if archived else "earliest"  # (before it, the archived range is refused first)
        with pytest.raises(UnsupportedTableFeatureError, match="schema-on-read evolution in change queries"):
            ChangeQuery(plain_spark, path).changes(begin).collect()
        outcome += "; change queries refused (schema on read)"
    else:
        query = ChangeQuery(plain_spark, path)
        ranges = [("earliest", None), (commits[1], commits[3])]
        if archived:  # and one from the last archived commit, which reads it as the first active's predecessor
            ranges.append((archived[-1], None))
        for begin, end in ranges:
            try:
                ours = change_events(query.changes(begin, end))
            except HistoryUnavailableError as refusal:  # only where Hudi's own query fails as well
                with pytest.raises(SparkConnectGrpcException, match="Fail to get the commit metadata for CDC"):
                    table.hudi.cdc(begin, end).collect()
                refused.append(f"changes ({begin}, {end}]: {refusal}")
                continue
            try:
                theirs = change_events(table.hudi.cdc(begin, end))
            except SparkConnectGrpcException as error:  # no oracle: ours must still answer
                assert sum(ours.values()) > 0
                outcome += f"; Hudi's own CDC query fails on this table ({str(error).splitlines()[0][:80]})"
                break
            assert ours == theirs, f"changes ({begin}, {end}]\nours only: {ours - theirs}\nHudi only: {theirs - ours}"
    if refused:
        outcome += f"; {len(refused)} change queries into archived history refused, as Hudi's fail"
    return outcome


def assert_features_written(plain_spark: SparkSession, table: HudiTable, cell: Cell) -> None:
    """The cell's features are in the table Hudi wrote, not only in its options: a log compaction completed, the
    bootstrap's instant and index are there, the tie on ``ts`` went to the higher score (in ours as in Hudi's)."""
    instants = {f.name for f in Path(table.base_path, ".hoodie").rglob("*") if f.is_file()}
    if cell.log_compaction == "on":
        assert any(".logcompaction." in name for name in instants), sorted(instants)
    if cell.bootstrap != "none":
        instant = "00000000000001" if cell.bootstrap == "metadata_only" else "00000000000002"
        assert any(name.startswith(instant) for name in instants), sorted(instants)
        assert table.properties.raw.get("hoodie.bootstrap.base.path")
    if cell.ordering != "ts":
        names = {r.id: r.name for r in TableReader(plain_spark, table.base_path).snapshot().where("id in (18, 19)")
                 .collect()}
        assert names == {18: "tie18", 19: "n19"}, names


@pytest.mark.parametrize("cell", [
    pytest.param(c, id=c.id, marks=() if c in CI_CELLS else (pytest.mark.full,)) for c in ALL_CELLS
])
def test_cell_reads_equal_hudis_or_is_refused_by_name(
    spark: SparkSession, plain_spark: SparkSession, tmp_path: Path, cell: Cell, outcomes: dict[Cell, str]
) -> None:
    path = str(tmp_path / "table")
    write_history(spark, cell, path)
    table = HudiTable.open(spark, path)
    assert_features_written(plain_spark, table, cell)
    refused = unsupported_features(table.properties)
    if refused:
        assert_refused_everywhere(plain_spark, path, refused[0].feature)
        outcomes[cell] = f"refused: {refused[0].feature} (`{refused[0].property}={refused[0].value}`)"
        return
    outcomes[cell] = assert_equal_reads(plain_spark, table, cell)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_timestamp_key_generator_tables_read_equal_hudi_rs(
    spark: SparkSession, plain_spark: SparkSession, tmp_path: Path, table_type: str
) -> None:
    # partition paths like 2024/01/02 made from an epoch-millis column: the second, independent oracle
    cell = Cell(table_type, "9", "timestamp", "avro", "event_time", "BLOOM", "off", "off", "none")
    path = str(tmp_path / "table")
    write_history(spark, cell, path, drop_columns=("tn",))  # hudi-rs cannot read timestamp_ntz yet (it panics)
    ours = TableReader(plain_spark, path).snapshot()
    theirs = pa.Table.from_batches(HudiTableBuilder.from_base_uri(path).build().read())
    columns = sorted(c for c in ours.columns if c in theirs.column_names and c not in IGNORED)
    assert "event_ms" in columns
    # hudi-rs keeps the files' long; ours is Hudi's Spark reader's string of it (issue #57): the same values
    at = theirs.schema.get_field_index("event_ms")
    theirs = theirs.set_column(at, "event_ms", theirs["event_ms"].cast(pa.string()))
    assert multiset(ours, columns) == arrow_multiset(theirs, columns)
    assert {r.event_ms for r in ours.select("event_ms").collect()} == {"1704067200000", "1704153600000",
                                                                       "1704240000000"}
