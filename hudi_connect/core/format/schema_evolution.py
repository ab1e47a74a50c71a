"""Column types that changed over a table's history, and how old values reach the new type.

Hudi lets a writer widen a column (``int`` to ``long``, ``float`` to ``double``, a
number to ``string``, a wider decimal, ``string`` and ``bytes`` either way), and
readers then see files of the old type beside files of the new. Hudi promotes
old values its own way, and a reader must do the same to return the same rows:
``float`` to ``double`` goes through the float's decimal text (so ``1.1f`` reads
``1.1``, not ``1.100000023841858``: ``HoodieAvroUtils.rewritePrimaryTypeWithDiffSchemaType``).
A change this module does not know is refused by name, never cast by guess.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_connect.core.errors import UnsupportedTableFeatureError
from hudi_connect.core.format.commit_metadata import CommitMetadata
from hudi_connect.core.format.table_config import TableProperties
from hudi_connect.core.format.table_schema import record_schema

Column = Any  # a pa.Array or pa.ChunkedArray (pyarrow ships no type stubs)


@dataclass(frozen=True)
class TypeChange:
    """One column (``a.b`` for a nested field) whose type differs between an older schema and the latest."""

    column: str
    old: pa.DataType
    new: pa.DataType

    def describe(self) -> str:
        """The change as ``column: old -> new``, for messages."""
        return f"{self.column}: {self.old} -> {self.new}"


def _is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _is_bytes(t: pa.DataType) -> bool:
    return bool(pa.types.is_binary(t) or pa.types.is_large_binary(t))


def _primitive_promotion(old: pa.DataType, new: pa.DataType) -> bool:
    """Whether :func:`promote` turns a primitive ``old`` into ``new`` as Hudi does."""
    if old == new:
        return True
    if pa.types.is_integer(old):
        return bool((pa.types.is_integer(new) and new.bit_width >= old.bit_width) or pa.types.is_floating(new)
                    or _is_text(new))
    if pa.types.is_float32(old):
        return bool(pa.types.is_float64(new))  # float to string: Java's Float.toString, not reproduced
    if pa.types.is_decimal(old):
        return bool(pa.types.is_decimal(new) and new.scale >= old.scale
                    and new.precision - new.scale >= old.precision - old.scale)
    if _is_text(old):
        return _is_bytes(new) or _is_text(new)
    if _is_bytes(old):
        return _is_text(new) or _is_bytes(new)
    if pa.types.is_date32(old):
        return _is_text(new)  # LocalDate.toString: yyyy-MM-dd, as Arrow writes it
    return False


def _is_list(t: pa.DataType) -> bool:
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t))


def _same_values(old: pa.DataType, new: pa.DataType) -> bool:
    """Two layouts of the same values (a file's timestamp unit or zone label, string and binary sizes,
    dictionary encoding): not a type change, and a plain cast keeps every value."""
    if pa.types.is_dictionary(old):
        return _same_values(old.value_type, new)
    return bool((pa.types.is_timestamp(old) and pa.types.is_timestamp(new))
                or (_is_text(old) and _is_text(new)) or (_is_bytes(old) and _is_bytes(new)))


def can_promote(old: pa.DataType, new: pa.DataType) -> bool:
    """Whether :func:`promote` turns values of ``old`` into ``new`` (structs by field, lists by element)."""
    if pa.types.is_struct(old) and pa.types.is_struct(new):
        before = {f.name: f.type for f in old}
        return all(can_promote(before[f.name], f.type) for f in new if f.name in before)
    if _is_list(old) and _is_list(new):
        return can_promote(old.value_type, new.value_type)
    return not _leaf_types_differ(old, new) or _primitive_promotion(old, new)


def _leaf_types_differ(old: pa.DataType, new: pa.DataType) -> bool:
    """Whether some value changes type (a struct gaining or losing a field, or a field's nullability,
    changes none)."""
    if pa.types.is_struct(old) and pa.types.is_struct(new):
        before = {f.name: f.type for f in old}
        return any(_leaf_types_differ(before[f.name], f.type) for f in new if f.name in before)
    if _is_list(old) and _is_list(new):
        return _leaf_types_differ(old.value_type, new.value_type)
    if pa.types.is_map(old) and pa.types.is_map(new):
        return _leaf_types_differ(old.key_type, new.key_type) or _leaf_types_differ(old.item_type, new.item_type)
    return bool(old != new) and not _same_values(old, new)


def type_changes(old: pa.Schema, new: pa.Schema) -> list[TypeChange]:
    """Top-level columns in both schemas whose values change type (nested fields included)."""
    before = {f.name: f.type for f in old}
    return [TypeChange(f.name, before[f.name], f.type) for f in new
            if f.name in before and _leaf_types_differ(before[f.name], f.type)]


def history_type_changes(schemas: Iterable[pa.Schema], latest: pa.Schema) -> list[TypeChange]:
    """Every type change between any of ``schemas`` (older writers' schemas) and ``latest``, once each."""
    return list(dict.fromkeys(c for schema in schemas for c in type_changes(schema, latest)))


def unsupported_changes(changes: Iterable[TypeChange]) -> list[TypeChange]:
    """The changes :func:`promote` cannot make."""
    return [c for c in changes if not can_promote(c.old, c.new)]


def promote(column: Column, new: pa.DataType, name: str = "column") -> Column:
    """``column``'s values in type ``new``, as Hudi promotes them; refuses a change it does not know."""
    old = column.type
    if old == new:
        return column
    if isinstance(column, pa.ChunkedArray):
        return pa.chunked_array([promote(chunk, new, name) for chunk in column.chunks], new)
    if pa.types.is_struct(old) and pa.types.is_struct(new):
        return _promote_struct(column, new, name)
    if _is_list(old) and _is_list(new):
        first, last = column.offsets[0].as_py(), column.offsets[-1].as_py()  # a slice's offsets start anywhere
        values = promote(column.values.slice(first, last - first), new.value_type, name + ".element")
        offsets = pc.subtract(column.offsets, pa.scalar(first, column.offsets.type))
        mask = column.is_null() if column.null_count else None
        return type(column).from_arrays(offsets, values, type=new, mask=mask)
    if not _leaf_types_differ(old, new):
        return pc.cast(column, new)  # the same values, laid out differently (nullability, units, sizes)
    if not _primitive_promotion(old, new):
        raise UnsupportedTableFeatureError(
            "a column type change the readers cannot reproduce", "column type", f"{name}: {old} -> {new}")
    if pa.types.is_float32(old) and pa.types.is_float64(new):
        return pc.cast(pc.cast(column, pa.string()), new)  # Double.valueOf(Float.toString(f))
    return pc.cast(column, new, safe=False)


def _promote_struct(column: pa.StructArray, new: pa.StructType, name: str) -> pa.Array:
    children = dict(zip((f.name for f in column.type), column.flatten(), strict=True))
    arrays = [promote(children[f.name], f.type, f"{name}.{f.name}") if f.name in children
              else pa.nulls(len(column), f.type) for f in new]
    mask = column.is_null() if column.null_count else None
    return pa.StructArray.from_arrays(arrays, fields=list(new), mask=mask)


def align(table: pa.Table, schema: pa.Schema, *, dictionaries: bool = False) -> pa.Table:
    """``table`` with exactly ``schema``'s columns: missing ones null, older types promoted as Hudi does; with
    ``dictionaries``, a dictionary-encoded column of the field's type stays encoded (a merge expands it later)."""
    columns, fields = [], []
    for field in schema:
        column = table[field.name] if field.name in table.column_names else None
        if column is None:
            column = pa.nulls(table.num_rows, field.type)
        elif dictionaries and pa.types.is_dictionary(column.type) and column.type.value_type == field.type:
            field = field.with_type(column.type)
        else:
            column = promote(column, field.type, field.name)
        columns.append(column)
        fields.append(field)
    return pa.Table.from_arrays(columns, schema=pa.schema(fields, metadata=schema.metadata))


CREATE_SCHEMA_PROPERTY = "hoodie.table.create.schema"  # the schema the table was created with (Avro JSON)


def check_promotable(changes: Iterable[TypeChange], *, where: str = "the table") -> None:
    """Refuse a history with a type change :func:`promote` cannot reproduce, naming it."""
    unsupported = unsupported_changes(changes)
    if unsupported:
        raise UnsupportedTableFeatureError(
            "a column type change the readers cannot reproduce", "column type",
            ", ".join(c.describe() for c in unsupported), where=where,
            detail="no rule here turns the older files' values into the new type as Hudi does")


def schema_history_changes(props: TableProperties, commits: Sequence[CommitMetadata],
                           latest: pa.Schema) -> list[TypeChange]:
    """Type changes between the schema the table was created with, or any of ``commits``', and ``latest``."""
    older = [props.raw.get(CREATE_SCHEMA_PROPERTY)] + [commit.schema_json for commit in commits]
    return history_type_changes(
        (record_schema(s, meta_fields=props.populate_meta_fields) for s in dict.fromkeys(older) if s), latest)
