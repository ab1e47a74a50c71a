"""The Table Spec API (RFC-64): table models, predicates and a lazy FileIndex."""

from hudi_connect.core.format.expressions import ColumnRange, Expression, col, fn, lit
from hudi_connect.core.format.spec_models import (
    FileGroup,
    PartitionDescriptor,
    PartitionIncrementalSnapshot,
    PartitionSnapshot,
    ReadingMode,
    TableDefinition,
    TableId,
)
from hudi_connect.table_spec.file_index import FileIndex, ListingCounts, balanced_splits
from hudi_connect.table_spec.record_index import RecordIndex
from hudi_connect.table_spec.spark_columns import to_spark

__all__ = [
    "ColumnRange", "Expression", "FileGroup", "FileIndex", "ListingCounts", "PartitionDescriptor",
    "PartitionIncrementalSnapshot", "PartitionSnapshot", "ReadingMode", "RecordIndex", "TableDefinition", "TableId",
    "balanced_splits", "col", "fn", "lit", "to_spark",
]
