"""Which merge a table's readers use, by table version, as Hudi 1.2's ``HoodieReaderContext.initRecordMerger``
decides it: below version 8 the payload class; on version 8 the merge mode and strategy id as recorded, the
payload class only under the payload-based strategy; a custom merger is refused by name."""

from __future__ import annotations

import pytest

from hudi_connect.core.format.table_config import TableProperties
from hudi_connect.core.format.table_features import PAYLOAD_BASED, MergeMode, merge_mode

DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
LATEST_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
OWN_STRATEGY = "5b2b1c33-0d7c-4d1e-9d0a-3e4f1a2b3c4d"


def props(version: int, **raw: str) -> TableProperties:
    return TableProperties.from_properties({
        "hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ", "hoodie.table.version": str(version),
        "hoodie.table.recordkey.fields": "id", "hoodie.table.precombine.field": "ts",
        **{k.replace("_", "."): v for k, v in raw.items()}})


@pytest.mark.parametrize(("version", "mode", "strategy", "payload", "expected"), [
    (6, "", "", LATEST_PAYLOAD, MergeMode.COMMIT_TIME_ORDERING),  # the payload decides below version 8
    (8, "EVENT_TIME_ORDERING", "", LATEST_PAYLOAD, MergeMode.EVENT_TIME_ORDERING),  # the mode, not the payload
    (8, "CUSTOM", PAYLOAD_BASED, DEFAULT_PAYLOAD, MergeMode.EVENT_TIME_ORDERING),
    (8, "CUSTOM", PAYLOAD_BASED, LATEST_PAYLOAD, MergeMode.COMMIT_TIME_ORDERING),
    (8, "CUSTOM", OWN_STRATEGY, DEFAULT_PAYLOAD, None),  # a custom merger's strategy id wins: refused
    (9, "CUSTOM", OWN_STRATEGY, DEFAULT_PAYLOAD, None),
])
def test_merge_mode_by_version(version: int, mode: str, strategy: str, payload: str,
                               expected: MergeMode | None) -> None:
    raw = {"hoodie_compaction_payload_class": payload}
    if mode:
        raw["hoodie_record_merge_mode"] = mode
    if strategy:
        raw["hoodie_record_merge_strategy_id"] = strategy
    found, refusal = merge_mode(props(version, **raw))
    assert found == expected
    if expected is None:
        assert refusal is not None and refusal.property == "hoodie.record.merge.mode" and refusal.value == "CUSTOM"
        assert OWN_STRATEGY in (refusal.detail or "")
