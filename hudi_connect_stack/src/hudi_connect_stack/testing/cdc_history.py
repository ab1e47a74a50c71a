"""The CDC history both suites write, and Hudi's CDC rows in one comparable form.

History of each CDC-enabled table (COW or MOR, each supplemental logging mode):
1 insert keys 0..11 (partition p{key % 3}); 2 upsert keys 0..3 (0 and 1 with a
lower ordering value, so they lose) and insert 12, 13; 3 delete keys 4, 5;
4 insert_overwrite partition p2 with keys 2 and 14; 5 re-insert key 4
(insert, delete, insert of one key); 6 delete partition p1; 7 (MOR) compaction
and clustering, which change nothing; 8 upsert key 6.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from hudi_connect.core.format.timeline import Instant
from hudi_connect.table.hudi_table import HudiTable

SCHEMA = "id int, v string, ts long, part string"
IGNORED = {"_hoodie_file_name", "_hoodie_commit_seqno"}  # where each reader found a record, not what it is


def _image(text: str | None) -> Any:
    loaded = json.loads(text) if text is not None else None  # Hudi writes a missing image as "null"
    if loaded is None:
        return None
    # a null field and an absent one are the same image (Hudi's JSON leaves out some nulls, e.g. of columns a
    # partial update set to null)
    return tuple(sorted((k, _value(v)) for k, v in loaded.items() if k not in IGNORED and v is not None))


def _value(value: Any) -> Any:
    """Timestamps as one text, however a reader wrote them (ISO with offset, or Spark's str)."""
    if isinstance(value, list):
        return tuple(_value(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _value(v)) for k, v in value.items()))
    if isinstance(value, str) and len(value) >= 10 and value[4] == "-":
        try:
            moment = dt.datetime.fromisoformat(value)
        except ValueError:
            return value
        if moment.tzinfo is not None:
            moment = moment.astimezone(dt.UTC).replace(tzinfo=None)
        return moment.isoformat()
    return value


def events(df: DataFrame) -> Counter[tuple[Any, ...]]:
    return event_multiset((r.op, r.ts_ms, r.before, r.after) for r in df.collect())


def event_multiset(rows: Iterable[tuple[str, Any, str | None, str | None]]) -> Counter[tuple[Any, ...]]:
    """(op, ts_ms, before, after) rows in Hudi's CDC schema, with each image parsed and normalised."""
    return Counter((op, ts_ms, _image(before), _image(after)) for op, ts_ms, before, after in rows)


def write_history(spark: SparkSession, table: HudiTable) -> list[Instant]:
    def rows(data: list[tuple[Any, ...]]) -> DataFrame:
        return spark.createDataFrame(data, SCHEMA)

    def part(key: int) -> str:
        return f"p{key % 3}"

    commits = [table.insert(rows([(k, f"v{k}", 10, part(k)) for k in range(12)]))]
    commits.append(table.upsert(rows([(0, "lose", 1, "p0"), (1, "lose", 1, "p1"), (2, "u2", 20, "p2"),
                                      (3, "u3", 20, "p0"), (12, "n12", 20, "p0"), (13, "n13", 20, "p1")])))
    commits.append(table.delete(spark.createDataFrame([(4,), (5,)], "id int")))
    commits.append(table.insert_overwrite(rows([(2, "o2", 30, "p2"), (14, "o14", 30, "p2")])))
    commits.append(table.insert(rows([(4, "again", 40, "p1")])))
    commits.append(table.delete_partitions(["p1"]))
    if table.properties.is_merge_on_read:
        table.compaction.schedule()
        table.compaction.run()
    table.cluster()
    commits.append(table.upsert(rows([(6, "u6", 50, "p0")])))
    return commits
