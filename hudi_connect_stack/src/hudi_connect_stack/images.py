"""The stack's own container images, built on this machine when no registry serves the public ones.

Every image is tagged by the digest of what goes into it (build files, the
packages of the base, the versions of the binaries), so a build happens once
per change and an engine that already holds the tag is not asked again.

- ``base``: Debian 12 with Java 17, PostgreSQL 15, and a Python with the Spark
  workers' packages at ``/opt/python``. Built with ``mmdebstrap`` from Debian's
  packages and the wheels the host's pip downloads (so no registry and no
  network inside a build are needed), or with ``docker build`` from
  ``testcontainers/base/Containerfile`` where ``mmdebstrap`` is missing.
- ``minio``, ``kafka``, ``postgres``, ``spark-connect``, and the storage servers
  ``fake-gcs``, ``azurite`` (Debian's Node.js, in the base) and ``hdfs``: the base
  plus what ``provision`` already has in its cache, built from
  ``testcontainers/<name>/``.
  Each keeps the interface of the public image it stands in for, so the docker
  backend runs either the same way.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import platform
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hudi_connect.core.errors import ProvisioningError
from hudi_connect_stack import provision, versions
from hudi_connect_stack.checkout import checkout_root, container_build_files

if TYPE_CHECKING:
    import docker

BUILD_FILES = checkout_root() / "testcontainers"  # every image's identity reads its folder first
REPOSITORY = "localhost/hudi-connect"
DEBIAN_SUITE = "bookworm"
# the workers' packages, but pylance (its flavor runs locally only), plus the py4j that pyspark 3.5 imports
BASE_PYTHON_PACKAGES = (
    *(p for p in versions.SERVER_PYTHON_PACKAGES if not p.startswith("pylance")), "py4j==0.10.9.7",
)
BASE_PYTHON_VERSION = "3.11"  # Debian 12's; the client's minor version must match it (Spark checks)
SERVICES = ("minio", "kafka", "postgres", "spark-connect", "fake-gcs", "azurite", "hdfs")


@dataclass(frozen=True)
class ServiceImage:
    """How one service image is made: its build folder and the files ``provision`` adds to the context."""

    service: str
    inputs: Callable[[], Mapping[str, Path]]  # name in the context -> file or folder on this machine
    generated: Callable[[], Mapping[str, str]]  # name in the context -> text
    identity: Callable[[], str]  # what the inputs are, for the tag (versions, not bytes: they are large)


def _kafka_inputs() -> Mapping[str, Path]:
    return {"libs": provision.ensure_jars(versions.KAFKA_BROKER_JARS)}


def _kafka_generated() -> Mapping[str, str]:
    from hudi_connect_stack.kafka import LOG4J_PROPERTIES

    return {"log4j.properties": LOG4J_PROPERTIES}


def _spark_inputs() -> Mapping[str, Path]:
    from hudi_connect_stack.spark_connect import spark_home

    return {"pyspark": spark_home()}


def _azurite_inputs() -> Mapping[str, Path]:
    script = provision.ensure_azurite()  # <prefix>/node_modules/azurite/dist/src/blob/main.js
    return {"node_modules": script.parents[4]}


def _hdfs_inputs() -> Mapping[str, Path]:
    return {"jars": provision.ensure_jars(versions.HDFS_SERVER_JARS)}


def _hdfs_generated() -> Mapping[str, str]:
    from hudi_connect_stack.hdfs import LOG4J_PROPERTIES

    return {"log4j.properties": LOG4J_PROPERTIES}


def _none() -> Mapping[str, str]:
    return {}


SERVICE_IMAGES: Mapping[str, ServiceImage] = {
    "minio": ServiceImage("minio", lambda: {"minio": provision.ensure_minio()}, _none,
                          lambda: versions.MINIO_VERSION),
    "kafka": ServiceImage("kafka", _kafka_inputs, _kafka_generated,
                          lambda: " ".join(a.jar_name for a in versions.KAFKA_BROKER_JARS.artifacts)),
    "postgres": ServiceImage("postgres", lambda: {}, _none, lambda: ""),
    "spark-connect": ServiceImage("spark-connect", _spark_inputs, _none, lambda: versions.SPARK_VERSION),
    "fake-gcs": ServiceImage("fake-gcs", lambda: {"fake-gcs-server": provision.ensure_fake_gcs_server()}, _none,
                             lambda: versions.FAKE_GCS_VERSION),
    "azurite": ServiceImage("azurite", _azurite_inputs, _none, lambda: versions.AZURITE_VERSION),
    "hdfs": ServiceImage("hdfs", _hdfs_inputs, _hdfs_generated,
                         lambda: " ".join(a.jar_name for a in versions.HDFS_SERVER_JARS.artifacts)),
}


def _is_build_file(path: Path) -> bool:
    # not what a build adds to a copy of the folder (binaries, a written requirements.txt)
    return path.is_file() and (path.name == "Containerfile" or path.suffix == ".sh" or path.name == "packages.txt")


def _folder_text(folder: Path) -> str:
    if not folder.is_dir():
        container_build_files()  # raises, naming what to set
    return "".join(f"{f.name}\n{f.read_text()}" for f in sorted(folder.iterdir()) if _is_build_file(f))


def _tag(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def base_packages() -> tuple[str, ...]:
    return tuple((BUILD_FILES / "base" / "packages.txt").read_text().split())


def base_reference() -> str:
    tag = _tag(DEBIAN_SUITE, _folder_text(BUILD_FILES / "base"), *BASE_PYTHON_PACKAGES)
    return f"{REPOSITORY}/base:{tag}"


def service_reference(service: str) -> str:
    image = SERVICE_IMAGES[service]
    return f"{REPOSITORY}/{service}:{_tag(base_reference(), _folder_text(BUILD_FILES / service), image.identity())}"


def _have(client: docker.DockerClient, reference: str) -> bool:
    from docker.errors import ImageNotFound

    try:
        client.images.get(reference)
        return True
    except ImageNotFound:
        return False


def _download_wheels(target: Path) -> None:
    """The base's Python packages as wheels for Debian 12's CPython, fetched by the host's pip (its index,
    proxy and certificates), so the build itself needs no network."""
    # glibc 2.28 wheels too (datafusion publishes no others): Debian 12 has glibc 2.36
    machine = platform.machine()
    provision.run_checked([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:",
          "--platform", f"manylinux2014_{machine}", "--platform", f"manylinux_2_28_{machine}",
          "--python-version", BASE_PYTHON_VERSION, "--implementation", "cp", "-d", str(target),
          *BASE_PYTHON_PACKAGES], what="pip download of the base image's packages")


def _build_base_with_mmdebstrap(client: docker.DockerClient, reference: str, work: Path) -> None:
    mmdebstrap = shutil.which("mmdebstrap")
    assert mmdebstrap is not None
    wheels = work / "wheels"
    _download_wheels(wheels)
    rootfs = work / "base.tar"
    pip = "/opt/python/bin/pip install -q --no-cache-dir --no-index --find-links /tmp/wheels " + " ".join(
        BASE_PYTHON_PACKAGES
    )
    provision.run_checked([mmdebstrap, "--variant=apt", "--include=" + ",".join(base_packages()),
          "--customize-hook=chroot \"$1\" python3 -m venv /opt/python",
          f"--customize-hook=copy-in {wheels} /tmp",
          f"--customize-hook=chroot \"$1\" {pip}",
          "--customize-hook=rm -rf \"$1\"/tmp/wheels \"$1\"/var/cache/apt/archives/*.deb \"$1\"/var/lib/apt/lists/*",
          DEBIAN_SUITE, str(rootfs)], what="mmdebstrap of the base image")
    _import(client, rootfs, reference)


def _import(client: docker.DockerClient, rootfs: Path, reference: str) -> None:
    """A root file system's tar imported as the image ``reference``."""
    from docker.errors import DockerException

    repository, tag = reference.rsplit(":", 1)
    reply = client.api.import_image_from_file(str(rootfs), repository=repository, tag=tag)
    # podman's Docker API tags an import 'latest' whatever it is asked; its reply names the image, so tag it
    image_id = json.loads(reply.strip().splitlines()[-1]).get("status", "") if isinstance(reply, str) else ""
    if not _have(client, reference):
        client.images.get(image_id).tag(repository, tag)
        with contextlib.suppress(DockerException):
            client.images.remove(f"{repository}:latest")  # only the stray tag: the image keeps ours


def _build(client: docker.DockerClient, reference: str, context: Path, base: str | None) -> None:
    from docker.errors import BuildError

    try:
        client.images.build(path=str(context), dockerfile="Containerfile", tag=reference, rm=True,
                            buildargs={"BASE": base} if base else None)
    except BuildError as error:
        log = "".join(str(line.get("stream", line.get("error", ""))) for line in error.build_log)
        raise ProvisioningError(f"building {reference} failed: {error.msg}\n{log[-3000:]}") from error


def _context(work: Path, service: str, inputs: Mapping[str, Path], generated: Mapping[str, str]) -> Path:
    context = work / service
    shutil.copytree(BUILD_FILES / service, context)
    for name, source in inputs.items():
        if source.is_dir():
            shutil.copytree(source, context / name, ignore=shutil.ignore_patterns("__pycache__", ".complete"))
        else:
            shutil.copy2(source, context / name)
    for name, text in generated.items():
        (context / name).write_text(text)
    return context


def ensure_base(client: docker.DockerClient) -> str:
    reference = base_reference()
    if _have(client, reference):
        return reference
    provision.progress(f"building the base image {reference} (about a minute; Debian packages and wheels)")
    with tempfile.TemporaryDirectory(prefix="hudi-connect-image-") as work_dir:
        work = Path(work_dir)
        if shutil.which("mmdebstrap"):
            _build_base_with_mmdebstrap(client, reference, work)
        else:
            context = _context(work, "base", {}, {"requirements.txt": "\n".join(BASE_PYTHON_PACKAGES) + "\n"})
            _build(client, reference, context, None)
    return reference


CLIENT_SUITES = {"client-trixie": "trixie"}  # a client image's folder -> its Debian suite (Python 3.13)


def client_reference(name: str) -> str:
    return f"{REPOSITORY}/{name}:{_tag(CLIENT_SUITES[name], _folder_text(BUILD_FILES / name))}"


def ensure_client_image(client: docker.DockerClient, name: str = "client-trixie") -> str:
    """A Debian image with only the packages of ``testcontainers/<name>/packages.txt``, for a client of another
    Python than the host's (Debian 13's is 3.13): built with ``mmdebstrap``, as the base is, once per change."""
    reference = client_reference(name)
    if _have(client, reference):
        return reference
    mmdebstrap = shutil.which("mmdebstrap")
    if mmdebstrap is None:
        raise ProvisioningError(f"building {reference} needs mmdebstrap: python -m hudi_connect_stack.provision podman")
    packages = (BUILD_FILES / name / "packages.txt").read_text().split()
    provision.progress(f"building {reference} with mmdebstrap (Debian {CLIENT_SUITES[name]})")
    with tempfile.TemporaryDirectory(prefix="hudi-connect-image-") as work_dir:
        rootfs = Path(work_dir) / "rootfs.tar"
        provision.run_checked([mmdebstrap, "--variant=apt", "--include=" + ",".join(packages),
              "--customize-hook=rm -rf \"$1\"/var/cache/apt/archives/*.deb \"$1\"/var/lib/apt/lists/*",
              CLIENT_SUITES[name], str(rootfs)], what=f"mmdebstrap of {name}")
        _import(client, rootfs, reference)
    return reference


def ensure_service_image(client: docker.DockerClient, service: str) -> str:
    """The built image of ``service``, building it (and the base) when the engine lacks it; one build at a
    time on this machine, however many test processes ask (services start in parallel under xdist)."""
    reference = service_reference(service)
    if _have(client, reference):
        return reference
    lock_file = provision.cache_dir() / "images.lock"
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or when the process dies
        if _have(client, reference):  # another process built it while this one waited
            return reference
        base = ensure_base(client)
        image = SERVICE_IMAGES[service]
        provision.progress(f"building {reference}")
        with tempfile.TemporaryDirectory(prefix="hudi-connect-image-") as work_dir:
            _build(client, reference, _context(Path(work_dir), service, image.inputs(), image.generated()), base)
    return reference


def image_sizes(client: docker.DockerClient) -> dict[str, int]:
    """Bytes of each built image the engine holds (for notes and ``stack``'s report)."""
    sizes = {}
    for name in ("base", *SERVICES):
        reference = base_reference() if name == "base" else service_reference(name)
        if _have(client, reference):
            sizes[name] = int(client.images.get(reference).attrs.get("Size", 0))
    return sizes


def build_all(services: Sequence[str] = SERVICES) -> None:
    """The images of ``services`` (default all; and the base), ahead of the tests that need them: ``ci/test.sh``
    runs this in the background while the first leg runs. The engine is the one that answers, else podman's,
    started for the build and stopped after it."""
    unknown = sorted(set(services) - set(SERVICES))
    if unknown:
        raise ProvisioningError(f"no images for {unknown}: choose from {', '.join(SERVICES)}")
    import docker

    from hudi_connect_stack.engine import ensure_engine, stop_started_engine

    with tempfile.TemporaryDirectory(prefix="hudi-connect-images-") as run_dir:
        ensure_engine(Path(run_dir))
        try:
            client = docker.from_env()
            try:
                for service in services:
                    ensure_service_image(client, service)
                provision.progress("images ready: " + ", ".join(
                    f"{name} {size / 2**20:.0f} MiB" for name, size in image_sizes(client).items()))
            finally:
                client.close()
        finally:
            stop_started_engine(Path(run_dir))


if __name__ == "__main__":  # python -m hudi_connect_stack.images [SERVICE ...]
    try:
        build_all(sys.argv[1:] or SERVICES)
    except ProvisioningError as error:
        print(f"hudi-connect: building the images failed: {error}", file=sys.stderr)
        sys.exit(1)
