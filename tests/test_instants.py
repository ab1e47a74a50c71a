"""Instants as users give them: Hudi's text forms (``formatQueryInstant``) and datetimes on the timeline's clock."""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Iterator
from zoneinfo import ZoneInfo

import pytest

from hudi_connect.core.errors import InvalidInstantError
from hudi_connect.core.format.timeline import as_of_time, instant_time_of, query_instant_time


@pytest.mark.parametrize(("text", "expected"), [
    ("20240101120000123", "20240101120000123"),
    ("20240101120000", "20240101120000"),
    ("2024-01-01 12:00:00.123", "20240101120000123"),
    ("2024-01-01 12:00:00", "20240101120000999"),  # Hudi: the end of that second
    ("2024-01-01", "20240101000000000"),
    ("earliest", "earliest"),
])
def test_text_reads_as_hudi_reads_a_query_instant(text: str, expected: str) -> None:
    assert query_instant_time(text) == expected


@pytest.mark.parametrize("text", ["yesterday", "2024-1-1", "2024-01-01T12:00:00", "202401011200", ""])
def test_other_text_is_refused_naming_the_forms(text: str) -> None:
    with pytest.raises(InvalidInstantError, match="yyyy-MM-dd HH:mm:ss"):
        query_instant_time(text)


def test_earliest_is_no_time_to_travel_to() -> None:
    with pytest.raises(InvalidInstantError, match="a time travel needs an instant"):
        as_of_time("earliest")


@pytest.fixture
def client_in_kolkata() -> Iterator[None]:
    before = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Kolkata"
    time.tzset()
    yield
    if before is None:
        os.environ.pop("TZ")
    else:
        os.environ["TZ"] = before
    time.tzset()


def test_datetimes_on_the_timelines_clock(client_in_kolkata: None) -> None:
    aware = dt.datetime(2024, 1, 1, 12, 0, 0, 123456, tzinfo=dt.UTC)
    assert instant_time_of(aware) == "20240101120000123"
    assert instant_time_of(aware, ZoneInfo("America/Los_Angeles")) == "20240101040000123"
    # a naive datetime is the client's local time, as pyspark reads it: 17:30 in Kolkata is 12:00 UTC
    assert instant_time_of(dt.datetime(2024, 1, 1, 17, 30)) == "20240101120000000"
