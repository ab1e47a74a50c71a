"""The rows passed between the client's plans and the workers, each defined once (issue #34).

A contract is a NamedTuple (what one row holds, by name) and the Arrow schema of its columns; the Spark schema
a plan declares for ``mapInArrow`` is derived from that schema on the client
(:func:`hudi_connect.client.task_rows.spark_schema`), so the client and the workers cannot disagree on a
column's name, order or type. The client builds rows with the NamedTuple and declares ``contract.schema``; a
worker reads ``contract.rows(batch)`` and writes ``contract.batch(rows)``.

Example::

    rows = [SliceRow("2024/01/01", "f1-0", "f1-0_0-1-1_001.parquet", [])]
    batch = SLICES.batch(rows)              # what a task receives
    assert list(SLICES.rows(batch)) == rows
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

import pyarrow as pa

R = TypeVar("R", bound=tuple[Any, ...])

def rows_batch(rows: Iterable[tuple[object, ...]], schema: pa.Schema) -> pa.RecordBatch:
    """Tuples of ``schema``'s fields, in its order, as one Arrow batch of it."""
    columns = list(zip(*rows, strict=True)) or [() for _ in schema]
    return pa.RecordBatch.from_arrays([pa.array(list(values), f.type) for values, f in
                                       zip(columns, schema, strict=True)], schema=schema)


@dataclass(frozen=True)
class RowContract(Generic[R]):
    """One kind of row crossing the client-worker boundary: its NamedTuple and its Arrow schema."""

    row: type[R]
    schema: pa.Schema

    def __post_init__(self) -> None:
        fields = getattr(self.row, "_fields", ())
        if tuple(fields) != tuple(self.schema.names):
            raise TypeError(f"{self.row.__name__}'s fields {fields} are not the schema's {self.schema.names}")

    def batch(self, rows: Iterable[R]) -> pa.RecordBatch:
        """``rows`` as one Arrow batch of the schema."""
        return rows_batch(rows, self.schema)

    def rows(self, batch: pa.RecordBatch) -> Iterator[R]:
        """The rows of a batch of the schema (its columns by name, so a batch with more columns reads too)."""
        columns = [batch.column(name).to_pylist() for name in self.schema.names]
        return (self.row(*values) for values in zip(*columns, strict=True))


class SliceRow(NamedTuple):
    """A file slice to read: its partition, file group, base file name (None: logs only) and log file names."""

    partition: str
    file_id: str
    base_file: str | None
    log_files: list[str]


class ListedFile(NamedTuple):
    """A data file found by a listing (storage or the metadata table's ``files`` partition)."""

    partition: str
    name: str
    size: int


class ListingPart(NamedTuple):
    """A fanned-out storage listing's first step, from the table's top level: a data file found there
    (``subtree`` None), or a top-level directory (``subtree``; the rest None) that a later task lists."""

    partition: str | None
    name: str | None
    size: int | None
    subtree: str | None


class GroupedFile(NamedTuple):
    """A listed data file with its file group, on its way to the executor that makes that group's slice
    (``may_match``: False where its column statistics exclude the read's predicate)."""

    partition: str
    file_id: str
    name: str
    size: int
    may_match: bool


class FileMatch(NamedTuple):
    """Whether a data file may hold rows matching a predicate, by its column statistics (``partition``: None
    from the metadata table's statistics, which the client joins on the file name alone)."""

    partition: str | None
    name: str
    may_match: bool


class RecordLocation(NamedTuple):
    """Where the record index places a record key: its partition and file group, and the instant (millis)."""

    record_key: str
    partition: str
    file_id: str
    instant_millis: int


class CdcSplitRow(NamedTuple):
    """One split of a change query (RFC-51): the commit, the file group, what a worker reads on each side of the
    commit (base file, log files, the instants whose blocks count) and the ``.cdc`` files it reads as they are."""

    instant: str
    completion_time: str | None
    partition: str
    file_id: str
    before_base: str | None
    before_logs: list[str]
    before_valid: list[str]
    has_before: bool
    after_base: str | None
    after_logs: list[str]
    after_valid: list[str]
    has_after: bool
    before_without_meta: bool
    after_without_meta: bool
    cdc_files: list[str]
    cdc_mode: str | None


_NAMES = pa.list_(pa.string())
SLICES = RowContract(SliceRow, pa.schema([("partition", pa.string()), ("file_id", pa.string()),
                                          ("base_file", pa.string()), ("log_files", pa.list_(pa.string()))]))
LISTING = RowContract(ListedFile, pa.schema([("partition", pa.string()), ("name", pa.string()),
                                             ("size", pa.int64())]))
LISTING_PARTS = RowContract(ListingPart, pa.schema([("partition", pa.string()), ("name", pa.string()),
                                                   ("size", pa.int64()), ("subtree", pa.string())]))
GROUPED_FILES = RowContract(GroupedFile, pa.schema([("partition", pa.string()), ("file_id", pa.string()),
                                                   ("name", pa.string()), ("size", pa.int64()),
                                                   ("may_match", pa.bool_())]))
MATCHES = RowContract(FileMatch, pa.schema([("partition", pa.string()), ("name", pa.string()),
                                            ("may_match", pa.bool_())]))
CDC_SPLITS = RowContract(CdcSplitRow, pa.schema([
    ("instant", pa.string()), ("completion_time", pa.string()), ("partition", pa.string()), ("file_id", pa.string()),
    ("before_base", pa.string()), ("before_logs", _NAMES), ("before_valid", _NAMES), ("has_before", pa.bool_()),
    ("after_base", pa.string()), ("after_logs", _NAMES), ("after_valid", _NAMES), ("has_after", pa.bool_()),
    ("before_without_meta", pa.bool_()), ("after_without_meta", pa.bool_()), ("cdc_files", _NAMES),
    ("cdc_mode", pa.string()),
]))
LOCATIONS = RowContract(RecordLocation, pa.schema([("record_key", pa.string()), ("partition", pa.string()),
                                                   ("file_id", pa.string()), ("instant_millis", pa.int64())]))
