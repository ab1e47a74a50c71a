"""Shared pieces of the reverse-stream tests: a random write history with its plain-Python model,
and readers of what each sink holds.

History: keys 0..29 in partition ``p{key % 3}``; each step upserts a random set of
keys (strictly increasing ordering values, so no event-time ties), deletes some
live keys, and now and then drops a whole partition (a replacecommit). The
model is the table Hudi should hold: key -> (v, ts, part).
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import psycopg
from hudi_connect_stack.testing.topics import KafkaRecord
from pyspark.sql import SparkSession

from hudi_connect.core.errors import ForwardingFailedError
from hudi_connect.core.format.timeline import Instant
from hudi_connect.reverse import FileSink
from hudi_connect.table.hudi_table import HudiTable

SCHEMA = "id int, v string, ts long, part string"
KEYS = range(30)
Row = tuple[int, str, int, str]


@dataclass
class History:
    table: HudiTable
    rng: random.Random
    state: dict[int, Row] = field(default_factory=dict)
    clock: int = 0
    # every change written, in commit order: (the commit's requested time, key, op as the sinks name it: c/u/d)
    events: list[tuple[str, int, str]] = field(default_factory=list)

    def step(self) -> str:
        """One random write; returns what it did."""
        spark = self.table.spark
        choice = self.rng.random()
        live = sorted(self.state)
        if choice < 0.15 and live:
            part = self.rng.choice(sorted({r[3] for r in self.state.values()}))
            self._write(lambda: self.table.delete_partitions([f"part={part}"]),
                        {k: r for k, r in self.state.items() if r[3] != part})
            return f"delete_partitions {part}"
        if choice < 0.4 and live:
            gone = self.rng.sample(live, k=min(len(live), self.rng.randint(1, 5)))
            self._write(lambda: self.table.delete(spark.createDataFrame([(k, f"p{k % 3}") for k in gone],
                                                                        "id int, part string")),
                        {k: r for k, r in self.state.items() if k not in gone})
            return f"delete {sorted(gone)}"
        keys = self.rng.sample(list(KEYS), k=self.rng.randint(3, 10))
        rows = []
        for key in keys:
            self.clock += 1
            rows.append((key, f"v{self.clock}", self.clock, f"p{key % 3}"))
        self._write(lambda: self.table.upsert(spark.createDataFrame(rows, SCHEMA)),
                    self.state | {r[0]: r for r in rows})
        return f"upsert {sorted(keys)}"

    def _write(self, write: Callable[[], Instant], after: dict[int, Row]) -> None:
        """``write``, then the model moves to ``after``; also when the write committed but forwarding it to an
        inline reverse stream failed (the stream's next run sends it)."""
        try:
            instant = write()
        except ForwardingFailedError as forwarding:
            self._moved(forwarding.committed, after)
            raise
        self._moved(instant.requested_time, after)

    def _moved(self, time: str, after: dict[int, Row]) -> None:
        self.events += [(time, key, "d") for key in sorted(self.state.keys() - after.keys())]
        self.events += [(time, key, "u" if key in self.state else "c") for key, row in sorted(after.items())
                        if self.state.get(key) != row]
        self.state = after


def postgres_rows(dsn: str, table: str) -> dict[int, Row]:
    with psycopg.connect(dsn) as connection:
        rows = connection.execute(f'SELECT id, v, ts, part FROM "{table}"').fetchall()
    return {r[0]: (r[0], r[1], r[2], r[3]) for r in rows}


def replay_files(sink: FileSink) -> tuple[dict[int, Row], int]:
    """The table rebuilt from the published batch directories; and how many (key, commit, op) changes repeat."""
    rows = sink.read_published().collect()
    state: dict[int, Row] = {}
    seen: set[tuple[str, str, str]] = set()
    repeats = 0
    for r in sorted(rows, key=lambda r: (r.sequence, r.completion_time, r.commit_time)):
        marker = (r.record_key, r.commit_time, r.op)  # a replace commit moves a key: d, then c, at one time
        repeats += marker in seen
        seen.add(marker)
        if r.op == "d":
            state.pop(r.id, None)
        else:
            state[r.id] = (r.id, r.v, r.ts, r.part)
    return state, repeats


def kafka_changes(records: list[KafkaRecord]) -> dict[str, list[tuple[str, str, dict[str, object] | None]]]:
    """Per key, in topic order: (op, commit time, row) from the JSON format."""
    per_key: dict[str, list[tuple[str, str, dict[str, object] | None]]] = defaultdict(list)
    for record in records:
        headers = {k: v.decode() for k, v in record.headers}
        assert record.key is not None
        value = json.loads(record.value) if record.value is not None else None
        per_key[record.key.decode()].append((headers["op"], headers["commit_time"], value))
    return dict(per_key)


def hudi_cdc_changes(spark: SparkSession, table: HudiTable, begin: str, end: str | None,
                     data_columns: tuple[str, ...] = ("id", "v", "ts", "part"),
                     ) -> dict[str, list[tuple[str, str, dict[str, object] | None]]]:
    """Hudi's own CDC query of (begin, end], in the same form, each key's changes in commit order."""
    return cdc_changes(((r.op, r.ts_ms, r.before, r.after) for r in table.hudi.cdc(begin, end).collect()),
                       data_columns)


def cdc_changes(rows: Iterable[tuple[str, str, str | None, str | None]],
                data_columns: tuple[str, ...] = ("id", "v", "ts", "part"),
                ) -> dict[str, list[tuple[str, str, dict[str, object] | None]]]:
    """Rows of Hudi's CDC schema (op, ts_ms, before, after) in the form of :func:`kafka_changes`."""
    per_key: dict[str, list[tuple[str, str, dict[str, object] | None]]] = defaultdict(list)
    # a key moved by a replace commit is deleted, then inserted, at one instant
    for op, ts_ms, before, after in sorted(rows, key=lambda r: (r[1], r[0] != "d")):
        image = json.loads(after if op != "d" else before)  # type: ignore[arg-type]
        row = {c: image[c] for c in data_columns}
        per_key[str(row["id"])].append(({"i": "c", "u": "u", "d": "d"}[op], ts_ms, row))
    return dict(per_key)
