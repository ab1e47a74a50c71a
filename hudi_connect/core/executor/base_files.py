"""Reading a base file on an executor: Parquet with pyarrow, Lance with pylance.

Hudi 1.2 writes Lance base files (``hoodie.table.base.file.format=LANCE``) as single Lance
files of format 2.0, meta columns first, named like Parquet base files but ending in
``.lance``. Lance's object store takes ``s3://`` (not ``s3a://``) with its options from
the executor's environment, like the rest of :mod:`hudi_connect.core.executor.storage`.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from urllib.parse import urlparse

import pyarrow as pa

from hudi_connect.core.errors import UnsupportedTableFeatureError
from hudi_connect.core.executor.storage import filesystem_for, location_of, read_bytes, storage_access
from hudi_connect.core.executor.storage.s3 import S3Settings
from hudi_connect.core.format.parquet_files import read_parquet

LANCE_SUFFIX = ".lance"


def read_base_file(uri: str, dictionaries: Collection[str] = ()) -> pa.Table:
    """Every record of the base file at ``uri``; of a Parquet file, the string columns named in ``dictionaries``
    dictionary-encoded where the file has them so (:func:`~hudi_connect.core.format.parquet_files.read_parquet`)."""
    if uri.endswith(LANCE_SUFFIX):
        return read_lance_file(uri)
    if location_of(uri).kind == "hdfs":  # WebHDFS answers each ranged read with two requests: read it whole
        return read_parquet(pa.BufferReader(read_bytes(uri)), dictionaries)
    filesystem, path = filesystem_for(uri)
    with storage_access(uri), filesystem.open_input_file(path) as handle:
        return read_parquet(handle, dictionaries)


def read_lance_file(uri: str) -> pa.Table:
    """Every record of the Lance base file at ``uri`` (on S3 or a local disk), with pylance on the executor;
    UnsupportedTableFeatureError without pylance or on another storage."""
    try:
        from lance.file import LanceFileReader
    except ImportError as error:  # the server's worker Python lacks pylance
        raise UnsupportedTableFeatureError(
            "Lance base files", "base file", uri.rsplit("/", 1)[-1], where="this server's Python workers",
            detail="install pylance in the Python of the server's workers to read them") from error
    parsed = urlparse(uri)
    kind = location_of(uri).kind
    if kind == "s3":
        location, options = f"s3://{parsed.netloc}{parsed.path}", _s3_options()
    elif kind == "local":
        location, options = (parsed.path if parsed.scheme == "file" else uri), None
    else:  # Lance's own object store has its settings of its own there, not proven here
        raise UnsupportedTableFeatureError(
            f"Lance base files on {parsed.scheme}://", "base file", uri.rsplit("/", 1)[-1],
            detail="hudi-connect reads Lance base files on S3 and local disks")
    return LanceFileReader(location, storage_options=options).read_all().to_table()


def _s3_options() -> dict[str, str]:
    env = os.environ
    settings = S3Settings.from_environment()
    options = {"region": settings.region or "us-east-1"}
    if settings.endpoint_url:
        options["endpoint"] = settings.endpoint_url
        options["allow_http"] = str(settings.endpoint_url.startswith("http:")).lower()
    if env.get("AWS_ACCESS_KEY_ID"):
        options["access_key_id"] = env["AWS_ACCESS_KEY_ID"]
        options["secret_access_key"] = env.get("AWS_SECRET_ACCESS_KEY", "")
    return options
