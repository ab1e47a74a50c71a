"""Google Cloud Storage through pyarrow's GCS file system.

Credentials are Google's application default credentials of the worker (``GOOGLE_APPLICATION_CREDENTIALS``,
the metadata server of a GCE/GKE host). ``STORAGE_EMULATOR_HOST`` (the variable Google's own client
libraries honour) points the workers at an emulator, unauthenticated, as the JVM's ``fs.gs.storage.root.url``
does for Hadoop's connector.
"""

from __future__ import annotations

import os
from datetime import timedelta
from functools import lru_cache
from urllib.parse import urlparse

import pyarrow.fs as pafs

from hudi_connect.core.executor.storage import Location, put_object, read_stream


def emulator_url() -> str | None:
    """The emulator's base URL (``http://host:port``), if the worker is pointed at one."""
    host = os.environ.get("STORAGE_EMULATOR_HOST")
    if not host:
        return None
    return host.rstrip("/") if "://" in host else f"http://{host.rstrip('/')}"


# how long a failing request is retried (pyarrow's default is 15 minutes: a missing credential or an unreachable
# endpoint would hold a task that long before its error)
RETRY_TIME_LIMIT = timedelta(seconds=60)


@lru_cache(maxsize=4)
def _filesystem(emulator: str | None) -> pafs.GcsFileSystem:
    if emulator is None:
        return pafs.GcsFileSystem(retry_time_limit=RETRY_TIME_LIMIT)
    parsed = urlparse(emulator)
    return pafs.GcsFileSystem(anonymous=True, scheme=parsed.scheme, endpoint_override=parsed.netloc,
                              retry_time_limit=RETRY_TIME_LIMIT)


def filesystem(location: Location) -> pafs.GcsFileSystem:
    """pyarrow's GCS file system, at the emulator where ``STORAGE_EMULATOR_HOST`` names one."""
    return _filesystem(emulator_url())


def read(location: Location) -> bytes:
    """The whole object, in one GET."""
    return read_stream(location)


def replace(location: Location, data: bytes) -> None:
    """One upload of the whole object: readers see the old object until the upload is finalized."""
    put_object(location, data)


def create_exclusive(location: Location, data: bytes) -> bool:
    """GCS's precondition ``ifGenerationMatch=0``: the upload succeeds only where no object exists. (The
    client sends small objects as one multipart upload, where fake-gcs-server checks preconditions too.)"""
    from google.api_core.exceptions import GoogleAPIError, PreconditionFailed
    from google.auth.exceptions import GoogleAuthError

    bucket, _, name = location.path.partition("/")
    try:
        _client(emulator_url()).bucket(bucket).blob(name).upload_from_string(data, if_generation_match=0)
        return True
    except PreconditionFailed:
        return False
    except (GoogleAPIError, GoogleAuthError) as error:  # the storage's refusal, as the other clients raise it
        raise OSError(f"GCS upload of gs://{location.path}: {error}") from error


@lru_cache(maxsize=4)
def _client(emulator: str | None):  # type: ignore[no-untyped-def]
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    if emulator is None:
        return storage.Client()
    return storage.Client(project=os.environ.get("GOOGLE_CLOUD_PROJECT", "emulator"),
                          credentials=AnonymousCredentials(), client_options={"api_endpoint": emulator})
