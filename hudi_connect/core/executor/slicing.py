"""Making a read's file slices on the executors, for tables with more slices than the client holds.

A read of a small table lists its files to the client, which groups them into
file slices and names them in the plan. Past a bound (the reader's
``MAX_PLANNED_SLICES``) the client holds nothing: the listing's files are
tagged with their file group here (:func:`file_groups_of_listing`), sent by
file group to the tasks of a shuffle, and each task makes its groups' slices
(:func:`slices_of_listing`) with the same rule the client uses
(:class:`~hudi_connect.core.format.fs_view.SliceChoice`), ready for
:func:`~hudi_connect.core.executor.slices.read_file_slices` in the same task.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa

from hudi_connect.core.errors import ConcurrentTableChangeError
from hudi_connect.core.executor.contracts import GROUPED_FILES, SLICES, GroupedFile, SliceRow
from hudi_connect.core.executor.refusals import worker_body
from hudi_connect.core.executor.storage import list_directory
from hudi_connect.core.format.fs_view import FileSlice, SliceChoice, StoredFile, parse_data_file
from hudi_connect.core.format.timeline import FILE_REMOVING_ACTIONS, parse_instant_file_name


@dataclass(frozen=True)
class ListingSlicing:
    """How an executor makes a read's slices: the rule, and what the read keeps of them. ``timeline_uri``: the
    table's active timeline, checked once per task for a clean, rollback or restore the planning timeline
    did not have (the listing is made when the read runs; the slices are chosen as of the plan)."""

    choice: SliceChoice
    touched: frozenset[tuple[str, str]] | None = None  # incremental reads: the file groups its commits wrote
    base_only: bool = False  # read-optimized: each slice's base file alone
    timeline_uri: str | None = None

    def check_no_removals_since_planning(self) -> None:
        """Raises ConcurrentTableChangeError if the timeline now has a file-removing instant the plan's lacks."""
        if self.timeline_uri is None:
            return
        planned = {(i.requested_time, i.action) for i in self.choice.timeline}
        since = sorted(
            name for info in list_directory(self.timeline_uri)
            if (parsed := parse_instant_file_name(name := info.base_name)) is not None
            and parsed.action in FILE_REMOVING_ACTIONS and (parsed.requested_time, parsed.action) not in planned)
        if since:
            raise ConcurrentTableChangeError(self.timeline_uri, self.choice.timeline.planned_at(),
                                             removed_since=since)


@worker_body
def file_groups_of_listing(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: listing rows (partition, name, size, may_match) in, the data files among them with
    their file group out (partition metadata and other files dropped; a format the readers do not read is
    refused by name, as on the client)."""
    for batch in batches:
        grouped: list[GroupedFile] = []
        columns = [batch.column(name).to_pylist() for name in ("partition", "name", "size", "may_match")]
        for partition, name, size, may_match in zip(*columns, strict=True):
            parsed = parse_data_file(StoredFile(partition, name, size))
            if parsed is not None:
                grouped.append(GroupedFile(partition, parsed.file_id, name, size, may_match is not False))
        yield GROUPED_FILES.batch(grouped)


@worker_body
def slices_of_listing(slicing: ListingSlicing, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: grouped files sorted by (partition, file id) in, the read's file slices out. A file
    group's files may span batches: the last group of a batch waits for the next."""
    waiting: list[GroupedFile] = []
    checked = False
    for batch in batches:
        if not checked:
            slicing.check_no_removals_since_planning()
            checked = True
        files = [*waiting, *GROUPED_FILES.rows(batch)]
        if not files:
            continue
        last = (files[-1].partition, files[-1].file_id)
        split = len(files)
        while split > 0 and (files[split - 1].partition, files[split - 1].file_id) == last:
            split -= 1
        ready, waiting = files[:split], files[split:]
        if ready:
            yield _slice_rows(slicing, ready)
    if waiting:
        yield _slice_rows(slicing, waiting)


def _slice_rows(slicing: ListingSlicing, files: list[GroupedFile]) -> pa.RecordBatch:
    stored = [StoredFile(f.partition, f.name, f.size) for f in files]
    slices, _ = slicing.choice.slices(stored, {f.name for f in files if not f.may_match})
    if slicing.touched is not None:
        slices = [s for s in slices if (s.partition, s.file_id) in slicing.touched]
    return SLICES.batch(_row(s, slicing.base_only) for s in slices if s.base_file or not slicing.base_only)


def _row(file_slice: FileSlice, base_only: bool) -> SliceRow:
    base = file_slice.base_file.name if file_slice.base_file else None
    return SliceRow(file_slice.partition, file_slice.file_id, base,
                    [] if base_only else [f.name for f in file_slice.log_files])
