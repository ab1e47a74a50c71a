"""Storage access from inside Spark executors, for files Spark's sources cannot see.

Spark's file sources skip names starting with ``.``, which hides every Hudi log
file, so executors read them with ``pyarrow.fs``. Credentials and endpoints
come from the executor's own environment (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``): the client
never holds or sends them. Imports only the standard library and pyarrow.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from urllib.parse import urlparse

import pyarrow.fs as pafs

_S3_SCHEMES = ("s3a", "s3", "s3n")


@lru_cache(maxsize=8)
def _s3(endpoint_url: str | None, region: str | None) -> pafs.S3FileSystem:
    options: dict[str, object] = {"region": region or "us-east-1"}
    if endpoint_url:
        parsed = urlparse(endpoint_url)
        options["endpoint_override"] = parsed.netloc or parsed.path
        options["scheme"] = parsed.scheme or "https"
    return pafs.S3FileSystem(**options)  # keys from the environment's default credential chain


def filesystem_for(uri: str) -> tuple[pafs.FileSystem, str]:
    """The pyarrow file system and in-filesystem path of a URI (``file:``, ``s3a://``, or a plain path)."""
    parsed = urlparse(uri)
    if parsed.scheme in _S3_SCHEMES:
        return _s3(os.environ.get("AWS_ENDPOINT_URL"), os.environ.get("AWS_REGION")), f"{parsed.netloc}{parsed.path}"
    if parsed.scheme in ("", "file"):
        return pafs.LocalFileSystem(), parsed.path if parsed.scheme else uri
    raise ValueError(f"unsupported storage scheme {parsed.scheme!r} in {uri}")


def join(base_uri: str, *parts: str) -> str:
    return "/".join([base_uri.rstrip("/"), *(p.strip("/") for p in parts if p)])


def read_bytes(uri: str) -> bytes:
    filesystem, path = filesystem_for(uri)
    with filesystem.open_input_stream(path) as stream:
        return bytes(stream.read())


def read_many(uris: Sequence[str], threads: int = 8) -> list[bytes]:
    """Each file's content, in order, read concurrently: over an object store each read is a round trip
    or two, which a reader of several small files would otherwise wait for one after the other."""
    if len(uris) <= 1:
        return [read_bytes(uri) for uri in uris]
    with ThreadPoolExecutor(max_workers=min(threads, len(uris))) as pool:
        return list(pool.map(read_bytes, uris))


def data_files(base_uri: str) -> Iterator[tuple[str, str, int]]:
    """(partition, name, size) of every file below ``base_uri`` outside ``.hoodie``, from a storage listing."""
    filesystem, root = filesystem_for(base_uri)
    root = root.rstrip("/")
    selector = pafs.FileSelector(root, recursive=True, allow_not_found=True)
    for info in filesystem.get_file_info(selector):
        if info.type != pafs.FileType.File:
            continue
        relative = info.path[len(root) + 1:]
        if relative.startswith(".hoodie/") or "/.hoodie/" in relative:
            continue
        partition, _, name = relative.rpartition("/")
        yield partition, name, info.size or 0
