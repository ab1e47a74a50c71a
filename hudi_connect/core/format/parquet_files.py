"""Reading a Parquet file (a base file, or a Parquet log block's content) whole, as Arrow, fast.

Imports only pyarrow, so it runs inside Python workers.
"""

from __future__ import annotations

from collections.abc import Collection

import pyarrow as pa
import pyarrow.parquet as pq

# Encodings of a column chunk whose values are all dictionary indices (the others are of levels); Parquet 2
# writers name their dictionary pages PLAIN, so their columns fail this test and are read as before
_DICTIONARY_ONLY = frozenset({"PLAIN_DICTIONARY", "RLE_DICTIONARY", "RLE", "BIT_PACKED"})


def read_parquet(source: pa.NativeFile, dictionaries: Collection[str] = ()) -> pa.Table:
    """Every record of a Parquet file, its string columns as plain strings but those named in ``dictionaries``,
    which stay dictionary-encoded where the file wrote them so (a merge that drops rows then expands only the
    rows it keeps: :func:`plain_strings`).

    A string column written with a dictionary throughout (Hudi's commit time, partition path and file name
    columns: a few values each) is read as its dictionary and expanded after: Arrow's reader expands each value
    on its own, four times slower (70 ms against 17 ms for a file name over 500k rows)."""
    parquet = pq.ParquetFile(source)
    dictionary_columns = _dictionary_encoded_strings(parquet)
    if not dictionary_columns:
        return parquet.read(use_threads=False)
    plain = parquet.schema_arrow  # a large string's dictionary reads as a dictionary of strings: cast to it
    # the footer read once: on an object store each read is a request
    table = pq.ParquetFile(source, metadata=parquet.metadata, read_dictionary=dictionary_columns).read(
        use_threads=False)
    kept = frozenset(dictionaries)
    for index, field in enumerate(table.schema):
        if pa.types.is_dictionary(field.type) and field.name not in kept:
            table = table.set_column(index, plain.field(index), table.column(index).cast(plain.field(index).type))
    return table


def plain_strings(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` (``schema``'s columns, some dictionary-encoded) with its dictionaries expanded to ``schema``'s
    fields; the other columns as they are."""
    for index, field in enumerate(table.schema):
        if pa.types.is_dictionary(field.type):
            target = schema.field(field.name)
            table = table.set_column(index, target, table.column(index).cast(target.type))
    return table


def _dictionary_encoded_strings(parquet: pq.ParquetFile) -> list[str]:
    """The top-level string columns whose every chunk holds dictionary indices only."""
    metadata, schema = parquet.metadata, parquet.schema_arrow
    chunks: dict[str, list[pq.ColumnChunkMetaData]] = {}
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for column in range(row_group.num_columns):
            chunk = row_group.column(column)
            chunks.setdefault(chunk.path_in_schema, []).append(chunk)
    return [field.name for field in schema
            if (pa.types.is_string(field.type) or pa.types.is_large_string(field.type)) and chunks.get(field.name)
            and all(c.has_dictionary_page and set(c.encodings) <= _DICTIONARY_ONLY for c in chunks[field.name])]
