"""The real Hudi tables of ``shared/fixtures/hudi-rs-tables``, unzipped for tests.

They were written by Apache Hudi itself (table versions 6, 8 and 9, COW and
MOR); ``HUDI_CONNECT_FIXTURES`` overrides where the zips are found.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

from hudi_connect.core.format.commit_metadata import CommitMetadata, decode_commit_metadata
from hudi_connect.core.format.fs_view import StoredFile, replaced_file_groups
from hudi_connect.core.format.table_config import TableProperties, parse_java_properties
from hudi_connect.core.format.timeline import Instant, Timeline, parse_instant_file_name
from hudi_connect_stack.checkout import checkout_root
from hudi_connect_stack.endpoints import MinioEndpoint, StorageEndpoints


def fixtures_dir() -> Path:
    configured = os.environ.get("HUDI_CONNECT_FIXTURES")
    return Path(configured) if configured else checkout_root().parent / "shared" / "fixtures" / "hudi-rs-tables"


def fixture_names() -> list[str]:
    """Every fixture table (zip stem); FileNotFoundError when there are none, so that
    tests parametrized over them fail at collection instead of silently running none."""
    names = sorted(p.stem for p in fixtures_dir().glob("*.zip"))
    if not names:
        raise FileNotFoundError(
            f"no fixture tables in {fixtures_dir()}: check out shared/ beside the repository "
            "or set HUDI_CONNECT_FIXTURES"
        )
    return names


def unzip_fixture(name: str, destination: Path) -> Path:
    """Unzip fixture ``name`` under ``destination``; returns the table's base path (holding ``.hoodie``)."""
    archive = fixtures_dir() / f"{name}.zip"
    if not archive.is_file():
        raise FileNotFoundError(f"no fixture table {name!r} in {fixtures_dir()}")
    target = destination / name
    with zipfile.ZipFile(archive) as zipped:
        members = [m for m in zipped.namelist() if not m.startswith("__MACOSX/")]
        zipped.extractall(target, members)
    base = next((p.parent for p in sorted(target.rglob(".hoodie")) if p.is_dir()), None)
    if base is None:
        raise FileNotFoundError(f"fixture {name!r} holds no .hoodie directory")
    for path in [target, *target.rglob("*")]:  # readable by servers running as other users
        path.chmod(0o755 if path.is_dir() else 0o644)
    return base


def upload_table(base: Path, endpoint: MinioEndpoint, bucket: str, prefix: str) -> str:
    """Copy a table directory to ``bucket/prefix`` on MinIO; returns its ``s3a://`` path."""
    from minio import Minio

    client = Minio(endpoint.endpoint_url.split("://")[1], endpoint.access_key, endpoint.secret_key,
                   secure=endpoint.endpoint_url.startswith("https"))
    for path in base.rglob("*"):
        if path.is_file():
            client.fput_object(bucket, f"{prefix}/{path.relative_to(base)}", str(path))
    return f"s3a://{bucket}/{prefix}"


@dataclass(frozen=True)
class LocalTableView:
    """A table on the local disk read without Spark: for oracles and pure tests."""

    properties: TableProperties
    timeline: Timeline
    metadata: dict[Instant, CommitMetadata]
    files: list[StoredFile]

    @property
    def replaced(self) -> frozenset[tuple[str, str]]:
        return replaced_file_groups(self.metadata)


def local_table_view(base: Path) -> LocalTableView:
    """Properties, timeline, write-commit metadata and data files of a local table."""
    props = TableProperties.from_properties(
        parse_java_properties((base / ".hoodie" / "hoodie.properties").read_text())
    )
    timeline_dir = base / ".hoodie" / props.timeline_dir if props.timeline_dir else base / ".hoodie"
    instant_files = {p.name: p for p in timeline_dir.iterdir() if p.is_file()}
    parsed = [parse_instant_file_name(n, int(p.stat().st_mtime * 1000)) for n, p in instant_files.items()]
    timeline = Timeline.from_files(p for p in parsed if p is not None)
    metadata = {}
    for instant in timeline.write_commits():
        name = (f"{instant.requested_time}_{instant.completion_time}.{instant.action.value}"
                if props.timeline_dir else f"{instant.requested_time}.{instant.action.value}")
        metadata[instant] = decode_commit_metadata(instant_files[name].read_bytes())
    files = [
        StoredFile(str(p.parent.relative_to(base)) if p.parent != base else "", p.name, p.stat().st_size)
        for p in base.rglob("*")
        if p.is_file() and p.relative_to(base).parts[0] != ".hoodie"
    ]
    return LocalTableView(props, timeline, metadata, files)


def upload_to_storage(base: Path, uri: str, storages: StorageEndpoints) -> str:
    """Copy a table directory to ``uri`` on GCS, Azure or HDFS (the servers of ``storages``), with the clients
    the workers use, as the workers' environment points them; returns ``uri``."""
    import pyarrow.fs as pafs

    from hudi_connect.core.executor.storage import filesystem_for

    settings = {"STORAGE_EMULATOR_HOST": storages.gcs.endpoint_url,
                "AZURE_STORAGE_CONNECTION_STRING": storages.azure.connection_string,
                "HADOOP_CONF_DIR": storages.hdfs.conf_dir, "HADOOP_USER_NAME": storages.hdfs.user}
    saved = {key: os.environ.get(key) for key in settings}
    os.environ.update(settings)
    try:
        filesystem, path = filesystem_for(uri)
        pafs.copy_files(str(base), path, destination_filesystem=filesystem)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return uri
