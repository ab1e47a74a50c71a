"""A session finalized on one of pyspark 3.5's release threads must not hang the process
(:mod:`hudi_connect.client.session_close`): the lost-server tests hung in CI exactly so."""

from __future__ import annotations

from pyspark.sql.connect.client.reattach import ExecutePlanResponseReattachableIterator

from hudi_connect import connect


def test_a_session_finalized_on_a_release_thread_leaves_the_others_working(plain_server_url: str) -> None:
    doomed = connect(plain_server_url)
    assert doomed.range(10).count() == 10  # the shared pool of release threads is up
    pool = ExecutePlanResponseReattachableIterator._release_thread_pool
    assert pool is not None
    # what the garbage collector does when it finalizes the session on a pool thread: unguarded, close()
    # joins the pool from inside it (under the class lock) and this never returns
    pool.apply_async(doomed.__del__).get(timeout=30)
    other = connect(plain_server_url)
    assert other.range(5).count() == 5  # queries of other sessions go on: the class lock is free
    assert ExecutePlanResponseReattachableIterator._release_thread_pool is pool
    other.stop()  # and an explicit stop closes only that session: the shared pool stays
    assert other.client.is_closed
    assert ExecutePlanResponseReattachableIterator._release_thread_pool is pool
    assert connect(plain_server_url).range(3).count() == 3
