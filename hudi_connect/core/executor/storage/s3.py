"""S3 as AWS runs it (and MinIO, and any S3 endpoint), through pyarrow's S3 file system.

Settings are the worker's environment, as AWS's SDKs read it: credentials from AWS's default chain
(environment keys and session token, ``AWS_PROFILE``, a web identity token file, the container or instance
role: pyarrow hands the chain to the AWS SDK); the endpoint from ``AWS_ENDPOINT_URL_S3`` or
``AWS_ENDPOINT_URL``. On AWS the region is the bucket's own, asked once per bucket (its
``x-amz-bucket-region`` header, as the SDKs' region redirects do), so a bucket outside the default region is
read without a redirect error; on another endpoint it is ``AWS_REGION``/``AWS_DEFAULT_REGION`` (else
us-east-1), as s3a's ``fs.s3a.endpoint.region``. Addressing is the SDK's (virtual-host on AWS,
path-style on another endpoint) unless ``AWS_S3_ADDRESSING_STYLE`` is ``virtual`` or ``path``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal
from urllib.parse import urlparse

import pyarrow.fs as pafs

from hudi_connect.core.executor.storage import Location, put_object, read_stream

DEFAULT_REGION = "us-east-1"


@dataclass(frozen=True)
class S3Settings:
    """The worker's S3 settings (never its credentials: those stay with the SDK's chain)."""

    endpoint_url: str | None
    region: str | None  # configured; the bucket's own is asked for
    addressing: Literal["auto", "virtual", "path"]

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> S3Settings:
        """The settings in ``env`` (the worker's environment by default); ValueError for an unknown
        ``AWS_S3_ADDRESSING_STYLE``."""
        env = os.environ if env is None else env
        style = env.get("AWS_S3_ADDRESSING_STYLE", "auto").lower()
        if style not in ("auto", "virtual", "path"):
            raise ValueError(f"AWS_S3_ADDRESSING_STYLE={style!r}: choose virtual, path or auto")
        return cls(env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None,
                   env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
                   style)  # type: ignore[arg-type]


def filesystem_options(settings: S3Settings, bucket_region: str | None) -> dict[str, Any]:
    """pyarrow's S3FileSystem arguments for a bucket in ``bucket_region`` (None: unknown)."""
    options: dict[str, Any] = {"region": bucket_region or settings.region or DEFAULT_REGION}
    if settings.endpoint_url:
        parsed = urlparse(settings.endpoint_url)
        options["endpoint_override"] = parsed.netloc or parsed.path
        options["scheme"] = parsed.scheme or "https"
    if settings.addressing == "virtual":
        options["force_virtual_addressing"] = True
    elif settings.addressing == "path" and not settings.endpoint_url:  # AWS itself, path-style: its regional host
        options.update(endpoint_override=f"s3.{options['region']}.amazonaws.com", scheme="https")
    return options


def client_options(settings: S3Settings, bucket_region: str | None) -> dict[str, Any]:
    """boto3's client arguments for the same bucket (conditional writes, which pyarrow cannot express)."""
    from botocore.config import Config

    style = {"auto": "auto", "virtual": "virtual", "path": "path"}[settings.addressing]
    return {"endpoint_url": settings.endpoint_url, "region_name": bucket_region or settings.region or DEFAULT_REGION,
            "config": Config(s3={"addressing_style": style})}


_REGIONS: dict[str, str] = {}  # bucket -> its region, as AWS told it (an answer is kept; a failure is not)


def bucket_region(bucket: str, settings: S3Settings) -> str | None:
    """The bucket's region where AWS is the endpoint (pyarrow asks S3 with one unsigned HEAD, whose
    ``x-amz-bucket-region`` answers even a redirect or a refusal); another endpoint serves its configured
    region (None: unknown)."""
    if settings.endpoint_url:
        return None
    if bucket not in _REGIONS:
        try:
            _REGIONS[bucket] = str(pafs.resolve_s3_region(bucket))
        except OSError:  # unreachable or unknown: the read itself will say what is wrong
            return None
    return _REGIONS[bucket]


@lru_cache(maxsize=64)
def _filesystem_in(region: str | None, settings: S3Settings) -> pafs.S3FileSystem:
    return pafs.S3FileSystem(**filesystem_options(settings, region))


def _filesystem(bucket: str, settings: S3Settings) -> pafs.S3FileSystem:
    return _filesystem_in(bucket_region(bucket, settings), settings)


def filesystem(location: Location) -> pafs.S3FileSystem:
    """pyarrow's S3 file system for the location's bucket, in its region (one kept per region and settings)."""
    return _filesystem(location.authority, S3Settings.from_environment())


def read(location: Location) -> bytes:
    """The whole object, in one GET."""
    return read_stream(location)


def replace(location: Location, data: bytes) -> None:
    """One PUT (or multipart upload) of the whole object: readers see the old object until it completes."""
    put_object(location, data)


def create_exclusive(location: Location, data: bytes) -> bool:
    """S3's conditional PUT (``If-None-Match: *``): one writer wins."""
    import boto3
    from botocore.exceptions import ClientError

    settings = S3Settings.from_environment()
    bucket, _, key = location.path.partition("/")
    client = boto3.client("s3", **client_options(settings, bucket_region(bucket, settings)))
    try:
        client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
        return True
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code")
        if code in ("PreconditionFailed", "412", "ConditionalRequestConflict"):
            return False
        raise OSError(f"S3 PutObject of s3://{bucket}/{key}: {error}") from error
