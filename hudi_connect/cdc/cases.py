"""Which way each file group of each commit yields its changes (RFC-51's inference cases).

Mirrors ``HoodieCDCExtractor``: only completed commit, deltacommit and
replacecommit instants whose operation can change data count (compaction and
clustering rewrite files but change no record); each write stat of such a
commit is one split, and each file group a replacecommit replaced is another.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from hudi_connect.core.format.commit_metadata import CommitMetadata, WriteStat
from hudi_connect.core.format.timeline import Instant


class CdcInferenceCase(StrEnum):
    """How one file group's changes in one commit are found: RFC-51's ``HoodieCDCInferenceCase``."""

    AS_IS = "AS_IS"  # the commit wrote .cdc log files: read them
    BASE_FILE_INSERT = "BASE_FILE_INSERT"  # a new base file: every record is an insert
    BASE_FILE_DELETE = "BASE_FILE_DELETE"  # the commit emptied the file group: every old record is a delete
    LOG_FILE = "LOG_FILE"  # MOR log records against the previous file slice
    REPLACE_COMMIT = "REPLACE_COMMIT"  # insert_overwrite / delete_partition: the replaced group's records are deletes
    BASE_FILE_REWRITE = "BASE_FILE_REWRITE"  # COW rewrite without CDC logging: old and new base files compared


# WriteOperationType.yieldChanges: everything that writes records on behalf of a user; a bootstrap too (its records
# are inserts of its commit, as Hudi's change query reports them)
NO_CHANGE_OPERATIONS = frozenset({"COMPACT", "CLUSTER", "LOG_COMPACT", "INDEX", "ALTER_SCHEMA"})


@dataclass(frozen=True)
class CdcSplit:
    """One file group's changes in one commit."""

    instant: Instant
    case: CdcInferenceCase
    partition: str
    file_id: str
    files: tuple[str, ...]  # what the commit wrote for this group (data or .cdc files)
    previous_commit: Instant | None  # the state the changes are relative to
    stat: WriteStat | None = field(default=None, compare=False)  # what the commit wrote (None: a replaced group)

    def describe(self) -> str:
        """One line for ``ChangeQuery.explain``: instant, case, file group and the files it reads."""
        what = ", ".join(self.files) or "no new file"
        return f"{self.instant.requested_time} {self.case.value:<17} {self.partition or '/'}:{self.file_id} <- {what}"


def yields_changes(metadata: CommitMetadata) -> bool:
    """Whether a commit's operation can change records (Hudi's ``WriteOperationType.yieldChanges``): table
    services such as compaction and clustering rewrite files but change none."""
    return (metadata.operation_type or "").upper() not in NO_CHANGE_OPERATIONS


def _case_of(stat: WriteStat, operation: str) -> CdcInferenceCase:
    if stat.cdc_stats:
        return CdcInferenceCase.AS_IS
    if stat.is_log_file:
        return CdcInferenceCase.LOG_FILE
    if "DELETE" in operation and stat.num_writes == 0 and stat.num_deletes != 0:
        return CdcInferenceCase.BASE_FILE_DELETE
    if stat.num_updates == 0 and stat.num_writes == stat.num_inserts and stat.prev_commit is None:
        return CdcInferenceCase.BASE_FILE_INSERT
    return CdcInferenceCase.BASE_FILE_REWRITE


def infer_splits(
    commits: Sequence[Instant],
    metadata: Mapping[Instant, CommitMetadata],
    in_range: Sequence[Instant],
) -> list[CdcSplit]:
    """The splits of every commit of ``in_range`` that yields changes, in commit order.

    ``commits`` are all completed write commits in order (to find each one's predecessor; the first may be
    an archived one, the predecessor of the active timeline's first).
    """
    previous: dict[str, Instant | None] = {}
    last: Instant | None = None
    for commit in commits:
        previous[commit.requested_time] = last
        last = commit
    splits: list[CdcSplit] = []
    for instant in in_range:
        meta = metadata[instant]
        if not yields_changes(meta):
            continue
        before = previous.get(instant.requested_time)
        operation = (meta.operation_type or "").upper()
        for stat in meta.write_stats:
            files = tuple(sorted(stat.cdc_stats)) if stat.cdc_stats else (stat.path,)
            splits.append(CdcSplit(instant, _case_of(stat, operation), stat.partition_path, stat.file_id,
                                   files, before, stat))
        for partition, file_ids in meta.replaced_file_ids.items():
            for file_id in file_ids:
                splits.append(CdcSplit(instant, CdcInferenceCase.REPLACE_COMMIT, partition, file_id, (), before))
    return splits
