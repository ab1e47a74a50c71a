"""Column statistics values: the wrapper unions of ``HoodieMetadata.avsc`` unwrapped to Python values.

The ``minValue``/``maxValue`` of a ``HoodieMetadataColumnStats`` record is a
union of one-field records (``IntWrapper``, ``StringWrapper``, ...). How to
read the wrapped value depends on the record's ``valueType``:

- absent, or ordinal 0 (``V1``, Hudi 0.x to 1.0): the wrapper says it all
  (``HoodieAvroWrapperUtils.unwrapAvroValueWrapper``): ``DateWrapper`` is an
  epoch day, ``TimestampMicrosWrapper`` epoch microseconds, ``DecimalWrapper``
  a decimal(30, 15);
- any other ordinal (Hudi 1.1+, ``org.apache.hudi.stats.ValueType``): the
  wrapper holds a primitive (int, long, bytes, string) that the value type
  turns into the logical value; a decimal is the unscaled big-endian two's
  complement integer, its precision and scale in ``additionalInfo`` ("15,2").

Values come out as Python types: bool, int, float, str, bytes,
``decimal.Decimal``, ``datetime.date``, ``datetime.time``, ``uuid.UUID``,
``datetime.datetime`` (UTC-aware for timestamps, naive for local
timestamps). Nanosecond timestamps stay integers (nanoseconds since the
epoch), as Python's datetime cannot hold them.
"""

from __future__ import annotations

import datetime
import decimal
import uuid
from collections.abc import Callable
from enum import IntEnum
from typing import Any

from hudi_connect.core.errors import MetadataTableError

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_LOCAL_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_DAY = datetime.date(1970, 1, 1)
_WRAPPER_NAMESPACE = "org.apache.hudi.avro.model."


class ValueType(IntEnum):
    """``org.apache.hudi.stats.ValueType``; the ordinal is what ``valueType.typeOrdinal`` stores."""

    V1 = 0
    NULL = 1
    BOOLEAN = 2
    INT = 3
    LONG = 4
    FLOAT = 5
    DOUBLE = 6
    STRING = 7
    BYTES = 8
    FIXED = 9
    DECIMAL = 10
    UUID = 11
    DATE = 12
    TIME_MILLIS = 13
    TIME_MICROS = 14
    TIMESTAMP_MILLIS = 15
    TIMESTAMP_MICROS = 16
    TIMESTAMP_NANOS = 17
    LOCAL_TIMESTAMP_MILLIS = 18
    LOCAL_TIMESTAMP_MICROS = 19
    LOCAL_TIMESTAMP_NANOS = 20


def _micros(value: Any) -> datetime.timedelta:
    return datetime.timedelta(microseconds=int(value))


def _time_of_day(micros: int) -> datetime.time:
    return (datetime.datetime.min + _micros(micros)).time()


def _bytes_decimal(value: Any, additional_info: str | None) -> decimal.Decimal:
    try:
        _precision, scale = (int(part) for part in (additional_info or "").split(","))
    except ValueError:
        raise MetadataTableError(f"a DECIMAL column statistic needs 'precision,scale' in valueType.additionalInfo, "
                                 f"found {additional_info!r}") from None
    return decimal.Decimal(int.from_bytes(value, "big", signed=True)).scaleb(-scale)


# Value type -> conversion of the primitive inside the wrapper (HoodieValueTypeInfo typeOrdinal, ValueType.toComposite)
_FROM_PRIMITIVE: dict[ValueType, Callable[[Any, str | None], object]] = {
    ValueType.DECIMAL: _bytes_decimal,
    ValueType.UUID: lambda value, _: uuid.UUID(value),
    ValueType.DATE: lambda value, _: _EPOCH_DAY + datetime.timedelta(days=value),
    ValueType.TIME_MILLIS: lambda value, _: _time_of_day(value * 1000),
    ValueType.TIME_MICROS: lambda value, _: _time_of_day(value),
    ValueType.TIMESTAMP_MILLIS: lambda value, _: _EPOCH + _micros(value * 1000),
    ValueType.TIMESTAMP_MICROS: lambda value, _: _EPOCH + _micros(value),
    ValueType.LOCAL_TIMESTAMP_MILLIS: lambda value, _: _LOCAL_EPOCH + _micros(value * 1000),
    ValueType.LOCAL_TIMESTAMP_MICROS: lambda value, _: _LOCAL_EPOCH + _micros(value),
    ValueType.FIXED: lambda value, _: bytes(value),
    ValueType.BYTES: lambda value, _: bytes(value),
}

# Wrapper record -> conversion of its value when no value type says otherwise (unwrapAvroValueWrapper)
_FROM_WRAPPER: dict[str, Callable[[Any], object]] = {
    "DateWrapper": lambda value: _EPOCH_DAY + datetime.timedelta(days=value),
    "LocalDateWrapper": lambda value: _EPOCH_DAY + datetime.timedelta(days=value),
    "TimestampMicrosWrapper": lambda value: _EPOCH + _micros(value),
    "BytesWrapper": bytes,
}


def unwrap_value(wrapped: object, type_ordinal: int | None = None, additional_info: str | None = None) -> object:
    """The Python value of a min/max wrapper as fastavro decodes it: None, or (wrapper name, {"value": ...}).

    ``type_ordinal`` and ``additional_info`` come from the record's ``valueType``.

    Example::

        wrapped = ("org.apache.hudi.avro.model.BytesWrapper", {"value": b"\\t\\xc4"})
        unwrap_value(wrapped, ValueType.DECIMAL, "10,2")  # Decimal('25.00')
    """
    if wrapped is None:
        return None
    if not (isinstance(wrapped, tuple) and len(wrapped) == 2 and isinstance(wrapped[1], dict)):
        raise MetadataTableError(f"a column statistic is not a wrapped value: {wrapped!r}")
    name = str(wrapped[0]).removeprefix(_WRAPPER_NAMESPACE)
    if name == "ArrayWrapper":
        items = wrapped[1].get("wrappedValues") or []
        return tuple(unwrap_value(item, type_ordinal, additional_info) for item in items)
    value = wrapped[1].get("value")
    if value is None:
        return None
    try:
        value_type = ValueType(type_ordinal or 0)
    except ValueError:
        raise MetadataTableError(f"unknown column statistics value type ordinal {type_ordinal}; "
                                 "it may have been written by a newer Hudi") from None
    try:
        if value_type is ValueType.V1:
            convert = _FROM_WRAPPER.get(name)
            return convert(value) if convert else value
        to_composite = _FROM_PRIMITIVE.get(value_type)
        return to_composite(value, additional_info) if to_composite else value
    except (TypeError, ValueError, OverflowError) as error:
        raise MetadataTableError(f"column statistic {name} {value!r} is not a valid {value_type.name}: "
                                 f"{error}") from None
