"""Images as JSON text in a Python worker, character for character as Spark's ``to_json`` writes them.

A change query shows each image (a record's state before or after a commit, RFC-51) as JSON. Spark renders
it with ``to_json(image, JSON_OPTIONS)`` (its ``JacksonGenerator``); :func:`images_json` renders the same
text from an Arrow struct column, so an image reads the same whichever side rendered it. Each rule is the
JVM's, checked against a Spark server by ``integration/test_image_json.py``:

- strings and field names: Jackson's escapes (``\\"``, ``\\\\``, ``\\b \\f \\n \\r \\t``, other control
  characters as ``\\u00XX`` in upper-case hex), nothing else escaped (not ``/``, not non-ASCII);
- doubles and floats: Java 17's ``Double.toString`` and ``Float.toString`` (:mod:`.java_floats`); NaN and
  the infinities as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``;
- decimals: ``BigDecimal.toString`` (``0E-10``, ``1.5E-7``), which Python's ``str(Decimal)`` follows;
- dates, timestamps: the formats of :data:`JSON_OPTIONS` in the proleptic Gregorian calendar, UTC;
- binary: base64 with padding; nulls kept (``"f":null``), in structs, arrays and maps alike;
- map keys: the ``toString`` of Spark's internal value, so a date key is its day number and a timestamp key
  its microseconds since the epoch.

Imports only pyarrow and the standard library: it runs in Spark's Python workers.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from functools import lru_cache
from itertools import pairwise
from typing import Any

import pyarrow as pa

from hudi_connect.core.errors import UnsupportedTableFeatureError
from hudi_connect.core.executor.java_floats import java_double_text, java_float_text

# The canonical rendering of images: nulls kept, decimals exact, binary base64, timestamps ISO 8601 to the
# microsecond (Spark's default would cut them to milliseconds), in UTC
JSON_OPTIONS = {
    "ignoreNullFields": "false",
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
    "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
    "timeZone": "UTC",
}

Texts = list[str | None]  # a column's values as JSON text, None where the value is null


def images_json(images: pa.Array | pa.ChunkedArray) -> pa.StringArray:
    """Each struct of ``images`` as the JSON text ``to_json(images, JSON_OPTIONS)`` gives on Spark; a null
    struct stays null.

        images_json(pa.array([{"id": 1, "at": None}, None]))  # ['{"id":1,"at":null}', None]

    Raises :class:`~hudi_connect.core.errors.UnsupportedTableFeatureError` for a field of a type Spark has
    no JSON text for (or renders by object identity, as a map keyed by binary).
    """
    array = images.combine_chunks() if isinstance(images, pa.ChunkedArray) else images
    if not pa.types.is_struct(array.type):
        raise TypeError(f"images_json renders struct columns, not {array.type}")
    return pa.array(_json_texts(array, "image"), pa.string())


def check_renderable(record: pa.Schema) -> None:
    """Refuse, where a read is planned, images of ``record`` that :func:`images_json` would refuse in a worker:
    rendering no image walks the types by the same rules."""
    images_json(pa.array([], pa.struct(list(record))))


def _json_texts(array: pa.Array, path: str) -> Texts:
    """``array``'s values as JSON text; ``path`` names the field in refusals."""
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    kind = array.type
    if pa.types.is_struct(kind):
        return _struct_texts(array, path)
    if pa.types.is_map(kind):
        return _map_texts(array, path)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _list_texts(array, path)
    return _scalar_texts(array, path)


def _masked(texts: list[str], array: pa.Array) -> Texts:
    """``texts`` with None where ``array`` is null (texts of null slots are whatever their buffers held)."""
    if not array.null_count:
        return list(texts)
    return [text if valid else None for text, valid in zip(texts, array.is_valid().to_pylist(), strict=True)]


def _or_null(texts: Texts) -> list[str]:
    return ["null" if text is None else text for text in texts]


def _struct_texts(array: pa.StructArray, path: str) -> Texts:
    names = [_string_json(array.type.field(i).name) + ":" for i in range(array.type.num_fields)]
    if not names:
        return _masked(["{}"] * len(array), array)
    columns = [[name + text for text in _or_null(_json_texts(child, f"{path}.{array.type.field(i).name}"))]
               for i, (name, child) in enumerate(zip(names, array.flatten(), strict=True))]
    return _masked(["{" + ",".join(fields) + "}" for fields in zip(*columns, strict=True)], array)


def _entries(array: pa.ListArray | pa.LargeListArray | pa.MapArray) -> tuple[list[int], pa.Array]:
    """Each list's bounds (offsets from 0) and the child values they index (a sliced array's offsets and
    child are not those of its own rows)."""
    offsets = array.offsets.to_pylist()
    start = offsets[0] if offsets else 0
    return [offset - start for offset in offsets], array.values.slice(start, (offsets[-1] - start) if offsets else 0)


def _list_texts(array: pa.ListArray | pa.LargeListArray, path: str) -> Texts:
    bounds, values = _entries(array)
    items = _or_null(_json_texts(values, f"{path}[]"))
    return _masked(["[" + ",".join(items[begin:end]) + "]" for begin, end in pairwise(bounds)], array)


def _map_texts(array: pa.MapArray, path: str) -> Texts:
    bounds, entries = _entries(array)
    keys, values = entries.flatten()
    pairs = [_string_json(key) + ":" + value
             for key, value in zip(_map_key_texts(keys, path), _or_null(_json_texts(values, f"{path}{{}}")),
                                   strict=True)]
    return _masked(["{" + ",".join(pairs[begin:end]) + "}" for begin, end in pairwise(bounds)], array)


def _map_key_texts(keys: pa.Array, path: str) -> list[str]:
    """A map's keys as Spark names them: ``toString`` of the internal value (keys are never null)."""
    kind = keys.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return keys.to_pylist()  # type: ignore[no-any-return]
    if pa.types.is_date(kind):  # an Integer: days since the epoch
        keys = keys.cast(pa.date32()).cast(pa.int32())
    elif pa.types.is_timestamp(kind):  # a Long: microseconds since the epoch
        keys = keys.cast(pa.timestamp("us", kind.tz)).cast(pa.int64())
    elif not (pa.types.is_integer(kind) or pa.types.is_boolean(kind) or pa.types.is_decimal(kind)
              or pa.types.is_float32(kind) or pa.types.is_float64(kind)):
        raise UnsupportedTableFeatureError(
            "a map whose keys Spark's to_json names by object identity or layout", f"map {path}'s key type",
            str(kind), where="an image")
    if pa.types.is_float32(kind) or pa.types.is_float64(kind):
        return _java_float_texts(keys)
    return [str(key).lower() if isinstance(key, bool) else str(key) for key in keys.to_pylist()]


def _scalar_texts(array: pa.Array, path: str) -> Texts:
    kind = array.type
    if pa.types.is_null(kind):
        return [None] * len(array)
    if pa.types.is_float32(kind) or pa.types.is_float64(kind):
        return _floating_texts(array)
    if pa.types.is_date(kind):
        return _date_texts(array)
    if pa.types.is_timestamp(kind):
        return _timestamp_texts(array)
    text = _value_text(kind)
    if text is None:
        raise UnsupportedTableFeatureError("a type Spark's to_json has no JSON text for", f"field {path}'s type",
                                           str(kind), where="an image")
    return [None if value is None else text(value) for value in array.to_pylist()]


def _value_text(kind: pa.DataType) -> Callable[[Any], str] | None:
    """How to write one value of ``kind`` as ``to_pylist`` gives it; None for a type Spark has not."""
    if pa.types.is_boolean(kind):
        return lambda value: "true" if value else "false"
    if pa.types.is_integer(kind) or pa.types.is_decimal(kind):
        return str  # Python's Decimal.__str__ follows the very spec of BigDecimal.toString
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return _string_json
    if (pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_binary_view(kind)
            or pa.types.is_fixed_size_binary(kind)):
        return lambda value: '"' + base64.b64encode(value).decode("ascii") + '"'
    return None


# Jackson writes U+0000..U+001F it has no short escape for as \u00XX in upper-case hex; Python's json, in lower case
_ESCAPE = re.compile(r"\\(?:u00[0-9a-f]{2}|.)")
_encode_string = json.JSONEncoder(ensure_ascii=False).encode  # the C encoder, escaping as Jackson does


def _string_json(text: str) -> str:
    encoded = _encode_string(text)
    if "\\u00" not in encoded:
        return encoded
    return _ESCAPE.sub(lambda escape: escape[0] if len(escape[0]) == 2 else "\\u00" + escape[0][4:].upper(), encoded)


_NON_FINITE = frozenset({"NaN", "Infinity", "-Infinity"})


def _floating_texts(array: pa.Array) -> Texts:
    """Jackson writes NaN and the infinities as strings (its WRITE_NAN_AS_STRINGS), other values as Java
    prints them."""
    texts = [f'"{text}"' if text in _NON_FINITE else text for text in _java_float_texts(array)]
    return _masked(texts, array)


def _java_float_texts(array: pa.Array) -> list[str]:
    """``Double.toString``/``Float.toString`` of each value (null slots give some text)."""
    single = pa.types.is_float32(array.type)
    bits = array.fill_null(0).view(pa.uint32() if single else pa.uint64()).to_pylist()
    text = java_float_text if single else java_double_text
    return [text(value) for value in bits]


def _date_texts(array: pa.Array) -> Texts:
    return [None if days is None else f'"{_date_text(days)}"'
            for days in array.cast(pa.date32()).cast(pa.int32()).to_pylist()]


def _timestamp_texts(array: pa.Array) -> Texts:
    """TimestampType (a zone in Arrow) in UTC with ``Z``, TimestampNTZType (none) bare, as Spark writes them."""
    zone = array.type.tz
    suffix = '"' if zone is None else 'Z"'
    micros = array.cast(pa.timestamp("us", zone)).cast(pa.int64()).to_pylist()
    return [None if value is None else f'"{_timestamp_text(value)}{suffix}' for value in micros]


def _timestamp_text(micros: int) -> str:
    days, micros = divmod(micros, 86_400_000_000)
    seconds, fraction = divmod(micros, 1_000_000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{_date_text(days)}T{hours:02d}:{minutes:02d}:{seconds:02d}.{fraction:06d}"


@lru_cache(maxsize=1 << 12)
def _date_text(days: int) -> str:
    """``yyyy-MM-dd`` of a day since the epoch in the proleptic Gregorian calendar (Howard Hinnant's
    civil_from_days), over Spark's whole range: Python's datetime stops at years 1 and 9999."""
    shifted = days + 719_468  # from 0000-03-01, so a leap day ends its year
    era, day_of_era = divmod(shifted, 146_097)
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36_524 - day_of_era // 146_096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    month_from_march = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * month_from_march + 2) // 5 + 1
    month = month_from_march + 3 if month_from_march < 10 else month_from_march - 9
    year = year_of_era + era * 400 + (month <= 2)
    return f"{_spark_year(year)}-{month:02d}-{day:02d}"


def _spark_year(year: int) -> str:
    """The year as Spark's ``yyyy`` writes it: four digits at least, signed before 0 and after 9999."""
    if 0 <= year <= 9999:
        return f"{year:04d}"
    return ("-" if year < 0 else "+") + f"{abs(year):04d}"
