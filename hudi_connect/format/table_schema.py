"""A table's record schema: the writer's Avro schema of the latest commit, plus Hudi's
meta columns, as an Arrow schema for readers."""

from __future__ import annotations

import json

import pyarrow as pa

from hudi_connect.format.log.avro_records import avro_to_arrow_schema

META_COLUMNS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)


def with_meta_fields(avro_schema_json: str) -> str:
    """The Avro schema with Hudi's five meta fields first, as log blocks of such tables carry."""
    schema = json.loads(avro_schema_json)
    names = {f["name"] for f in schema.get("fields", [])}
    meta = [{"name": n, "type": ["null", "string"], "default": None} for n in META_COLUMNS if n not in names]
    schema["fields"] = meta + list(schema.get("fields", []))
    return json.dumps(schema)


def record_schema(avro_schema_json: str, *, meta_fields: bool) -> pa.Schema:
    """The Arrow schema of the table's records (meta columns first when the table populates them)."""
    return avro_to_arrow_schema(with_meta_fields(avro_schema_json) if meta_fields else avro_schema_json)
