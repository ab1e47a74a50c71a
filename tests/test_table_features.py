"""What the jar-free readers refuse, by name: one test per refusal, each starting from a real table's
``hoodie.properties`` (the shared fixtures, written by Hudi) with one property changed; and the merge
mode each real table resolves to."""

from __future__ import annotations

import json
import zipfile

import pyarrow as pa
import pytest
from hudi_connect_stack.testing.fixture_tables import fixture_names, fixtures_dir

from hudi_connect.core.errors import UnsupportedTableFeatureError
from hudi_connect.core.executor.listing import PartitionFilter
from hudi_connect.core.executor.slices import SliceReadConfig, record_keys
from hudi_connect.core.format.commit_metadata import CommitMetadata
from hudi_connect.core.format.expressions import col
from hudi_connect.core.format.fs_view import StoredFile, parse_data_file
from hudi_connect.core.format.log.format import HeaderKey, LogBlock, LogBlockType
from hudi_connect.core.format.spec_models import PartitionDescriptor
from hudi_connect.core.format.table_config import TableProperties, parse_java_properties
from hudi_connect.core.format.table_features import (
    KeyEncoding,
    MergeMode,
    check_column_types,
    check_commit_readable,
    check_readable,
    check_timeline_readable,
    opaque_partition_fields,
    record_key_encoding,
    unsupported_features,
)
from hudi_connect.core.format.timeline import Action, Instant, InstantState, Timeline


def fixture_properties(name: str) -> dict[str, str]:
    with zipfile.ZipFile(fixtures_dir() / f"{name}.zip") as archive:
        member = next(n for n in archive.namelist()
                      if n.endswith(".hoodie/hoodie.properties") and "/metadata/" not in n and "__MACOSX" not in n)
        return parse_java_properties(archive.read(member).decode())


def props_of(name: str, **changes: str | None) -> TableProperties:
    raw = fixture_properties(name)
    for key, value in changes.items():
        key = key.replace("__", ".")
        if value is None:
            raw.pop(key, None)
        else:
            raw[key] = value
    return TableProperties.from_properties(raw)


V6_MOR, V8_COW, V9_MOR = "mor_avro_v6_trips_8i1u", "cow_v8_simplekeygen_nonhivestyle", "mor_avro_v9_txns_simple_nometa"


@pytest.mark.parametrize("name", fixture_names())
def test_every_shared_fixture_is_readable(name: str) -> None:
    check_readable(TableProperties.from_properties(fixture_properties(name)))


@pytest.mark.parametrize(("name", "mode"), [
    # version 6: the payload class decides; OverwriteWithLatestAvroPayload is commit-time ordering
    ("mor_avro_v6_trips_8i1u", MergeMode.COMMIT_TIME_ORDERING),
    ("cow_v6_nonpartitioned", MergeMode.EVENT_TIME_ORDERING),  # no payload, an ordering field: Default payload
    ("cow_v8_nonpartitioned", MergeMode.EVENT_TIME_ORDERING),
    ("mor_avro_v9_txns_simple_nometa", MergeMode.EVENT_TIME_ORDERING),
])
def test_merge_mode_of_real_tables(name: str, mode: MergeMode) -> None:
    assert check_readable(TableProperties.from_properties(fixture_properties(name))) is mode


def test_merge_mode_rules_by_version() -> None:
    assert check_readable(props_of(V9_MOR, hoodie__record__merge__mode="COMMIT_TIME_ORDERING")) \
        is MergeMode.COMMIT_TIME_ORDERING
    no_ordering = props_of(V9_MOR, hoodie__record__merge__mode=None, hoodie__table__ordering__fields=None,
                           hoodie__table__precombine__field=None)
    assert check_readable(no_ordering) is MergeMode.COMMIT_TIME_ORDERING
    # v6: the payload class wins over the strategy id (it was only 0.x's default)
    default_payload = props_of(V6_MOR, hoodie__compaction__payload__class=(
        "org.apache.hudi.common.model.DefaultHoodieRecordPayload"))
    assert check_readable(default_payload) is MergeMode.EVENT_TIME_ORDERING


REFUSALS = [
    # (fixture, {property: value}, words the error must name)
    (V9_MOR, {"hoodie.table.base.file.format": "ORC"}, ["Orc base files", "ORC"]),
    (V9_MOR, {"hoodie.table.base.file.format": "HFILE"}, ["Hfile base files"]),
    (V9_MOR, {"hoodie.table.multiple.base.file.formats.enable": "true"}, ["several formats"]),
    (V9_MOR, {"hoodie.table.log.file.format": "PARQUET"}, ["log files of another format"]),
    (V9_MOR, {"hoodie.table.format": "iceberg"}, ["table format plug-in", "iceberg"]),
    (V9_MOR, {"hoodie.timeline.layout.version": "1"}, ["timeline layout"]),
    (V9_MOR, {"hoodie.partition.metafile.use.base.format": "true"}, ["partition metadata files"]),
    (V9_MOR, {"hoodie.datasource.write.drop.partition.columns": "true"}, ["partition columns dropped"]),
    (V9_MOR, {"hoodie.datasource.write.slash.separated.date.partitioning": "true"}, ["slash-separated"]),
    (V6_MOR, {"hoodie.table.keygenerator.class": "com.example.MyKeyGenerator"},
     ["user-defined key generator", "com.example.MyKeyGenerator"]),
    (V9_MOR, {"hoodie.table.keygenerator.type": "GLOBAL_DELETE"}, ["global_delete key generator"]),
    (V9_MOR, {"hoodie.table.keygenerator.type": "SPARK_SQL_UUID"}, ["spark_sql_uuid key generator"]),
    (V9_MOR, {"hoodie.record.merge.mode": "CUSTOM"}, ["custom record merger", "CUSTOM"]),
    (V9_MOR, {"hoodie.record.merge.mode": "SOMETHING_NEW"}, ["unknown record merge mode", "SOMETHING_NEW"]),
    (V9_MOR, {"hoodie.record.merge.strategy.id": "1897ef5f-18bc-4557-939c-9d6a8afd1519"},
     ["merge strategy of its own", "1897ef5f"]),
    (V6_MOR, {"hoodie.compaction.payload.class": "org.apache.hudi.common.model.PartialUpdateAvroPayload"},
     ["payload class", "PartialUpdateAvroPayload"]),
    (V6_MOR, {"hoodie.compaction.payload.class":
              "org.apache.hudi.common.model.OverwriteNonDefaultsWithLatestAvroPayload"},
     ["payload class", "OverwriteNonDefaultsWithLatestAvroPayload"]),
    (V6_MOR, {"hoodie.compaction.payload.class": "com.example.MyPayload"}, ["payload class", "com.example.MyPayload"]),
    (V9_MOR, {"hoodie.table.partial.update.mode": "FILL_UNAVAILABLE"}, ["partial updates", "FILL_UNAVAILABLE"]),
    (V9_MOR, {"hoodie.table.partial.update.mode": "KEEP_VALUES"}, ["partial updates", "KEEP_VALUES"]),
    (V9_MOR, {"hoodie.record.merge.property.hoodie.payload.delete.field": "Op"},
     ["record merge properties", "hoodie.payload.delete.field"]),
    (V6_MOR, {"hoodie.populate.meta.fields": "false", "hoodie.table.recordkey.fields": "uuid",
              "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator"},
     ["unknown key encoding"]),
]


@pytest.mark.parametrize(("name", "changes", "named"), REFUSALS,
                         ids=[f"{next(iter(c))}={next(iter(c.values()))}" for _, c, _ in REFUSALS])
def test_refused_by_name(name: str, changes: dict[str, str], named: list[str]) -> None:
    raw = fixture_properties(name)
    raw.update(changes)
    props = TableProperties.from_properties(raw)
    with pytest.raises(UnsupportedTableFeatureError) as caught:
        check_readable(props, where="the table at /t")
    message = str(caught.value)
    for word in named:
        assert word.lower() in message.lower(), message
    assert "/t" in message
    assert caught.value.property in message and caught.value.value in message
    # the same table without the change is readable, so the refusal is that property's doing
    assert unsupported_features(TableProperties.from_properties(fixture_properties(name))) == []


def test_custom_key_generator_of_simple_fields_is_read() -> None:
    props = props_of(V9_MOR, hoodie__table__keygenerator__type="CUSTOM",
                     hoodie__table__partition__fields="region:simple")
    check_readable(props)
    assert props.partition_fields == ("region",)
    assert opaque_partition_fields(props) == frozenset()


@pytest.mark.parametrize(("changes", "opaque"), [
    ({"hoodie.table.keygenerator.type": "TIMESTAMP"}, {"region"}),
    ({"hoodie.table.keygenerator.type": "TIMESTAMP_AVRO"}, {"region"}),
    ({"hoodie.table.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedKeyGenerator"}, {"region"}),
    ({"hoodie.table.keygenerator.type": "CUSTOM", "hoodie.table.partition.fields": "region:timestamp,txn_id:simple"},
     {"region"}),
    # version 6 writes no part types: any part might be a timestamp
    ({"hoodie.table.keygenerator.type": "CUSTOM", "hoodie.table.partition.fields": "region,txn_id"},
     {"region", "txn_id"}),
])
def test_timestamp_partition_paths_are_read_but_never_parsed_as_values(changes: dict[str, str],
                                                                       opaque: set[str]) -> None:
    raw = fixture_properties(V9_MOR)
    raw.update(changes)
    props = TableProperties.from_properties(raw)
    check_readable(props)
    assert opaque_partition_fields(props) == opaque


def test_a_formatted_timestamp_path_never_prunes() -> None:
    schema = pa.schema([("event_ms", pa.int64()), ("city", pa.string())])
    fields = ("event_ms", "city")
    # "20240101" would parse as the integer 20240101, which is not the column's value
    plain = PartitionDescriptor.parse("20240101/paris", fields, schema, hive_style=False, url_encoded=False)
    assert plain.values == {"event_ms": 20240101, "city": "paris"}
    opaque = PartitionDescriptor.parse("20240101/paris", fields, schema, hive_style=False, url_encoded=False,
                                       opaque=frozenset({"event_ms"}))
    assert opaque.values == {"city": "paris"}
    keep = PartitionFilter(fields, schema, False, False, col("event_ms") > 1704067200000, frozenset({"event_ms"}))
    assert keep.keeps("20240101/paris")
    assert not PartitionFilter(fields, schema, False, False, col("event_ms") > 1704067200000).keeps("20240101/paris")


def test_record_key_encoding() -> None:
    assert record_key_encoding(props_of(V9_MOR))[0] is KeyEncoding.VALUE_ONLY
    complex_v9 = props_of(V9_MOR, hoodie__table__keygenerator__type="COMPLEX")
    assert record_key_encoding(complex_v9)[0] is KeyEncoding.FIELD_PREFIXED
    explicit = props_of(V8_COW, hoodie__table__keygenerator__type="COMPLEX",
                        hoodie__table__complex__keygenerator__encoding="VALUE_ONLY")
    assert record_key_encoding(explicit)[0] is KeyEncoding.VALUE_ONLY
    assert record_key_encoding(props_of(V9_MOR, hoodie__table__recordkey__fields="txn_id,region"))[0] \
        is KeyEncoding.FIELD_PREFIXED


def test_keys_built_from_data_spell_nulls_and_empties_as_hudi_does() -> None:
    table = pa.table({"a": pa.array([1, None, 3]), "b": pa.array(["x", "y", ""])})
    config = SliceReadConfig("file:///t", table.schema, ("a", "b"), (), True, frozenset())
    assert record_keys(table, config).to_pylist() == ["a:1,b:x", "a:__null__,b:y", "a:3,b:__empty__"]
    one = SliceReadConfig("file:///t", table.schema, ("a",), (), True, frozenset(), field_prefixed_keys=True)
    assert record_keys(table, one).to_pylist() == ["a:1", "a:__null__", "a:3"]
    bare = SliceReadConfig("file:///t", table.schema, ("a",), (), True, frozenset())
    assert record_keys(table, bare).to_pylist() == ["1", None, "3"]


@pytest.mark.parametrize(("name", "feature"), [
    ("875d6ca6-0_1-27-71_20260503194334929.orc", "Orc base files"),
    (".875d6ca6-0_20260503194343537.log.parquet", "native Parquet log files"),
    (".875d6ca6-0_20260503194343537.deletes.parquet", "native Parquet log files"),
])
def test_data_files_of_other_formats_are_refused_not_skipped(name: str, feature: str) -> None:
    with pytest.raises(UnsupportedTableFeatureError, match=feature):
        parse_data_file(StoredFile("us", name, 10))


def test_copy_on_write_readers_ignore_merge_rules() -> None:
    # the writer merged: a COW table's payload or merge mode changes nothing its readers do
    check_readable(props_of(V8_COW, hoodie__compaction__payload__class="com.example.MyPayload",
                            hoodie__record__merge__mode="CUSTOM"))


def test_lance_base_files_are_base_files() -> None:
    check_readable(props_of(V9_MOR, hoodie__table__base__file__format="LANCE"))
    parsed = parse_data_file(StoredFile("us", "875d6ca6-0_1-27-71_20260503194334929.lance", 10))
    assert parsed is not None and parsed.instant_time == "20260503194334929"


@pytest.mark.parametrize("name", [
    ".hoodie_partition_metadata", ".875d6ca6-0_1-27-71_20260503194334929.parquet.crc",
    "..875d6ca6-0_20260503194343537.log.1_0-60-156.crc",
])
def test_bookkeeping_files_are_not_data(name: str) -> None:
    assert parse_data_file(StoredFile("us", name, 10)) is None


def block(**headers: str) -> LogBlock:
    return LogBlock(LogBlockType.AVRO_DATA, 1, {HeaderKey(k): v for k, v in headers.items()}, {}, 0, 0, b"")


def test_schema_on_read_is_refused_in_change_queries_and_a_pending_log_compaction_read_past() -> None:
    check_commit_readable({"schema": "{}"}, instant="20250101000000000")
    with pytest.raises(UnsupportedTableFeatureError, match="schema-on-read evolution in change queries"):
        check_commit_readable({"latest_schema": '{"max_column_id": 3}'}, instant="20250101000000000")
    commit = Instant("20250101000000000", Action.DELTA_COMMIT, InstantState.COMPLETED, "20250101000000001")
    pending = Instant("20250102000000000", Action.LOG_COMPACTION, InstantState.REQUESTED)
    metadata = {commit: CommitMetadata("UPSERT", (), {}, {})}
    check_timeline_readable(Timeline((commit,)), metadata)
    check_timeline_readable(Timeline((commit, pending)), metadata)  # its blocks are of a pending instant
    # the snapshot readers and listing match columns by id (hudi_connect.core.format.internal_schema)
    evolved = {commit: CommitMetadata("UPSERT", (), {}, {"latest_schema": '{"max_column_id": 3}'})}
    check_timeline_readable(Timeline((commit,)), evolved, schema_on_read=True)
    with pytest.raises(UnsupportedTableFeatureError, match="change queries"):
        check_timeline_readable(Timeline((commit,)), evolved)


def _record(*fields: dict[str, object]) -> str:
    return json.dumps({"type": "record", "name": "r", "fields": [{"name": "id", "type": "string"}, *fields]})


VECTOR_TYPE = {"type": "fixed", "name": "vector_float_4", "size": 16, "logicalType": "vector", "dimension": 4,
               "elementType": "FLOAT", "storageBacking": "FIXED_BYTES"}
VARIANT_TYPE = {"type": "record", "name": "v", "logicalType": "variant",
                "fields": [{"name": "metadata", "type": "bytes"}, {"name": "value", "type": "bytes"}]}


@pytest.mark.parametrize(("field", "column", "feature"), [
    ({"name": "embedding", "type": ["null", VECTOR_TYPE]}, "embedding", "VECTOR"),
    ({"name": "doc", "type": VARIANT_TYPE}, "doc", "VARIANT"),
    ({"name": "s", "type": {"type": "record", "name": "s", "fields": [
        {"name": "inner", "type": {"type": "array", "items": VECTOR_TYPE}}]}}, "s.inner.element", "VECTOR"),
])
def test_hudi_12_vector_and_variant_columns_are_refused_by_name(field: dict[str, object], column: str,
                                                                feature: str) -> None:
    with pytest.raises(UnsupportedTableFeatureError, match=rf"{feature} columns .*column {column}'s Avro logicalType"):
        check_column_types(_record(field), where="t")


def test_blob_and_ordinary_columns_are_read() -> None:
    blob = {"type": "record", "name": "blob", "logicalType": "blob", "fields": [
        {"name": "type", "type": {"type": "enum", "name": "blob_storage_type", "symbols": ["INLINE", "OUT_OF_LINE"]}},
        {"name": "data", "type": ["null", "bytes"], "default": None}]}
    decimal = {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}
    check_column_types(_record({"name": "b", "type": blob}, {"name": "d", "type": decimal}))


# --- hoodie.properties met while Hudi rewrites it ---------------------------------------------------------------

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hudi_connect.core.format.table_config import (  # noqa: E402
    CHECKSUM_KEY,
    properties_are_whole,
    properties_checksum,
)

WHOLE = {"hoodie.table.name": "trips", "hoodie.database.name": "lake", "hoodie.table.version": "8",
         "hoodie.table.type": "MERGE_ON_READ", "hoodie.table.recordkey.fields": "id",
         CHECKSUM_KEY: str(properties_checksum({"hoodie.table.name": "trips", "hoodie.database.name": "lake"}))}


def test_hudis_checksum_is_crc32_of_database_and_table_name() -> None:
    assert properties_checksum({"hoodie.table.name": "v9_txns_cow_simple_meta", "hoodie.database.name": "default"}) \
        == 2985977913  # a table Hudi 1.1 wrote (the hudi-rs fixture cow_v9_txns_simple_meta)


@given(order=st.permutations(sorted(WHOLE)), cut=st.integers(0, 400))
def test_a_file_cut_short_is_whole_only_if_it_keeps_what_names_the_table(order: list[str], cut: int) -> None:
    text = "#Updated at 2026-11-28T21:00:00Z\n" + "".join(f"{key}={WHOLE[key]}\n" for key in order)
    read = parse_java_properties(text[:cut])
    essential = {"hoodie.table.name", "hoodie.database.name", "hoodie.table.version", "hoodie.table.type",
                 CHECKSUM_KEY}
    keeps_them = text[:cut].endswith("\n") and all(read.get(key) == WHOLE[key] for key in essential)
    assert properties_are_whole(text[:cut]) is keeps_them


def test_an_empty_file_or_another_tables_checksum_is_not_whole_and_a_table_before_checksums_is() -> None:
    def text(properties: dict[str, str]) -> str:
        return "".join(f"{key}={value}\n" for key, value in properties.items())

    assert properties_are_whole(text(WHOLE))
    assert not properties_are_whole("")
    assert not properties_are_whole(text(WHOLE | {"hoodie.table.name": "other"}))
    old = {k: v for k, v in WHOLE.items() if k != CHECKSUM_KEY}
    assert not properties_are_whole(text(old))  # version 8 always carries one
    assert properties_are_whole(text(old | {"hoodie.table.version": "2"}))  # refused later, by its version
