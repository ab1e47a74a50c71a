"""Schema-on-read (``hoodie.schema.on.read.enable``): columns matched by id, not by name.

With schema on read, ``ALTER TABLE`` may rename and drop columns without
rewriting files, so a file keeps the names of the schema it was written with.
Hudi records each schema as an ``InternalSchema`` (JSON: ``version_id``, and
fields with ``id`` and ``name``) in the ``latest_schema`` of commit metadata and
in the history under ``.hoodie/.schema/``. A file written at instant ``t`` has
the schema of the greatest version at or before ``t`` (``InternalSchemaUtils.searchSchema``);
its columns are found in the reader's schema by id: a renamed column takes its
new name, a dropped one is left out, even if a later column took its old name.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from hudi_connect.core.errors import UnsupportedTableFeatureError

HISTORY_DIR = ".schema"  # below .hoodie; files <instant>[_<completion>].schemacommit
LATEST_SCHEMA_KEY = "latest_schema"  # SerDeHelper.LATEST_SCHEMA in commit extraMetadata


def uses_schema_on_read(extra_metadata: Iterable[Mapping[str, str]]) -> bool:
    """Whether any commit (by its extraMetadata) recorded an InternalSchema: ALTER TABLE under schema on
    read, or a write after one."""
    return any(metadata.get(LATEST_SCHEMA_KEY) for metadata in extra_metadata)


@dataclass(frozen=True)
class SchemaVersion:
    """One ``InternalSchema``: the instant it took effect and its columns by id."""

    version_id: str
    columns: tuple[tuple[int, str], ...]  # top-level (id, name), in order
    nested: frozenset[tuple[int, str]]  # (id, name) of every field below the top level

    def name_of(self, column_id: int) -> str | None:
        """The name of the top-level column ``column_id`` in this version; None if it has no such column."""
        return next((name for i, name in self.columns if i == column_id), None)


def _nested_fields(type_json: Any) -> Iterator[tuple[int, str]]:
    if not isinstance(type_json, dict):
        return
    if type_json.get("type") == "record":
        for field in type_json.get("fields", []):
            yield int(field["id"]), str(field["name"])
            yield from _nested_fields(field.get("type"))
    elif type_json.get("type") == "array":
        yield from _nested_fields(type_json.get("element"))
    elif type_json.get("type") == "map":
        yield from _nested_fields(type_json.get("key"))
        yield from _nested_fields(type_json.get("value"))


def schema_version(schema_json: Any) -> SchemaVersion:
    """An ``InternalSchema`` (parsed JSON or its text) as a :class:`SchemaVersion`."""
    parsed = json.loads(schema_json) if isinstance(schema_json, str) else schema_json
    fields = parsed.get("fields", [])
    nested = frozenset(pair for f in fields for pair in _nested_fields(f.get("type")))
    return SchemaVersion(str(parsed.get("version_id", 0)), tuple((int(f["id"]), str(f["name"])) for f in fields),
                         nested)


def schema_history(history_json: str) -> list[SchemaVersion]:
    """The versions of a ``.schemacommit`` file (``{"schemas": [...]}``), oldest first."""
    versions = [schema_version(s) for s in json.loads(history_json).get("schemas", [])]
    return sorted(versions, key=lambda v: int(v.version_id))


def version_at(versions: list[SchemaVersion], instant: str) -> SchemaVersion | None:
    """The version a file written at ``instant`` has: the greatest at or before it (None before the first)."""
    ids = [int(v.version_id) for v in versions]
    i = bisect.bisect_right(ids, int(instant))
    return versions[i - 1] if i else None


def column_renames(written: SchemaVersion, reader: SchemaVersion, *,
                   where: str = "the table") -> tuple[tuple[str, str], ...]:
    """(name in the file, name for the reader) of each column both schemas hold, by id.

    Raises for a nested field renamed between the two (not implemented: structs are read by name)."""
    reader_nested = dict(reader.nested)
    moved = sorted(name for i, name in written.nested if i in reader_nested and reader_nested[i] != name)
    if moved:
        raise UnsupportedTableFeatureError(
            "schema-on-read rename of a nested field", "InternalSchema version", written.version_id,
            where=where, detail=f"renamed below the top level: {', '.join(moved)}")
    return tuple((name, new) for i, name in written.columns if (new := reader.name_of(i)) is not None)


def versions_with_renames(versions: Iterable[SchemaVersion], reader: SchemaVersion, *,
                          where: str = "the table") -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    """For each version, its instant and its column mapping to ``reader``'s names (what workers apply)."""
    return tuple((v.version_id, column_renames(v, reader, where=where)) for v in versions)


def renames_needed(versions: Iterable[SchemaVersion], reader: SchemaVersion) -> bool:
    """Whether some version names a column differently from ``reader``, or holds one the reader dropped."""
    return any(column_renames(v, reader) != tuple((name, name) for _, name in v.columns) for v in versions)


ColumnRenames = tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # (version id, (file name, reader name)...)


def latest_history_file(names: Iterable[str], completed_instants: Iterable[str]) -> str | None:
    """The ``.schemacommit`` file readers use: the newest completed one whose instant completed on the
    timeline (``getHistorySchemaStrByGivenValidCommits``: a failed writer's history is not trusted)."""
    valid = set(completed_instants)
    found = [(name.split("_", 1)[0].split(".", 1)[0], name) for name in names
             if name.endswith(".schemacommit") and name[0].isdigit()]
    trusted = sorted((instant, name) for instant, name in found if instant in valid)
    return trusted[-1][1] if trusted else None


def with_reader_names(table: Any, renames: ColumnRenames, instant: str) -> Any:
    """A file's columns (a ``pa.Table`` written at ``instant``) under the reader's names, by column id;
    columns the reader dropped are left out. Unchanged when the table needs no renames."""
    if not renames:
        return table
    i = bisect.bisect_right([int(v) for v, _ in renames], int(instant))
    if not i:
        return table
    present = [(old, new) for old, new in renames[i - 1][1] if old in table.column_names]
    return table.select([old for old, _ in present]).rename_columns([new for _, new in present])
