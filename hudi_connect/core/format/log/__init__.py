"""Hudi log files in pure Python: blocks, their records, deletes and rollbacks.

Runs inside Spark executors' Python workers (``mapInArrow``), so it imports
only the standard library, pyarrow and fastavro. No input crashes it:
malformed bytes become ``CORRUPT`` blocks, as in Hudi's own reader, or a
:class:`~hudi_connect.core.errors.LogDecodeError` naming the block and the problem.

Example::

    from hudi_connect.core.format.log import LogBlockType, data_block_records, delete_records, read_log_blocks

    for block in read_log_blocks(log_path.read_bytes(), source=str(log_path)):
        if block.block_type is LogBlockType.AVRO_DATA:
            updates = data_block_records(block)
        elif block.block_type is LogBlockType.DELETE:
            deleted = delete_records(block)
"""

from hudi_connect.core.format.log.avro_records import avro_to_arrow_schema
from hudi_connect.core.format.log.blocks import (
    DeleteRecord,
    data_block_record_bytes,
    data_block_records,
    delete_records,
    rollback_target,
)
from hudi_connect.core.format.log.format import MAGIC, HeaderKey, LogBlock, LogBlockType, read_log_blocks

__all__ = [
    "MAGIC",
    "DeleteRecord",
    "HeaderKey",
    "LogBlock",
    "LogBlockType",
    "avro_to_arrow_schema",
    "data_block_record_bytes",
    "data_block_records",
    "delete_records",
    "read_log_blocks",
    "rollback_target",
]
