"""A refusal raised in a Spark worker reaches the client as the library's own class (the text is what a
Spark 3.5 Connect client shows for an exception in ``mapInArrow``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hudi_connect.client.worker_errors import library_errors, worker_refusal
from hudi_connect.core import errors
from hudi_connect.core.errors import ServerMisconfiguredError, UnsupportedTableFeatureError

WORKER_TEXT = """An exception was thrown from the Python worker. Please see the stack trace below.
Traceback (most recent call last):
  File "/tmp/spark/userFiles/hudi_connect-5c3b.zip/hudi_connect/core/executor/slices.py", line 120, in _merged_blocks
    refuse_unsupported_block(block, uri)
  File "/tmp/spark/hudi_connect-5c3b.zip/hudi_connect/core/executor/slices.py", line 111, in refuse_unsupported_block
    raise UnsupportedTableFeatureError("log compaction", "log block header COMPACTED_BLOCK_TIMES",
hudi_connect.core.errors.UnsupportedTableFeatureError: f.log uses log compaction (log block header \
COMPACTED_BLOCK_TIMES=1), which hudi-connect's readers do not implement
"""


def test_a_worker_refusal_becomes_the_same_class() -> None:
    refusal = worker_refusal(RuntimeError(WORKER_TEXT))
    assert isinstance(refusal, UnsupportedTableFeatureError)
    assert str(refusal).startswith("f.log uses log compaction") and "raised in a Spark worker" in str(refusal)
    assert refusal.feature is None  # the constructor's details are not in the text


def test_other_worker_errors_stay_as_they_are() -> None:
    assert worker_refusal(RuntimeError("FileNotFoundError: part=p0/x.parquet")) is None
    assert worker_refusal(RuntimeError("hudi_connect.core.errors.NoSuchError: made up")) is None


def test_library_errors_raises_a_worker_refusal_as_ours_around_the_users_code() -> None:
    with pytest.raises(UnsupportedTableFeatureError) as caught, library_errors():
        raise RuntimeError(WORKER_TEXT)  # what collecting a DataFrame planned by the library raises
    assert "raised in a Spark worker" in str(caught.value)
    assert caught.value.__suppress_context__ and isinstance(caught.value.__context__, RuntimeError)
    with pytest.raises(RuntimeError, match="FileNotFoundError"), library_errors():
        raise RuntimeError("FileNotFoundError: part=p0/x.parquet")


def test_a_refusal_leaves_a_worker_body_with_a_one_frame_traceback_and_no_cause() -> None:
    """Spark 3.5's Connect server cuts a worker's traceback at 2,048 characters and the refusal's class and
    message are on its last line: a refusal raised deep in a body, from a storage error, must leave short."""
    import traceback

    from hudi_connect.core.errors import StorageAccessError
    from hudi_connect.core.executor.refusals import worker_body
    from hudi_connect.core.executor.storage import storage_access

    def deep(level: int) -> None:
        if level:
            deep(level - 1)
            return
        with storage_access("gs://lake/t/.hoodie", "listing"):
            raise PermissionError("403 Forbidden: no credential")

    @worker_body
    def body(batches: list[int]) -> Iterator[int]:
        yield from batches
        deep(10)

    with pytest.raises(StorageAccessError) as refused:
        list(body([1]))
    printed = "".join(traceback.format_exception(refused.value))
    assert "direct cause" not in printed and "During handling" not in printed
    frames = [line for line in printed.splitlines() if line.strip().startswith('File "')]
    assert len(frames) == 2 and "refusals.py" in frames[1], printed  # this caller's, and the body's own
    assert printed.rstrip().splitlines()[-1].startswith("hudi_connect.core.errors.StorageAccessError: listing gs://lake")


@pytest.mark.parametrize("text", [
    # Spark 3.5, at analysis; in a task; Spark 4's error class
    "[PATH_NOT_FOUND] Path does not exist: file:/tmp/t/p0/3f2a-0_0-12-30_20261126093001123.parquet.",
    "org.apache.spark.SparkException: Job aborted ... java.io.FileNotFoundException: File "
    "s3a://lake/t/p0/3f2a-0_0-12-30_20261126093001123.parquet does not exist\nIt is possible the underlying "
    "files have been updated.",
    "[FAILED_READ_FILE.FILE_NOT_EXIST] Encountered error while reading file "
    "file:///tmp/t/p0/.3f2a-0_20261126093001123.log.1_0-9-20. File does not exist.",
])
def test_a_data_file_sparks_scan_found_gone_is_a_concurrent_change(text: str) -> None:
    from hudi_connect.core.errors import ConcurrentTableChangeError

    refusal = worker_refusal(RuntimeError(text))
    assert isinstance(refusal, ConcurrentTableChangeError)
    assert refusal.path.split("/")[-1].startswith(("3f2a", ".3f2a")) and refusal.planned_at is None
    assert "is gone" in str(refusal)


def test_other_missing_paths_are_not_a_concurrent_change() -> None:
    assert worker_refusal(RuntimeError("[PATH_NOT_FOUND] Path does not exist: file:/tmp/t/.hoodie/hoodie.properties."))\
        is None
    assert worker_refusal(RuntimeError("[PATH_NOT_FOUND] Path does not exist: s3a://lake/exports/part-0.parquet."))\
        is None


def test_a_concurrent_change_raised_in_a_worker_keeps_its_file_and_instant() -> None:
    from hudi_connect.core.errors import ConcurrentTableChangeError

    raised = ConcurrentTableChangeError("s3a://lake/t/p0/f_1-0-1_20261126093001123.parquet", "20261126094501000")
    text = f"Traceback (most recent call last):\nhudi_connect.core.errors.ConcurrentTableChangeError: {raised}\n"
    arrived = worker_refusal(RuntimeError(text))
    assert isinstance(arrived, ConcurrentTableChangeError)
    assert (arrived.path, arrived.planned_at) == (raised.path, raised.planned_at)
    assert "raised in a Spark worker" in str(arrived)


def test_an_object_gone_between_its_head_and_its_get_is_a_missing_file_not_a_credential_problem() -> None:
    from hudi_connect.core.errors import ConcurrentTableChangeError
    from hudi_connect.core.executor.refusals import planned_file
    from hudi_connect.core.executor.storage import storage_access

    uri = "s3a://lake/t/p0/f_1-0-1_20261126093001123.parquet"
    with pytest.raises(ConcurrentTableChangeError) as refused, planned_file(uri, planned_at="20261126094501000"), \
            storage_access(uri):
        raise OSError("When reading from 'lake/t/p0/f.parquet': AWS Error NO_SUCH_KEY during GetObject operation: "
                      "The specified key does not exist.")
    assert refused.value.path == uri


@pytest.mark.parametrize("versions", [
    "different version 3.11 than that in driver 3.13",  # pyspark 3.5's worker
    "different version: 3.11 than that in driver: 3.13",  # pyspark 4.3's (met by a 3.13 client's run)
])
def test_a_client_of_another_python_than_the_workers_is_told_both(versions: str) -> None:
    # the text pyspark's worker raises (error class PYTHON_VERSION_MISMATCH), as the Connect client receives it
    spark_text = ("org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
                  "pyspark.errors.exceptions.base.PySparkRuntimeError: [PYTHON_VERSION_MISMATCH] Python in worker "
                  f"has {versions}, PySpark cannot run with different minor "
                  "versions.\nPlease check environment variables PYSPARK_PYTHON and PYSPARK_DRIVER_PYTHON are "
                  "correctly set.")
    refusal = worker_refusal(RuntimeError(spark_text))
    assert isinstance(refusal, ServerMisconfiguredError)
    assert "workers run Python 3.11 and this client Python 3.13" in str(refusal)


@pytest.mark.parametrize("kind", sorted((k for k in vars(errors).values()
                                         if isinstance(k, type) and issubclass(k, errors.HudiConnectError)),
                                        key=lambda k: k.__name__), ids=lambda k: k.__name__)
def test_every_library_error_a_worker_raises_comes_back_as_its_class(kind: type[errors.HudiConnectError]) -> None:
    # seed 70120: a LogDecodeError (no constructor of its own) came back as a TypeError from its `args`
    text = f"PythonException: ...\nhudi_connect.core.errors.{kind.__name__}: what went wrong at byte 0\n  at ..."
    refusal = worker_refusal(RuntimeError(text))
    assert type(refusal) is kind
    assert "what went wrong at byte 0 (raised in a Spark worker)" in str(refusal)
