"""Provisioning logic that needs no network: POM rendering, markers, tool checks."""

from __future__ import annotations

import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hudi_connect_stack.versions import JarSet, MavenArtifact

from hudi_connect.core.errors import ProvisioningError
from hudi_connect_stack import provision, versions

NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def test_pom_excludes_transitive_dependencies_unless_asked() -> None:
    jar_set = JarSet("x", (MavenArtifact("g", "solo", "1"), MavenArtifact("g", "tree", "2", transitive=True)))
    root = ET.fromstring(provision.render_pom(jar_set))
    dependencies = root.findall("m:dependencies/m:dependency", NS)
    assert [d.findtext("m:artifactId", namespaces=NS) for d in dependencies] == ["solo", "tree"]
    assert dependencies[0].find("m:exclusions/m:exclusion", NS) is not None
    assert dependencies[1].find("m:exclusions", NS) is None
    assert root.findtext("m:artifactId", namespaces=NS) == "jars-x"


def test_a_jar_sets_pom_copies_its_jars_beside_itself_and_a_reactor_lists_the_sets() -> None:
    root = ET.fromstring(provision.render_pom(JarSet("x", (MavenArtifact("g", "a", "1"),))))
    plugin = root.find("m:build/m:plugins/m:plugin", NS)
    assert plugin is not None
    coordinates = [plugin.findtext(f"m:{name}", namespaces=NS) for name in ("groupId", "artifactId", "version")]
    assert ":".join(c or "" for c in coordinates) == versions.MAVEN_DEPENDENCY_PLUGIN
    assert plugin.findtext("m:configuration/m:outputDirectory", namespaces=NS) == "${project.basedir}"
    reactor = ET.fromstring(provision.render_reactor_pom(["../a.partial", "../b.partial"]))
    assert [m.text for m in reactor.findall("m:modules/m:module", NS)] == ["../a.partial", "../b.partial"]
    assert reactor.findtext("m:packaging", namespaces=NS) == "pom"


def test_every_pinned_jar_set_renders_valid_xml() -> None:
    for jar_set in versions.ALL_JAR_SETS:
        root = ET.fromstring(provision.render_pom(jar_set))
        assert len(root.findall("m:dependencies/m:dependency", NS)) == len(jar_set.artifacts)


def test_pins_agree_on_spark_and_scala() -> None:
    spark_artifacts = [a for s in versions.ALL_JAR_SETS for a in s.artifacts if a.group == "org.apache.spark"]
    assert spark_artifacts
    for artifact in spark_artifacts:
        # the JVM client is the one exception: the registry serves the 3.5 line's at 3.5.0 only
        client = artifact.artifact.startswith("spark-connect-client-jvm")
        assert artifact.version == (versions.JVM_CLIENT_VERSION if client else versions.SPARK_VERSION)
        assert artifact.version.split(".")[:2] == versions.SPARK_VERSION.split(".")[:2]
        assert artifact.artifact.endswith(f"_{versions.SCALA_BINARY_VERSION}")
    hudi = versions.HUDI_JARS.artifacts[0]
    assert hudi.artifact == f"hudi-spark3.5-bundle_{versions.SCALA_BINARY_VERSION}"
    assert hudi == versions.hudi_bundle(versions.SPARK_VERSION)


@pytest.mark.parametrize("name", sorted(versions.SPARK4_LINES))
def test_each_spark_4_line_agrees_with_itself(name: str) -> None:
    """Its pyspark, its client extra and its Kafka connector are of the one line, and Scala 2.13 (4.3: PyPI has no
    pyspark-client 4.3 and Maven Central no Kafka connector 4.3; its client is pyspark's connect extra and its
    connector 4.2's)."""
    line = versions.SPARK4_LINES[name]
    assert line.name == name and line.pyspark.startswith(f"{name}.") and line.flavor == f"plain-{name}"
    client = "pyspark[connect]" if name == "4.3" else "pyspark-client"
    assert line.client == f"{client}>={name},<4.{int(name.split('.')[1]) + 1}"
    connector = "4.2" if name == "4.3" else name
    spark = [a for a in line.jars.artifacts if a.group == "org.apache.spark"]
    assert len(spark) == 2 and all(a.version.startswith(f"{connector}.") and a.artifact.endswith("_2.13")
                                   for a in spark)
    ET.fromstring(provision.render_pom(line.jars))
    extras = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert extras[f"spark{name.replace('.', '')}"] == [line.client]


@pytest.mark.parametrize(
    ("output", "major"),
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('java version "1.8.0_392"', 8),
        ('openjdk version "21" 2023-09-19', 21),
    ],
)
def test_java_major_version_is_read_from_java_version_output(output: str, major: int) -> None:
    assert provision.parse_java_major(output) == major


def test_unreadable_java_version_is_a_clear_error() -> None:
    with pytest.raises(ProvisioningError, match="cannot read the Java version"):
        provision.parse_java_major("command not found")


def test_missing_tool_error_names_the_tool_and_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ProvisioningError, match=r"'mvn' is not on PATH: install Maven"):
        provision.require_tool("mvn")
    with pytest.raises(ProvisioningError, match=r"'go' is not on PATH: install Go"):
        provision.require_tool("go")


def test_jar_set_with_a_matching_marker_is_not_resolved_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HUDI_CONNECT_CACHE", str(tmp_path))
    jar_set = JarSet("cached", (MavenArtifact("g", "a", "1"),))
    target = provision.jar_dir(jar_set)
    target.mkdir(parents=True)
    (target / "a-1.jar").write_bytes(b"jar")
    (target / ".complete").write_text(provision.spec_digest(provision.render_pom(jar_set)))
    monkeypatch.setenv("PATH", "/nonexistent")  # Maven would be needed to resolve anything
    assert provision.jars_of(jar_set) == [target / "a-1.jar"]


def test_changed_jar_set_needs_maven_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUDI_CONNECT_CACHE", str(tmp_path))
    jar_set = JarSet("stale", (MavenArtifact("g", "a", "2"),))
    target = provision.jar_dir(jar_set)
    target.mkdir(parents=True)
    (target / ".complete").write_text("digest-of-an-older-spec")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ProvisioningError, match="'mvn' is not on PATH"):
        provision.ensure_jars(jar_set)


def test_unknown_component_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown components"):
        provision.provision(["jars", "zookeeper"])


def test_cache_dir_honours_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUDI_CONNECT_CACHE", str(tmp_path / "c"))
    assert provision.cache_dir() == tmp_path / "c"
    monkeypatch.delenv("HUDI_CONNECT_CACHE")
    assert provision.cache_dir() == Path.home() / ".cache" / "hudi-connect"


def test_command_line_provisions_only_what_is_cached_without_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HUDI_CONNECT_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", "/nonexistent")
    assert provision.main(["minio"]) == 1
    assert "'go' is not on PATH" in capsys.readouterr().err
    assert provision.main(["zookeeper"]) == 1
    assert "unknown components ['zookeeper']" in capsys.readouterr().err
