"""The Hudi metadata table (``.hoodie/metadata``) in pure Python: HFiles, records, merging.

Runs inside Spark executors' Python workers, so it imports only the standard
library, pyarrow and fastavro, and reads ``bytes`` the caller fetched.
Malformed input raises :class:`~hudi_connect.core.errors.HFileDecodeError` or
:class:`~hudi_connect.core.errors.MetadataTableError` naming the file and problem.

Example: the files of a data table's partitions, from the latest file slice
of the metadata table's ``files`` partition::

    from hudi_connect.core.format.log import read_log_blocks
    from hudi_connect.core.format.metadata import hfile_records, log_entries, merge_entries, partition_files

    entries = list(hfile_records(base_bytes, instant_time=base_instant))
    blocks = [block for data in log_bytes for block in read_log_blocks(data)]
    entries += [e for e in log_entries(blocks) if e.instant_time in valid_instants]
    files = partition_files(merge_entries(entries))  # {'region=us': PartitionFiles(...), ...}
"""

from hudi_connect.core.format.metadata.hfile import ByteSource, HFile, InMemory, lookup, open_hfile, read_hfile
from hudi_connect.core.format.metadata.hfile_blocks import BlockIndexEntry, HFileCompression, HFileTrailer
from hudi_connect.core.format.metadata.keys import (
    ALL_PARTITIONS_KEY,
    NON_PARTITIONED_NAME,
    bloom_filter_key,
    column_stats_key,
    column_stats_prefix,
    file_group_id,
    file_group_index,
    partition_stats_key,
    secondary_index_key,
)
from hudi_connect.core.format.metadata.merge import (
    all_partitions,
    column_stats,
    merge_column_stats,
    merge_entries,
    merge_in_key_order,
    merge_records,
    partition_files,
    record_locations,
    secondary_index_entries,
)
from hudi_connect.core.format.metadata.records import (
    BloomFilterEntry,
    ColumnStats,
    MetadataDelete,
    MetadataEntry,
    MetadataPayload,
    MetadataRecord,
    MetadataRecordType,
    PartitionFiles,
    PartitionList,
    RecordLocation,
    SecondaryIndexEntry,
    decode_metadata_record,
    hfile_block_records,
    hfile_records,
    log_entries,
)
from hudi_connect.core.format.metadata.selection import KeySelection
from hudi_connect.core.format.metadata.values import ValueType, unwrap_value

__all__ = [
    "ALL_PARTITIONS_KEY",
    "NON_PARTITIONED_NAME",
    "BlockIndexEntry",
    "BloomFilterEntry",
    "ByteSource",
    "ColumnStats",
    "HFile",
    "HFileCompression",
    "HFileTrailer",
    "InMemory",
    "KeySelection",
    "MetadataDelete",
    "MetadataEntry",
    "MetadataPayload",
    "MetadataRecord",
    "MetadataRecordType",
    "PartitionFiles",
    "PartitionList",
    "RecordLocation",
    "SecondaryIndexEntry",
    "ValueType",
    "all_partitions",
    "bloom_filter_key",
    "column_stats",
    "column_stats_key",
    "column_stats_prefix",
    "decode_metadata_record",
    "file_group_id",
    "file_group_index",
    "hfile_block_records",
    "hfile_records",
    "log_entries",
    "lookup",
    "merge_column_stats",
    "merge_entries",
    "merge_in_key_order",
    "merge_records",
    "open_hfile",
    "partition_files",
    "partition_stats_key",
    "read_hfile",
    "record_locations",
    "secondary_index_entries",
    "secondary_index_key",
    "unwrap_value",
]
