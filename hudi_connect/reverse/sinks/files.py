"""File sink: each batch as one directory of Parquet or JSON under a root (local, or S3/MinIO via s3a).

A batch goes to ``<root>/<sequence>_<begin>_<end>/`` (``full`` for a full read)
as one data file and ``_SUCCESS``. Rows are flat: ``op``, ``record_key``,
``commit_time``, ``completion_time`` and the image's data columns (the before
image for deletes), in commit order, and within one commit a key's delete before
its insert (a replace commit moves keys that way); replaying the directories in
sequence order, and each file in its row order, rebuilds the table.

Publishing is fenced, so that nothing is ever there twice, even when a killed
client's write still runs on the server: Spark writes the batch into a hidden
staging directory (``_staging/``, which readers skip), then one task of the live
client claims the sequence number by creating ``_published/<sequence>`` only if
absent (naming the batch's range), copies the file into place in one visible
step and writes ``_SUCCESS``. A dead run that claimed a range makes the next run
send that same range again (:meth:`FileSink.published_end`).
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from dataclasses import dataclass, field
from typing import Literal

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_connect.cdc.query import delete_first
from hudi_connect.client.remote_files import run_storage_ops
from hudi_connect.core.errors import SinkError
from hudi_connect.core.executor.object_store import StorageOp, StorageResult
from hudi_connect.reverse.changes import row_image
from hudi_connect.reverse.sink import BatchContext, sink_failure

FileFormat = Literal["parquet", "json"]
_BATCH_DIRECTORY = re.compile(r"^(?P<sequence>\d{10})_(?P<begin>full|\d{14,17})_(?P<end>\d{14,17})/$")


def batch_directory(context: BatchContext) -> str:
    """The batch's directory name under the root: ``<sequence>_<begin or 'full'>_<end>`` (completion times)."""
    return f"{context.sequence:010d}_{context.begin_completion_time or 'full'}_{context.end_completion_time}"


def flat_rows(batch: DataFrame) -> DataFrame:
    """op, record_key, commit and completion time, then the image's columns (before for deletes)."""
    return batch.select("op", "record_key", "commit_time", "completion_time", row_image().alias("_image")).select(
        "op", "record_key", "commit_time", "completion_time", "_image.*")


@dataclass(frozen=True)
class FileSink:
    """A reverse-stream (RFC-70) sink writing each batch as one directory of Parquet or JSON under ``root``.

    Exactly once: a batch's directory is published by a fenced claim, and a range a dead run claimed is
    sent again whole (:meth:`published_end`). Replaying the directories in sequence order rebuilds the table.

    Its arguments are shaped as every sink's: where the batches go, then how. It sends through its stream's
    session (the stream binds it); ``spark`` is needed only to read what was published outside a stream.

    Example::

        sink = FileSink("s3a://lake/exports/trips", "json")
        ReverseStream(spark, "s3a://lake/trips", "trips-export", [sink]).run_once()
        sink.read_published(spark).show()
    """

    root: str
    format: FileFormat = "parquet"
    spark: SparkSession | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.format not in ("parquet", "json"):
            raise ValueError(f"file format {self.format!r}: choose 'parquet' or 'json'")
        object.__setattr__(self, "root", self.root.rstrip("/"))

    def describe(self) -> str:
        """The root and format (for checkpoints and the CLI)."""
        return f"{self.root} ({self.format})"

    def on_session(self, spark: SparkSession) -> FileSink:
        """This sink on a new session (the stream reconnected)."""
        return dataclasses.replace(self, spark=spark)

    def _session(self, spark: SparkSession | None = None) -> SparkSession:
        session = spark or self.spark
        if session is None:
            raise ValueError(f"the file sink at {self.root} has no session: give it to a stream, or pass spark")
        return session

    def _directories(self, spark: SparkSession | None = None) -> dict[str, re.Match[str]]:
        names = run_storage_ops(self._session(spark), [StorageOp.list(self.root)])[0].names
        return {n.rstrip("/"): m for n in names if (m := _BATCH_DIRECTORY.match(n))}

    def _claim(self, sequence: int) -> str:
        return f"{self.root}/_published/{sequence:010d}"

    def claims_op(self) -> StorageOp:
        """The op reading this sink's last claim, for the streamer to run in its timeline's task (no job of its
        own): :meth:`published_end_from` reads what it found."""
        return StorageOp.last(f"{self.root}/_published")

    def published_end_from(self, last_claim: StorageResult, sequence: int) -> str | None:
        """:meth:`published_end` from what :meth:`claims_op` found. Claims are made in sequence order, so a
        dead run's claim of ``sequence`` is the last one; were it not, it is read on its own."""
        name = self._claim(sequence).rsplit("/", 1)[1]
        if name not in last_claim.names:
            return None
        visible = [n for n in last_claim.names if not n.endswith("/") and not n.startswith(".")]
        claimed = last_claim if visible[-1] == name else \
            run_storage_ops(self._session(), [StorageOp.get(self._claim(sequence))])[0]
        match = _BATCH_DIRECTORY.match(claimed.text.strip() + "/") if claimed.ok else None
        return match["end"] if match else None

    def published_end(self, sequence: int) -> str | None:
        """The end (completion time) of the range claimed for batch ``sequence`` under ``_published/``, if a
        run claimed it: the streamer then sends that same range again."""
        return self.published_end_from(run_storage_ops(self._session(), [self.claims_op()])[0], sequence)

    def write(self, batch: DataFrame, context: BatchContext) -> None:
        """Write the batch as flat rows in commit order into a staging directory, then, in one task, claim its
        sequence, copy its one data file into the batch's directory and mark it ``_SUCCESS``. SinkError when
        another run published this sequence for another range."""
        target = batch_directory(context)
        staging = f"{self.root}/_staging/{target}_{uuid.uuid4().hex[:12]}"
        flat = flat_rows(batch)
        # one file: a persisted batch's cached partitions are read by the one writing task (no shuffle); any
        # other is computed in parallel and gathered
        one = flat.coalesce(1) if context.persisted else flat.repartition(1)
        rows = one.sortWithinPartitions("completion_time", "commit_time", "record_key", delete_first())
        try:
            rows.write.format(self.format).mode("error").save(staging)
        except PySparkException as error:
            raise sink_failure(self, context, error, "nothing was published") from error
        publish = [StorageOp.copy_data_file(staging, f"{self.root}/{target}"),
                   StorageOp.put(f"{self.root}/{target}/_SUCCESS"), StorageOp.delete(staging)]
        if run_storage_ops(self._session(), [StorageOp.create(self._claim(context.sequence), target), *publish])[0].ok:
            return
        owner = run_storage_ops(self._session(), [StorageOp.get(self._claim(context.sequence))])[0].text.strip()
        if owner != target:  # another live run published this sequence for another range
            raise SinkError(f"batch {context.sequence} of {context.stream!r} under {self.root} was published "
                            f"as {owner} by another run of the stream; this run's {target} is not")
        run_storage_ops(self._session(), publish)  # a dead run claimed this range: publish it now

    def read_published(self, spark: SparkSession | None = None) -> DataFrame:
        """Every published batch's rows, with their directory's sequence (for readers and tests), read through
        ``spark`` (default: the session the sink has)."""
        session = self._session(spark)
        names = sorted(self._directories(session))
        markers = run_storage_ops(session, [StorageOp.get(f"{self.root}/{n}/_SUCCESS") for n in names])
        paths = [f"{self.root}/{n}" for n, marker in zip(names, markers, strict=True) if marker.ok]
        if not paths:
            raise FileNotFoundError(f"no published batch under {self.root}")
        return (session.read.format(self.format).load(paths)
                .withColumn("sequence", F.regexp_extract(F.input_file_name(), r"/(\d{10})_", 1).cast("int")))
