"""Small-object operations run on an executor, where the storage credentials live.

The client holds no storage credentials and Spark's file sources hide names
starting with ``.`` or ``_`` (``.hoodie/.aux``, a sink's ``_SUCCESS``), so
reverse-stream checkpoints and file-sink bookkeeping go through one task that
uses :mod:`hudi_connect.core.executor.storage` on the server. The one operation plain
object stores lack, create-if-absent, is each storage's own atomic step
(:func:`hudi_connect.core.executor.storage.create_exclusive`).

    created = run_storage_ops(spark, [StorageOp.create(uri, text)])[0].ok   # client.remote_files
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from hudi_connect.core.executor.refusals import worker_body
from hudi_connect.core.executor.storage import (
    copy,
    create_exclusive,
    data_files,
    filesystem_for,
    join,
    list_directory,
    read_bytes,
    read_many,
    replace,
    storage_access,
)
from hudi_connect.core.format.timeline import WRITE_ACTIONS, InstantState, parse_instant_file_name

OpKind = Literal["create", "put", "get", "list", "last", "timeline", "data_files", "delete", "copy",
                 "copy_data_file"]
OPS_SCHEMA = pa.schema([("op", pa.string())])  # one row: the JSON list of ops; null rows: rows to count
# Where a ``counted`` op's content takes the number of rows the task counted (this JSON string, quotes included)
ROW_COUNT = json.dumps("<rows counted by the task>")
# What the task returns, a row at a time so that no cell grows with the table (a Connect client refuses messages
# over 128 MB): first the JSON list of results without file contents, then a row per file a ``timeline`` op read
# (``op``: that op's index in the request), each its own batch.
RESULTS_SCHEMA = pa.schema([("result", pa.string()), ("op", pa.int32()), ("name", pa.string()),
                            ("content", pa.binary())])


@dataclass(frozen=True)
class StorageOp:
    """One operation on the file or directory at ``uri``, built by the constructor named for its kind:

    ``create``: write ``content`` unless ``uri`` exists; ``put``: replace it with ``content``; ``get``: read
    it; ``list``: names under directory ``uri``; ``last``: those names and the content of the last file;
    ``timeline``: what ``list`` gives, and the content of each completed write instant's file in directory
    ``uri`` (a timeline) but those in ``known`` (the ones the client read before), read concurrently;
    ``data_files``: every file below the table at ``uri`` outside ``.hoodie`` (a storage listing, as
    :func:`~hudi_connect.core.executor.listing.list_storage` makes), unless there are more than ``limit`` (then not
    ok); ``delete``: remove files or directories (recursively); ``copy``: replace the file at ``target`` with a
    copy of ``uri``, in one visible step; ``copy_data_file``: ``copy`` the one data file Spark wrote into directory
    ``uri`` (``part-*``) to ``part-00000`` with its extension in directory ``target`` (the result's ``names``: that
    name), ValueError if there is not exactly one. Ops after a ``create`` that found its file are skipped.

    A ``counted`` create or put writes its content with :data:`ROW_COUNT` replaced by the number of rows the
    task was given to count (the null rows of its input): a count and a write in one task, and one Spark job."""

    kind: OpKind
    uri: str
    content: str = ""  # create, put
    known: tuple[str, ...] = ()  # timeline
    limit: int = 0  # data_files
    target: str = ""  # copy
    counted: bool = False  # create, put: ROW_COUNT in content becomes the rows counted

    @classmethod
    def create(cls, uri: str, content: str, *, counted: bool = False) -> StorageOp:
        """Write ``content`` to ``uri`` unless it exists (the result's ``ok``: created)."""
        return cls("create", uri, content=content, counted=counted)

    @classmethod
    def put(cls, uri: str, content: str = "", *, counted: bool = False) -> StorageOp:
        """Replace ``uri`` with ``content``."""
        return cls("put", uri, content=content, counted=counted)

    @classmethod
    def get(cls, uri: str) -> StorageOp:
        """Read ``uri`` (the result's ``ok``: found)."""
        return cls("get", uri)

    @classmethod
    def list(cls, uri: str) -> StorageOp:
        """The names and files directly under directory ``uri``."""
        return cls("list", uri)

    @classmethod
    def last(cls, uri: str) -> StorageOp:
        """The names under directory ``uri`` and the content of the last visible file."""
        return cls("last", uri)

    @classmethod
    def timeline(cls, uri: str, known: Iterable[str] = ()) -> StorageOp:
        """The timeline directory ``uri`` listed, with the completed write instants not in ``known`` read."""
        return cls("timeline", uri, known=tuple(known))

    @classmethod
    def data_files(cls, uri: str, limit: int) -> StorageOp:
        """The table's data files below ``uri``, if there are at most ``limit``."""
        return cls("data_files", uri, limit=limit)

    @classmethod
    def delete(cls, uri: str) -> StorageOp:
        """Remove the file or directory ``uri``."""
        return cls("delete", uri)

    @classmethod
    def copy(cls, uri: str, target: str) -> StorageOp:
        """Replace ``target`` with a copy of ``uri``, in one visible step."""
        return cls("copy", uri, target=target)

    @classmethod
    def copy_data_file(cls, directory: str, target_directory: str) -> StorageOp:
        """Copy the one data file Spark wrote into ``directory`` into ``target_directory`` as ``part-00000``."""
        return cls("copy_data_file", directory, target=target_directory)


def ops_request(ops: Iterable[StorageOp]) -> str:
    """The one-row request :func:`execute_ops` reads: the ops as a JSON list."""
    return json.dumps([asdict(op) for op in ops])


def _requested_ops(request: str) -> list[StorageOp]:
    return [StorageOp(**{**fields, "known": tuple(fields["known"])}) for fields in json.loads(request)]


@dataclass(frozen=True)
class StorageResult:
    """What one :class:`StorageOp` found or did on the executor, returned to the client as JSON."""

    ok: bool  # create: created; get: found; others: done
    text: str = ""  # get: the content
    names: tuple[str, ...] = ()  # list: entry names (directories end with '/')
    # list: (name, size, modification ms) of each file, empty ones too; data_files: (partition/name, size, 0)
    files: tuple[tuple[str, int, int], ...] = ()
    contents: tuple[tuple[str, bytes], ...] = ()  # timeline: (name, content) of each file read
    counted: int | None = None  # counted create or put: the rows counted into its content


@worker_body
def execute_ops(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body of :func:`run_storage_ops` (runs on the executor): the requests run once every
    row to count has been seen."""
    requests: list[str] = []
    rows = 0
    for batch in batches:
        column = batch.column(0)
        rows += column.null_count
        requests += pc.drop_null(column).to_pylist()
    for request in requests:
        ops = [_with_count(op, rows) for op in _requested_ops(request)]
        results = [asdict(dataclasses.replace(result, counted=rows) if op.counted else result)
                   for op, result in zip(ops, run_ops_here(ops), strict=True)]
        read = [(index, name, content) for index, result in enumerate(results)
                for name, content in result["contents"]]
        without_contents = [{k: v for k, v in result.items() if k != "contents"} for result in results]
        yield pa.RecordBatch.from_pydict({"result": [json.dumps(without_contents)], "op": [None], "name": [None],
                                          "content": [None]}, schema=RESULTS_SCHEMA)
        for index, name, content in read:
            yield pa.RecordBatch.from_pydict({"result": [None], "op": [index], "name": [name],
                                              "content": [content]}, schema=RESULTS_SCHEMA)


def run_ops_here(ops: Sequence[StorageOp]) -> list[StorageResult]:
    """Run ``ops`` in order in this process; one result per op. The ops after a ``create`` that found its file
    are skipped (not ok): what follows a claim is done only by whoever made it."""
    results: list[StorageResult] = []
    for op in ops:
        result = _execute(op)
        results.append(result)
        if op.kind == "create" and not result.ok:
            break
    return results + [StorageResult(False)] * (len(ops) - len(results))


def _with_count(op: StorageOp, rows: int) -> StorageOp:
    """A counted op with the rows counted in its content (exactly one :data:`ROW_COUNT` there)."""
    if not op.counted:
        return op
    if op.content.count(ROW_COUNT) != 1:
        raise ValueError(f"a counted op's content must hold {ROW_COUNT} once: {op.uri}")
    return dataclasses.replace(op, content=op.content.replace(ROW_COUNT, str(rows)))


def _execute(op: StorageOp) -> StorageResult:
    with storage_access(op.uri, _DOING.get(op.kind, op.kind)):
        return _execute_op(op)


_DOING = {"create": "creating", "put": "writing", "get": "reading", "list": "listing", "last": "listing",
          "timeline": "reading the timeline at", "data_files": "listing", "delete": "deleting", "copy": "copying",
          "copy_data_file": "copying"}


def _execute_op(op: StorageOp) -> StorageResult:
    if op.kind == "create":
        return StorageResult(create_exclusive(op.uri, op.content.encode()))
    if op.kind == "put":
        replace(op.uri, op.content.encode())
        return StorageResult(True)
    if op.kind == "get":
        try:
            return StorageResult(True, read_bytes(op.uri).decode())
        except FileNotFoundError:
            return StorageResult(False)
    if op.kind in ("list", "last"):
        infos = list_directory(op.uri)
        names = sorted(i.base_name + ("/" if i.type is pafs.FileType.Directory else "") for i in infos)
        if op.kind == "last":
            visible = [n for n in names if not n.endswith("/") and not n.startswith(".")]
            if visible:
                return StorageResult(True, read_bytes(join(op.uri, visible[-1])).decode(), tuple(names))
            return StorageResult(True, names=tuple(names))
        files = sorted((i.base_name, i.size or 0, int(i.mtime.timestamp() * 1000) if i.mtime else 0)
                       for i in infos if i.type is pafs.FileType.File)
        return StorageResult(True, names=tuple(names), files=tuple(files))
    if op.kind == "timeline":
        for attempt in range(TIMELINE_ATTEMPTS):
            listed = _execute_op(StorageOp.list(op.uri))
            known = set(op.known)
            # empty files are not read: Spark's sources skipped them when it read commit metadata before
            wanted = [name for name, size, _ in listed.files if size and name not in known and _completed_write(name)]
            try:
                return dataclasses.replace(listed, contents=tuple(_read_all(op.uri, wanted)))
            except FileNotFoundError:  # the archiver moved an instant out since the listing: list again
                if attempt == TIMELINE_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")
    if op.kind == "data_files":
        found = list(itertools.islice(data_files(op.uri), op.limit + 1))
        if len(found) > op.limit:
            return StorageResult(False)
        return StorageResult(True, files=tuple(sorted((f"{p}/{name}" if p else name, size, 0)
                                                      for p, name, size in found)))
    if op.kind == "delete":
        filesystem, path = filesystem_for(op.uri)
        info = filesystem.get_file_info(path)
        if info.type is pafs.FileType.Directory:
            filesystem.delete_dir(path)
        elif info.type is pafs.FileType.File:
            filesystem.delete_file(path)
        return StorageResult(True)
    if op.kind == "copy":
        copy(op.uri, op.target)
        return StorageResult(True)
    if op.kind == "copy_data_file":
        names = [i.base_name for i in list_directory(op.uri) if i.type is pafs.FileType.File]
        data = [n for n in names if n.startswith("part-") and not n.endswith(".crc")]
        if len(data) != 1:
            raise ValueError(f"{op.uri} holds {len(data)} data files, expected 1: {sorted(names)}")
        name = f"part-00000.{data[0].split('.', 1)[1]}" if "." in data[0] else "part-00000"
        copy(join(op.uri, data[0]), join(op.target, name))
        return StorageResult(True, names=(name,))
    raise ValueError(f"unknown storage op {op.kind!r}")


TIMELINE_ATTEMPTS = 3  # listings of a timeline the archiver keeps changing under the reader


def _completed_write(name: str) -> bool:
    instant = parse_instant_file_name(name)
    return instant is not None and instant.state is InstantState.COMPLETED and instant.action in WRITE_ACTIONS


def _read_all(directory_uri: str, names: list[str]) -> list[tuple[str, bytes]]:
    """(name, content) of each file, read concurrently."""
    contents = read_many([join(directory_uri, name) for name in names])
    return list(zip(names, contents, strict=True))
