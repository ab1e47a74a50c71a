"""MinIO as a local process: an S3 endpoint on loopback for s3a:// tables."""

from __future__ import annotations

import os
import secrets
import shutil
import urllib.request
from pathlib import Path

from hudi_connect.core.errors import ServiceStartError
from hudi_connect_stack import provision
from hudi_connect_stack.endpoints import MinioEndpoint
from hudi_connect_stack.process import LOOPBACK, RunningService, free_port, launch, wait_until_ready

READY_TIMEOUT = 60.0
# MinIO refuses a write that would leave less than 1% of its drive free (its diskFillFraction), and counts an
# upload of unknown size (a streamed part) as 1 GiB (diskAssumeUnknownSize)
DRIVE_RESERVE = 0.01
UNKNOWN_UPLOAD = 1 << 30


def require_room_for_writes(path: Path) -> None:
    """Refuse to start MinIO on a drive so full that it would refuse writes: tests would then fail on every
    table written to it, with an S3 error far from the cause."""
    usage = shutil.disk_usage(path)
    # MinIO's reserve, one upload of unknown size, and as much again for what the run writes
    if usage.free < usage.total * DRIVE_RESERVE + 2 * UNKNOWN_UPLOAD:
        raise ServiceStartError(
            "minio", f"the drive of {path} has {usage.free / 2**30:.1f} GiB free of {usage.total / 2**30:.0f} GiB; "
            "MinIO refuses writes that would leave less than 1% of it free (an upload of unknown size counting "
            "as 1 GiB), so free some space first")


def minio_command(binary: Path, data_dir: Path, port: int, console_port: int) -> list[str]:
    return [
        str(binary), "server", str(data_dir),
        "--address", f"{LOOPBACK}:{port}",
        "--console-address", f"{LOOPBACK}:{console_port}",
        "--quiet",
    ]


def health_ok(endpoint_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{endpoint_url}/minio/health/ready", timeout=1) as response:
            return int(response.status) == 200
    except OSError:
        return False


def start_minio(run_dir: Path, *, port: int | None = None, timeout: float = READY_TIMEOUT,
                restart: MinioEndpoint | None = None) -> RunningService:
    """Start MinIO with fresh credentials and a data directory under ``run_dir``; or, given the
    endpoint of one that ran on ``run_dir`` before (``restart``), start it again as it was."""
    binary = provision.ensure_minio()
    if restart is not None:
        endpoint = restart
        port = int(restart.endpoint_url.rsplit(":", 1)[1])
    else:
        port = port or free_port()
        endpoint = MinioEndpoint(
            endpoint_url=f"http://{LOOPBACK}:{port}",
            access_key="hudi-" + secrets.token_hex(6),
            secret_key=secrets.token_hex(20),
        )
    data_dir = run_dir / "minio" / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    require_room_for_writes(data_dir)
    env = dict(os.environ)
    env.update(
        MINIO_ROOT_USER=endpoint.access_key,
        MINIO_ROOT_PASSWORD=endpoint.secret_key,
        MINIO_BROWSER="off",
        MINIO_UPDATE="off",
    )
    process, popen = launch(
        "minio", minio_command(binary, data_dir, port, free_port()), log=run_dir / "minio" / "minio.log", env=env
    )
    wait_until_ready(process, lambda: health_ok(endpoint.endpoint_url), timeout=timeout, popen=popen)
    return RunningService(endpoint, (process,))


def create_bucket(endpoint: MinioEndpoint, bucket: str) -> None:
    """Create ``bucket`` if it does not exist (needs the ``minio`` client package)."""
    from minio import Minio

    client = Minio(
        endpoint.endpoint_url.split("://", 1)[1],
        access_key=endpoint.access_key,
        secret_key=endpoint.secret_key,
        secure=endpoint.endpoint_url.startswith("https"),
        region=endpoint.region,
    )
    if not client.bucket_exists(bucket):
        client.make_bucket(bucket)
