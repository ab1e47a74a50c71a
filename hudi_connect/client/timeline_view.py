"""``TimelineView`` (RFC-64): a table's timeline and commit metadata, read through any
Spark Connect server (Hudi jar or not): the listing on an executor, the files with
Spark's ``binaryFile`` source.

Completed instant files never change, so their decoded metadata is cached and
read only once per view.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from pyspark.sql import SparkSession

from hudi_connect.client import remote_files
from hudi_connect.client.server_loss import over_connect
from hudi_connect.errors import NotAHudiTableError, TableNotFoundError
from hudi_connect.format.commit_metadata import CommitMetadata, decode_commit_metadata
from hudi_connect.format.history import HistoryEntry, history_entries
from hudi_connect.format.internal_schema import HISTORY_DIR, SchemaVersion, latest_history_file, schema_history
from hudi_connect.format.table_config import TableProperties, parse_java_properties
from hudi_connect.format.timeline import Action, Instant, InstantFile, InstantState, Timeline, parse_instant_file_name


def load_properties(spark: SparkSession, path: str) -> TableProperties:
    """``hoodie.properties`` of the table at ``path``, with errors that say what is there instead."""
    base = path.rstrip("/")
    content = remote_files.read_file(spark, f"{base}/.hoodie/hoodie.properties")
    if content is None:
        if not remote_files.path_exists(spark, base):
            raise TableNotFoundError(f"no table at {path}: the path does not exist")
        raise NotAHudiTableError(f"{path} is not a Hudi table: it has no .hoodie/hoodie.properties")
    raw = parse_java_properties(content.decode("utf-8", errors="replace"))
    return TableProperties.from_properties(raw, where=f"the table at {path}")


class TimelineView:
    """The timeline of one table as seen through a Spark session."""

    def __init__(self, spark: SparkSession, base_path: str, properties: TableProperties) -> None:
        self._spark = spark
        self._base_path = base_path.rstrip("/")
        self.properties = properties
        self._metadata_cache: dict[str, CommitMetadata] = {}

    @classmethod
    def open(cls, spark: SparkSession, base_path: str) -> TimelineView:
        return cls(spark, base_path, load_properties(spark, base_path))

    @property
    def timeline_directory(self) -> str:
        directory = f"{self._base_path}/.hoodie"
        return f"{directory}/{self.properties.timeline_dir}" if self.properties.timeline_dir else directory

    def timeline(self) -> Timeline:
        """The active timeline, listed afresh, as Hudi sees it (without reverse-stream checkpoints)."""
        return Timeline.from_files(p for p in self._instant_files() if p.action is not Action.REVERSE_COMMIT)

    def reverse_commits(self) -> dict[Instant, str]:
        """RFC-70 checkpoint instants (completed ``reversecommit`` files) and their paths."""
        found = [p for p in self._instant_files("*.reversecommit") if p.state is InstantState.COMPLETED]
        return {Instant(p.requested_time, p.action, p.state, p.completion_time): f"{self.timeline_directory}/{p.name}"
                for p in found}

    def _instant_files(self, pattern: str = "*") -> list[InstantFile]:
        # listed on an executor: a requested instant's file is empty, and Spark's sources skip empty files
        files = remote_files.list_directory(self._spark, self.timeline_directory)
        parsed = (parse_instant_file_name(f.name, f.modification_time_ms) for f in files
                  if fnmatch.fnmatchcase(f.name, f"[0-9]{pattern}"))
        return [p for p in parsed if p is not None]

    def instant_file(self, instant: Instant) -> str:
        action = instant.action.value
        if self.properties.timeline_dir:
            return f"{self.timeline_directory}/{instant.requested_time}_{instant.completion_time}.{action}"
        return f"{self.timeline_directory}/{instant.requested_time}.{action}"

    def commit_metadata(self, instants: Sequence[Instant]) -> dict[Instant, CommitMetadata]:
        """Decoded metadata of completed write instants, each read once in the view's life."""
        wanted = {self.instant_file(i): i for i in instants if i.is_completed and i.writes_data}
        missing = [path for path in wanted if path not in self._metadata_cache]
        if missing:
            contents = remote_files.read_files(self._spark, missing)
            by_name = {uri.rsplit("/", 1)[-1]: data for uri, data in contents.items()}
            for path in missing:
                data = by_name.get(path.rsplit("/", 1)[-1])
                if data is not None:
                    self._metadata_cache[path] = decode_commit_metadata(data, name=path)
        return {i: self._metadata_cache[p] for p, i in wanted.items() if p in self._metadata_cache}

    @over_connect("reading the table's history")
    def history(self, limit: int | None = None) -> list[HistoryEntry]:
        """Instants newest first (the newest ``limit``), with operation type and write statistics."""
        instants = list(reversed(self.timeline().instants))[:limit]
        return history_entries(instants, self.commit_metadata(instants))

    def schema_history(self, timeline: Timeline) -> list[SchemaVersion]:
        """Schema-on-read versions, oldest first (none for tables without schema on read)."""
        directory = f"{self._base_path}/.hoodie/{HISTORY_DIR}"
        names = [f.name for f in remote_files.list_files(self._spark, f"{directory}/*.schemacommit")]
        completed = (i.requested_time for i in timeline if i.is_completed)
        name = latest_history_file(names, completed)
        content = remote_files.read_file(self._spark, f"{directory}/{name}") if name else None
        return schema_history(content.decode("utf-8")) if content else []

    def find_latest_completed_action_at(self, time: str) -> Instant | None:
        """The last completed instant requested at or before ``time`` (RFC-64)."""
        return self.timeline().latest_completed_at(time)
