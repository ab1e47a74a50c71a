"""A table's record schema: the writer's Avro schema of the latest commit, plus Hudi's
meta columns, as an Arrow schema for readers."""

from __future__ import annotations

import json

import pyarrow as pa

from hudi_connect.core.format.log.avro_records import avro_to_arrow_schema

# Hudi's meta columns (HoodieRecord's field names), named here once for every layer.
META_PREFIX = "_hoodie_"
COMMIT_TIME_COLUMN = "_hoodie_commit_time"
COMMIT_SEQNO_COLUMN = "_hoodie_commit_seqno"
RECORD_KEY_COLUMN = "_hoodie_record_key"
PARTITION_PATH_COLUMN = "_hoodie_partition_path"
FILE_NAME_COLUMN = "_hoodie_file_name"
IS_DELETED_COLUMN = "_hoodie_is_deleted"  # a data column, not a meta one: a row written as a delete
META_COLUMNS = (COMMIT_TIME_COLUMN, COMMIT_SEQNO_COLUMN, RECORD_KEY_COLUMN, PARTITION_PATH_COLUMN, FILE_NAME_COLUMN)


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
