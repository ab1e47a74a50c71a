"""hudi-connect: Apache Hudi for Python users who reach Spark only through Spark Connect."""

from hudi_connect.client.server import connect, require_hudi_server
from hudi_connect.errors import (
    HudiConnectError,
    InvalidInstantError,
    NotAHudiTableError,
    ProvisioningError,
    SchemaMismatchError,
    ServerMisconfiguredError,
    ServiceStartError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
    UnsupportedTableFeatureError,
    UnsupportedTableVersionError,
    WriteFailedError,
)
from hudi_connect.format.table_config import CdcLoggingMode, MetadataPartition, TableProperties, TableType
from hudi_connect.format.timeline import Action, Instant, InstantState, Timeline
from hudi_connect.table.hudi_table import HistoryEntry, HudiTable

__version__ = "0.1.0"

__all__ = [
    "Action",
    "CdcLoggingMode",
    "HistoryEntry",
    "HudiConnectError",
    "HudiTable",
    "Instant",
    "InstantState",
    "InvalidInstantError",
    "MetadataPartition",
    "NotAHudiTableError",
    "ProvisioningError",
    "SchemaMismatchError",
    "ServerMisconfiguredError",
    "ServiceStartError",
    "TableExistsError",
    "TableNotFoundError",
    "TableProperties",
    "TableType",
    "Timeline",
    "UnsupportedOperationError",
    "UnsupportedTableFeatureError",
    "UnsupportedTableVersionError",
    "WriteFailedError",
    "__version__",
    "connect",
    "require_hudi_server",
]
