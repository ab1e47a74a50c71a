"""The file-system view agrees with hudi-rs's file slices on every fixture table."""

from __future__ import annotations

from pathlib import Path

import pytest
from hudi import HudiTableBuilder

from hudi_connect.format.fs_view import BaseFile, LogFile, StoredFile, file_slices_at, parse_data_file
from hudi_connect.testing.fixture_tables import fixture_names, local_table_view, unzip_fixture


def test_file_names_parse() -> None:
    base = parse_data_file(StoredFile("p", "c1690aed-ab5b-4e4a-aa70-d8de21cdf5df-0_0-70-148_20260307135840975.parquet"))
    assert base == BaseFile("p", "c1690aed-ab5b-4e4a-aa70-d8de21cdf5df-0", "20260307135840975",
                            "c1690aed-ab5b-4e4a-aa70-d8de21cdf5df-0_0-70-148_20260307135840975.parquet")
    log = parse_data_file(StoredFile("p", ".9c6ed25b-6c9d-4793-ad27-1c8518086b6a-0_20260307135835748.log.1_0-38-83"))
    assert isinstance(log, LogFile)
    assert (log.file_id, log.instant_time, log.version, log.write_token) == (
        "9c6ed25b-6c9d-4793-ad27-1c8518086b6a-0", "20260307135835748", 1, "0-38-83")
    cdc = parse_data_file(StoredFile("p", ".f1-0_20250101000000000.log.2_1-2-3.cdc"))
    assert isinstance(cdc, LogFile) and cdc.is_cdc
    for other in (".hoodie_partition_metadata", "x.parquet.crc", "._SUCCESS"):
        assert parse_data_file(StoredFile("p", other)) is None


@pytest.mark.parametrize("name", fixture_names())
def test_latest_file_slices_equal_hudi_rs(tmp_path: Path, name: str) -> None:
    base = unzip_fixture(name, tmp_path)
    view = local_table_view(base)
    props, timeline, files, replaced = view.properties, view.timeline, view.files, view.replaced
    ours = {
        (s.partition, s.file_id, s.base_file.name if s.base_file else "", tuple(sorted(f.name for f in s.log_files)))
        for s in file_slices_at(files, timeline, table_version=props.version, replaced=replaced)
    }
    rs_table = HudiTableBuilder.from_base_uri(str(base)).build()
    theirs = {
        (s.partition_path, s.file_id, s.base_file_name or "", tuple(sorted(s.log_file_names)))
        for s in rs_table.get_file_slices()
    }
    assert ours == theirs
