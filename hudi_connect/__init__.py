"""hudi-connect: Apache Hudi for Python users who reach Spark only through Spark Connect."""

try:
    import pyspark  # noqa: F401
except ImportError as missing:  # the Spark line is an extra: a Connect client works only with its own line
    raise ImportError("hudi-connect needs the Spark Connect client of your servers' line: "
                      "pip install 'hudi-connect[spark35]' for Spark 3.5, 'hudi-connect[spark43]' for Spark 4.3 "
                      "(or spark40 to spark42; jar-free reads only)") from missing

from hudi_connect.client.server import connect, require_hudi_server
from hudi_connect.client.server_loss import bound_server_wait, is_server_lost
from hudi_connect.client.timeline_view import forget_table
from hudi_connect.client.worker_errors import library_errors
from hudi_connect.errors import (
    HistoryUnavailableError,
    HudiConnectError,
    InvalidInstantError,
    NotAHudiTableError,
    ProvisioningError,
    SchemaMismatchError,
    ServerMisconfiguredError,
    ServerUnavailableError,
    ServiceStartError,
    StorageAccessError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
    UnsupportedStorageError,
    UnsupportedTableFeatureError,
    UnsupportedTableVersionError,
    WriteFailedError,
    WriterActiveError,
)
from hudi_connect.format.history import HistoryEntry
from hudi_connect.format.table_config import CdcLoggingMode, MetadataPartition, TableProperties, TableType
from hudi_connect.format.timeline import Action, Instant, InstantState, Timeline
from hudi_connect.table.hudi_table import HudiTable
from hudi_connect.table.recovery import RecoveryReport
from hudi_connect.table.write_outcome import WriteOutcome, WriteState

__version__ = "0.1.0"

__all__ = [
    "Action",
    "CdcLoggingMode",
    "HistoryEntry",
    "HistoryUnavailableError",
    "HudiConnectError",
    "HudiTable",
    "Instant",
    "InstantState",
    "InvalidInstantError",
    "MetadataPartition",
    "NotAHudiTableError",
    "ProvisioningError",
    "RecoveryReport",
    "SchemaMismatchError",
    "ServerMisconfiguredError",
    "ServerUnavailableError",
    "ServiceStartError",
    "StorageAccessError",
    "TableExistsError",
    "TableNotFoundError",
    "TableProperties",
    "TableType",
    "Timeline",
    "UnsupportedOperationError",
    "UnsupportedStorageError",
    "UnsupportedTableFeatureError",
    "UnsupportedTableVersionError",
    "WriteFailedError",
    "WriteOutcome",
    "WriteState",
    "WriterActiveError",
    "__version__",
    "bound_server_wait",
    "connect",
    "forget_table",
    "is_server_lost",
    "library_errors",
    "require_hudi_server",
]
