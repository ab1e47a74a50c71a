"""A split's change events against a plain-Python model of its file group: rows a commit removed meet rows it
wrote, key by key, even where the group holds a key twice (an ``insert`` looks no key up)."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_connect.core.errors import UnsupportedTableFeatureError
from hudi_connect.core.executor.cdc_events import split_events
from hudi_connect.core.executor.slices import SliceReadConfig
from hudi_connect.core.format.fs_view import BlockValidity

INSTANT = "20240101000000000"
SCHEMA = pa.schema([("_hoodie_commit_time", pa.string()), ("_hoodie_commit_seqno", pa.string()),
                    ("_hoodie_record_key", pa.string()), ("id", pa.int64()), ("v", pa.string())])
DATA_ONLY = pa.schema([("id", pa.int64()), ("v", pa.string())])
Row = tuple[str, str, int, str]  # commit time, seqno, key, value


class _States:
    """The split's two file-group states, as a worker's reader would have merged them."""

    def __init__(self, before: pa.Table, after: pa.Table) -> None:
        self.sides = {"before": before, "after": after}

    def state(self, config: SliceReadConfig, row: dict[str, Any], side: str) -> pa.Table:
        return self.sides[side]


def _config(schema: pa.Schema) -> SliceReadConfig:
    return SliceReadConfig(base_uri="file:///t", output_schema=schema, record_key_fields=("id",), ordering_fields=(),
                           event_time_ordering=False, valid_instants=BlockValidity(frozenset()))


def _table(rows: list[Row], schema: pa.Schema = SCHEMA) -> pa.Table:
    columns = {"_hoodie_commit_time": [r[0] for r in rows], "_hoodie_commit_seqno": [r[1] for r in rows],
               "_hoodie_record_key": [str(r[2]) for r in rows], "id": [r[2] for r in rows], "v": [r[3] for r in rows]}
    return pa.table({name: columns[name] for name in schema.names}, schema=schema)


def _events(before: list[Row], after: list[Row], schema: pa.Schema = SCHEMA) -> Counter[tuple[Any, ...]]:
    split = {"cdc_files": [], "instant": INSTANT, "completion_time": INSTANT, "file_id": "g", "partition": "",
             "before_without_meta": False, "after_without_meta": False}
    batch = split_events(_config(schema), split, _States(_table(before, schema), _table(after, schema)))  # type: ignore[arg-type]

    def value(image: dict[str, Any] | None) -> str | None:
        return None if image is None else image["v"]
    return Counter((r["op"], r["record_key"], value(r["before"]), value(r["after"])) for r in batch.to_pylist())


def _model(before: list[Row], after: list[Row]) -> Counter[tuple[Any, ...]]:
    """The rule in plain Python: a row gone from the group was removed, a row of this commit was written; per key,
    the n-th removed row (by sequence number) pairs with the n-th written one."""
    kept = {r[1] for r in after}
    removed = sorted((r for r in before if r[1] not in kept), key=lambda r: r[1])
    written = sorted((r for r in after if r[0] == INSTANT), key=lambda r: r[1])
    events: Counter[tuple[Any, ...]] = Counter()
    for key in {r[2] for r in removed} | {r[2] for r in written}:
        olds = [r[3] for r in removed if r[2] == key]
        news = [r[3] for r in written if r[2] == key]
        for old, new in itertools.zip_longest(olds, news):
            events["u" if old and new else "d" if old else "i", str(key), old, new] += 1
    return events


@st.composite
def _commits(draw: st.DrawFn) -> tuple[list[Row], list[Row]]:
    """A file group's rows (keys may repeat) and the commit's outcome: each row kept, removed or rewritten, and
    new rows of old or new keys."""
    keys = draw(st.lists(st.integers(0, 4), max_size=8))
    before = [("20230101000000000", f"s{n:02}", key, f"old{n}") for n, key in enumerate(keys)]
    after: list[Row] = []
    fresh = iter(range(100))
    for row in before:
        fate = draw(st.sampled_from(["keep", "remove", "rewrite"]))
        if fate == "keep":
            after.append(row)
        elif fate == "rewrite":
            n = next(fresh)
            after.append((INSTANT, f"t{n:02}", row[2], f"new{n}"))
    for key in draw(st.lists(st.integers(0, 6), max_size=4)):
        n = next(fresh)
        after.append((INSTANT, f"t{n:02}", key, f"new{n}"))
    return before, draw(st.permutations(after))


@settings(max_examples=300, deadline=None)
@given(_commits())
def test_a_splits_events_pair_the_rows_a_commit_removed_and_wrote_as_the_model(commit: tuple[list[Row],
                                                                                             list[Row]]) -> None:
    before, after = commit
    assert _events(before, after) == _model(before, after)


def test_a_delete_of_one_of_two_rows_of_a_key_is_a_delete_of_that_row() -> None:
    """The 1.2 run's seed 8112: a bucket held key 6 twice; a delete removed the first row only (Hudi's reader meets
    the delete on the first row), and the change is that row's delete, not nothing."""
    first, second = ("20230101000000000", "s1", 6, "first"), ("20230102000000000", "s2", 6, "second")
    assert _events([first, second], [second]) == Counter({("d", "6", "first", None): 1})


def test_without_meta_fields_a_key_held_twice_is_refused_by_name() -> None:
    rows = [("", "", 6, "first"), ("", "", 6, "second")]
    with pytest.raises(UnsupportedTableFeatureError, match="holds twice"):
        _events(rows, rows[1:], DATA_ONLY)
    assert _events(rows[:1], [("", "", 6, "changed")], DATA_ONLY) == Counter({("u", "6", "first", "changed"): 1})
