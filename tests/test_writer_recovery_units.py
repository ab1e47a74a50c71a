"""The pure parts of lost servers and crashed writers: retry budgets, error classification, write outcomes,
recovery plans and heartbeats, against plain-Python expectations and real gRPC failures."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import grpc
import pytest
from hudi_connect_stack.process import free_port

from hudi_connect.client.remote_files import RemoteFile
from hudi_connect.client.server_loss import RetryPolicy, is_server_lost
from hudi_connect.core.errors import ServerUnavailableError, WriteFailedError
from hudi_connect.core.format.commit_metadata import CommitMetadata
from hudi_connect.core.format.timeline import Action, Instant, InstantState, Timeline
from hudi_connect.table.recovery import heartbeat_expiry_ms, live_heartbeats, plan_recovery
from hudi_connect.table.write_outcome import WRITE_ID_OPTION, WriteState, new_write_id, write_outcome


def _instant(time_: str, action: Action = Action.DELTA_COMMIT, state: InstantState = InstantState.COMPLETED) -> Instant:
    return Instant(time_, action, state, time_[:-3] + "999" if state is InstantState.COMPLETED else None)


def _metadata(write_id: str | None) -> CommitMetadata:
    return CommitMetadata(operation_type="UPSERT", write_stats=(), replaced_file_ids={},
                          extra_metadata={WRITE_ID_OPTION: write_id} if write_id else {})


# --- retry budgets -----------------------------------------------------------------------

@pytest.mark.parametrize("seconds", [0, 0.5, 3, 10, 30, 60, 600])
def test_retry_budget_is_the_largest_that_fits(seconds: float) -> None:
    policy = RetryPolicy.within(seconds)
    assert policy.worst_case_seconds() <= seconds
    assert RetryPolicy(max_retries=policy.max_retries + 1).worst_case_seconds() > seconds


def test_retry_sleeps_follow_pysparks_backoff() -> None:
    # pyspark: sleep backoff (+ jitter from 2 s on), then backoff = min(max, backoff * multiplier)
    assert RetryPolicy(max_retries=8).sleeps_ms() == [100, 200, 400, 800, 1600, 3450, 4250, 4250]


def test_negative_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 0"):
        RetryPolicy.within(-1)


# --- what counts as a lost server -------------------------------------------------------------

def test_a_refused_connection_is_a_lost_server() -> None:
    """A real gRPC call to a port nobody listens on."""
    channel = grpc.insecure_channel(f"127.0.0.1:{free_port()}")
    call = channel.unary_unary("/spark.connect.SparkConnectService/Config")
    with pytest.raises(grpc.RpcError) as caught:
        call(b"", timeout=5)
    assert is_server_lost(caught.value)
    try:  # as pyspark raises it: its own exception, the gRPC error only as context
        try:
            raise caught.value
        except grpc.RpcError as rpc_error:
            raise RuntimeError(f"wrapped: {rpc_error.code()}") from None
    except RuntimeError as wrapped:
        assert wrapped.__cause__ is None and is_server_lost(wrapped)


def test_query_errors_and_our_own_are_not_lost_servers() -> None:
    assert not is_server_lost(WriteFailedError("(org.apache.hudi.exception.HoodieException) boom"))
    assert not is_server_lost(ValueError("bad argument"))
    assert not is_server_lost(RuntimeError("ServiceUnavailable from S3: StatusCode.UNAVAILABLE"))
    assert is_server_lost(ServerUnavailableError("gone", doing="x"))
    assert is_server_lost(RuntimeError("OPERATION_NOT_FOUND on the server but responses were already received"))


# --- write outcomes ------------------------------------------------------------------------------

def test_write_ids_sort_with_instants() -> None:
    write_id = new_write_id(datetime(2026, 11, 23, 8, 30, 1, 123000, tzinfo=UTC))
    assert write_id.startswith("20261123083001123-")
    assert new_write_id() != new_write_id()


def test_outcome_committed_pending_not_committed_and_archived() -> None:
    write_id = "20261123083001123-abc"
    first, committed = _instant("20261123080000000"), _instant("20261123083002000")
    timeline = Timeline((first, committed))
    assert write_outcome(write_id, timeline, {first: _metadata(None), committed: _metadata(write_id)}).instant \
        == committed
    pending = _instant("20261123083002000", state=InstantState.INFLIGHT)
    clean = _instant("20261123083003000", Action.CLEAN, InstantState.REQUESTED)
    outcome = write_outcome(write_id, Timeline((first, pending, clean)), {first: _metadata(None)})
    assert outcome.state is WriteState.PENDING and outcome.pending == (pending,)
    assert "recover()" in str(outcome)
    assert write_outcome(write_id, Timeline((first,)), {first: _metadata("other")}).state is WriteState.NOT_COMMITTED
    later = _instant("20261123090000000")
    assert write_outcome(write_id, Timeline((later,)), {later: _metadata(None)}).state is WriteState.UNKNOWN


# --- recovery ----------------------------------------------------------------------------------------

def test_recovery_rolls_back_writes_completes_clustering_and_leaves_other_services() -> None:
    done = _instant("20261123080000000")
    old = _instant("20261123080100000", Action.COMMIT, InstantState.REQUESTED)
    new = _instant("20261123080200000", Action.REPLACE_COMMIT, InstantState.INFLIGHT)
    compaction = _instant("20261123080300000", Action.COMPACTION, InstantState.INFLIGHT)
    clean = _instant("20261123080400000", Action.CLEAN, InstantState.REQUESTED)
    clustering = _instant("20261123080500000", Action.CLUSTERING, InstantState.INFLIGHT)
    plan = plan_recovery(Timeline((done, old, new, compaction, clean, clustering)))
    assert plan.rollback == (new, old)
    assert plan.complete == (clustering,)
    assert plan.left == (compaction, clean)
    assert plan_recovery(Timeline((done,))).rollback == ()


def test_heartbeats_alive_within_hudis_expiry() -> None:
    assert heartbeat_expiry_ms({}) == 120_000
    assert heartbeat_expiry_ms({"hoodie.client.heartbeat.interval_in_ms": "1000",
                                "hoodie.client.heartbeat.tolerable.misses": "3"}) == 3000
    now = int(time.time() * 1000)
    files = [RemoteFile("p/1", "20261123080000000", 0, now - 5_000),
             RemoteFile("p/2", "20261123070000000", 0, now - 600_000),
             RemoteFile("p/3", ".20261123080000000.crc", 8, now - 5_000)]  # a local checksum file beside it
    assert live_heartbeats(files, now, 120_000) == ["20261123080000000"]
