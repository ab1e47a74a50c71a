"""The stream reader on Spark 4.2+, whose Python streaming sources take read limits: ``maxFilesPerTrigger``, and
``Trigger.AvailableNow`` in as many micro-batches as the limit makes (Spark's own fallback for a source without
``SupportsTriggerAvailableNow`` reads everything in one batch, ignoring the limit)."""

from __future__ import annotations

from typing import Any

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxFiles, SupportsTriggerAvailableNow

from pyspark_hudi.offsets import latest_commit_time
from pyspark_hudi.stream import HudiStreamReader


class HudiLimitedStreamReader(HudiStreamReader, SupportsTriggerAvailableNow):
    """:class:`~pyspark_hudi.stream.HudiStreamReader` with Spark's read limits."""

    _available_now: str | None = None  # the last commit when an AvailableNow query started: where it ends

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxFilesPerTrigger`` as Spark's ``ReadMaxFiles``, else every commit available."""
        return ReadMaxFiles(self._query.max_files) if self._query.max_files else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """An AvailableNow query reads the commits completed when it starts, and no later one."""
        self._available_now = latest_commit_time(self._query.path)

    def latestOffset(self, start: dict[str, str] | None = None, limit: Any = None) -> dict[str, str]:
        """:meth:`HudiStreamReader.latestOffset`, never past an AvailableNow query's last commit."""
        offset = super().latestOffset(start, limit)
        if self._available_now is not None and offset["commit"] > self._available_now:
            return {"commit": max(self._available_now, start["commit"] if start else self._available_now)}
        return offset
