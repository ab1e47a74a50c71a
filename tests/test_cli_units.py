"""The CLI's output and argument rules that need no server."""

from __future__ import annotations

import datetime as dt
import json
import math
import sys
from decimal import Decimal

import pytest

from hudi_connect.cli import _json_line, main


def test_json_lines_are_valid_json_as_sparks_to_json_writes_them() -> None:
    line = _json_line({"b": b"\x00\xff", "nan": math.nan, "inf": -math.inf, "d": Decimal("1.50"),
                       "t": dt.datetime(2026, 1, 2, 3, 4, 5), "nested": [{"x": math.inf}], "n": None, "i": 7})
    assert json.loads(line) == {"b": "AP8=", "nan": "NaN", "inf": "-Infinity", "d": "1.50",
                                "t": "2026-01-02 03:04:05", "nested": [{"x": "Infinity"}], "n": None, "i": 7}


@pytest.mark.parametrize("argv", [["history", "t", "--limit", "0"], ["changes", "t", "--limit", "-1"],
                                  ["demo", "--jar-free-remote", "sc://localhost:1"]])
def test_arguments_that_would_print_a_wrong_answer_are_refused(argv: list[str],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--limit" in err or "--remote" in err


@pytest.mark.parametrize("argv", [["demo"], ["history", "/tmp/t"], ["stack", "up"], ["stack", "down"]])
def test_local_mode_and_the_stack_ask_for_the_harness_by_name_where_it_is_missing(
        argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # the library alone, as a user installs it: no hudi_connect_stack importable
    for name in [m for m in sys.modules if m.split(".")[0] == "hudi_connect_stack"] + ["hudi_connect_stack"]:
        monkeypatch.setitem(sys.modules, name, None)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "hudi-connect-stack" in err and "pip install -e ./hudi_connect_stack" in err, err
