"""Config rendering of each service, pure functions only."""

from __future__ import annotations

from pathlib import Path

import pytest
from hudi_connect_stack.endpoints import (
    AzuriteEndpoint,
    GcsEndpoint,
    HdfsEndpoint,
    MinioEndpoint,
    PostgresEndpoint,
    SparkConnectEndpoint,
    StorageEndpoints,
)
from hudi_connect_stack.kafka import new_cluster_id, render_server_properties
from hudi_connect_stack.postgres import postgres_command
from hudi_connect_stack.spark_connect import HUDI_CONFS, render_server_confs, storage_env

from hudi_connect.client.server import REQUIRED_HUDI_CONFS, missing_hudi_confs
from hudi_connect.core.errors import ServerMisconfiguredError

MINIO = MinioEndpoint("http://127.0.0.1:9000", "access-xyz", "secret-very-secret")


def test_hudi_server_has_every_conf_hudi_needs() -> None:
    confs = render_server_confs("hudi", port=15002, work_dir=Path("/w"))
    assert missing_hudi_confs(confs) == []
    assert confs["spark.connect.grpc.binding.port"] == "15002"
    assert confs["spark.connect.grpc.interceptor.classes"] == "hudiconnect.LoopbackTokenInterceptor"
    assert confs["spark.master"] == "local[2]"


def test_every_hudi_server_initializes_hudis_metadata_payload_at_start() -> None:
    # Hudi 1.2's first metadata-table write of a fresh JVM fails when a compaction caches its schema first
    for flavor in ("hudi", "cluster", "hudi-lance", "hudi-0.15", "hudi-1.0"):
        confs = render_server_confs(flavor, port=1, work_dir=Path("/w"))
        assert confs["spark.plugins"] == "hudiconnect.HudiServerPlugin", flavor


def test_plain_server_has_no_hudi_conf() -> None:
    confs = render_server_confs("plain", port=1, work_dir=Path("/w"))
    assert not set(HUDI_CONFS) & set(confs)
    assert "spark.plugins" not in confs
    assert len(missing_hudi_confs(confs)) == len(REQUIRED_HUDI_CONFS)


def test_storage_credentials_never_appear_in_spark_confs() -> None:
    confs = render_server_confs("hudi", port=1, work_dir=Path("/w"), minio=MINIO)
    assert confs["spark.hadoop.fs.s3a.endpoint"] == MINIO.endpoint_url
    assert confs["spark.hadoop.fs.s3a.path.style.access"] == "true"
    rendered = " ".join(f"{k}={v}" for k, v in confs.items())
    assert MINIO.secret_key not in rendered and MINIO.access_key not in rendered
    assert storage_env(MINIO)["AWS_SECRET_ACCESS_KEY"] == MINIO.secret_key
    assert storage_env(None) == {}


STORAGES = StorageEndpoints(GcsEndpoint("http://127.0.0.1:4443"),
                            AzuriteEndpoint("http://127.0.0.1:10000/devstoreaccount1", "devstoreaccount1", "a2V5"),
                            HdfsEndpoint("hdfs://127.0.0.1:8020", "127.0.0.1:9870", "/run/hdfs/client-conf"))


def test_storages_servers_reach_every_storage_and_hold_minios_keys_in_hadoops_conf_only() -> None:
    for flavor, hudi in (("hudi-storages", True), ("plain-storages", False)):
        confs = render_server_confs(flavor, port=1, work_dir=Path("/w"), minio=MINIO, storages=STORAGES)
        assert (missing_hudi_confs(confs) == []) is hudi
        assert confs["spark.hadoop.fs.gs.storage.root.url"] == "http://127.0.0.1:4443/"
        assert confs["spark.hadoop.fs.gs.auth.null.enable"] == "true"
        # the usual Hadoop way: keys in s3a's settings, which Python workers never see
        assert confs["spark.hadoop.fs.s3a.access.key"] == MINIO.access_key
    env = storage_env(MINIO, STORAGES)
    assert "AWS_ACCESS_KEY_ID" not in env and "AWS_SECRET_ACCESS_KEY" not in env
    assert env["AWS_EC2_METADATA_DISABLED"] == "true"  # no instance metadata service is looked for off loopback
    assert env["STORAGE_EMULATOR_HOST"] == "http://127.0.0.1:4443"
    assert env["HADOOP_CONF_DIR"] == "/run/hdfs/client-conf"
    assert "AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1" in env[
        "AZURE_STORAGE_CONNECTION_STRING"]
    with pytest.raises(ValueError, match="storages="):
        render_server_confs("hudi-storages", port=1, work_dir=Path("/w"))  # (start_spark_connect checks it)


def test_cluster_server_caps_executors_to_the_two_workers() -> None:
    confs = render_server_confs("cluster", port=1, work_dir=Path("/w"), master="spark://127.0.0.1:7077")
    assert confs["spark.master"] == "spark://127.0.0.1:7077"
    assert confs["spark.cores.max"] == "2"
    assert missing_hudi_confs(confs) == []


def test_only_servers_asked_for_a_quick_jit_compile_with_c1_alone() -> None:
    quick = render_server_confs("cluster", port=1, work_dir=Path("/w"), master="spark://127.0.0.1:7077", jit="quick")
    assert quick["spark.driver.extraJavaOptions"] == quick["spark.executor.extraJavaOptions"] \
        == "-XX:TieredStopAtLevel=1"
    full = render_server_confs("hudi", port=1, work_dir=Path("/w"))
    assert not {"spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"} & set(full)


def test_missing_hudi_conf_message_says_what_and_why() -> None:
    confs = dict(HUDI_CONFS)
    confs["spark.sql.extensions"] = "io.delta.sql.DeltaSparkSessionExtension"
    problems = missing_hudi_confs(confs)
    assert len(problems) == 1
    assert "spark.sql.extensions must include org.apache.spark.sql.hudi.HoodieSparkSessionExtension" in problems[0]
    assert "zero rows" in problems[0]
    assert "DeltaSparkSessionExtension" in problems[0]
    assert issubclass(ServerMisconfiguredError, Exception)


def test_connect_url_carries_the_token_but_repr_hides_it() -> None:
    endpoint = SparkConnectEndpoint("127.0.0.1", 15002, "t0ken", "hudi")
    assert endpoint.url == "sc://127.0.0.1:15002/;x-hudi-connect-token=t0ken"
    assert "t0ken" not in repr(endpoint)


def test_kafka_is_a_single_kraft_node_on_loopback() -> None:
    properties = dict(
        line.split("=", 1) for line in render_server_properties(Path("/d"), 9092, 9093).splitlines()
    )
    assert properties["process.roles"] == "broker,controller"
    assert properties["listeners"] == "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    assert properties["controller.quorum.voters"] == "1@127.0.0.1:9093"
    assert properties["log.dirs"] == "/d"


def test_kraft_cluster_ids_are_22_url_safe_characters_and_unique() -> None:
    ids = {new_cluster_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(len(i) == 22 and "=" not in i and "+" not in i and "/" not in i for i in ids)


def test_postgres_listens_on_loopback_only() -> None:
    command = postgres_command(Path("/pg/bin"), Path("/data"), Path("/sock"), 5433)
    assert command[:5] == ["/pg/bin/postgres", "-D", "/data", "-p", "5433"]
    assert "listen_addresses=127.0.0.1" in command


@pytest.mark.parametrize(("user", "password"), [("hudi", "p@ss/word"), ("a b", "x")])
def test_postgres_dsn_quotes_credentials(user: str, password: str) -> None:
    endpoint = PostgresEndpoint("127.0.0.1", 5432, user, password, "hudi")
    assert endpoint.dsn.startswith("postgresql://")
    assert "@127.0.0.1:5432/hudi" in endpoint.dsn
    assert password not in endpoint.dsn or password == "x"
    assert endpoint.jdbc_url == "jdbc:postgresql://127.0.0.1:5432/hudi"


@pytest.mark.parametrize(("spark_version", "bundle"), [
    ("3.5.7", "org.apache.hudi:hudi-spark3.5-bundle_2.12:1.2.0"),
    ("4.0.5", "org.apache.hudi:hudi-spark4.0-bundle_2.13:1.2.0"),
    ("4.1.3", "org.apache.hudi:hudi-spark4.1-bundle_2.13:1.2.0"),
])
def test_the_missing_bundle_is_named_for_the_servers_spark_line(spark_version: str, bundle: str) -> None:
    from hudi_connect_stack.versions import hudi_bundle

    from hudi_connect.client.server import bundle_advice

    assert hudi_bundle(spark_version).coordinate == bundle
    advice = bundle_advice(spark_version)
    assert f"--packages {bundle}" in advice
    assert ("your own repository" in advice) == spark_version.startswith("4.")


def test_a_spark_4_plain_server_binds_loopback_and_has_no_hudi_conf(tmp_path: Path) -> None:
    from hudi_connect_stack.process import LOOPBACK

    confs = render_server_confs("plain-4.1", port=15002, work_dir=tmp_path)
    assert confs["spark.connect.grpc.binding.address"] == LOOPBACK
    assert not set(HUDI_CONFS) & set(confs)
    assert "spark.connect.grpc.binding.address" not in render_server_confs("plain", port=15002, work_dir=tmp_path)
