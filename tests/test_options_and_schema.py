"""Write/read option builders and the pre-write schema checks (pure, no server)."""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from hudi_connect.core.errors import SchemaMismatchError
from hudi_connect.core.format.table_config import CdcLoggingMode, MetadataPartition, TableProperties, TableType
from hudi_connect.table import options as opts
from hudi_connect.table.options import TableSpec, WriteOperation
from hudi_connect.table.schema_check import check_write_schema, ensure_columns, type_accepts


def test_create_options_fix_keys_partitions_cdc_and_indexes() -> None:
    spec = TableSpec("t", ("id",), "ts", ("city",), TableType.COPY_ON_WRITE, CdcLoggingMode.OP_KEY_ONLY,
                     True, (MetadataPartition.RECORD_INDEX,), {"hoodie.parquet.small.file.limit": "0"})
    options = opts.create_options(spec)
    assert options["hoodie.datasource.write.recordkey.field"] == "id"
    assert options["hoodie.datasource.write.precombine.field"] == "ts"
    assert options["hoodie.datasource.write.keygenerator.class"] == opts.SIMPLE_KEYGEN
    assert options["hoodie.table.cdc.enabled"] == "true"
    assert options["hoodie.table.cdc.supplemental.logging.mode"] == "OP_KEY_ONLY"
    assert options["hoodie.metadata.record.index.enable"] == "true"
    assert options["hoodie.metadata.index.column.stats.enable"] == "false"
    assert options["hoodie.parquet.small.file.limit"] == "0"


@pytest.mark.parametrize(
    ("keys", "partitions", "generator"),
    [(("id",), (), opts.NON_PARTITIONED_KEYGEN), (("a", "b"), ("p",), opts.COMPLEX_KEYGEN),
     (("id",), ("p", "q"), opts.COMPLEX_KEYGEN), (("id",), ("p",), opts.SIMPLE_KEYGEN)],
)
def test_key_generator_follows_keys_and_partitions(
    keys: tuple[str, ...], partitions: tuple[str, ...], generator: str
) -> None:
    assert opts.key_generator(keys, partitions) == generator


def test_later_writes_keep_the_metadata_table_the_table_has() -> None:
    raw = {"hoodie.table.version": "9", "hoodie.table.name": "t", "hoodie.table.recordkey.fields": "id",
           "hoodie.table.metadata.partitions": "files,column_stats"}
    options = opts.table_write_options(TableProperties.from_properties(raw))
    assert options["hoodie.metadata.enable"] == "true"
    assert options["hoodie.metadata.index.column.stats.enable"] == "true"
    no_mdt = opts.table_write_options(TableProperties.from_properties({"hoodie.table.version": "9"}))
    assert no_mdt["hoodie.metadata.enable"] == "false"


def test_read_options() -> None:
    assert opts.time_travel_options("20250101000000000") == {"as.of.instant": "20250101000000000"}
    incremental = opts.incremental_options("1", "2", cdc=True)
    assert incremental["hoodie.datasource.query.type"] == "incremental"
    assert incremental["hoodie.datasource.query.incremental.format"] == "cdc"
    assert "hoodie.datasource.read.end.instanttime" not in opts.incremental_options("1")
    assert opts.operation_options(WriteOperation.DELETE_PARTITION, ["p=1", "p=2"])[
        "hoodie.datasource.write.partitions.to.delete"] == "p=1,p=2"


TABLE = StructType([StructField("id", IntegerType()), StructField("amount", DoubleType()),
                    StructField("price", DecimalType(10, 2)), StructField("name", StringType())])


def test_widening_is_accepted_narrowing_is_not() -> None:
    assert type_accepts(LongType(), IntegerType())
    assert type_accepts(DoubleType(), LongType())
    assert not type_accepts(IntegerType(), LongType())
    assert not type_accepts(IntegerType(), StringType())
    assert type_accepts(DecimalType(10, 2), DecimalType(8, 2))
    assert not type_accepts(DecimalType(10, 2), DecimalType(12, 2))


def test_schema_check_names_the_clashing_column_and_both_types() -> None:
    incoming = StructType([StructField("id", StringType()), *TABLE.fields[1:]])
    with pytest.raises(SchemaMismatchError, match="id: table has int, data has string"):
        check_write_schema(incoming, TABLE, table="/t")


def test_schema_check_names_missing_columns_and_allows_new_ones() -> None:
    with pytest.raises(SchemaMismatchError, match=r"lacks the column.s. name of /t"):
        check_write_schema(StructType(TABLE.fields[:3]), TABLE, table="/t")
    check_write_schema(StructType([*TABLE.fields, StructField("extra", StringType())]), TABLE, table="/t")


def test_ensure_columns_lists_what_is_there() -> None:
    with pytest.raises(SchemaMismatchError, match=r"lacks the column\(s\) ts \(it has: id, amount, price, name\)"):
        ensure_columns(TABLE, ["id", "ts"], what="the DataFrame to upsert")
