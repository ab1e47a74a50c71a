"""The differential tester: random tables, histories and requests, ours against Hudi's own reads.

From a seed, Hypothesis draws a table's shape (COW/MOR, table version, partition column type, hive-style and
URL-encoded paths, ordering type, one or two ordering fields, log compaction, merge mode, index, metadata table
and column statistics), a history (inserts, upserts with late and equal ordering values, deletes by operation
and by ``_hoodie_is_deleted``, re-inserts, insert_overwrite, compaction, clustering, clean) and requests after
every step (snapshot, read-optimized, time travel, incremental ranges, each with a predicate users write:
mismatched literal types, naive and aware timestamps from a client in another zone, dates as strings). Every
answer must equal Hudi's read of the same table, or be refused by name; a long run also reads each answer that
equals Hudi's again on a Spark 4 server, ANSI on (``spark4_reader``).

- ``integration/test_differential.py``: CI's fixed seeds; under ``--full`` a run of
  ``HUDI_CONNECT_DIFFERENTIAL_MINUTES`` (default 10);
- ``python -m integration.differential --minutes N [--seed S] [--release 1.2|1.0.2|0.15.0] [--spark4 4.3|none]``:
  a long run, with a Markdown report of what it compared and of Hudi's failed writes by their root cause.
"""
