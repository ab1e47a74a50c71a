"""File sink: each batch as one directory of Parquet or JSON under a root (local, or S3/MinIO via s3a).

A batch goes to ``<root>/<sequence>_<begin>_<end>`` (``full`` for a full read),
in one data file with Spark's committer: the data file appears whole, by a
rename (local) or a single-object copy (S3), and ``_SUCCESS`` follows, so a
reader never sees part of a batch. Rows are flat: ``op``, ``record_key``,
``commit_time``, ``completion_time`` and the image's data columns (the before
image for deletes). Replaying the directories in sequence order rebuilds the
table. A directory left by a run that died is replaced, or, when complete,
kept: the streamer then re-sends that exact range, so nothing is duplicated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_connect.object_store import StorageOp, run_storage_ops
from hudi_connect.reverse.sink import BatchContext, sink_failure

FileFormat = Literal["parquet", "json"]
_BATCH_DIRECTORY = re.compile(r"^(?P<sequence>\d{10})_(?P<begin>full|\d{14,17})_(?P<end>\d{14,17})/$")


def batch_directory(context: BatchContext) -> str:
    return f"{context.sequence:010d}_{context.begin_completion_time or 'full'}_{context.end_completion_time}"


def flat_rows(batch: DataFrame) -> DataFrame:
    """op, record_key, commit and completion time, then the image's columns (before for deletes)."""
    image = F.when(F.col("op") == "d", F.col("before")).otherwise(F.col("after"))
    return batch.select("op", "record_key", "commit_time", "completion_time", image.alias("_image")).select(
        "op", "record_key", "commit_time", "completion_time", "_image.*")


@dataclass(frozen=True)
class FileSink:
    spark: SparkSession
    root: str
    format: FileFormat = "parquet"

    def __post_init__(self) -> None:
        if self.format not in ("parquet", "json"):
            raise ValueError(f"file format {self.format!r}: choose 'parquet' or 'json'")
        object.__setattr__(self, "root", self.root.rstrip("/"))

    def describe(self) -> str:
        return f"{self.root} ({self.format})"

    def _directories(self) -> dict[str, re.Match[str]]:
        names = run_storage_ops(self.spark, [StorageOp("list", self.root)])[0].names
        return {n.rstrip("/"): m for n in names if (m := _BATCH_DIRECTORY.match(n))}

    def _complete(self, directory: str) -> bool:
        return run_storage_ops(self.spark, [StorageOp("get", f"{self.root}/{directory}/_SUCCESS")])[0].ok

    def published_end(self, sequence: int) -> str | None:
        for name, match in self._directories().items():
            if int(match["sequence"]) == sequence and self._complete(name):
                return match["end"]
        return None

    def write(self, batch: DataFrame, context: BatchContext) -> None:
        target = batch_directory(context)
        leftovers = [n for n, m in self._directories().items() if int(m["sequence"]) >= context.sequence]
        if target in leftovers and self._complete(target):
            return  # a dead run published this very batch
        if leftovers:  # never checkpointed: partial output of dead runs
            run_storage_ops(self.spark, [StorageOp("delete", f"{self.root}/{n}") for n in leftovers])
        rows = flat_rows(batch).repartition(1).sortWithinPartitions("completion_time", "record_key")
        try:
            rows.write.format(self.format).mode("error").save(f"{self.root}/{target}")
        except PySparkException as error:
            raise sink_failure(self, context, error, "its directory is replaced on retry") from error

    def read_published(self) -> DataFrame:
        """Every published batch's rows, with their directory's sequence (for readers and tests)."""
        complete = sorted(n for n in self._directories() if self._complete(n))
        paths = [f"{self.root}/{n}" for n in complete]
        if not paths:
            raise FileNotFoundError(f"no published batch under {self.root}")
        return (self.spark.read.format(self.format).load(paths)
                .withColumn("sequence", F.regexp_extract(F.input_file_name(), r"/(\d{10})_", 1).cast("int")))
