"""The client-worker row contracts (issue #34): each defined once, its Spark schema derived from its Arrow schema."""

from __future__ import annotations

from typing import NamedTuple

import pyarrow as pa
import pytest

from hudi_connect.client.task_rows import declared_schema, spark_schema
from hudi_connect.core.executor.contracts import (
    CDC_SPLITS,
    LISTING,
    LOCATIONS,
    MATCHES,
    SLICES,
    CdcSplitRow,
    FileMatch,
    ListedFile,
    RecordLocation,
    RowContract,
    SliceRow,
)
from hudi_connect.core.executor.slices import listing_batch


def test_each_contract_round_trips_its_rows_and_declares_its_columns_to_spark() -> None:
    cases = [
        (SLICES, [SliceRow("p=a", "f1-0", "f1-0_0-1-1_001.parquet", []),
                  SliceRow("p=b", "f2-0", None, [".f2-0_002.log.1"])],
         "partition string, file_id string, base_file string, log_files array<string>"),
        (LISTING, [ListedFile("p=a", "f1.parquet", 5)], "partition string, name string, size bigint"),
        (MATCHES, [FileMatch(None, "f1.parquet", False)], "partition string, name string, may_match boolean"),
        (CDC_SPLITS, [CdcSplitRow("20261125000000000", "20261125000001000", "p=a", "f1-0", "f1-0_1.parquet", [],
                                  ["20261124000000000"], True, None, [".f1-0_2.log.1"], ["20261125000000000"], True,
                                  False, False, [], "DATA_BEFORE_AFTER")],
         "instant string, completion_time string, partition string, file_id string, before_base string, "
         "before_logs array<string>, before_valid array<string>, has_before boolean, after_base string, "
         "after_logs array<string>, after_valid array<string>, has_after boolean, before_without_meta boolean, "
         "after_without_meta boolean, cdc_files array<string>, cdc_mode string"),
        (LOCATIONS, [RecordLocation("k1", "p=a", "f1-0", 1764028800000)],
         "record_key string, partition string, file_id string, instant_millis bigint"),
    ]
    for contract, rows, ddl in cases:
        batch = contract.batch(rows)
        assert batch.schema == contract.schema and list(contract.rows(batch)) == rows
        declared = spark_schema(contract.schema)  # what a plan declares for mapInArrow, made on the client
        assert ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in declared.fields) == ddl
        assert declared_schema(contract.schema) is None  # as task rows: the server reads it from the Arrow data
        assert contract.batch([]).num_rows == 0


def test_a_contract_whose_row_and_schema_disagree_is_refused() -> None:
    class Pair(NamedTuple):
        a: str
        b: int

    with pytest.raises(TypeError, match="are not the schema's"):
        RowContract(Pair, pa.schema([("b", pa.int64()), ("a", pa.string())]))


def test_a_listing_batch_is_sorted_by_partition_and_name() -> None:
    batch = listing_batch([("p=b", "x", 1), ("p=a", "z", 2), ("p=a", "y", 3)])
    assert [r.name for r in LISTING.rows(batch)] == ["y", "z", "x"]


def test_task_rows_declare_a_schema_only_where_arrow_types_map_to_spark_in_more_than_one_way() -> None:
    plain = pa.schema([("a", pa.string()), ("b", pa.list_(pa.int64())), ("c", pa.struct([("d", pa.bool_())]))])
    assert declared_schema(plain) is None
    # a timestamp without a zone is TIMESTAMP_NTZ to the server and TIMESTAMP to pyspark's converter by default
    stamped = pa.schema([("a", pa.string()), ("t", pa.timestamp("us"))])
    declared = declared_schema(stamped)
    assert declared is not None and '"t"' in declared
