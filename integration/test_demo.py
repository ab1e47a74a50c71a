"""The demo (``hudi-connect demo``, ``ci/demo.sh``) shows what a plain-Python model of its three commits says:
written on the Hudi server, everything after read on the server without Hudi's jars."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from hudi_connect.demo import DELETE, TRIPS, UPSERT, run_demo
from hudi_connect.reverse import FileSink


def test_the_demo_shows_its_table_changes_and_export_as_the_model_says(
    spark: SparkSession, plain_spark: SparkSession, local_base_path: str, capsys: pytest.CaptureFixture[str],
) -> None:
    result = run_demo(spark, local_base_path, jar_free=plain_spark)
    out = capsys.readouterr().out

    model = {row[0]: row for row in TRIPS} | {row[0]: row for row in UPSERT}
    for row in DELETE:
        del model[row[0]]
    assert result.snapshot == tuple(model[k] for k in sorted(model))
    inserted = {str(row[0]) for row in TRIPS}
    assert result.changes == (
        tuple(("i", k) for k in sorted(inserted)),
        tuple(sorted((("u" if str(row[0]) in inserted else "i", str(row[0])) for row in UPSERT),
                     key=lambda change: change[1])),
        tuple(("d", str(row[0])) for row in DELETE),
    )
    # a commit's new keys go to new file groups, one per city: writes beside other writers rewrite no MOR base file
    new_keys = [row for row in UPSERT if str(row[0]) not in inserted]
    assert result.file_slices == len({row[2] for row in TRIPS}) + len({row[2] for row in new_keys})
    sink = FileSink(result.export_root, "json", spark=plain_spark)
    exported = sink.read_published().select("id", "name", "city", "amount", "ts").collect()
    assert result.records_streamed == len(model)
    assert sorted(tuple(r) for r in exported) == sorted(model.values())
    for step in range(1, 7):
        assert f"[{step}/6]" in out
    assert "server without Hudi's jars" in out and "BASE_FILE_INSERT" in out
