"""Tables written by Hudi on the Spark 3.5 server, with Hudi's own answers about them, for readers that run
where Hudi's jars cannot: a Spark 4 client cannot talk to a 3.5 server, so the Spark 4 leg runs this module in
the 3.5 environment and compares its own reads with the answers left beside the tables.

    python -m hudi_connect_stack.testing.reference_tables OUT_DIR

writes ``OUT_DIR/<name>/`` (the table) and ``OUT_DIR/<name>.json`` (:class:`Answers` as JSON) for each of
:data:`REFERENCE_TABLES`, then ``OUT_DIR/.complete``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from hudi_connect.table.hudi_table import HudiTable
from hudi_connect_stack.testing.cdc_history import SCHEMA, write_history

DATA_COLUMNS = ("id", "v", "ts", "part")
COMPLETE = ".complete"


@dataclass(frozen=True)
class ReferenceTable:
    name: str
    table_type: str
    cdc_mode: str
    metadata_table: bool


# COW logs full images (its updates go to .cdc files: AS_IS); MOR logs keys only (LOG_FILE inference from the
# log blocks and the file slices before them), with the metadata table on, so its listing is read from there.
REFERENCE_TABLES = (
    ReferenceTable("cow_before_after", "COPY_ON_WRITE", "DATA_BEFORE_AFTER", metadata_table=False),
    ReferenceTable("mor_key_only_mdt", "MERGE_ON_READ", "OP_KEY_ONLY", metadata_table=True),
)


@dataclass(frozen=True)
class Answers:
    """What Hudi itself (its datasource on the Hudi server) says about one reference table."""

    commits: list[str]  # the write commits' requested times, in order
    completions: list[str]  # and their completion times: what version-8 ranges compare
    snapshot: list[dict[str, Any]]  # the latest snapshot's data columns
    as_of: dict[str, list[dict[str, Any]]]  # requested time -> the table as of that commit
    cdc: dict[str, list[list[Any]]]  # "begin..end" (completion times) -> Hudi's CDC rows (op, ts_ms, before, after)

    @staticmethod
    def cdc_ranges(completions: Sequence[str]) -> list[tuple[str, str | None]]:
        """The ranges both sides query: the whole history, ranges that start and end in the middle, and what a
        reverse stream sends after its checkpoint at the first commit."""
        c = completions
        return [("earliest", None), (c[0], c[3]), (c[2], c[5]), (c[4], None), (c[0], None)]

    @staticmethod
    def range_key(begin: str, end: str | None) -> str:
        return f"{begin}..{end or ''}"


def _records(df: DataFrame) -> list[dict[str, Any]]:
    return [r.asDict() for r in df.select(*DATA_COLUMNS).collect()]


def write_reference_table(spark: SparkSession, path: str, spec: ReferenceTable) -> Answers:
    table = HudiTable.create(spark, path, SCHEMA, record_key="id", ordering_field="ts", partition_by="part",
                             table_type=spec.table_type, cdc=spec.cdc_mode, metadata_table=spec.metadata_table,
                             # Hudi's own CDC query fails ("There should be a cdc log file") when an insert is
                             # packed into an existing small file: keep inserts apart
                             options={"hoodie.clean.automatic": "false", "hoodie.parquet.small.file.limit": "0"})
    written = write_history(spark, table)
    commits = [c.requested_time for c in written]
    completions = [str(c.completion_time) for c in written]
    return Answers(
        commits=commits,
        completions=completions,
        snapshot=_records(table.hudi.snapshot()),
        as_of={c: _records(table.hudi.as_of(c)) for c in commits},
        cdc={Answers.range_key(begin, end): [[r.op, r.ts_ms, r.before, r.after]
                                             for r in table.hudi.cdc(begin, end).collect()]
             for begin, end in Answers.cdc_ranges(completions)},
    )


def write_all(out: Path, spark: SparkSession | None = None) -> None:
    """Every reference table and its answers in ``out``, written through ``spark`` (a Hudi server's session)
    or a local Hudi server started for it."""
    from hudi_connect.client.server import connect
    from hudi_connect_stack.local import local_hudi_server

    out.mkdir(parents=True, exist_ok=True)
    if spark is None:
        with local_hudi_server() as url:
            session = connect(url)
            try:
                write_all(out, session)
            finally:
                session.stop()
        return
    for spec in REFERENCE_TABLES:
        answers = write_reference_table(spark, str(out / spec.name), spec)
        (out / f"{spec.name}.json").write_text(json.dumps(asdict(answers), default=str))
    (out / COMPLETE).write_text("")


def load_answers(out: Path, spec: ReferenceTable) -> Answers:
    return Answers(**json.loads((out / f"{spec.name}.json").read_text()))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?", help="where to write (default: a new temporary directory)")
    args = parser.parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="hudi-reference-"))
    write_all(out)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
