"""Reverse-stream checkpoints live on the table's timeline as ``reversecommit`` instants (RFC-70):
Apache Hudi keeps working beside them, and inline forwarding sends what the standalone streamer sends.

History (seeded, :mod:`integration.reverse_stream_model`): 14 random writes to a MOR
table with inline compaction every 2 delta commits, automatic cleaning keeping 2
commits and archiving down to 3-4 instants, clustering after write 7; a stream
checkpoints after every write. Oracles: the plain-Python model, Hudi's snapshot,
read-optimized, incremental and CDC reads, and our change query against Hudi's.
"""

from __future__ import annotations

import os
import random
import uuid

import pytest
from hudi_connect_stack.endpoints import KafkaEndpoint
from hudi_connect_stack.testing.topics import create_topic, read_topic
from pyspark.sql import SparkSession

from hudi_connect.cdc.query import ChangeQuery
from hudi_connect.reverse import FileSink, KafkaSink, ReverseStream
from hudi_connect.table.hudi_table import HudiTable
from integration.reverse_stream_model import SCHEMA, History, replay_files

SERVICES = {
    "hoodie.parquet.small.file.limit": "0",
    "hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2",
    "hoodie.clean.automatic": "true", "hoodie.cleaner.commits.retained": "2",
    "hoodie.archive.automatic": "true", "hoodie.keep.min.commits": "3", "hoodie.keep.max.commits": "4",
}


@pytest.mark.full  # CI: the reverse-stream suite's checkpoints, and the kill suite's inline forwarding
def test_hudi_writes_services_reads_and_cdc_work_beside_checkpoints(spark: SparkSession, local_base_path: str) -> None:
    table = HudiTable.create(spark, local_base_path, SCHEMA, record_key="id", ordering_field="ts",
                             partition_by="part", table_type="MERGE_ON_READ", cdc="DATA_BEFORE_AFTER",
                             options=SERVICES)
    files = FileSink(f"{local_base_path}-export", "parquet", spark=spark)
    stream = ReverseStream(spark, local_base_path, "beside-hudi", [files])
    history = History(table, random.Random(7))
    for step in range(14):
        history.step()
        if step == 7:
            assert table.cluster() is not None
        assert stream.run_once().sent
    timeline_dir = os.path.join(local_base_path, ".hoodie", "timeline")
    names = os.listdir(timeline_dir)
    actions = {name.rsplit(".", 1)[-1] for name in names}
    assert {"commit", "deltacommit", "clean"} <= actions  # compaction and cleaning ran (clustering: above)
    assert os.listdir(os.path.join(timeline_dir, "history"))  # Hudi archived instants beside ours
    assert sum(name.endswith(".reversecommit") for name in names) == 14  # and left ours alone
    # Hudi's reads agree with the model
    snapshot = {r.id: (r.id, r.v, r.ts, r.part) for r in table.hudi.snapshot().collect()}
    assert snapshot == history.state
    commits = list(table.timeline().write_commits())
    begin = commits[-3]
    incremental = {r.id for r in table.hudi.incremental(begin).collect()}
    recent = {c.requested_time for c in commits[-2:]}
    written = {r.id for r in table.hudi.snapshot(with_meta_columns=True).collect() if r._hoodie_commit_time in recent}
    assert incremental == written
    # Hudi's CDC query and ours agree over the last commits
    hudi_events = sorted(map(tuple, table.hudi.cdc(begin).collect()))
    assert hudi_events
    ours = sorted(map(tuple, ChangeQuery(spark, local_base_path).changes(begin.completion_time or "").collect()))
    assert ours == hudi_events
    table.compaction.schedule()
    table.compaction.run()
    assert {r.id for r in table.hudi.read_optimized().collect()} == set(history.state)
    # the stream's own view: every checkpoint published, the exported files equal the table
    assert [c.sequence for c in stream.checkpoints.history("beside-hudi")] == list(range(1, 15))
    assert replay_files(files) == (history.state, 0)


@pytest.mark.full  # CI forwards inline in the kill suite (mor-minio-mdt), under kills
def test_inline_forwarding_sends_what_the_standalone_streamer_sends(
    spark: SparkSession, local_base_path: str, kafka_endpoint: KafkaEndpoint,
) -> None:
    topics = [f"inline-{uuid.uuid4().hex[:8]}", f"standalone-{uuid.uuid4().hex[:8]}"]
    for topic in topics:
        create_topic(kafka_endpoint, topic)
    table = HudiTable.create(spark, local_base_path, SCHEMA, record_key="id", ordering_field="ts",
                             partition_by="part", table_type="COPY_ON_WRITE")
    inline = table.reverse_stream("inline", [KafkaSink(kafka_endpoint.bootstrap_servers, topics[0])])
    standalone = table.reverse_stream("standalone", [KafkaSink(kafka_endpoint.bootstrap_servers, topics[1])])
    history = History(table.forwarding_to(inline), random.Random(5))
    for _ in range(6):
        history.step()  # the write forwards its commit to the inline stream right after it completes
        assert inline.checkpoint().end_requested_time == table.timeline().write_commits().last().requested_time
        assert standalone.run_once().sent
    forwarded, streamed = (read_topic(kafka_endpoint, t) for t in topics)
    assert len(forwarded) > 6
    # the same records; within a batch each key appears once, so their order is free
    assert sorted((r.headers, r.key, r.value) for r in forwarded) == sorted((r.headers, r.key, r.value)
                                                                            for r in streamed)
    ranges = [(c.begin_completion_time, c.end_completion_time) for c in inline.checkpoints.history("inline")]
    assert ranges == [(c.begin_completion_time, c.end_completion_time)
                      for c in standalone.checkpoints.history("standalone")]
