"""Instants as users give them, resolved once for every call that takes one.

An ``Instant`` stands for itself; text is an instant time (:func:`~hudi_connect.core.format.timeline.query_instant_time`
reads Hudi's forms); a ``datetime`` is a moment, turned into the instant time of the table's timeline clock:
UTC where ``hoodie.table.timeline.timezone=UTC``, else (Hudi's default, LOCAL: the writer JVM's default zone) the
default zone of the JVM of the server read through, taken for the writer's. Never the reading session's
``spark.sql.session.timeZone``: a session may set any zone, and the instants keep the writer's. A naive
``datetime`` is the client's local time, as pyspark reads naive datetimes.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo

from hudi_connect.client.remote_files import PlanningAccess
from hudi_connect.client.server import server_time_zone
from hudi_connect.core.errors import InvalidInstantError
from hudi_connect.core.executor.file_access import LocalFileAccess
from hudi_connect.core.format.table_config import TableProperties
from hudi_connect.core.format.timeline import Instant, instant_time_of, query_instant_time

InstantLike = Instant | str | datetime  # what every call taking an instant accepts


def timeline_zone_id(spark: PlanningAccess, properties: TableProperties) -> str:
    """The zone the table's instant times are written in, as far as a reader can know it (a zone id)."""
    if properties.raw.get("hoodie.table.timeline.timezone", "LOCAL").upper() == "UTC":
        return "UTC"
    if isinstance(spark, LocalFileAccess):  # a planner on the server has no JVM to ask
        raise InvalidInstantError("a moment (datetime) needs the server JVM's time zone, which a read planned "
                                  "without a Spark session cannot ask: give an instant time")
    return server_time_zone(spark)


def timeline_zone(spark: PlanningAccess, properties: TableProperties) -> tzinfo:
    """:func:`timeline_zone_id` as a ``tzinfo``."""
    zone = timeline_zone_id(spark, properties)
    return UTC if zone in ("UTC", "Z", "GMT") else ZoneInfo(zone)


def resolve_instant(spark: PlanningAccess, properties: TableProperties, value: InstantLike) -> Instant | str:
    """``value`` as an ``Instant`` or instant-time text (``earliest`` kept): what the timeline rules take."""
    if isinstance(value, Instant):
        return value
    if isinstance(value, datetime):
        return instant_time_of(value, timeline_zone(spark, properties))
    return query_instant_time(value)


def resolve_optional(spark: PlanningAccess, properties: TableProperties,
                     value: InstantLike | None) -> Instant | str | None:
    """:func:`resolve_instant`, None kept (an open end)."""
    return None if value is None else resolve_instant(spark, properties, value)
