"""Small-object operations run on an executor, where the storage credentials live.

The client holds no storage credentials and Spark's file sources hide names
starting with ``.`` or ``_`` (``.hoodie/.aux``, a sink's ``_SUCCESS``), so
reverse-stream checkpoints and file-sink bookkeeping go through one task that
uses :mod:`hudi_connect.executor.storage` on the server. The one operation plain
object stores lack, create-if-absent, uses ``os.link`` locally and S3's
conditional ``PutObject`` (``If-None-Match: *``) remotely.

    created = run_storage_ops(spark, [StorageOp("create", uri, text)])[0].ok   # client.remote_files
"""

from __future__ import annotations

import base64
import dataclasses
import itertools
import json
import os
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any, Literal
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.fs as pafs

from hudi_connect.executor.storage import data_files, filesystem_for, join, read_many
from hudi_connect.format.timeline import WRITE_ACTIONS, InstantState, parse_instant_file_name

OpKind = Literal["create", "put", "get", "list", "last", "timeline", "data_files", "delete", "copy"]
OPS_SCHEMA = pa.schema([("op", pa.string())])  # one row: the JSON list of ops


@dataclass(frozen=True)
class StorageOp:
    """``create``: write ``text`` unless ``uri`` exists; ``put``: replace it; ``get``: read it;
    ``list``: names under directory ``uri``; ``last``: those names and the content of the last file;
    ``timeline``: what ``list`` gives, and the content of each completed write instant's file in directory
    ``uri`` (a timeline) but those named in ``text`` (a JSON list: the ones the client read before), read
    concurrently; ``data_files``: every file below the table at ``uri`` outside ``.hoodie`` (a storage
    listing, as :func:`~hudi_connect.executor.listing.list_storage` makes), unless there are more than
    ``text`` (then not ok); ``delete``: remove files or directories (recursively); ``copy``: replace the file
    named by ``text`` with a copy of ``uri``, in one visible step. Ops after a ``create`` that found its file
    are skipped."""

    kind: OpKind
    uri: str
    text: str = ""


@dataclass(frozen=True)
class StorageResult:
    ok: bool  # create: created; get: found; others: done
    text: str = ""  # get: the content
    names: tuple[str, ...] = ()  # list: entry names (directories end with '/')
    # list: (name, size, modification ms) of each file, empty ones too; data_files: (partition/name, size, 0)
    files: tuple[tuple[str, int, int], ...] = ()
    contents: tuple[tuple[str, str], ...] = ()  # timeline: (name, base64 of the content) of each file read


def execute_ops(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body of :func:`run_storage_ops` (runs on the executor)."""
    for batch in batches:
        for request in batch.column(0).to_pylist():
            results: list[dict[str, Any]] = []
            for op in (StorageOp(**fields) for fields in json.loads(request)):
                result = _execute(op)
                results.append(asdict(result))
                if op.kind == "create" and not result.ok:
                    break
            skipped = len(json.loads(request)) - len(results)
            results += [asdict(StorageResult(False))] * skipped
            yield pa.RecordBatch.from_pydict({"result": [json.dumps(results)]})


def _execute(op: StorageOp) -> StorageResult:
    filesystem, path = filesystem_for(op.uri)
    if op.kind == "create":
        return StorageResult(_create_exclusive(op.uri, filesystem, path, op.text.encode()))
    if op.kind == "put":
        _put(filesystem, path, op.text.encode())
        return StorageResult(True)
    if op.kind == "get":
        try:
            with filesystem.open_input_stream(path) as stream:
                return StorageResult(True, bytes(stream.read()).decode())
        except FileNotFoundError:
            return StorageResult(False)
    if op.kind in ("list", "last"):
        infos = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
        names = sorted(i.base_name + ("/" if i.type is pafs.FileType.Directory else "") for i in infos)
        if op.kind == "last":
            visible = [n for n in names if not n.endswith("/") and not n.startswith(".")]
            if visible:
                with filesystem.open_input_stream(f"{path}/{visible[-1]}") as stream:
                    return StorageResult(True, bytes(stream.read()).decode(), tuple(names))
            return StorageResult(True, names=tuple(names))
        files = sorted((i.base_name, i.size or 0, int(i.mtime.timestamp() * 1000) if i.mtime else 0)
                       for i in infos if i.type is pafs.FileType.File)
        return StorageResult(True, names=tuple(names), files=tuple(files))
    if op.kind == "timeline":
        listed = _execute(StorageOp("list", op.uri))
        known = set(json.loads(op.text or "[]"))
        # empty files are not read: Spark's sources skipped them when it read commit metadata before
        wanted = [name for name, size, _ in listed.files if size and name not in known and _completed_write(name)]
        return dataclasses.replace(listed, contents=tuple(_read_all(op.uri, wanted)))
    if op.kind == "data_files":
        limit = int(op.text)
        found = list(itertools.islice(data_files(op.uri), limit + 1))
        if len(found) > limit:
            return StorageResult(False)
        return StorageResult(True, files=tuple(sorted((f"{p}/{name}" if p else name, size, 0)
                                                      for p, name, size in found)))
    if op.kind == "delete":
        info = filesystem.get_file_info(path)
        if info.type is pafs.FileType.Directory:
            filesystem.delete_dir(path)
        elif info.type is pafs.FileType.File:
            filesystem.delete_file(path)
        return StorageResult(True)
    if op.kind == "copy":
        _, target = filesystem_for(op.text)
        if isinstance(filesystem, pafs.LocalFileSystem):
            aside = _aside(target)
            filesystem.copy_file(path, aside)
            os.replace(aside, target)
        else:  # one CopyObject: the target appears whole
            filesystem.copy_file(path, target)
        return StorageResult(True)
    raise ValueError(f"unknown storage op {op.kind!r}")


def _completed_write(name: str) -> bool:
    instant = parse_instant_file_name(name)
    return instant is not None and instant.state is InstantState.COMPLETED and instant.action in WRITE_ACTIONS


def _read_all(directory_uri: str, names: list[str]) -> list[tuple[str, str]]:
    """(name, base64 content) of each file, read concurrently."""
    contents = read_many([join(directory_uri, name) for name in names])
    return [(name, base64.b64encode(content).decode("ascii")) for name, content in zip(names, contents, strict=True)]


def _aside(path: str) -> str:
    """A hidden temporary name beside local ``path`` (its directory created), to be renamed or linked into place."""
    parent = path.rsplit("/", 1)[0]
    os.makedirs(parent, exist_ok=True)
    return f"{parent}/.{uuid.uuid4().hex}.tmp"


def _written_aside(path: str, data: bytes) -> str:
    aside = _aside(path)
    with open(aside, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    return aside


def _put(filesystem: pafs.FileSystem, path: str, data: bytes) -> None:
    """Replace ``path`` atomically: an S3 PUT is; locally, write aside and rename."""
    if isinstance(filesystem, pafs.LocalFileSystem):
        os.replace(_written_aside(path, data), path)
        return
    with filesystem.open_output_stream(path) as out:
        out.write(data)


def _create_exclusive(uri: str, filesystem: pafs.FileSystem, path: str, data: bytes) -> bool:
    if isinstance(filesystem, pafs.LocalFileSystem):
        aside = _written_aside(path, data)
        try:
            os.link(aside, path)  # atomic, and fails when the name exists
            return True
        except FileExistsError:
            return False
        finally:
            os.unlink(aside)
    return _s3_create_exclusive(uri, data)


def _s3_create_exclusive(uri: str, data: bytes) -> bool:
    import boto3  # on the servers' worker Python only
    from botocore.exceptions import ClientError

    parsed = urlparse(uri)
    client = boto3.client("s3", endpoint_url=os.environ.get("AWS_ENDPOINT_URL"),
                          region_name=os.environ.get("AWS_REGION", "us-east-1"))
    try:
        client.put_object(Bucket=parsed.netloc, Key=parsed.path.lstrip("/"), Body=data, IfNoneMatch="*")
        return True
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412", "ConditionalRequestConflict"):
            return False
        raise
