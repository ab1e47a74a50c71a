"""What a table asks of its readers, and what hudi-connect's jar-free readers refuse.

A reader that meets a feature it does not implement must say so by name rather
than return empty or guessed rows. :func:`unsupported_features` lists, from
``hoodie.properties`` alone, every such feature; :func:`check_readable` raises
:class:`UnsupportedTableFeatureError` for the first. Commits and files are
checked where they are met (:func:`check_commit_readable`, and the file-name
and log-block checks in :mod:`hudi_connect.core.format.fs_view` and the executors).

The rules follow Hudi 1.2's ``HoodieTableConfig``: the key generator is the
class when present, else the type; the merge mode of a version-9 table is
``hoodie.record.merge.mode``, while for older tables the payload class decides
(``inferMergingConfigsForPreV9Table``). An unknown value is refused, never guessed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from hudi_connect.core.errors import UnsupportedTableFeatureError
from hudi_connect.core.format.commit_metadata import CommitMetadata
from hudi_connect.core.format.internal_schema import LATEST_SCHEMA_KEY, uses_schema_on_read
from hudi_connect.core.format.table_config import TableProperties
from hudi_connect.core.format.timeline import Instant, Timeline


class MergeMode(StrEnum):
    """``RecordMergeMode``: which of two records of one key a reader keeps."""

    EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"  # the greater ordering value; on a tie the later
    COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"  # the later


class KeyEncoding(StrEnum):
    """How a record key string is made from the key fields' values (``KeyGenerator.constructRecordKey``)."""

    VALUE_ONLY = "VALUE_ONLY"  # "v" (one field only)
    FIELD_PREFIXED = "FIELD_PREFIXED"  # "f1:v1,f2:v2", nulls as __null__, empty strings as __empty__


@dataclass(frozen=True)
class TableFeature:
    """One feature a table uses that the readers do not implement."""

    feature: str
    property: str
    value: str
    detail: str = ""

    def error(self, where: str) -> UnsupportedTableFeatureError:
        """The error to raise for this feature of the table at ``where``, naming the property and its value."""
        return UnsupportedTableFeatureError(self.feature, self.property, self.value, where=where, detail=self.detail)


_KEYGEN_PACKAGE = "org.apache.hudi.keygen."
# KeyGeneratorType by the class names Hudi persists in hoodie.table.keygenerator.class (tables before 1.0)
_KEYGEN_CLASSES = {
    f"{_KEYGEN_PACKAGE}SimpleKeyGenerator": "SIMPLE", f"{_KEYGEN_PACKAGE}SimpleAvroKeyGenerator": "SIMPLE",
    f"{_KEYGEN_PACKAGE}ComplexKeyGenerator": "COMPLEX", f"{_KEYGEN_PACKAGE}ComplexAvroKeyGenerator": "COMPLEX",
    f"{_KEYGEN_PACKAGE}NonpartitionedKeyGenerator": "NON_PARTITION",
    f"{_KEYGEN_PACKAGE}NonpartitionedAvroKeyGenerator": "NON_PARTITION",
    f"{_KEYGEN_PACKAGE}CustomKeyGenerator": "CUSTOM", f"{_KEYGEN_PACKAGE}CustomAvroKeyGenerator": "CUSTOM",
    f"{_KEYGEN_PACKAGE}TimestampBasedKeyGenerator": "TIMESTAMP",
    f"{_KEYGEN_PACKAGE}TimestampBasedAvroKeyGenerator": "TIMESTAMP",
    f"{_KEYGEN_PACKAGE}GlobalDeleteKeyGenerator": "GLOBAL_DELETE",
    f"{_KEYGEN_PACKAGE}GlobalAvroDeleteKeyGenerator": "GLOBAL_DELETE",
}
_KEYGEN_TYPE_ALIASES = {"SIMPLE_AVRO": "SIMPLE", "COMPLEX_AVRO": "COMPLEX", "NON_PARTITION_AVRO": "NON_PARTITION",
                        "CUSTOM_AVRO": "CUSTOM", "TIMESTAMP_AVRO": "TIMESTAMP", "GLOBAL_DELETE_AVRO": "GLOBAL_DELETE"}
# Key generators whose record keys the readers reproduce and whose partition paths they can tell apart
# from column values (partition columns are always read from the data files).
SUPPORTED_KEY_GENERATORS = frozenset({"SIMPLE", "COMPLEX", "NON_PARTITION", "CUSTOM", "TIMESTAMP"})

# Base file formats the executors read (Lance with pylance, in the workers' Python).
READ_BASE_FORMATS = frozenset({"PARQUET", "LANCE"})

_PAYLOAD_PACKAGE = "org.apache.hudi.common.model."
# Payload classes whose merge a version-6/8 table's readers reproduce, by the mode they amount to.
PAYLOAD_MERGE_MODES = {
    f"{_PAYLOAD_PACKAGE}DefaultHoodieRecordPayload": MergeMode.EVENT_TIME_ORDERING,
    f"{_PAYLOAD_PACKAGE}EventTimeAvroPayload": MergeMode.EVENT_TIME_ORDERING,
    f"{_PAYLOAD_PACKAGE}OverwriteWithLatestAvroPayload": MergeMode.COMMIT_TIME_ORDERING,
}
# Not among them: PartialUpdateAvroPayload and OverwriteNonDefaultsWithLatestAvroPayload before version 9.
# Hudi 1.2 itself fails to read MOR tables of version 6 or 8 with PartialUpdateAvroPayload, so there is
# no oracle to hold a reader to; version 9 maps both to partial update mode IGNORE_DEFAULTS, which is read.
# HoodieRecordMerger's built-in strategy ids
MERGE_STRATEGY_IDS = {
    "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5": MergeMode.EVENT_TIME_ORDERING,
    "ce9acb64-bde0-424c-9b91-f6ebba25356d": MergeMode.COMMIT_TIME_ORDERING,
}
PAYLOAD_BASED = "00000000-0000-0000-0000-000000000000"  # HoodieRecordMerger.PAYLOAD_BASED_MERGE_STRATEGY_UUID
_PAYLOAD_KEYS = ("hoodie.compaction.payload.class", "hoodie.datasource.write.payload.class")
_STRATEGY_KEYS = ("hoodie.record.merge.strategy.id", "hoodie.compaction.record.merger.strategy")
_MERGE_PROPERTY_PREFIX = "hoodie.record.merge.property."


def _value(raw: Mapping[str, str], *keys: str) -> tuple[str, str] | None:
    """(key, value) of the first of ``keys`` present in ``raw``."""
    for key in keys:
        if raw.get(key, "").strip():
            return key, raw[key].strip()
    return None


def _bootstrap_without_index(raw: Mapping[str, str]) -> tuple[str, str] | None:
    """The property that turns a bootstrap's index off (``NoOpBootstrapIndex``), if one does."""
    if raw.get("hoodie.bootstrap.index.enable", "true").strip().lower() == "false":
        return "hoodie.bootstrap.index.enable", raw["hoodie.bootstrap.index.enable"].strip()
    if raw.get("hoodie.bootstrap.index.type", "HFILE").strip().upper() == "NONE":
        return "hoodie.bootstrap.index.type", raw["hoodie.bootstrap.index.type"].strip()
    if raw.get("hoodie.bootstrap.index.class", "").strip().endswith("NoOpBootstrapIndex"):
        return "hoodie.bootstrap.index.class", raw["hoodie.bootstrap.index.class"].strip()
    return None


def key_generator(props: TableProperties) -> tuple[str, str, str]:
    """(property, its value, KeyGeneratorType name) of the table's key generator; the class wins over the type.
    The type is '' for a class Hudi does not ship (a user's own)."""
    found = _value(props.raw, "hoodie.table.keygenerator.class", "hoodie.datasource.write.keygenerator.class")
    if found is not None:
        key, value = found
        return key, value, _KEYGEN_CLASSES.get(value.replace("com.uber.hoodie.", "org.apache.hudi."), "")
    found = _value(props.raw, "hoodie.table.keygenerator.type", "hoodie.datasource.write.keygenerator.type")
    if found is not None:
        key, value = found
        upper = value.upper()
        return key, value, _KEYGEN_TYPE_ALIASES.get(upper, upper)
    # Hudi's default: simple for one partition field, non-partitioned for none, complex otherwise
    default = "NON_PARTITION" if not props.partition_fields else "SIMPLE" if len(props.partition_fields) == 1 \
        else "COMPLEX"
    return "hoodie.table.keygenerator.type", f"(absent: {default})", default


def _custom_partition_types(props: TableProperties) -> list[str]:
    """The ``field:TYPE`` suffixes of a custom key generator's partition fields ('' where none is written)."""
    fields = [f.strip() for f in props.raw.get("hoodie.table.partition.fields", "").split(",") if f.strip()]
    return [f.split(":", 1)[1].strip().upper() if ":" in f else "" for f in fields]


def opaque_partition_fields(props: TableProperties) -> frozenset[str]:
    """Partition fields whose path values are not the column's values (formatted timestamps), so
    predicates on them cannot prune partitions. A custom key generator's untyped fields (tables of
    version 6 do not write the types) might be timestamps: all of them count as opaque."""
    _, _, kind = key_generator(props)
    if kind == "TIMESTAMP":
        return frozenset(props.partition_fields)
    if kind == "CUSTOM":
        types = _custom_partition_types(props)
        if any(t not in ("SIMPLE", "TIMESTAMP") for t in types):
            return frozenset(props.partition_fields)
        return frozenset(f for f, t in zip(props.partition_fields, types, strict=True) if t == "TIMESTAMP")
    return frozenset()


def string_partition_columns(props: TableProperties) -> tuple[str, ...]:
    """Partition columns Hudi's Spark reader types as strings (of the values in the data files): a timestamp key
    generator's (``SparkHoodieTableFileIndex`` gives them ``StringType``; hudi-rs keeps the files' type)."""
    _, _, kind = key_generator(props)
    return props.partition_fields if kind == "TIMESTAMP" else ()


def merge_mode(props: TableProperties) -> tuple[MergeMode | None, TableFeature | None]:
    """The table's merge mode, or the feature that keeps the readers from merging as Hudi would."""
    raw = props.raw
    declared = raw.get("hoodie.record.merge.mode", "").strip().upper()
    payload = _value(raw, *_PAYLOAD_KEYS)
    strategy = _value(raw, *_STRATEGY_KEYS)
    default = MergeMode.EVENT_TIME_ORDERING if props.ordering_fields else MergeMode.COMMIT_TIME_ORDERING
    payload_decides = props.version < 8 or (
        props.version == 8 and declared in ("", "CUSTOM") and (strategy is None or strategy[1] == PAYLOAD_BASED))
    if payload_decides and payload is not None:
        # Below version 8 the payload class decides, whatever the strategy id (0.x's default) says; on version 8
        # only where the mode is CUSTOM (or unset) with the payload-based strategy (HoodieReaderContext's
        # initRecordMerger reads a version-8 table's mode and strategy id as they are)
        name = payload[1].replace("com.uber.hoodie.", "org.apache.hudi.")
        if name not in PAYLOAD_MERGE_MODES:
            return None, TableFeature("a record payload class whose merge is not implemented", payload[0], payload[1])
        return PAYLOAD_MERGE_MODES[name], None
    if declared == "CUSTOM":
        detail = "its merge logic lives in the writer's classes"
        if strategy is not None:
            detail += f" (merge strategy {strategy[1]}, which takes precedence over any payload class)"
        return None, TableFeature("a custom record merger", "hoodie.record.merge.mode", declared, detail)
    if strategy is not None and strategy[1] not in MERGE_STRATEGY_IDS:
        return None, TableFeature("a record merge strategy of its own", strategy[0], strategy[1])
    if declared:
        if declared not in MergeMode.__members__:
            return None, TableFeature("an unknown record merge mode", "hoodie.record.merge.mode", declared)
        return MergeMode(declared), None
    return default, None


def partial_updates(props: TableProperties) -> tuple[bool, TableFeature | None]:
    """Whether a newer record's null fields keep older values (partial update mode ``IGNORE_DEFAULTS``,
    honoured on version 9 tables only), or the partial update mode the readers do not implement."""
    if props.version < 9:
        return False, None
    mode = props.raw.get("hoodie.table.partial.update.mode", "").strip().upper()
    if mode in ("", "NONE"):
        return False, None
    if mode == "IGNORE_DEFAULTS":
        return True, None
    return False, TableFeature("partial updates", "hoodie.table.partial.update.mode", mode,
                               "only IGNORE_DEFAULTS (a null field keeps the older value) is read")


def records_merge_columns(props: TableProperties) -> bool:
    """Whether a merged record may take its columns from different files of its slice: under a partial update
    mode, or on MOR tables of version 8+, where MERGE INTO's partial SETs write partial-update log blocks (nothing
    in the table's properties tells whether any were). One file's column statistics then cannot rule out a
    predicate over several columns (``price = 99 AND name = 'a'``, price from a log file, name from the base)."""
    return partial_updates(props)[0] or (props.is_merge_on_read and props.hudi_1_layout)


def record_key_encoding(props: TableProperties) -> tuple[KeyEncoding | None, TableFeature | None]:
    """How the table's record keys are spelled, needed where the readers build keys from data
    (tables written without meta fields); or why that cannot be known."""
    if len(props.record_key_fields) > 1:
        return KeyEncoding.FIELD_PREFIXED, None
    _, _, kind = key_generator(props)
    if kind == "GLOBAL_DELETE":
        return KeyEncoding.FIELD_PREFIXED, None
    if kind != "COMPLEX":
        return KeyEncoding.VALUE_ONLY, None
    explicit = props.raw.get("hoodie.table.complex.keygenerator.encoding", "").strip().upper()
    if explicit in KeyEncoding.__members__:
        return KeyEncoding(explicit), None
    if props.version >= 9:
        return KeyEncoding.FIELD_PREFIXED, None
    # 0.14.1 to 1.0.x wrote "v", older writers "f:v" (HUDI-7001): the table does not say which.
    return None, TableFeature("a one-field complex key generator of unknown key encoding",
                              "hoodie.table.keygenerator", kind,
                              "Hudi 0.14.1-1.0.x wrote its keys without the field name, other versions with it")


def unsupported_features(props: TableProperties) -> list[TableFeature]:
    """Every feature of ``props`` that the jar-free readers do not implement, in a stable order."""
    raw = props.raw
    found: list[TableFeature] = []

    table_format = raw.get("hoodie.table.format", "native").strip()
    if table_format.lower() != "native":
        found.append(TableFeature("a table format plug-in", "hoodie.table.format", table_format))
    expected_layout = 2 if props.hudi_1_layout else 1
    if props.timeline_layout_version != expected_layout:
        found.append(TableFeature(f"a timeline layout other than version {props.version}'s",
                                  "hoodie.timeline.layout.version", str(props.timeline_layout_version)))
    base_format = props.base_file_format.strip().upper()
    if base_format not in READ_BASE_FORMATS:
        found.append(TableFeature(f"{base_format.title()} base files", "hoodie.table.base.file.format", base_format,
                                  "Parquet and Lance base files are read"))
    if raw.get("hoodie.table.multiple.base.file.formats.enable", "false").strip().lower() == "true":
        found.append(TableFeature("base files of several formats", "hoodie.table.multiple.base.file.formats.enable",
                                  "true"))
    log_format = _value(raw, "hoodie.table.log.file.format", "hoodie.table.rt.file.format")
    if log_format is not None and log_format[1].upper() != "HOODIE_LOG":
        found.append(TableFeature("log files of another format", *log_format))
    if raw.get("hoodie.partition.metafile.use.base.format", "false").strip().lower() == "true":
        found.append(TableFeature("partition metadata files in the base file format",
                                  "hoodie.partition.metafile.use.base.format", "true"))
    if _value(raw, "hoodie.bootstrap.base.path") is not None:
        index = _bootstrap_without_index(raw)
        if index is not None:
            found.append(TableFeature("a bootstrap without its index (skeleton files that name no source file)",
                                      *index))
    if raw.get("hoodie.datasource.write.drop.partition.columns", "false").strip().lower() == "true":
        found.append(TableFeature("partition columns dropped from data files",
                                  "hoodie.datasource.write.drop.partition.columns", "true",
                                  "their values would have to be parsed from partition paths"))
    if raw.get("hoodie.datasource.write.slash.separated.date.partitioning", "false").strip().lower() == "true":
        found.append(TableFeature("slash-separated date partitions",
                                  "hoodie.datasource.write.slash.separated.date.partitioning", "true"))

    keygen_property, keygen_value, keygen = key_generator(props)
    if keygen not in SUPPORTED_KEY_GENERATORS:
        found.append(TableFeature(f"the {keygen.lower() or 'user-defined'} key generator", keygen_property,
                                  keygen_value))

    # Copy-on-write readers merge nothing: the writer applied the merge rules to the base files.
    if props.is_merge_on_read:
        _, merge_feature = merge_mode(props)
        if merge_feature is not None:
            found.append(merge_feature)
        _, partial_feature = partial_updates(props)
        if partial_feature is not None:
            found.append(partial_feature)
        merge_properties = sorted(k for k in raw if k.startswith(_MERGE_PROPERTY_PREFIX))
        if merge_properties:
            found.append(TableFeature("record merge properties (custom delete markers, partial-update markers)",
                                      merge_properties[0], raw[merge_properties[0]]))
    if not props.populate_meta_fields and props.is_merge_on_read:
        _, encoding_feature = record_key_encoding(props)
        if encoding_feature is not None:
            found.append(encoding_feature)
    return found


def check_readable(props: TableProperties, *, where: str = "the table") -> MergeMode:
    """The table's merge mode, once nothing in ``props`` is refused; else the first refusal."""
    found = unsupported_features(props)
    if found:
        raise found[0].error(where)
    mode, _ = merge_mode(props)
    return mode or MergeMode.COMMIT_TIME_ORDERING  # a copy-on-write table's own rules do not matter to readers


# Hudi 1.2's type system (RFC-99) in the Avro schema: VECTOR is a fixed of little-endian elements that Hudi reads
# as an array; VARIANT is a record of metadata and value that Hudi's Spark 3.5 reader refuses ("VARIANT type is only
# supported in Spark 4.0+"). BLOB, a plain record of type, data and reference, reads as that record, as Hudi's does.
UNREAD_LOGICAL_TYPES = {
    "vector": "VECTOR columns (Hudi 1.2: fixed-size bytes Hudi reads as an array of numbers)",
    "variant": "VARIANT columns (Hudi 1.2; Hudi's own Spark 3.5 reader refuses them too)",
}


def _logical_types(schema: Any, path: str) -> Iterator[tuple[str, str]]:
    """(column path, logical type) of every Hudi type-system logical type in an Avro schema."""
    if isinstance(schema, list):
        for branch in schema:
            yield from _logical_types(branch, path)
        return
    if not isinstance(schema, dict):
        return
    if schema.get("logicalType") in UNREAD_LOGICAL_TYPES:
        yield path, str(schema["logicalType"])
        return
    for field in schema.get("fields") or ():
        if isinstance(field, dict):
            yield from _logical_types(field.get("type"), f"{path}.{field.get('name')}" if path else
                                      str(field.get("name")))
    for key in ("items", "values"):
        if key in schema:
            yield from _logical_types(schema[key], f"{path}.{'element' if key == 'items' else 'value'}")


def check_column_types(schema_json: str, *, where: str = "the table") -> None:
    """Refuse a record schema with a column of a type the readers do not decode (:data:`UNREAD_LOGICAL_TYPES`)."""
    try:
        schema = json.loads(schema_json)
    except ValueError:
        return  # the schema's own reader names what is wrong with it
    for column, logical in _logical_types(schema, ""):
        raise UnsupportedTableFeatureError(UNREAD_LOGICAL_TYPES[logical], f"column {column}'s Avro logicalType",
                                           logical, where=where)


# Commit metadata keys that change how files must be read.


def check_commit_readable(extra_metadata: Mapping[str, str], *, instant: str, where: str = "the table") -> None:
    """Refuse a commit whose metadata says its files need what the readers do not implement."""
    if uses_schema_on_read([extra_metadata]):
        raise UnsupportedTableFeatureError(
            "schema-on-read evolution in change queries (columns matched by id: renamed, dropped or retyped)",
            f"commit {instant} extraMetadata.{LATEST_SCHEMA_KEY}", "(an InternalSchema)", where=where)


def check_timeline_readable(timeline: Timeline, metadata: Mapping[Instant, CommitMetadata], *,
                            where: str = "the table", schema_on_read: bool = False) -> None:
    """Refuse a commit that needs schema on read unless the caller reads columns by id (``schema_on_read``: the
    snapshot readers and listing do). (A pending log compaction is read past: its blocks are of an instant not
    completed, which no reader merges.)"""
    if schema_on_read:
        return
    for instant, commit in metadata.items():
        check_commit_readable(commit.extra_metadata, instant=instant.requested_time, where=where)
