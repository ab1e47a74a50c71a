"""RFC-51 inference cases chosen from real commit metadata (no server)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from hudi_connect_stack.testing.fixture_tables import local_table_view, unzip_fixture

from hudi_connect.cdc.cases import CdcInferenceCase, CdcSplit, infer_splits
from hudi_connect.cdc.plan import images_without_meta, touched_files, touched_partitions
from hudi_connect.core.format.fs_view import StoredFile
from hudi_connect.core.format.table_config import CdcLoggingMode
from hudi_connect.core.format.timeline import Action, Instant, InstantState


def _cases(tmp_path: Path, name: str) -> tuple[list[str], Counter[CdcInferenceCase]]:
    view = local_table_view(unzip_fixture(name, tmp_path))
    commits = list(view.timeline.write_commits())
    splits = infer_splits(commits, view.metadata, commits)
    return [s.instant.requested_time for s in splits], Counter(s.case for s in splits)


def test_mor_history_yields_inserts_log_files_and_replacements_but_not_table_services(tmp_path: Path) -> None:
    instants, cases = _cases(tmp_path, "mor_avro_v9_txns_simple_nometa")
    view = local_table_view(tmp_path / "mor_avro_v9_txns_simple_nometa" / "v9_txns_simple_nometa")
    services = {i.requested_time for i, m in view.metadata.items() if m.operation_type in ("COMPACT", "CLUSTER")}
    assert len(services) == 2  # README: one compaction and one clustering
    assert not services & set(instants), "compaction and clustering change no record"
    assert cases[CdcInferenceCase.BASE_FILE_INSERT] > 0
    assert cases[CdcInferenceCase.LOG_FILE] > 0
    assert cases[CdcInferenceCase.REPLACE_COMMIT] > 0  # the overwrite of partition eu
    assert cases[CdcInferenceCase.AS_IS] == 0  # written without CDC


def test_cow_without_cdc_rewrites_base_files(tmp_path: Path) -> None:
    _, cases = _cases(tmp_path, "cow_v9_txns_simple_nometa")
    assert cases[CdcInferenceCase.BASE_FILE_REWRITE] > 0
    assert cases[CdcInferenceCase.LOG_FILE] == 0


def test_every_split_knows_the_commit_before_it(tmp_path: Path) -> None:
    view = local_table_view(unzip_fixture("cow_v6_nonpartitioned", tmp_path))
    commits = list(view.timeline.write_commits())
    splits = infer_splits(commits, view.metadata, commits[1:])
    assert splits and all(s.previous_commit == commits[0] for s in splits)
    assert all(s.describe().startswith(commits[1].requested_time) for s in splits)


def test_image_shapes_follow_hudis_logging_modes() -> None:
    assert images_without_meta(CdcInferenceCase.AS_IS, CdcLoggingMode.DATA_BEFORE_AFTER) == (True, True)
    assert images_without_meta(CdcInferenceCase.AS_IS, CdcLoggingMode.DATA_BEFORE) == (True, False)
    assert images_without_meta(CdcInferenceCase.AS_IS, CdcLoggingMode.OP_KEY_ONLY) == (False, False)
    assert images_without_meta(CdcInferenceCase.LOG_FILE, CdcLoggingMode.DATA_BEFORE_AFTER) == (False, False)


def test_a_change_query_keeps_only_the_files_its_splits_touch() -> None:
    """The client holds the files of the range's file groups, not the table's (issue #33)."""
    commit = Instant("20260101000000001", Action.COMMIT, InstantState.COMPLETED, "20260101000000002")
    splits = [CdcSplit(commit, CdcInferenceCase.AS_IS, "p=1", "g1-0", ("p=1/.g1-0_20260101000000001.log.1_0-1-1.cdc",),
                       None),
              CdcSplit(commit, CdcInferenceCase.BASE_FILE_INSERT, "", "g9-0", ("g9-0_0-1-1_20260101000000001.parquet",),
                       None)]
    files = [StoredFile("p=1", "g1-0_0-1-1_20260101000000001.parquet"),
             StoredFile("p=1", "g1-0_0-1-1_20250101000000001.parquet"),
             StoredFile("p=1", ".g1-0_20260101000000001.log.1_0-1-1.cdc"),
             StoredFile("p=1", "g2-0_0-1-1_20260101000000001.parquet"),  # another group, same partition
             StoredFile("p=2", "g1-0_0-1-1_20260101000000001.parquet"),  # same id, another partition
             StoredFile("p=1", ".hoodie_partition_metadata"),
             StoredFile("", "g9-0_0-1-1_20260101000000001.parquet"),
             StoredFile("", "g8-0_0-1-1_20260101000000001.parquet")]
    assert touched_partitions(splits) == {"p=1", ""}
    assert touched_files(files, splits) == [files[0], files[1], files[2], files[6]]
