"""hudi-connect: Apache Hudi for Python users who reach Spark only through Spark Connect.

The front door: every public class, function and error is importable from here.

- One table object, on any Spark Connect server: :class:`HudiTable` (``HudiTable.open(spark, path)``).
  Its reads (snapshot, read-optimized, time travel, incremental), change queries (RFC-51), history, files
  (RFC-64) and reverse streams are jar-free; its writes, table services and ``table.hudi`` (Hudi's own reads)
  need Hudi's bundle on the server.
- Its layers, public too: :class:`TableReader`, :class:`ChangeQuery`, :class:`FileIndex`, :class:`RecordIndex`
  (with the predicates :func:`col`, :func:`lit`, :func:`fn`; pyspark Columns and SQL text are accepted too),
  and the reverse streamer (RFC-70) :class:`ReverseStream` with :class:`FileSink`, :class:`KafkaSink`,
  :class:`PostgresSink`.
- Sessions: :func:`connect`; every error derives from :class:`HudiConnectError`.

Example::

    from hudi_connect import HudiTable, connect

    spark = connect("sc://spark-connect:15002")
    table = HudiTable.open(spark, "s3a://lake/orders")
    table.snapshot("city = 'paris'").show()
    table.changes("earliest").show()
"""

try:
    import pyspark  # noqa: F401
except ImportError as missing:  # the Spark line is an extra: a Connect client works only with its own line
    raise ImportError("hudi-connect needs the Spark Connect client of your servers' line: "
                      "pip install 'hudi-connect[spark35]' for Spark 3.5, 'hudi-connect[spark43]' for Spark 4.3 "
                      "(or spark40 to spark42; jar-free reads only)") from missing

import logging

from hudi_connect.cdc import ChangeFormat, ChangeQuery
from hudi_connect.client.instants import InstantLike
from hudi_connect.client.server import connect, require_hudi_server
from hudi_connect.client.server_loss import bound_server_wait, is_server_lost
from hudi_connect.client.timeline_view import forget_table
from hudi_connect.client.worker_errors import library_errors
from hudi_connect.core.errors import (
    CheckpointConflictError,
    ConcurrentTableChangeError,
    ForwardingFailedError,
    HarnessMissingError,
    HFileDecodeError,
    HistoryUnavailableError,
    HudiConnectError,
    InvalidInstantError,
    InvalidOptionError,
    LogDecodeError,
    MetadataTableError,
    NotAHudiTableError,
    ProvisioningError,
    SchemaMismatchError,
    ServerMisconfiguredError,
    ServerUnavailableError,
    ServiceStartError,
    SinkError,
    StorageAccessError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
    UnsupportedStorageError,
    UnsupportedTableFeatureError,
    UnsupportedTableVersionError,
    WriteConflictError,
    WriteFailedError,
    WriterActiveError,
)
from hudi_connect.core.format.commit_metadata import CommitMetadataError
from hudi_connect.core.format.history import HistoryEntry
from hudi_connect.core.format.table_config import CdcLoggingMode, MetadataPartition, TableProperties, TableType
from hudi_connect.core.format.timeline import Action, Instant, InstantState, Timeline, instant_time_of
from hudi_connect.reader import TableReader
from hudi_connect.reverse import BatchResult, Checkpoint, FileSink, KafkaSink, PostgresSink, ReverseStream
from hudi_connect.table.hudi_table import HudiTable
from hudi_connect.table.recovery import RecoveryReport
from hudi_connect.table.write_outcome import WriteOutcome, WriteState
from hudi_connect.table_spec import (
    Expression,
    FileIndex,
    PartitionIncrementalSnapshot,
    PartitionSnapshot,
    RecordIndex,
    TableDefinition,
    col,
    fn,
    lit,
)

__version__ = "0.1.0"

# the library logs what it plans, prunes, writes, sends and refuses under ``hudi_connect`` (INFO); silent until
# the application configures logging (``logging.basicConfig(level="INFO")``)
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "Action",
    "BatchResult",
    "CdcLoggingMode",
    "ChangeFormat",
    "ChangeQuery",
    "Checkpoint",
    "CheckpointConflictError",
    "CommitMetadataError",
    "ConcurrentTableChangeError",
    "Expression",
    "FileIndex",
    "FileSink",
    "ForwardingFailedError",
    "HFileDecodeError",
    "HarnessMissingError",
    "HistoryEntry",
    "HistoryUnavailableError",
    "HudiConnectError",
    "HudiTable",
    "Instant",
    "InstantLike",
    "InstantState",
    "InvalidInstantError",
    "InvalidOptionError",
    "KafkaSink",
    "LogDecodeError",
    "MetadataPartition",
    "MetadataTableError",
    "NotAHudiTableError",
    "PartitionIncrementalSnapshot",
    "PartitionSnapshot",
    "PostgresSink",
    "ProvisioningError",
    "RecordIndex",
    "RecoveryReport",
    "ReverseStream",
    "SchemaMismatchError",
    "ServerMisconfiguredError",
    "ServerUnavailableError",
    "ServiceStartError",
    "SinkError",
    "StorageAccessError",
    "TableDefinition",
    "TableExistsError",
    "TableNotFoundError",
    "TableProperties",
    "TableReader",
    "TableType",
    "Timeline",
    "UnsupportedOperationError",
    "UnsupportedStorageError",
    "UnsupportedTableFeatureError",
    "UnsupportedTableVersionError",
    "WriteConflictError",
    "WriteFailedError",
    "WriteOutcome",
    "WriteState",
    "WriterActiveError",
    "__version__",
    "bound_server_wait",
    "col",
    "connect",
    "fn",
    "forget_table",
    "instant_time_of",
    "is_server_lost",
    "library_errors",
    "lit",
    "require_hudi_server",
]
