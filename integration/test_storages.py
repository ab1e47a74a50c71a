"""Tables where users keep them: Google Cloud Storage, Azure and HDFS, each on a real server of that storage
(fake-gcs-server, Azurite reached through Hadoop's WASB driver, and a namenode and datanode from Hadoop's own
jars), written by Hudi on a Hudi server with the storages' connectors and read by ours on a server without
Hudi's jars (``plain-storages``), whose Python workers reach each storage with their own client
(:mod:`hudi_connect.core.executor.storage`).

History of the written tables (:func:`integration.conformance_matrix.write_history`, metadata table with
column statistics and the record index, CDC with both images): 24 inserts in three partitions, an upsert with
late records, a delete of three keys and two upserts; inline clustering after every third commit, and on MOR
inline compaction after every fourth deltacommit. Compared with Hudi's own reads of the same table on the Hudi
server: the snapshot, time travel to every commit, three incremental ranges and two change queries; the
listing through the metadata table equals the storage listing; the record index locates each key where Hudi's
snapshot has it; ``hudi-connect history|changes|files`` agree with Hudi's timeline, Hudi's CDC and the listing.
A reverse stream to files on the storage resumes after its client restarts with nothing lost or doubled. The
shared fixture tables, copied to each storage, read equal to hudi-rs (its rows and file slices; on Azure
hudi-rs reads them from the same emulator). CI runs every storage: a fixture table, a claim, a large metadata
file read by range on each, and the ABFS client; ``ci/test.sh --full`` Hudi's own tables written on each storage
(the Hudi storages server's JVM and its writes cost CI over three minutes) and every pairing.

Workers without credentials: the ``*-storages`` servers hold MinIO's keys in Hadoop's configuration only (the
usual way to set up s3a), so their workers have none: a read of a MinIO table there is refused with
``StorageAccessError`` naming the file, S3's reason and the settings the workers lack.
"""

from __future__ import annotations

import io
import json
import random
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hudi import HudiTableBuilder
from hudi_connect_stack.endpoints import MinioEndpoint, StorageEndpoints
from hudi_connect_stack.testing.compare import arrow_multiset, row_multiset
from hudi_connect_stack.testing.fixture_tables import unzip_fixture, upload_to_storage
from hudi_connect_stack.testing.plugin import STORAGE_CONTAINER
from pyspark.sql import DataFrame, SparkSession

from hudi_connect import library_errors
from hudi_connect.cli import main
from hudi_connect.client.server import connect
from hudi_connect.core.errors import StorageAccessError
from hudi_connect.reader import TableReader
from hudi_connect.reverse import FileSink, ReverseStream
from hudi_connect.table.hudi_table import HudiTable
from hudi_connect.table_spec import FileIndex, RecordIndex
from integration.conformance_matrix import Cell, write_history
from integration.reverse_stream_model import SCHEMA, History, replay_files
from integration.test_conformance_matrix import assert_equal_reads

STORAGES = ("gcs", "azure", "hdfs")
# CI reads the fixture tables on every storage (against hudi-rs; on HDFS a MOR table's log files merged by our
# WebHDFS client), claims and ABFS; --full Hudi's tables written on each storage, every pairing here
CI_PAIRS: set[tuple[str, str]] = set()
FIXTURES_IN_CI = {("gcs", "mor_avro_v6_trips_8i1u"), ("azure", "cow_v9_txns_simple_meta"),
                  ("hdfs", "mor_avro_v9_txns_simple_meta")}
CLUSTERING = {"hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "3"}


def _path(storage_roots: dict[str, str], storage: str, folder: str = "tables") -> str:
    return f"{storage_roots[storage]}/{folder}/{uuid.uuid4().hex[:12]}"


def _slices(index: FileIndex, instant: str | None = None) -> Counter[tuple[Any, ...]]:
    return Counter((s.partition, s.file_id, s.base_instant, s.base_file.name if s.base_file else None,
                    tuple(f.name for f in s.log_files))
                   for snapshot in index.list_files_at(instant) for s in snapshot.file_slices)


@pytest.mark.parametrize(("storage", "table_type"), [
    pytest.param(storage, table_type, marks=() if (storage, table_type) in CI_PAIRS else (pytest.mark.full,))
    for storage in STORAGES for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ")
])
def test_reads_on_the_storage_equal_hudis(
    storages_spark: SparkSession, plain_storages_spark: SparkSession, plain_storages_url: str,
    storage_roots: dict[str, str], storage: str, table_type: str, capsys: pytest.CaptureFixture[str],
) -> None:
    path = _path(storage_roots, storage)
    cell = Cell(table_type, "9", "simple", "avro", "event_time", "RECORD_INDEX", "on", "DATA_BEFORE_AFTER", "none")
    write_history(storages_spark, cell, path, extra_options=CLUSTERING)
    table = HudiTable.open(storages_spark, path)
    actions = {i.action.value for i in table.timeline()}
    assert "replacecommit" in actions, actions  # the clustering
    if table_type == "MERGE_ON_READ":
        assert "commit" in actions, actions  # the compaction
    assert assert_equal_reads(plain_storages_spark, table, cell) == "equal"
    read_optimized = TableReader(plain_storages_spark, path).read_optimized()
    assert multiset(read_optimized) == multiset(table.hudi.read_optimized(with_meta_columns=True))

    # the listing through the metadata table equals the storage's, now and as of the second commit
    commits = [c.requested_time for c in TableReader(plain_storages_spark, path).view.timeline().write_commits()]
    for instant in (None, commits[1]):
        through_metadata = _slices(FileIndex(plain_storages_spark, path), instant)
        assert through_metadata == _slices(FileIndex(plain_storages_spark, path, use_metadata=False), instant)
        assert through_metadata
    # the record index puts each key where Hudi's snapshot has it
    hudis = {(r._hoodie_record_key): (r._hoodie_partition_path, r._hoodie_file_name.split("_", 1)[0])
             for r in table.hudi.snapshot(with_meta_columns=True).select(
                 "_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name").collect()}
    located = RecordIndex(plain_storages_spark, path).tag([*hudis, "no-such-key"])
    assert located.pop("no-such-key") is None
    assert {k: (v.partition, v.file_id) if v else None for k, v in located.items()} == hudis

    # the command line: every commit in its history, Hudi's change events, the file slices listed above
    history = json.loads(_cli(capsys, "history", path, "--remote", plain_storages_url, "--json"))
    assert sorted(e["requested_time"] for e in history) == sorted(
        i.requested_time for i in table.timeline() if i.is_completed)
    changes = _cli(capsys, "changes", path, "--remote", plain_storages_url, "--json").splitlines()
    assert len(changes) == table.hudi.cdc("earliest").count() > 0
    files = {(f["partition"], f["file_id"], f["base_file"], tuple(f["log_files"]))
             for f in json.loads(_cli(capsys, "files", path, "--remote", plain_storages_url, "--json"))}
    assert files == {(p, f, b, logs) for p, f, _, b, logs in _slices(FileIndex(plain_storages_spark, path))}
    # (hudi-rs, the second oracle, panics on tables Hadoop's WASB wrote: "not yet implemented" on their
    # directory blobs; it reads the fixture tables on Azure below)


def multiset(df: DataFrame) -> Counter[tuple[Any, ...]]:
    columns = sorted(c for c in df.columns if c not in ("_hoodie_file_name", "_hoodie_commit_seqno"))
    return row_multiset((r.asDict(recursive=True) for r in df.select(*columns).collect()), columns)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return capsys.readouterr().out


@pytest.mark.full  # CI: the checkpoints' claims on each storage (below) and reverse streams on MinIO and locally
@pytest.mark.parametrize("storage", STORAGES)
def test_a_reverse_stream_to_files_on_the_storage_resumes_exactly(
    storages_spark: SparkSession, plain_storages_spark: SparkSession, storage_roots: dict[str, str], storage: str,
    plain_storages_url: str,
) -> None:
    path = _path(storage_roots, storage)
    table = HudiTable.create(storages_spark, path, SCHEMA, record_key="id", ordering_field="ts",
                             partition_by="part", table_type="MERGE_ON_READ", cdc="OP_KEY_ONLY")
    history = History(table, random.Random(31))
    sink_root = f"{path}-files"
    for _ in range(3):
        history.step()
    ReverseStream(plain_storages_spark, path, "serving", [FileSink(sink_root, spark=plain_storages_spark)]).run_once()
    for _ in range(3):
        history.step()
    restarted = connect(plain_storages_url)  # a new client: everything it knows comes from the storage
    try:
        sink = FileSink(sink_root, spark=restarted)
        ReverseStream(restarted, path, "serving", [sink]).run_once()
        assert replay_files(sink) == (history.state, 0)
    finally:
        restarted.stop()


def test_workers_without_the_servers_hadoop_credentials_are_refused_by_name(
    spark: SparkSession, plain_storages_spark: SparkSession, s3a_base_path: str,
) -> None:
    HudiTable.create(spark, s3a_base_path, SCHEMA, record_key="id", ordering_field="ts", partition_by="part") \
        .upsert(spark.createDataFrame([(1, "a", 1, "p1")], SCHEMA))
    with pytest.raises(StorageAccessError) as refused:
        TableReader(plain_storages_spark, s3a_base_path).snapshot().collect()
    message = str(refused.value)
    assert f"{s3a_base_path}/.hoodie" in message, message  # the file
    assert "AccessDenied" in message or "ACCESS_DENIED" in message, message  # S3's own reason
    assert "spark.hadoop.fs.s3a.access.key (for the workers: AWS_ACCESS_KEY_ID)" in message, message
    assert "spark.executorEnv" in message, message


@pytest.mark.parametrize(("storage", "name"), [
    pytest.param(storage, name, marks=() if (storage, name) in FIXTURES_IN_CI else (pytest.mark.full,))
    for storage in STORAGES for name in ("mor_avro_v6_trips_8i1u", "cow_v9_txns_simple_meta",
                                         "mor_avro_v9_txns_simple_meta")
])
def test_fixture_tables_on_the_storage_read_equal_hudi_rs(
    plain_storages_spark: SparkSession, storage_roots: dict[str, str], storage_endpoints: StorageEndpoints,
    tmp_path: Path, storage: str, name: str,
) -> None:
    local = unzip_fixture(name, tmp_path)
    # not below Hudi's tables: pyarrow's Azure client creates no directory below a WASB directory blob
    path = upload_to_storage(local, _path(storage_roots, storage, "fixtures"), storage_endpoints)
    if storage == "azure":  # hudi-rs reaches the emulator too: both read the same storage
        rs_table = HudiTableBuilder.from_base_uri(path.replace(f"wasb://{STORAGE_CONTAINER}@storageemulator",
                                                               f"az://{STORAGE_CONTAINER}")) \
            .with_storage_options({"azure_storage_use_emulator": "true"}).build()
    else:
        rs_table = HudiTableBuilder.from_base_uri(str(local)).build()
    assert {(p, f, b, logs) for p, f, _, b, logs in _slices(FileIndex(plain_storages_spark, path))} == {
        (s.partition_path, s.file_id, s.base_file_name, tuple(s.log_file_names)) for s in rs_table.get_file_slices()}
    ours = TableReader(plain_storages_spark, path).snapshot()
    theirs = pa.Table.from_batches(rs_table.read())
    columns = sorted(c for c in theirs.column_names if c != "_hoodie_file_name")
    assert ours.count() == theirs.num_rows > 0
    assert row_multiset((r.asDict(recursive=True) for r in ours.select(*columns).collect()), columns) \
        == arrow_multiset(theirs, columns)


def test_s3_session_credentials_reach_s3(minio_endpoint: MinioEndpoint, s3_bucket: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The workers' S3 client with temporary credentials (a session token, from MinIO's STS ``AssumeRole``, as
    an assumed role or web identity gives them), run here as a worker runs it: the token is used, and a wrong
    one is refused as StorageAccessError naming the file."""
    from minio import Minio
    from minio.credentials import AssumeRoleProvider

    from hudi_connect.core.executor.storage import list_directory, read_bytes, s3

    temporary = AssumeRoleProvider(sts_endpoint=minio_endpoint.endpoint_url, access_key=minio_endpoint.access_key,
                                   secret_key=minio_endpoint.secret_key).retrieve()
    assert temporary.session_token
    key = f"session/{uuid.uuid4().hex}/hoodie.properties"
    Minio(minio_endpoint.endpoint_url.split("://", 1)[1], minio_endpoint.access_key, minio_endpoint.secret_key,
          secure=False).put_object(s3_bucket, key, io.BytesIO(b"hoodie.table.name=t\n"), 20)
    monkeypatch.setenv("AWS_ENDPOINT_URL", minio_endpoint.endpoint_url)
    monkeypatch.setenv("AWS_REGION", minio_endpoint.region)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", temporary.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", temporary.secret_key)
    for token, readable in ((temporary.session_token, True), ("not-" + temporary.session_token, False)):
        monkeypatch.setenv("AWS_SESSION_TOKEN", token)
        s3._filesystem_in.cache_clear()  # a worker builds its client once, from the environment it was started with
        uri = f"s3a://{s3_bucket}/{key}"
        if readable:
            assert read_bytes(uri) == b"hoodie.table.name=t\n"
            assert [i.base_name for i in list_directory(uri.rsplit("/", 1)[0])] == ["hoodie.properties"]
        else:
            with pytest.raises(StorageAccessError, match=f"reading {uri} failed in a Spark worker"):
                read_bytes(uri)
    s3._filesystem_in.cache_clear()


def test_abfs_uris_reach_azure_through_the_workers_client(plain_storages_spark: SparkSession,
                                                           storage_roots: dict[str, str],
                                                           storage_endpoints: StorageEndpoints, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """ADLS Gen2's ``abfs(s)://container@account.dfs.core.windows.net`` URIs, read by the workers' Azure client
    with the account's key from the connection string, as a worker reads them. (Spark's own ABFS driver needs
    a DFS endpoint, which Azurite lacks, so the whole read is proven on ``wasb://`` above; the client is the
    same.)"""
    from hudi_connect.core.executor.storage import azure, data_files, read_bytes

    local = unzip_fixture("cow_v9_txns_simple_meta", tmp_path)
    wasb = upload_to_storage(local, _path(storage_roots, "azure", "fixtures"), storage_endpoints)
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", storage_endpoints.azure.connection_string)
    azure._filesystem.cache_clear()
    account = storage_endpoints.azure.account_name
    abfs = wasb.replace(f"wasb://{STORAGE_CONTAINER}@storageemulator",
                        f"abfss://{STORAGE_CONTAINER}@{account}.dfs.core.windows.net")
    assert read_bytes(f"{abfs}/.hoodie/hoodie.properties") == (local / ".hoodie" / "hoodie.properties").read_bytes()
    expected = sorted(("" if p.parent == local else p.parent.relative_to(local).as_posix(), p.name, p.stat().st_size)
                      for p in local.rglob("*") if p.is_file() and ".hoodie" not in p.parts)
    assert sorted(data_files(abfs)) == expected
    azure._filesystem.cache_clear()


@pytest.mark.parametrize("storage", ["s3", *STORAGES])
def test_large_metadata_files_are_read_by_range_on_the_storage(
        storage: str, storage_roots: dict[str, str], storage_endpoints: StorageEndpoints,
        minio_endpoint: MinioEndpoint, s3_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ranged reads a task makes of a metadata base file over 8 MiB (issue #33), run here as a worker runs
    them, on each storage's server: the HFile read through its index by range (2 KiB scan runs) equals the file
    read whole, and a file gone is FileNotFoundError naming it (what the reader refuses as a concurrent change)."""
    import pyarrow.fs as pafs
    from hudi_connect_stack.spark_connect import storage_env

    from hudi_connect.core.executor.storage import RangedFile, azure, filesystem_for, gcs, join, s3
    from hudi_connect.core.format.metadata import hfile as hfile_module
    from hudi_connect.core.format.metadata import open_hfile

    local = unzip_fixture("cow_v9_txns_simple_meta", tmp_path)
    if storage == "s3":
        root = f"s3a://{s3_bucket}/ranged/{uuid.uuid4().hex[:12]}"
        env = storage_env(minio_endpoint)
        monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    else:
        root, env = _path(storage_roots, storage, "ranged"), storage_env(None, storage_endpoints)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for cached in (s3._filesystem_in, gcs._filesystem, azure._filesystem):
        cached.cache_clear()  # a worker builds its clients once, from the environment it was started with
    if storage == "s3":
        filesystem, path = filesystem_for(root)
        pafs.copy_files(str(local / ".hoodie" / "metadata"), path, destination_filesystem=filesystem)
    else:
        upload_to_storage(local / ".hoodie" / "metadata", root, storage_endpoints)
    monkeypatch.setattr(hfile_module, "SCAN_READ_BYTES", 2048)
    base_files = sorted((local / ".hoodie" / "metadata").rglob("*.hfile"))
    assert base_files
    for path in base_files:
        uri = join(root, path.relative_to(local / ".hoodie" / "metadata").as_posix())
        whole = open_hfile(path.read_bytes(), str(path))
        with RangedFile(uri, path.stat().st_size) as ranged:
            by_range = open_hfile(ranged, uri)
            assert list(by_range.cells()) == list(whole.cells()), uri
            keys = [key for key, _ in whole.cells()]
            assert by_range.get(keys[-1:]) == whole.get(keys[-1:])
    gone = join(root, "files", "gone.hfile")
    with pytest.raises(FileNotFoundError) as missing, RangedFile(gone, 8192) as ranged:
        ranged.read(0, 4096)
    assert missing.value.filename == gone
    for cached in (s3._filesystem_in, gcs._filesystem, azure._filesystem):
        cached.cache_clear()


@pytest.mark.parametrize("storage", STORAGES)
def test_a_claim_has_exactly_one_winner_on_the_storage(plain_storages_spark: SparkSession,
                                                       storage_roots: dict[str, str], storage: str) -> None:
    """Checkpoint claims (``create`` ops, each storage's own atomic step) raced from eight Spark jobs at once."""
    from concurrent.futures import ThreadPoolExecutor

    from hudi_connect.client.remote_files import run_storage_ops
    from hudi_connect.core.executor.object_store import StorageOp

    claim = f"{_path(storage_roots, storage, 'claims')}/0000000001"
    with ThreadPoolExecutor(8) as pool:
        won = list(pool.map(lambda n: run_storage_ops(plain_storages_spark, [StorageOp.create(claim, f"run {n}")])
                            [0].ok, range(8)))
    assert won.count(True) == 1, won
    owner = run_storage_ops(plain_storages_spark, [StorageOp.get(claim)])[0]
    assert owner.ok and owner.text == f"run {won.index(True)}"
    run_storage_ops(plain_storages_spark, [StorageOp.put(claim, "replaced")])
    assert run_storage_ops(plain_storages_spark, [StorageOp.get(claim)])[0].text == "replaced"


def test_an_unreachable_namenode_is_an_error_not_an_empty_listing(plain_storages_spark: SparkSession) -> None:
    from hudi_connect_stack.process import free_port

    from hudi_connect.client.remote_files import run_storage_ops
    from hudi_connect.core.executor.object_store import StorageOp

    nowhere = f"hdfs://127.0.0.1:{free_port()}/tables/t/.hoodie/timeline"
    with pytest.raises(StorageAccessError, match=f"listing {nowhere} failed in a Spark worker"), library_errors():
        run_storage_ops(plain_storages_spark, [StorageOp.list(nowhere)])
