"""Storage access from inside Spark executors, for files Spark's sources cannot see.

Spark's file sources skip names starting with ``.``, which hides every Hudi log
file, so executors read them themselves, with one client per storage (each in
its own module here), chosen by the URI's scheme:

=============================  ==============================  ==============================================
scheme                         client                          credentials and settings (the worker's own)
=============================  ==============================  ==============================================
``s3a``, ``s3``, ``s3n``       pyarrow's S3 (:mod:`.s3`)       AWS's default chain; the bucket's region asked
``gs``                         pyarrow's GCS (:mod:`.gcs`)     Google's default credentials
``abfs(s)``, ``wasb(s)``       pyarrow's Azure (:mod:`.azure`) connection string, account key, or Azure's default
``hdfs``                       WebHDFS via fsspec (:mod:`.hdfs`) ``HADOOP_CONF_DIR``, ``HADOOP_USER_NAME``
``file`` or a plain path       the local file system
=============================  ==============================  ==============================================

Credentials come from the executor's environment and the storages' default
chains: the client never holds or sends them. A failure to reach a file is a
:class:`~hudi_connect.core.errors.StorageAccessError` naming the file, the storage's
own reason and where the workers take their credentials from; a scheme no
client handles is refused by :func:`location_of` (which the client calls before
any job runs) with :class:`~hudi_connect.core.errors.UnsupportedStorageError`.
"""

from __future__ import annotations

import errno
import importlib
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal, Protocol, cast
from urllib.parse import urlparse

import pyarrow.fs as pafs

from hudi_connect.core.errors import StorageAccessError, UnsupportedStorageError

StorageKind = Literal["s3", "gcs", "azure", "hdfs", "local"]

SCHEMES: dict[str, StorageKind] = {
    "s3a": "s3", "s3": "s3", "s3n": "s3",
    "gs": "gcs",
    "abfs": "azure", "abfss": "azure", "wasb": "azure", "wasbs": "azure",
    "hdfs": "hdfs",
    "": "local", "file": "local",
}

# Where each storage's client takes credentials and settings from, for the errors that say so
CREDENTIAL_SOURCES: dict[StorageKind, str] = {
    "s3": "AWS's default chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN, AWS_PROFILE, a web "
          "identity token, the container or instance role) and AWS_ENDPOINT_URL, AWS_REGION, "
          "AWS_S3_ADDRESSING_STYLE",
    "gcs": "Google's application default credentials (GOOGLE_APPLICATION_CREDENTIALS, the metadata server) or "
           "STORAGE_EMULATOR_HOST",
    "azure": "AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_ACCOUNT_KEY, or Azure's default credential "
             "(AZURE_CLIENT_ID/AZURE_TENANT_ID/AZURE_CLIENT_SECRET, a managed or workload identity)",
    "hdfs": "WebHDFS at the namenode's HTTP address (dfs.namenode.http-address in HADOOP_CONF_DIR's hdfs-site.xml, "
            "else port 9870) as HADOOP_USER_NAME (simple authentication; Kerberos is not supported)",
    "local": "the worker's file system",
}


@dataclass(frozen=True)
class Location:
    """Where a URI points: its storage, the bucket (S3, GCS), container and account host (Azure) or namenode
    (HDFS), and the path inside the file system :func:`filesystem_for` gives."""

    uri: str
    kind: StorageKind
    scheme: str
    authority: str  # bucket; container@account host; namenode host:port; '' locally
    path: str  # as the file system of the location takes it


def supported_schemes() -> list[str]:
    """The URI schemes a storage client here handles, sorted, for the errors that refuse another."""
    return sorted(scheme for scheme in SCHEMES if scheme)


def location_of(uri: str) -> Location:
    """The location of ``uri``; UnsupportedStorageError for a scheme no client here handles."""
    parsed = urlparse(uri)
    scheme = parsed.scheme.lower()
    kind = SCHEMES.get(scheme)
    if kind is None or (len(scheme) == 1 and uri[1:3] in (":\\", ":/")):  # (a drive letter is no scheme)
        raise UnsupportedStorageError(scheme, uri, supported_schemes())
    if kind == "local":
        return Location(uri, kind, scheme, "", parsed.path if scheme else uri)
    if not parsed.netloc:
        raise UnsupportedStorageError(scheme, uri, supported_schemes(),
                                      detail=f"a {scheme}:// URI names its bucket, container or namenode")
    if kind == "azure":
        container = parsed.netloc.split("@", 1)[0]
        return Location(uri, kind, scheme, parsed.netloc, f"{container}{parsed.path}")
    if kind == "hdfs":
        return Location(uri, kind, scheme, parsed.netloc, parsed.path or "/")
    return Location(uri, kind, scheme, parsed.netloc, f"{parsed.netloc}{parsed.path}")


class StorageClient(Protocol):
    """What each storage's module provides (``s3``, ``gcs``, ``azure``, ``hdfs``, ``local``)."""

    def filesystem(self, location: Location) -> pafs.FileSystem:
        """pyarrow's file system for the location's storage, with the worker's settings and credentials."""

    def read(self, location: Location) -> bytes:
        """The whole file, in as few requests as the storage allows."""

    def create_exclusive(self, location: Location, data: bytes) -> bool:
        """Write ``data`` unless something is there, in one atomic step; whether it was written."""

    def replace(self, location: Location, data: bytes) -> None:
        """Replace the file with ``data``: readers see the old content or the new, never a part."""


def client_of(location: Location) -> StorageClient:
    """The module of this package that serves the location's storage kind (imported on first use)."""
    return cast(StorageClient, importlib.import_module(f"hudi_connect.core.executor.storage.{location.kind}"))


def filesystem_for(uri: str) -> tuple[pafs.FileSystem, str]:
    """The file system and in-filesystem path of a URI (see the table above)."""
    location = location_of(uri)
    return client_of(location).filesystem(location), location.path


# an object store's words for an object that is not there, where its client raises a plain OSError (pyarrow's S3
# when an object goes between the HEAD of open_input_file and a ranged GET; Azure's blob service)
MISSING_OBJECT_CODES = ("NO_SUCH_KEY", "NoSuchKey", "BlobNotFound")


@contextmanager
def storage_access(uri: str, doing: str = "reading") -> Iterator[None]:
    """Around work on ``uri``: a storage failure other than a missing file becomes StorageAccessError naming the
    file, the storage's reason and where the workers take credentials from."""
    try:
        yield
    except (FileNotFoundError, StorageAccessError, UnsupportedStorageError):
        raise
    except OSError as error:
        if any(code in str(error) for code in MISSING_OBJECT_CODES):  # deleted between a HEAD and its GET
            raise FileNotFoundError(errno.ENOENT, " ".join(str(error).split()), uri) from None
        kind = SCHEMES.get(urlparse(uri).scheme.lower(), "local")
        raise StorageAccessError(uri, doing, " ".join(str(error).split()) or type(error).__name__,
                                 CREDENTIAL_SOURCES[kind]) from error


def create_exclusive(uri: str, data: bytes) -> bool:
    """Write ``data`` at ``uri`` unless something is there, in one atomic step; whether it was written."""
    location = location_of(uri)
    with storage_access(uri, "creating"):
        return client_of(location).create_exclusive(location, data)


def replace(uri: str, data: bytes) -> None:
    """Replace the file at ``uri`` with ``data`` so that readers see the old content or the new, never a part."""
    location = location_of(uri)
    with storage_access(uri, "writing"):
        client_of(location).replace(location, data)


def put_object(location: Location, data: bytes) -> None:
    """One object written whole through pyarrow's output stream: it appears when the stream closes (an S3 PUT
    or multipart completion, a GCS upload's finalization), the old one until then."""
    with client_of(location).filesystem(location).open_output_stream(location.path) as out:
        out.write(data)


def aside(path: str) -> str:
    """A hidden temporary name beside ``path``, to be renamed into place (on file systems, where renames are)."""
    parent = path.rsplit("/", 1)[0] or "/"
    return f"{parent}/.{uuid.uuid4().hex}.tmp"


def copy(source_uri: str, target_uri: str) -> None:
    """Replace the file at ``target_uri`` with a copy of ``source_uri``, appearing whole."""
    source, target = location_of(source_uri), location_of(target_uri)
    if source.kind in ("local", "hdfs") or (source.kind, source.authority) != (target.kind, target.authority):
        replace(target_uri, read_bytes(source_uri))  # written aside and renamed into place, or put whole
        return
    with storage_access(source_uri, "copying"):  # an object store's copy: the target appears whole
        client_of(source).filesystem(source).copy_file(source.path, target.path)


def join(base_uri: str, *parts: str) -> str:
    """``base_uri`` with ``parts`` appended, one slash between each (empty parts skipped)."""
    return "/".join([base_uri.rstrip("/"), *(p.strip("/") for p in parts if p)])


def read_bytes(uri: str) -> bytes:
    """The whole file (FileNotFoundError where there is none)."""
    location = location_of(uri)
    with storage_access(uri), _named_missing(uri):
        return client_of(location).read(location)


def read_stream(location: Location) -> bytes:
    """A whole file through pyarrow's input stream: one GET on an object store."""
    with client_of(location).filesystem(location).open_input_stream(location.path) as stream:
        return bytes(stream.read())


class RangedFile:
    """A file read by byte range (an HFile's blocks as a reader reaches them), so that a task never holds a large
    file whole: through pyarrow's random-access file (ranged GETs on an object store), opened on the first read,
    or the storage module's own ``read_range`` where it has one (WebHDFS: one OPEN with offset and length).
    ``size`` comes from the listing that found the file. Close it (or use it in ``with``) when done."""

    def __init__(self, uri: str, size: int) -> None:
        self.uri, self._size, self._location = uri, size, location_of(uri)
        self._handle: pafs.NativeFile | None = None

    @property
    def size(self) -> int:
        """The file's size in bytes, as listed."""
        return self._size

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes from ``offset`` (FileNotFoundError where the file has gone)."""
        client = client_of(self._location)
        with storage_access(self.uri), _named_missing(self.uri):
            read_range = getattr(client, "read_range", None)
            if read_range is not None:
                return cast(bytes, read_range(self._location, offset, length))
            if self._handle is None:
                self._handle = client.filesystem(self._location).open_input_file(self._location.path)
            return cast(bytes, self._handle.read_at(length, offset))

    def close(self) -> None:
        """Release the open file, if any."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def __enter__(self) -> RangedFile:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


@contextmanager
def _named_missing(uri: str) -> Iterator[None]:
    """A missing file's error named by its URI, whatever the client put in it (often nothing)."""
    try:
        yield
    except FileNotFoundError as gone:
        raise FileNotFoundError(errno.ENOENT, gone.strerror or str(gone) or "no such file", uri) from None


def read_many(uris: Sequence[str], threads: int = 8) -> list[bytes]:
    """Each file's content, in order, read concurrently: over an object store each read is a round trip
    or two, which a reader of several small files would otherwise wait for one after the other."""
    if len(uris) <= 1:
        return [read_bytes(uri) for uri in uris]
    with ThreadPoolExecutor(max_workers=min(threads, len(uris))) as pool:
        return list(pool.map(read_bytes, uris))


def list_directory(uri: str, *, recursive: bool = False) -> list[pafs.FileInfo]:
    """What is in the directory at ``uri`` (nothing if it does not exist); paths as the file system gives them."""
    location = location_of(uri)
    filesystem = client_of(location).filesystem(location)
    selector = pafs.FileSelector(location.path.rstrip("/"), recursive=recursive or location.kind == "gcs",
                                 allow_not_found=True)
    with storage_access(uri, "listing"):
        infos = filesystem.get_file_info(selector)
    if location.kind == "gcs" and not recursive:
        infos = _first_level(infos, selector.base_dir)
    return without_directory_markers(infos)


def _first_level(infos: list[pafs.FileInfo], base_dir: str) -> list[pafs.FileInfo]:
    """The entries right below ``base_dir`` of a recursive listing, directories included. pyarrow's GCS lists
    objects only, not the prefixes GCS answers with, so a directory without a marker object of its own (one
    that no writer created explicitly) is missing from a flat listing: it is found from the files below it."""
    entries: dict[str, pafs.FileInfo] = {}
    for info in infos:
        name, _, below = info.path[len(base_dir) + 1:].partition("/")
        if below or info.type == pafs.FileType.Directory:
            entries[name] = pafs.FileInfo(f"{base_dir}/{name}", pafs.FileType.Directory)
        else:
            entries.setdefault(name, info)
    return list(entries.values())


def without_directory_markers(infos: list[pafs.FileInfo]) -> list[pafs.FileInfo]:
    """A listing without the empty objects that stand for directories: Hadoop's WASB writes one per directory
    (``dir``, no trailing slash), which an object store lists both as an empty file and, having children, as a
    directory; some S3 tools write ``dir/``. (An empty file is no marker by itself: Hudi's requested instants
    are empty.)"""
    directories = {info.path.rstrip("/") for info in infos if info.type == pafs.FileType.Directory}
    return [info for info in infos
            if not (info.type == pafs.FileType.File and not info.size
                    and (info.path.endswith("/") or info.path in directories))]


def data_files(base_uri: str, below: str = "") -> Iterator[tuple[str, str, int]]:
    """(partition, name, size) of every file below ``base_uri`` (or its subdirectory ``below``) outside
    ``.hoodie``, from a storage listing; partitions relative to ``base_uri``."""
    root = location_of(base_uri).path.rstrip("/")
    for info in list_directory(join(base_uri, below) if below else base_uri, recursive=True):
        if info.type != pafs.FileType.File:
            continue
        relative = info.path[len(root) + 1:]
        if relative.startswith(".hoodie/") or "/.hoodie/" in relative:
            continue
        partition, _, name = relative.rpartition("/")
        yield partition, name, info.size or 0
