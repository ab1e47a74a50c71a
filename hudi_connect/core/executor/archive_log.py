"""Decoding a version-6 table's archived timeline where its log files are: one row per completed instant.

    rows = task_rows(spark, [(uri,) for uri in archive_files], ARCHIVE_FILES).mapInArrow(
        decode_v6_archives, spark_schema(ARCHIVED_INSTANTS))          # client.timeline_view
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa

from hudi_connect.core.executor.refusals import worker_body
from hudi_connect.core.executor.storage import read_many
from hudi_connect.core.format.archived_timeline import (
    ACTION,
    COMPLETION_TIME,
    INSTANT_TIME,
    METADATA,
    v6_archive_entries,
)

ARCHIVE_FILES = pa.schema([("uri", pa.string())])
# the LSM timeline's columns, so that readers take either archive alike
ARCHIVED_INSTANTS = pa.schema([
    (INSTANT_TIME, pa.string()), (ACTION, pa.string()), (COMPLETION_TIME, pa.string()), (METADATA, pa.binary()),
])
_READ_AHEAD = 8  # archive files read at once: concurrently over object stores, yet few in memory


@worker_body
def decode_v6_archives(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: the completed instants (and write commits' metadata) of each archive file."""
    for batch in batches:
        uris = [str(uri) for uri in batch.column(0).to_pylist()]
        for start in range(0, len(uris), _READ_AHEAD):
            chunk = uris[start:start + _READ_AHEAD]
            yield from _chunk_entries(chunk, read_many(chunk))


def _chunk_entries(uris: list[str], contents: list[bytes]) -> Iterator[pa.RecordBatch]:
    for uri, content in zip(uris, contents, strict=True):
        entries = v6_archive_entries(content, where=f"the archive file {uri}")
        yield pa.RecordBatch.from_pylist(
            [{INSTANT_TIME: e.instant_time, ACTION: e.action, COMPLETION_TIME: e.completion_time, METADATA: e.metadata}
             for e in entries], schema=ARCHIVED_INSTANTS)
