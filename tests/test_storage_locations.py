"""Which client reads which URI, and with what settings: the pure rules of :mod:`hudi_connect.core.executor.storage`
(the real servers of each storage are in integration/test_storages.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_connect.core.errors import StorageAccessError, UnsupportedStorageError
from hudi_connect.core.executor.storage import azure, hdfs, location_of, read_bytes
from hudi_connect.core.executor.storage.s3 import S3Settings, filesystem_options


@pytest.mark.parametrize(("uri", "kind", "authority", "path"), [
    ("s3a://lake/trips/.hoodie", "s3", "lake", "lake/trips/.hoodie"),
    ("s3://lake/trips", "s3", "lake", "lake/trips"),
    ("s3n://lake/trips", "s3", "lake", "lake/trips"),
    ("gs://lake/trips", "gcs", "lake", "lake/trips"),
    ("abfss://data@acct.dfs.core.windows.net/trips", "azure", "data@acct.dfs.core.windows.net", "data/trips"),
    ("wasbs://data@acct.blob.core.windows.net/trips", "azure", "data@acct.blob.core.windows.net", "data/trips"),
    ("wasb://data@storageemulator/trips", "azure", "data@storageemulator", "data/trips"),
    ("hdfs://namenode:8020/warehouse/trips", "hdfs", "namenode:8020", "/warehouse/trips"),
    ("file:/tmp/trips", "local", "", "/tmp/trips"),
    ("/tmp/trips", "local", "", "/tmp/trips"),
])
def test_each_scheme_has_its_client(uri: str, kind: str, authority: str, path: str) -> None:
    location = location_of(uri)
    assert (location.kind, location.authority, location.path) == (kind, authority, path)


@pytest.mark.parametrize("uri", ["oss://bucket/t", "cosn://bucket/t", "viewfs://cluster/t", "abfs:///no-container"])
def test_a_scheme_without_a_client_is_refused_by_name(uri: str) -> None:
    with pytest.raises(UnsupportedStorageError) as refused:
        location_of(uri)
    assert refused.value.scheme == uri.split(":", 1)[0]
    assert uri in str(refused.value) and "gs://" in str(refused.value)


def test_s3_settings_follow_the_aws_sdks_environment() -> None:
    aws = S3Settings.from_environment({"AWS_DEFAULT_REGION": "eu-west-2"})
    assert aws == S3Settings(None, "eu-west-2", "auto")
    # the bucket's own region wins over the configured one; AWS's endpoint stays the SDK's (virtual-host)
    assert filesystem_options(aws, "ap-south-1") == {"region": "ap-south-1"}
    assert filesystem_options(aws, None) == {"region": "eu-west-2"}
    assert filesystem_options(S3Settings.from_environment({}), None) == {"region": "us-east-1"}
    minio = S3Settings.from_environment({"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_REGION": "r1",
                                         "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9001",
                                         "AWS_S3_ADDRESSING_STYLE": "virtual"})
    assert filesystem_options(minio, None) == {"region": "r1", "endpoint_override": "127.0.0.1:9001",
                                               "scheme": "http", "force_virtual_addressing": True}
    with pytest.raises(ValueError, match="AWS_S3_ADDRESSING_STYLE"):
        S3Settings.from_environment({"AWS_S3_ADDRESSING_STYLE": "sideways"})


def test_azure_accounts_take_their_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_KEY", raising=False)
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING",
                       "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=a2V5;"
                       "BlobEndpoint=http://127.0.0.1:10000/acct;")
    assert azure.account_of("data@acct.dfs.core.windows.net") == azure.AzureAccount(
        "acct", "a2V5", "http://127.0.0.1:10000/acct")
    assert azure.account_of("data@other.blob.core.windows.net") == azure.AzureAccount("other")  # Azure's default
    assert azure.account_of("data@storageemulator").blob_endpoint == "http://127.0.0.1:10000/devstoreaccount1"
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", "b3RoZXI=")
    assert azure.account_of("data@other.blob.core.windows.net").key == "b3RoZXI="
    options = azure.filesystem_options(azure.AzureAccount("acct", "a2V5", "http://127.0.0.1:10000/acct"))
    assert options["blob_storage_authority"] == "127.0.0.1:10000" and options["blob_storage_scheme"] == "http"


def test_webhdfs_is_found_from_the_hadoop_client_configuration(tmp_path: Path) -> None:
    assert hdfs.http_address("namenode:8020", {}) == ("namenode", hdfs.DEFAULT_HTTP_PORT)
    (tmp_path / "hdfs-site.xml").write_text(
        "<configuration><property><name>dfs.namenode.http-address</name><value>0.0.0.0:50070</value></property>"
        "</configuration>")
    settings = hdfs.hadoop_settings(str(tmp_path))
    assert settings == {"dfs.namenode.http-address": "0.0.0.0:50070"}
    assert hdfs.http_address("namenode:8020", settings) == ("namenode", 50070)
    assert hdfs.hadoop_settings(None) == {}
    # the configured address is the configured namenode's, never another's
    pinned = {"dfs.namenode.rpc-address": "127.0.0.1:8020", "dfs.namenode.http-address": "127.0.0.1:50070"}
    assert hdfs.http_address("127.0.0.1:8020", pinned) == ("127.0.0.1", 50070)
    assert hdfs.http_address("127.0.0.1:9999", pinned) == ("127.0.0.1", hdfs.DEFAULT_HTTP_PORT)
    assert hdfs.http_address("other:8020", {"dfs.namenode.http-address": "nn1:50070"}) == (
        "other", hdfs.DEFAULT_HTTP_PORT)


def test_a_storage_failure_is_a_storage_access_error_and_a_missing_file_is_not(tmp_path: Path) -> None:
    (tmp_path / "directory").mkdir()
    with pytest.raises(StorageAccessError) as refused:  # what the storage says, with the file it said it of
        read_bytes(str(tmp_path / "directory"))
    assert str(tmp_path / "directory") in str(refused.value) and "spark.executorEnv" in str(refused.value)
    with pytest.raises(FileNotFoundError):  # callers decide what a missing file means
        read_bytes(str(tmp_path / "missing"))


def test_directory_markers_are_no_files() -> None:
    import pyarrow.fs as pafs

    from hudi_connect.core.executor.storage import without_directory_markers

    listed = [pafs.FileInfo("c/t/p1", pafs.FileType.File, size=0),  # WASB's blob for the directory
              pafs.FileInfo("c/t/p1", pafs.FileType.Directory),
              pafs.FileInfo("c/t/p2/", pafs.FileType.File, size=0),  # an S3 tool's
              pafs.FileInfo("c/t/.hoodie/timeline/1.commit.requested", pafs.FileType.File, size=0),  # Hudi's, empty
              pafs.FileInfo("c/t/p1/f.parquet", pafs.FileType.File, size=10)]
    assert [(i.path, i.type) for i in without_directory_markers(listed)] == [
        ("c/t/p1", pafs.FileType.Directory), ("c/t/.hoodie/timeline/1.commit.requested", pafs.FileType.File),
        ("c/t/p1/f.parquet", pafs.FileType.File)]


def test_a_flat_gcs_listing_finds_directories_from_the_files_below_them() -> None:
    import pyarrow.fs as pafs

    from hudi_connect.core.executor.storage import _first_level

    recursive = [pafs.FileInfo("b/root/0001_full/_SUCCESS", pafs.FileType.File, size=0),
                 pafs.FileInfo("b/root/0001_full/part-0.parquet", pafs.FileType.File, size=5),
                 pafs.FileInfo("b/root/_published", pafs.FileType.Directory),
                 pafs.FileInfo("b/root/note", pafs.FileType.File, size=3)]
    assert sorted((i.path, i.type) for i in _first_level(recursive, "b/root")) == [
        ("b/root/0001_full", pafs.FileType.Directory), ("b/root/_published", pafs.FileType.Directory),
        ("b/root/note", pafs.FileType.File)]


def test_a_scheme_without_a_client_is_refused_before_the_server_is_asked() -> None:
    from hudi_connect_stack.process import free_port
    from pyspark.sql.connect.session import SparkSession

    from hudi_connect.cdc import ChangeQuery
    from hudi_connect.client.remote_files import run_storage_ops
    from hudi_connect.core.executor.object_store import StorageOp
    from hudi_connect.reader import TableReader
    from hudi_connect.table_spec import FileIndex, RecordIndex

    # a session whose server does not exist: any call to it would fail as a lost server, not as this refusal
    nowhere = SparkSession(f"sc://127.0.0.1:{free_port()}")  # (the builder would set its options there)
    try:
        for entry in (TableReader, ChangeQuery, FileIndex, RecordIndex):
            with pytest.raises(UnsupportedStorageError, match="'oss'"):
                entry(nowhere, "oss://lake/trips")
        with pytest.raises(UnsupportedStorageError, match="'viewfs'"):
            run_storage_ops(nowhere, [StorageOp.list("viewfs://cluster/sink")])
    finally:
        nowhere.client.close()
