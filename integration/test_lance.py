"""Lance base files (Hudi 1.2, ``hoodie.table.base.file.format=LANCE``) read without Hudi's jars.

Hudi writes the tables on the ``hudi-lance`` server (Hudi 1.2 with the Lance jars it does not bundle);
our readers on the plain server, whose workers read ``.lance`` files with pylance, must equal Hudi's own
snapshot, time travel, incremental and change queries on the same server, and hudi-rs's snapshot.
History: the conformance matrix's (:mod:`integration.conformance_matrix`), so inserts, updates that
lose and win under event-time ordering, deletes and (MOR) an inline compaction into Lance base files.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from hudi import HudiTableBuilder
from hudi_connect_stack.testing.compare import arrow_multiset
from pyspark.sql import SparkSession

from hudi_connect.cdc import ChangeQuery
from hudi_connect.reader import TableReader
from hudi_connect.table.hudi_table import HudiTable
from hudi_connect.table_spec import FileIndex
from integration.conformance_matrix import Cell, write_history
from integration.test_conformance_matrix import IGNORED, assert_equal_reads, change_events, multiset

LANCE_OPTIONS = {
    "hoodie.table.base.file.format": "LANCE",
    # Lance is written through Spark's record type; Hudi keeps this per write, not in the table
    "hoodie.write.record.merge.custom.implementation.classes": "org.apache.hudi.DefaultSparkRecordMerger",
}


# CI: MOR (Lance base files and Avro log blocks); COW under --full
@pytest.mark.parametrize("table_type", [pytest.param("COPY_ON_WRITE", marks=pytest.mark.full), "MERGE_ON_READ"])
def test_lance_tables_read_equal_hudis(lance_spark: SparkSession, plain_spark: SparkSession, tmp_path: Path,
                                       table_type: str) -> None:
    # a bucket index: Hudi's bloom and simple indexes read base files' keys through its Avro reader, which
    # refuses Lance ("Lance base file format is currently only supported with the Spark engine")
    cell = Cell(table_type, "9", "simple", "avro", "event_time", "BUCKET", "off", "DATA_BEFORE_AFTER", "none")
    path = str(tmp_path / "table")
    # Lance file format 2.0 has no map encoding (its writer aborts the JVM), so no map column; nor a
    # timestamp_ntz one, which hudi-rs 0.x cannot read ("not yet implemented")
    write_history(lance_spark, cell, path, extra_options=LANCE_OPTIONS, drop_columns=("attrs", "tn"))
    table = HudiTable.open(lance_spark, path)
    assert table.properties.base_file_format == "LANCE"
    slices = [s for snapshot in FileIndex(plain_spark, path).list_files_at() for s in snapshot.file_slices]
    assert slices and all(s.base_file is None or s.base_file.name.endswith(".lance") for s in slices)
    assert any(s.base_file is not None for s in slices)
    assert_equal_reads(plain_spark, table, cell)
    ours = change_events(ChangeQuery(plain_spark, path).changes("earliest"))
    assert sum(ours.values()) > 20
    snapshot = TableReader(plain_spark, path).snapshot()
    assert snapshot.count() == 25  # ids 0..27 less the three deleted
    # hudi-rs reads Lance base files too: the second, independent oracle
    theirs = pa.Table.from_batches(HudiTableBuilder.from_base_uri(path).build().read())
    columns = sorted(c for c in snapshot.columns if c in theirs.column_names and c not in IGNORED)
    assert multiset(snapshot, columns) == arrow_multiset(theirs, columns)
