"""Ours on a Spark 4 server, ANSI on (its default), beside the tester's Spark 3.5 reader.

A Connect server takes clients of its own line only, so the tester (a Spark 3.5 client) asks a child process in
the Spark 4 line's environment (``python -m integration.differential.spark4_reader URL``). For each request the
3.5 side found equal to Hudi 1.2's read, the Hudi server writes Hudi's unfiltered answer as Parquet beside the
table; the child reads that copy on the Spark 4 server and filters it with pyspark's own column (or the SQL text)
there, so the oracle is Hudi's rows under Spark 4's semantics (ANSI casts and comparisons, ``NULL IN ()`` false),
and holds ours on Spark 4, in the same client and session time zones, to it.

Questions and answers cross the child's stdin and stdout pickled (both ends run this repository's code).
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import re
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pyspark.errors.exceptions.base import PySparkException
from pyspark.errors.exceptions.connect import SparkConnectException
from pyspark.sql import SparkSession

from hudi_connect import library_errors
from hudi_connect.core.format.read_options import (
    AS_OF_INSTANT,
    BEGIN_INSTANT,
    END_INSTANT,
    INCREMENTAL_FORMAT,
    QUERY_TYPE,
)
from hudi_connect.core.format.timeline import Instant, range_time
from integration.differential.runner import (
    REFUSALS,
    _difference,
    _rows,
    _their_rows,
    client_zone,
    pyspark_column,
    read_pair,
    session_zone,
)
from integration.differential.scenario import Request, sql_text

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Question:
    """A request the 3.5 side settled as equal to Hudi's read; ``copy``: Hudi's unfiltered answer as Parquet."""

    path: str
    request: Request
    commits: list[Instant]
    ranges_by_completion: bool
    copy: str
    url_encoded: bool
    where: str


@dataclass(frozen=True)
class Answer:
    kind: str  # "equal", "refused: <class>", "refused by Spark in both: ...", "different"
    difference: str | None = None
    # the same request through format("hudi") on the same server, held to ours: "equal", "refused: <class>",
    # or None where not asked (instants by moment: options the data source does not take)
    data_source: str | None = None


def answer(spark: SparkSession, question: Question) -> Answer:
    """Ours on ``spark`` (a Spark 4 server) against Hudi's copied rows filtered by Spark 4 itself."""
    request = question.request
    with client_zone(request.zone), session_zone([spark], request.session_zone):
        pair = read_pair(spark, question.path, question.ranges_by_completion, None, request, question.commits)
        assert pair is not None, "the 3.5 side asked of a request naming no valid range"
        theirs = _their_rows(lambda: spark.read.parquet(question.copy), request, question.url_encoded)
        try:
            with library_errors():
                mine = _rows(pair[0]())
        except REFUSALS as refusal:  # answered on 3.5: a refusal on Spark 4 alone is a difference of lines
            return Answer("different", f"{question.where}: {request}\n  ours refused on Spark 4 only: {refusal}")
        except (SparkConnectException, PySparkException) as error:
            if isinstance(theirs, str):
                return Answer(f"refused by Spark in both: {str(error).splitlines()[0][:80]}")
            return Answer("different", f"{question.where}: {request}\n  ours failed on Spark 4 only: "
                                       f"{str(error).splitlines()[0][:300]}")
        # ANSI's runtime errors (a cast that fails) come from the rows a filter evaluates: Hudi's copy is whole,
        # while ours, as Spark's own partition pruning, evaluates the kept partitions' rows alone (the 18-minute
        # run's seed 73401). Ours must then equal the copy filtered without ANSI, which differs from ANSI's
        # answer only where ANSI raises instead
        lenient = _without_ansi(spark, question) if isinstance(theirs, str) else theirs
    if isinstance(theirs, str):
        if mine == lenient:
            return Answer(f"equal without ANSI, whose error met rows ours pruned: {theirs[:60]}")
        return Answer("different", f"{question.where}: {request}\n  Spark 4 refused Hudi's rows so filtered "
                                   f"({theirs}) where ours answered")
    if mine == theirs:
        return _through_data_source(spark, question, mine, Answer("equal"))
    return Answer("different", _difference(f"{question.where}, on Spark 4 (Hudi 1.2's rows filtered there)",
                                           request, mine, theirs))


def _through_data_source(spark: SparkSession, question: Question, mine: Any, settled: Answer) -> Answer:
    """``settled`` with the request read again through ``format("hudi")`` (the Python data source the plain server
    registered) in Hudi's own options, filtered by Spark as a user filters it: equal to ours (which equals the
    oracle), or refused by name; anything else is a difference."""
    request = question.request
    options = _hudi_options(question)
    if options is None:
        return settled
    with client_zone(request.zone), session_zone([spark], request.session_zone):
        df = spark.read.format("hudi").options(**options).load(question.path)
        if request.predicate is not None:
            df = df.where(sql_text(request.predicate) if request.spelling == "sql"
                          else pyspark_column(request.predicate))
        try:
            through = _rows(df)
        except (SparkConnectException, PySparkException) as error:
            named = re.search(r"hudi_connect\.core\.errors\.(\w+)", str(error))
            if named:
                return dataclasses.replace(settled, data_source=f"refused: {named.group(1)}")
            return Answer("different", f"{question.where}: {request}\n  format('hudi') failed where ours answered: "
                                       f"{str(error).splitlines()[0][:300]}")
    if through == mine:
        return dataclasses.replace(settled, data_source="equal")
    return Answer("different", _difference(f"{question.where}, through format('hudi') on Spark 4 (ours there)",
                                           request, through, mine))


def _hudi_options(question: Question) -> dict[str, str] | None:
    """Hudi's read options for the request (a change query's in Hudi's CDC format), or None where the data source
    takes none (instants named by moment)."""
    request = question.request
    if request.kind == "snapshot":
        return {}
    if request.kind == "read_optimized":
        return {QUERY_TYPE: "read_optimized"}
    if request.by_moment:
        return None
    end = question.commits[request.commit]
    if request.kind == "as_of":
        return {AS_OF_INSTANT: end.requested_time}
    begin = "earliest" if request.begin == 0 else range_time(question.commits[request.begin - 1],
                                                              by_completion=question.ranges_by_completion)
    changes = {INCREMENTAL_FORMAT: "cdc"} if request.kind == "changes" else {}
    return {QUERY_TYPE: "incremental", BEGIN_INSTANT: begin,
            END_INSTANT: range_time(end, by_completion=question.ranges_by_completion), **changes}


def _without_ansi(spark: SparkSession, question: Question) -> Any:
    """Hudi's copied rows filtered by Spark 4 with ANSI off (``_their_rows`` collects while the setting holds)."""
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        return _their_rows(lambda: spark.read.parquet(question.copy), question.request, question.url_encoded)
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")


class Spark4Reader:
    """The child process, from the tester's side."""

    def __init__(self, python: str, url: str, log: IO[Any]) -> None:
        self.process = subprocess.Popen([python, "-m", "integration.differential.spark4_reader", url], cwd=REPO,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
        self.line = ".".join(self._ask(None).kind.split(".")[:2])  # its first answer: the server's version

    def _ask(self, question: Question | None) -> Answer:
        assert self.process.stdin is not None and self.process.stdout is not None
        pickle.dump(question, self.process.stdin)
        self.process.stdin.flush()
        try:
            return pickle.load(self.process.stdout)  # type: ignore[no-any-return]
        except EOFError:
            ended = self.process.wait()
            raise RuntimeError(f"the Spark 4 reader's process ended (exit {ended}): see its log") from None

    def compare(self, question: Question) -> Answer:
        reply = self._ask(question)
        if reply.kind == "error":
            raise RuntimeError(f"the Spark 4 reader broke on {question.request}:\n{reply.difference}")
        return reply

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


def serve(url: str) -> None:
    """The child: answers pickled questions from stdin on stdout until stdin closes (None asks the version)."""
    from hudi_connect.client.server import connect

    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever else writes to stdout goes to the log
    spark = connect(url)
    assert spark.conf.get("spark.sql.ansi.enabled") == "true", "Spark 4's default: ANSI on"
    while True:
        try:
            question = pickle.load(sys.stdin.buffer)
        except EOFError:
            return
        try:
            reply = Answer(spark.version) if question is None else answer(spark, question)
        except Exception:  # the tester's own fault: reported by the seed that asked, the child goes on
            reply = Answer("error", traceback.format_exc())
        pickle.dump(reply, protocol)
        protocol.flush()


if __name__ == "__main__":  # by its module's name, so that its answers unpickle as that module's classes
    from integration.differential import spark4_reader

    spark4_reader.serve(sys.argv[1])
