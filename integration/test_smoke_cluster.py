"""A Hudi write and read whose tasks run in executor JVMs of a standalone cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest
from pyspark.sql import SparkSession

from integration.test_smoke_hudi import read_back, write_history_and_model


@pytest.mark.cluster
def test_hudi_write_and_read_run_on_separate_executor_jvms(cluster_spark: SparkSession, s3a_base_path: str) -> None:
    # Defined here, not at module level: executors cannot import this test module,
    # and cloudpickle ships only nested functions by value.
    def _executor_jvm(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        """For each partition: the command line of the JVM that forked this Python worker."""
        import os

        def jvm_of(pid: int) -> str:
            while pid > 1:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline = f.read().replace(b"\0", b" ").decode()
                if "java" in cmdline.split(" ", 1)[0]:
                    return cmdline
                with open(f"/proc/{pid}/stat") as f:
                    pid = int(f.read().rsplit(")", 1)[1].split()[1])
            return ""

        for batch in batches:
            yield pd.DataFrame({"jvm": [jvm_of(os.getpid())] * len(batch)})

    jvms = {r.jvm for r in cluster_spark.range(0, 8, 1, 8).mapInPandas(_executor_jvm, "jvm string").collect()}
    assert jvms, "no task ran"
    assert all("org.apache.spark.executor.CoarseGrainedExecutorBackend" in jvm for jvm in jvms), jvms
    assert not any("SparkConnectServer" in jvm for jvm in jvms)

    model = write_history_and_model(cluster_spark, s3a_base_path, "MERGE_ON_READ")
    assert read_back(cluster_spark, s3a_base_path) == model
