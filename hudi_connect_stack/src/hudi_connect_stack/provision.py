"""Install every real part of the stack into a cache outside the repository.

Idempotent and resumable: each component is finished by a marker file that
records what was installed, so a second run only checks markers, and an
interrupted run picks up from Maven's and Go's own caches. Progress goes to
stderr. Run it as ``python -m hudi_connect_stack.provision``.
"""

from __future__ import annotations

import argparse
import fcntl
import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from xml.sax.saxutils import escape

from hudi_connect.core.errors import ProvisioningError
from hudi_connect_stack import versions
from hudi_connect_stack.versions import JarSet, SparkLine

INTERCEPTOR_SOURCE = Path(__file__).with_name("java") / "LoopbackTokenInterceptor.java"
INTERCEPTOR_CLASS = "hudiconnect.LoopbackTokenInterceptor"
SERVER_PLUGIN_SOURCE = Path(__file__).with_name("java") / "HudiServerPlugin.java"
SERVER_PLUGIN_CLASS = "hudiconnect.HudiServerPlugin"
REQUIRED_JAVA_MAJOR = 17
SPARK4_JAVA_MAJORS = (17, 21)


def cache_dir() -> Path:
    """Where downloads and builds live: ``$HUDI_CONNECT_CACHE`` or ``~/.cache/hudi-connect``."""
    configured = os.environ.get("HUDI_CONNECT_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "hudi-connect"


def progress(message: str) -> None:
    print(f"[hudi-connect provision] {message}", file=sys.stderr, flush=True)


# --- tool checks -----------------------------------------------------------------

_TOOL_HINTS = {
    "java": f"install a Java {REQUIRED_JAVA_MAJOR} JDK (Debian: apt-get install openjdk-17-jdk-headless)",
    "javac": f"install a Java {REQUIRED_JAVA_MAJOR} JDK, not only a JRE",
    "mvn": "install Maven (Debian: apt-get install maven)",
    "go": "install Go 1.24 or newer (https://go.dev/doc/install) to build MinIO",
    "apt-get": "PostgreSQL is installed with apt-get on Debian/Ubuntu; install PostgreSQL 15+ yourself elsewhere",
    "npm": "install Node.js 20 or newer with npm (Debian: apt-get install nodejs npm) to install Azurite",
}


def require_tool(name: str) -> str:
    """The path of ``name`` on PATH, or a ProvisioningError that says how to get it."""
    found = shutil.which(name)
    if found is None:
        raise ProvisioningError(f"'{name}' is not on PATH: {_TOOL_HINTS.get(name, 'install it')}")
    return found


def parse_java_major(version_output: str) -> int:
    """The major version from ``java -version`` output (``"17.0.15"`` -> 17, ``"1.8.0"`` -> 8)."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if match is None:
        raise ProvisioningError(f"cannot read the Java version from: {version_output.strip()[:200]!r}")
    major = int(match.group(1))
    if major == 1 and match.group(2) is not None:
        major = int(match.group(2))
    return major


def check_java(majors: Sequence[int] = (REQUIRED_JAVA_MAJOR,)) -> None:
    """A JDK of one of ``majors`` first on PATH: Spark 3.5 with Hudi's bundle needs Java 17; Spark 4's servers
    and compiling the harness's jars (``--release 8``) take 17 or 21 (Debian 13 has no Java 17)."""
    java = require_tool("java")
    output = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    major = parse_java_major(output)
    if major not in majors:
        wanted = " or ".join(str(m) for m in majors)
        raise ProvisioningError(
            f"Java {wanted} is required (Spark {versions.SPARK_VERSION} with Hudi {versions.HUDI_VERSION} runs on "
            f"Java {REQUIRED_JAVA_MAJOR}), but 'java' is version {major}: put a Java {wanted} JDK first on PATH "
            "or set JAVA_HOME"
        )
    require_tool("javac")


# --- Maven jars ------------------------------------------------------------------

def render_pom(jar_set: JarSet) -> str:
    """A throw-away POM whose dependencies are the jar set, for ``copy-dependencies``."""
    dependencies = []
    for artifact in jar_set.artifacts:
        excluded = [name.split(":") for name in artifact.exclusions] if artifact.transitive else [["*", "*"]]
        exclusions = "".join(
            f"<exclusion><groupId>{escape(group)}</groupId><artifactId>{escape(name)}</artifactId></exclusion>"
            for group, name in excluded
        )
        exclusions = f"<exclusions>{exclusions}</exclusions>" if exclusions else ""
        dependencies.append(
            "    <dependency>"
            f"<groupId>{escape(artifact.group)}</groupId>"
            f"<artifactId>{escape(artifact.artifact)}</artifactId>"
            f"<version>{escape(artifact.version)}</version>"
            + (f"<classifier>{escape(artifact.classifier)}</classifier>" if artifact.classifier else "")
            + (f"<type>{escape(artifact.packaging)}</type>" if artifact.packaging != "jar" else "")
            + f"{exclusions}</dependency>"
        )
    body = "\n".join(dependencies)
    plugin_group, plugin, plugin_version = versions.MAVEN_DEPENDENCY_PLUGIN.split(":")
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        "  <groupId>hudi-connect.provision</groupId>\n"
        f"  <artifactId>jars-{escape(jar_set.name)}</artifactId>\n"
        "  <version>0</version>\n"
        "  <packaging>pom</packaging>\n"
        f"  <dependencies>\n{body}\n  </dependencies>\n"
        # copy-dependencies puts the jars beside this POM: each set's own directory in one Maven run of many
        f"  <build><plugins><plugin><groupId>{plugin_group}</groupId><artifactId>{plugin}</artifactId>"
        f"<version>{plugin_version}</version><configuration><outputDirectory>${{project.basedir}}</outputDirectory>"
        "<includeScope>runtime</includeScope></configuration></plugin></plugins></build>\n"
        "</project>\n"
    )


def render_reactor_pom(modules: Sequence[str]) -> str:
    """An aggregator POM over jar sets' POMs (``modules``: their directories, relative to it): Maven resolves
    them in one run, side by side (``-T``), rather than one JVM start and one download after another."""
    listed = "\n".join(f"    <module>{escape(module)}</module>" for module in modules)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        "  <groupId>hudi-connect.provision</groupId>\n"
        "  <artifactId>jar-sets</artifactId>\n"
        "  <version>0</version>\n"
        "  <packaging>pom</packaging>\n"
        f"  <modules>\n{listed}\n  </modules>\n"
        "</project>\n"
    )


def spec_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _marker_matches(marker: Path, digest: str) -> bool:
    return marker.is_file() and marker.read_text().strip() == digest


def jar_dir(jar_set: JarSet) -> Path:
    return cache_dir() / "jars" / jar_set.name


def ensure_jars(jar_set: JarSet) -> Path:
    """Resolve a jar set from Maven Central into its cache directory; returns the directory."""
    ensure_jar_sets([jar_set])
    return jar_dir(jar_set)


def ensure_jar_sets(jar_sets: Sequence[JarSet]) -> None:
    """Resolve the jar sets not yet in the cache, in one Maven run (a reactor of their POMs, built side by side)."""
    wanted: dict[str, tuple[JarSet, str]] = {}
    for jar_set in jar_sets:
        digest = spec_digest(render_pom(jar_set))
        if not _marker_matches(jar_dir(jar_set) / ".complete", digest):
            wanted[jar_set.name] = (jar_set, digest)
    if not wanted:
        return
    mvn = require_tool("mvn")
    sets = list(wanted.values())
    names = ", ".join(f"'{s.name}'" for s, _ in sets)
    progress(f"resolving jars {names} ({sum(len(s.artifacts) for s, _ in sets)} artifacts) with Maven")
    stagings = [jar_dir(s).with_name(s.name + ".partial") for s, _ in sets]
    for (jar_set, _), staging in zip(sets, stagings, strict=True):
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        (staging / "pom.xml").write_text(render_pom(jar_set))
    reactor = cache_dir() / "jars" / f"reactor-{os.getpid()}"
    shutil.rmtree(reactor, ignore_errors=True)
    reactor.mkdir(parents=True)
    (reactor / "pom.xml").write_text(render_reactor_pom([f"../{staging.name}" for staging in stagings]))
    command = [mvn, "-B", "-ntp", "-T", "4", "-f", str(reactor / "pom.xml"),
               f"{versions.MAVEN_DEPENDENCY_PLUGIN}:copy-dependencies"]
    try:
        run_checked(command, what=f"Maven resolution of jar sets {names}")
    finally:
        shutil.rmtree(reactor, ignore_errors=True)
    for (jar_set, digest), staging in zip(sets, stagings, strict=True):
        (staging / "pom.xml").unlink()
        shutil.rmtree(staging / "target", ignore_errors=True)
        missing = [a.jar_name for a in jar_set.artifacts if not (staging / a.jar_name).is_file()]
        if missing:
            raise ProvisioningError(f"Maven finished but these jars of '{jar_set.name}' are missing: "
                                    f"{', '.join(missing)}")
        target = jar_dir(jar_set)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
        (target / ".complete").write_text(digest)


def jars_of(jar_set: JarSet) -> list[Path]:
    """The jar files of a provisioned jar set, sorted by name."""
    return sorted(ensure_jars(jar_set).glob("*.jar"))


# --- the Connect auth interceptor ----------------------------------------------------

def ensure_interceptor_jar() -> Path:
    """Compile the loopback-and-token gRPC interceptor against the Connect server's jar.

    Spark 3.5's Connect server can neither bind to one address nor check a token
    (both arrived in Spark 4.0), but it loads gRPC interceptors named in
    ``spark.connect.grpc.interceptor.classes``: this one admits only loopback
    peers that present the server's token.
    """
    return _compiled_jar(INTERCEPTOR_SOURCE, jars_of(versions.SPARK_CONNECT_JARS), "interceptor",
                         "hudi-connect-interceptor.jar", "the Connect interceptor")


def ensure_server_plugin_jar() -> Path:
    """Compile the Hudi servers' plugin (``java/HudiServerPlugin.java``: Hudi classes initialized at start)
    against the jars of the installed pyspark (the Hudi servers' Spark 3.5 in the environment that starts them)."""
    import pyspark  # the Spark line's client: installed with the library, not before provisioning starts

    spark_jars = sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    return _compiled_jar(SERVER_PLUGIN_SOURCE, spark_jars, "server-plugin", "hudi-connect-server-plugin.jar",
                         "the Hudi servers' plugin")


def _compiled_jar(source: Path, classpath: Sequence[Path], folder: str, jar_name: str, what: str) -> Path:
    """``source`` compiled against ``classpath`` into a jar in the cache, once per source and class path.

    Each pair has a directory of its own, published whole by a rename: the set-ups of two Spark lines (whose
    pysparks differ) and servers starting beside them never remove or half-write a jar another process loads
    (compiling in place, a Spark 4 set-up once removed the Hudi servers' plugin while a 3.5 server started)."""
    digest = spec_digest(source.read_text() + "".join(p.name for p in classpath))
    target = cache_dir() / folder / digest
    jar = target / jar_name
    if jar.is_file():
        return jar
    check_java(SPARK4_JAVA_MAJORS)  # compiled for Java 8 classes: either JDK
    progress(f"compiling {what}")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{digest}-", dir=target.parent))
    staging.chmod(0o755)  # mkdtemp's 0700 would hide the jar from containers' users mounting the cache
    try:
        classes = staging / "classes"
        classes.mkdir()
        run_checked(
            [require_tool("javac"), "--release", "8", "-nowarn", "-cp", os.pathsep.join(str(p) for p in classpath),
             "-d", str(classes), str(source)],
            what=f"javac of {what}",
        )
        run_checked([require_tool("jar"), "cf", str(staging / jar_name), "-C", str(classes), "."],
                    what=f"jar of {what}")
        shutil.rmtree(classes)
        try:
            staging.rename(target)
        except OSError:
            if not jar.is_file():  # not another process publishing the same jar first
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return jar


# --- Spark's JVM Connect client ---------------------------------------------------------

# The 3.5.0 client jar (the only 3.5 release the registry serves) calls Guava and protobuf under the client's
# shaded package but lacks them (SPARK-45201, fixed in 3.5.1): these, relocated by Maven's shade plugin from
# the versions that release was built with (spark-parent 3.5.0's connect.guava.version, protobuf.version),
# fill the gap.
JVM_CLIENT_RELOCATED = {  # coordinate -> the packages it relocates
    "com.google.guava:guava:32.0.1-jre": ("com.google.common", "com.google.thirdparty"),
    "com.google.protobuf:protobuf-java:3.23.4": ("com.google.protobuf",),
}
JVM_CLIENT_SHADED_PREFIX = "org.sparkproject.connect.client."
SHADE_PLUGIN = ("org.apache.maven.plugins", "maven-shade-plugin", "3.6.2")


def render_relocation_pom(relocated: dict[str, tuple[str, ...]], prefix: str) -> str:
    dependencies = ""
    for coordinate in relocated:
        group, artifact, version = coordinate.split(":")
        dependencies += (
            f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId><version>{version}"
            "</version><exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion>"
            "</exclusions></dependency>"
        )
    relocations = "".join(
        f"<relocation><pattern>{package}</pattern><shadedPattern>{prefix}{package}</shadedPattern></relocation>"
        for packages in relocated.values() for package in packages
    )
    plugin_group, plugin_artifact, plugin_version = SHADE_PLUGIN
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        "  <groupId>hudi-connect.provision</groupId><artifactId>relocated</artifactId><version>0</version>\n"
        f"  <dependencies>{dependencies}</dependencies>\n"
        f"  <build><plugins><plugin><groupId>{plugin_group}</groupId><artifactId>{plugin_artifact}</artifactId>"
        f"<version>{plugin_version}</version><executions><execution><phase>package</phase><goals><goal>shade</goal>"
        f"</goals><configuration><relocations>{relocations}</relocations></configuration></execution></executions>"
        "</plugin></plugins></build>\n"
        "</project>\n"
    )


def jvm_client_classpath() -> list[Path]:
    """Spark's JVM Connect client and its dependencies, with the relocated Guava and protobuf its 3.5.0 jar
    lacks."""
    pom = render_relocation_pom(JVM_CLIENT_RELOCATED, JVM_CLIENT_SHADED_PREFIX)
    target = cache_dir() / "jvm-client-relocated"
    jar = target / "relocated.jar"
    marker = target / ".complete"
    if not (_marker_matches(marker, spec_digest(pom)) and jar.is_file()):
        progress("relocating Guava and protobuf for the JVM Connect client with Maven's shade plugin")
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        (target / "pom.xml").write_text(pom)
        run_checked([require_tool("mvn"), "-B", "-ntp", "-q", "-f", str(target / "pom.xml"), "package"],
             what="Maven shade of Guava and protobuf for the JVM client")
        shutil.copy2(target / "target" / "relocated-0.jar", jar)
        shutil.rmtree(target / "target")
        marker.write_text(spec_digest(pom))
    return [*jars_of(versions.JVM_CLIENT_JARS), jar]


# --- the stack's Go and npm servers: MinIO, fake-gcs-server, Azurite -----------------------

def _go_install(module: str, version: str, name: str, *, note: str = "") -> Path:
    """Build a Go module's binary at the pinned version into the cache's bin/ (once per version)."""
    binary = cache_dir() / "bin" / name
    marker = binary.with_name(f".{name}.complete")
    if binary.is_file() and _marker_matches(marker, version):
        return binary
    go = require_tool("go")
    progress(f"building {name} {version} with 'go install'{note}")
    binary.parent.mkdir(parents=True, exist_ok=True)
    # -s -w: no symbol table or DWARF, which the Go linker spends much of a cold build's link on; nobody
    # debugs these emulators
    run_checked([go, "install", "-ldflags=-s -w", f"{module}@{version}"], what=f"go install of {name}",
                env=_go_env(GOBIN=str(binary.parent)))
    marker.write_text(version)
    return binary


def _go_env(**extra: str) -> dict[str, str]:
    """The go command's environment: modules and build results kept in the cache, no C toolchain."""
    return dict(os.environ, GOPATH=str(cache_dir() / "go"), GOCACHE=str(cache_dir() / "go" / "build-cache"),
                GOFLAGS="-modcacherw", CGO_ENABLED="0", **extra)


def go_program(package: Path) -> Path:
    """The Go program in ``package`` (its go.mod and go.sum pin every module) built into the cache, once for
    each version of its sources."""
    sources = sorted([package / "go.mod", package / "go.sum", *package.glob("*.go")])
    digest = hashlib.sha256(b"".join(f.read_bytes() for f in sources)).hexdigest()[:16]
    binary = cache_dir() / "bin" / f"{package.name}-{digest}"
    if not binary.is_file():
        progress(f"building the Go program {package.name} with 'go build'")
        binary.parent.mkdir(parents=True, exist_ok=True)
        run_checked([require_tool("go"), "-C", str(package), "build", "-ldflags=-s -w", "-o", str(binary), "."],
                    what=f"go build of {package.name}", env=_go_env())
    return binary


def minio_binary() -> Path:
    return cache_dir() / "bin" / "minio"


def ensure_minio() -> Path:
    """Build MinIO from its Go module at the pinned version."""
    return _go_install(versions.MINIO_MODULE, versions.MINIO_VERSION, "minio", note=" (several minutes cold)")


def ensure_fake_gcs_server() -> Path:
    """Build fake-gcs-server, the GCS emulator, from its Go module at the pinned version."""
    return _go_install(versions.FAKE_GCS_MODULE, versions.FAKE_GCS_VERSION, "fake-gcs-server")


def ensure_azurite() -> Path:
    """Install Azurite from npm at the pinned version into the cache; returns its Blob service's script."""
    prefix = cache_dir() / "azurite"
    script = prefix / "node_modules" / "azurite" / "dist" / "src" / "blob" / "main.js"
    marker = prefix / ".azurite.complete"
    if script.is_file() and _marker_matches(marker, versions.AZURITE_VERSION):
        return script
    npm = require_tool("npm")
    progress(f"installing Azurite {versions.AZURITE_VERSION} with npm")
    prefix.mkdir(parents=True, exist_ok=True)
    # --ignore-scripts: Azurite's tree has one install script (protobufjs' version check), which recent npm
    # versions skip anyway; skipping it everywhere keeps installs alike
    run_checked([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--ignore-scripts",
                 f"azurite@{versions.AZURITE_VERSION}"], what="npm install of Azurite",
                env=dict(os.environ, npm_config_update_notifier="false"))
    marker.write_text(versions.AZURITE_VERSION)
    return script


# --- PostgreSQL --------------------------------------------------------------------------

def find_postgres_bin() -> Path | None:
    """The newest ``/usr/lib/postgresql/N/bin`` that has ``postgres`` and ``initdb``."""
    override = os.environ.get("HUDI_CONNECT_PG_BIN")
    candidates = [Path(override)] if override else sorted(
        Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0
    )
    for candidate in reversed(candidates):
        if (candidate / "postgres").is_file() and (candidate / "initdb").is_file():
            return candidate
    return None


def ensure_postgres() -> Path:
    """PostgreSQL's server binaries, installed with apt-get when missing."""
    found = find_postgres_bin()
    if found is not None:
        return found
    apt = require_tool("apt-get")
    if os.geteuid() != 0:
        raise ProvisioningError(
            "PostgreSQL is not installed and apt-get needs root: run 'sudo apt-get install postgresql'"
        )
    progress("installing PostgreSQL with apt-get")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run_checked([apt, "update", "-q"], what="apt-get update", env=env)
    run_checked([apt, "install", "-y", "-q", "--no-install-recommends", "postgresql"],
         what="apt-get install postgresql", env=env)
    found = find_postgres_bin()
    if found is None:
        raise ProvisioningError("apt-get installed postgresql but no /usr/lib/postgresql/*/bin/postgres was found")
    return found


# --- the servers' worker Python ----------------------------------------------------------

def _python_digest(packages: Sequence[str]) -> str:
    return spec_digest(sys.version + " ".join(packages))


def _python_in(kind: str, packages: Sequence[str]) -> Path:
    """One directory per digest, so a session that needs other packages never rebuilds a Python that a
    running server (or its workers) uses."""
    return cache_dir() / kind / _python_digest(packages) / "bin" / "python"


def _ensure_python(kind: str, packages: Sequence[str], what: str) -> Path:
    """A virtual environment with only ``packages``, built once per digest under a lock, however many
    sessions ask at once."""
    python = _python_in(kind, packages)
    home = python.parent.parent
    complete = home / ".complete"
    if complete.is_file():
        return python
    home.parent.mkdir(parents=True, exist_ok=True)
    with open(home.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or when the process dies
        if complete.is_file():  # another session built it while this one waited
            return python
        progress(f"creating {what} (" + ", ".join(packages) + ")")
        shutil.rmtree(home, ignore_errors=True)  # a build that died half-way; nothing can be using it
        run_checked([sys.executable, "-m", "venv", str(home)], what=f"python -m venv for {what}")
        run_checked([str(python), "-m", "pip", "install", "-q", "--progress-bar", "off", *packages],
             what=f"pip install of {what}")
        complete.write_text(_python_digest(packages))
    return python


def server_python() -> Path:
    """The Spark 3.5 workers' Python for this client's version and packages."""
    return _python_in("server-python", versions.SERVER_PYTHON_PACKAGES)


def ensure_server_python() -> Path:
    """A Python for Spark 3.5's workers with only :data:`versions.SERVER_PYTHON_PACKAGES`."""
    return _ensure_python("server-python", versions.SERVER_PYTHON_PACKAGES, "the servers' worker Python")


# --- a plain Spark 4 server --------------------------------------------------------------

def _spark4_packages(line: SparkLine) -> tuple[str, ...]:
    return (f"pyspark=={line.pyspark}", *line.worker_packages)


def ensure_spark4_server(line: SparkLine) -> Path:
    """A Spark ``line.name`` server and its workers' Python in one environment: PyPI's pyspark sdist (about
    450 MB) carries Spark's jars with the Connect server, and its workers import that same pyspark."""
    return _ensure_python(f"spark-{line.name}-server", _spark4_packages(line), f"the Spark {line.name} server")


def spark4_home(python: Path) -> Path:
    """SPARK_HOME of the Spark 4 server installed beside ``python``: its pyspark package directory."""
    homes = sorted(python.parent.parent.glob("lib/python3*/site-packages/pyspark"))
    if not homes:
        raise ProvisioningError(f"no pyspark package beside {python}: rebuild it with `provision spark-4.x`")
    return homes[0]


# --- a container engine: podman with its Docker API ----------------------------------

PODMAN_PACKAGES = ("podman", "runc", "mmdebstrap")  # mmdebstrap builds the images' base without a registry
CONTAINERS_CONF = Path("/etc/containers/containers.conf")
# What podman needs on a root machine without systemd and with cgroups in hybrid mode: crun refuses
# ("cgroups in hybrid mode not supported"), and the default ulimits cannot be set ("setrlimit RLIMIT_NOFILE").
CONTAINERS_CONF_TEXT = """\
# written by `python -m hudi_connect_stack.provision podman`
[containers]
default_ulimits = []

[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
"""


def ensure_podman() -> Path:
    """podman, runc and mmdebstrap from apt, and podman's settings for this kind of machine (written only when
    the machine has none of its own); nothing when a Docker engine already answers."""
    from hudi_connect_stack.engine import engine_answers

    if engine_answers():
        progress("a Docker engine answers: podman is not needed")
        return Path(shutil.which("docker") or "docker")
    missing = [name for name in PODMAN_PACKAGES if shutil.which(name) is None]
    if missing:
        apt = require_tool("apt-get")
        if os.geteuid() != 0:
            raise ProvisioningError(f"{', '.join(missing)} missing and apt-get needs root: "
                                    f"run 'sudo apt-get install {' '.join(PODMAN_PACKAGES)}'")
        progress(f"installing {', '.join(missing)} with apt-get")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        run_checked([apt, "update", "-q"], what="apt-get update", env=env)
        run_checked([apt, "install", "-y", "-q", *PODMAN_PACKAGES], what="apt-get install of podman", env=env)
    if not CONTAINERS_CONF.exists() and os.geteuid() == 0:
        CONTAINERS_CONF.parent.mkdir(parents=True, exist_ok=True)
        CONTAINERS_CONF.write_text(CONTAINERS_CONF_TEXT)
    return Path(require_tool("podman"))


# --- driver --------------------------------------------------------------------------------

def run_checked(command: Sequence[str], *, what: str, env: dict[str, str] | None = None) -> None:
    result = subprocess.run(list(command), env=env, capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-30:])
        raise ProvisioningError(f"{what} failed (exit {result.returncode}): {' '.join(command)}\n{tail}")


# storage-servers: the GCS emulator (Go) and Azurite (npm); the HDFS daemons' jars come with "jars"
COMPONENTS = ("jars", "interceptor", "server-python", "minio", "postgres", "storage-servers")
# a plain server per Spark 4 line, for the jar-free leg only (each is a 450 MB download): not in the default set
SPARK4_COMPONENTS = tuple(f"spark-{name}" for name in versions.SPARK4_LINES)
OPTIONAL_COMPONENTS = (*SPARK4_COMPONENTS, "podman")  # the docker backend's engine: not in the default set


def provision(components: Sequence[str] = COMPONENTS) -> None:
    """Install ``components``. What waits on the network or another tool runs side by side (Maven, each pip,
    Go's build of MinIO, apt-get), so a cold set-up takes about as long as its slowest part, not their sum; what
    shares a lock stays in order within one lane (Maven's local repository, dpkg's)."""
    unknown = sorted(set(components) - set(COMPONENTS) - set(OPTIONAL_COMPONENTS))
    if unknown:
        raise ValueError(f"unknown components {unknown}; choose from {[*COMPONENTS, *OPTIONAL_COMPONENTS]}")
    started = time.monotonic()
    if "jars" in components:  # the Spark 3.5 servers' (Hudi's bundle among them)
        check_java()
    elif {"interceptor", *SPARK4_COMPONENTS} & set(components):
        check_java(SPARK4_JAVA_MAJORS)
    lines = [line for name, line in versions.SPARK4_LINES.items() if f"spark-{name}" in components]

    def maven() -> None:
        jar_sets = [*(versions.ALL_JAR_SETS if "jars" in components else ()), *(line.jars for line in lines)]
        if "interceptor" in components:
            jar_sets.append(versions.SPARK_CONNECT_JARS)
        ensure_jar_sets(jar_sets)  # one Maven run
        if "interceptor" in components:
            ensure_interceptor_jar()
            import pyspark

            # the Hudi servers' plugin, compiled against this environment's Spark 3.5 jars; a Spark 4 line's client
            # environment starts no Hudi server (pyspark-client 4.0 to 4.2 has no jars to compile against)
            if pyspark.__version__ == versions.SPARK_VERSION:
                ensure_server_plugin_jar()

    def apt() -> None:
        if "postgres" in components:
            ensure_postgres()
        if "podman" in components:
            ensure_podman()

    lanes: list[Callable[[], object]] = [maven, apt]
    if "server-python" in components:
        lanes.append(ensure_server_python)
    if "minio" in components:
        lanes.append(ensure_minio)
    if "storage-servers" in components:  # beside MinIO's build: its module downloads overlap that build
        lanes += [ensure_fake_gcs_server, ensure_azurite]
    lanes += [functools.partial(ensure_spark4_server, line) for line in lines]

    def timed(lane: Callable[[], object]) -> None:  # each lane's time: the slowest is what a cold set-up waits for
        lane_started = time.monotonic()
        lane()
        name = getattr(lane, "__name__", None) or getattr(getattr(lane, "func", None), "__name__", "a lane")
        progress(f"lane {name} done in {time.monotonic() - lane_started:.0f}s")

    with ThreadPoolExecutor(len(lanes)) as pool:
        outcomes = [pool.submit(timed, lane) for lane in lanes]
    errors = [error for outcome in outcomes if (error := outcome.exception()) is not None]
    if errors:
        if len(errors) == 1:
            raise errors[0]
        raise ProvisioningError("; ".join(str(error) for error in errors))
    progress(f"ready in {time.monotonic() - started:.0f}s: {', '.join(components)} (cache {cache_dir()})")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "components", nargs="*", metavar="COMPONENT", help=f"any of {', '.join(COMPONENTS + OPTIONAL_COMPONENTS)} "
             f"(default: {', '.join(COMPONENTS)})"
    )
    args = parser.parse_args(argv)
    try:
        provision(args.components or COMPONENTS)
    except (ProvisioningError, ValueError) as error:
        print(f"hudi-connect provisioning failed: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
