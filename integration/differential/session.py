"""Hypothesis around the runner: a seed draws scenarios, a failure is shrunk and printed as runnable code.

``explore`` runs seeds one after another until a time budget is spent (the long runs of ``--full`` and
``python -m integration.differential``); each seed's examples are drawn, run and, on a difference, shrunk
by Hypothesis to a minimal history and request before the next seed starts. What every run compared is
summed in a :class:`Tally`, written as a report when asked.
"""

from __future__ import annotations

import re
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, given, reject, seed, settings
from pyspark.sql import SparkSession

from integration.differential.runner import HudiWriteFailed, Outcome, reproduction, run_scenario
from integration.differential.scenario import Scenario, Shape, features_of, scenarios
from integration.differential.spark4_reader import Spark4Reader

SCENARIOS_PER_SEED = 20
RELEASE_VERSIONS: dict[str, tuple[int, ...]] = {"1.2": (6, 8, 9), "1.0.2": (8,), "0.15.0": (6,)}


def writes(release: str, shape: Shape) -> bool:
    """Whether ``release`` writes such a table: its table versions; several ordering fields from 1.1 (1.0.2 fails
    every write of them: "ts,ts2 field not found in record", the 1.0.2 run of seed 73100)."""
    return shape.version in RELEASE_VERSIONS[release] and (shape.ordering_fields == 1 or release == "1.2")


@dataclass
class Tally:
    """What a run drew and compared."""

    seeds: list[int] = field(default_factory=list)
    scenarios: int = 0
    hudi_write_failures: Counter[str] = field(default_factory=Counter)
    outcome: Outcome = field(default_factory=Outcome)
    failures: list[str] = field(default_factory=list)  # per failing seed: its shrunk reproduction
    spark4_line: str = ""  # the Spark 4 reader's server version, where one reads beside
    server_causes: Counter[str] = field(default_factory=Counter)  # root_causes() of the writing server's log
    # per feature (scenario.features_of) of the scenarios compared: how many, their seconds, their requests
    feature_scenarios: Counter[str] = field(default_factory=Counter)
    feature_seconds: Counter[str] = field(default_factory=Counter)
    feature_requests: Counter[str] = field(default_factory=Counter)

    def count_features(self, scenario: Scenario, seconds: float, requests: int) -> None:
        """A compared scenario's share of the run, counted for each feature it has."""
        for feature in features_of(scenario):
            self.feature_scenarios[feature] += 1
            self.feature_seconds[feature] += seconds  # type: ignore[assignment]
            self.feature_requests[feature] += requests

    def report(self, minutes: float, release: str) -> str:
        lines = [f"# Differential run: Hudi {release}, {minutes:.1f} minutes",
                 f"seeds {self.seeds[0] if self.seeds else '-'}..{self.seeds[-1] if self.seeds else '-'} "
                 f"({len(self.seeds)}), scenarios run {self.scenarios}, "
                 f"requests compared {sum(self.outcome.compared.values())}", "", "| outcome | requests |", "|---|---|"]
        lines += [f"| {kind} | {n} |" for kind, n in self.outcome.compared.most_common()]
        if self.feature_scenarios:
            lines += ["", "By feature (scenarios compared that have it; a scenario may have several)", "",
                      "| feature | scenarios | minutes | requests compared |", "|---|---|---|---|"]
            lines += [f"| {name} | {n} | {self.feature_seconds[name] / 60:.1f} | {self.feature_requests[name]} |"
                      for name, n in sorted(self.feature_scenarios.items())]
        concurrent = ", ".join(f"{n} {kind}" for kind, n in self.outcome.concurrent.most_common()) or "none"
        lines += ["", f"Concurrent writes (two writers at once, multi-writer mode): {concurrent}"]
        lines += ["", f"Hudi write failures (scenarios discarded): {sum(self.hudi_write_failures.values())}"]
        lines += [f"- {n} x {kind}" for kind, n in self.hudi_write_failures.most_common(10)]
        if self.server_causes:
            lines += ["", "Root causes in the writing server's log (the deepest `Caused by` of each stack trace: its "
                      "failed writes, and Hudi's reads that failed)", "", "| traces | cause |", "|---|---|"]
            lines += [f"| {n} | {cause} |" for cause, n in self.server_causes.most_common(15)]
        if self.outcome.spark4:
            lines += ["", f"Read again on Spark {self.spark4_line} (ANSI on), where ours equals Hudi 1.2's: "
                      f"{sum(self.outcome.spark4.values())}", "", "| outcome on Spark 4 | requests |", "|---|---|"]
            lines += [f"| {kind} | {n} |" for kind, n in self.outcome.spark4.most_common()]
        examples = self.outcome.release_differences
        lines += ["", f"Answers of the writing release unlike Hudi 1.2's (1.2 followed): {len(examples)}",
                  *(f"```\n{example}\n```" for example in examples[:3])]
        lines += ["", f"Failing seeds: {len(self.failures)}", *self.failures]
        return "\n".join(lines) + "\n"


_TRACE_LINE = re.compile(r"^(\s+at |\s*Caused by: |\s+\.\.\. \d+ more|\s+Suppressed: )")
_VARYING = re.compile(  # instants, stage and task numbers, file ids, paths, UUIDs, ports
    r"\d{6,}|\b\d+\.\d+\b|\b(?=[0-9a-f]*[a-f])[0-9a-f]{8}\b|(?:/[\w.=%@+-]+){2,}"
    r"|\b[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}\b|:\d{4,5}\b")


def root_causes(log: Iterable[str]) -> Counter[str]:
    """The deepest cause of each Java stack trace in a server's log (its last ``Caused by``, else the exception
    itself), with what varies between runs (instants, paths, file ids, ports) cut: what Hudi's failed writes (and
    failed reads) came to, by kind."""
    causes: Counter[str] = Counter()
    deepest: str | None = None  # of the trace being read
    previous = ""
    for line in [*log, ""]:
        if _TRACE_LINE.match(line):
            if line.lstrip().startswith("Caused by: "):
                deepest = line.strip().removeprefix("Caused by: ")
            elif deepest is None:  # the trace's first line: the exception is the line before it
                deepest = previous.strip()
            continue
        if deepest is not None:
            causes[_VARYING.sub("…", deepest)[:200]] += 1
        deepest, previous = None, line
    return causes


def check_seed(spark: SparkSession, plain: SparkSession, new_path: Callable[[], str], seed_value: int,
               examples: int, tally: Tally, release: str = "1.2",
               oracles: dict[str, SparkSession] | None = None, deadline: float | None = None,
               spark4: Spark4Reader | None = None, focus: frozenset[str] = frozenset()) -> None:
    """Draws ``examples`` scenarios from ``seed_value`` and compares each; raises (after shrinking) on a
    difference. Hypothesis draws the simplest scenario first, so ask for two or more. Past ``deadline``
    (``time.monotonic()``), no new scenario runs (shrinking a failure still does). ``focus``: features every
    scenario has (:data:`~integration.differential.scenario.FEATURES`)."""
    shrinking = False

    @settings(max_examples=examples, deadline=None, database=None, derandomize=False, print_blob=False,
              phases=(Phase.generate, Phase.shrink), suppress_health_check=list(HealthCheck))
    @given(scenarios(focus=focus).filter(lambda s: writes(release, s.shape)))
    def check(scenario: Scenario) -> None:
        nonlocal shrinking
        if deadline is not None and time.monotonic() > deadline and not shrinking:
            return  # the seed's remaining examples pass unrun: rejected, Hypothesis drew on for many minutes
        tally.scenarios += 1
        began = time.monotonic()
        try:
            outcome = run_scenario(spark, plain, new_path(), scenario, oracles, spark4)
        except HudiWriteFailed as failure:
            tally.hudi_write_failures[str(failure).split(": ", 1)[-1][:120]] += 1
            reject()
        tally.count_features(scenario, time.monotonic() - began, sum(outcome.compared.values()))
        tally.outcome.add(outcome)
        shrinking = shrinking or bool(outcome.differences)
        assert not outcome.differences, (
            f"seed {seed_value}: ours differs from Hudi's read\n" + "\n".join(outcome.differences)
            + "\n\nreproduce (in a test with the spark and plain_spark fixtures and a fresh path):\n"
            + reproduction(scenario))

    tally.seeds.append(seed_value)
    seed(seed_value)(check)()


def explore(spark: SparkSession, plain: SparkSession, new_path: Callable[[], str], first_seed: int,
            minutes: float, tally: Tally, release: str = "1.2",
            oracles: dict[str, SparkSession] | None = None, spark4: Spark4Reader | None = None,
            focus: frozenset[str] = frozenset()) -> None:
    """Seed after seed (``SCENARIOS_PER_SEED`` each) until ``minutes`` are spent; failing seeds are kept, not
    fatal."""
    deadline = time.monotonic() + minutes * 60
    current = first_seed
    while time.monotonic() < deadline:
        try:
            check_seed(spark, plain, new_path, current, SCENARIOS_PER_SEED, tally, release, oracles, deadline, spark4,
                       focus)
        except AssertionError as failure:
            tally.failures.append(f"## seed {current}\n```\n{failure}\n```")
            print(tally.failures[-1], flush=True)
        except Exception as error:  # the run goes on: the seed is reported with what broke, and where
            print(traceback.format_exc(), flush=True)  # whole in the run's output (a flaky failure's differences)
            broke = "".join(traceback.format_exception_only(error))[:2000]
            tally.failures.append(f"## seed {current} (error)\n```\n{broke}\n{traceback.format_exc()[-3000:]}\n```")
            print(tally.failures[-1], flush=True)
        print(f"seed {current}: {tally.scenarios} scenarios, {sum(tally.outcome.compared.values())} requests, "
              f"{len(tally.failures)} failing seeds", flush=True)  # progress of a long run (pytest -s)
        current += 1
