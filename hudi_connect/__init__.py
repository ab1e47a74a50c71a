"""hudi-connect: Apache Hudi for Python users who reach Spark only through Spark Connect."""

from hudi_connect.errors import (
    HudiConnectError,
    ProvisioningError,
    ServerMisconfiguredError,
    ServiceStartError,
)
from hudi_connect.server import connect, require_hudi_server

__version__ = "0.1.0"

__all__ = [
    "HudiConnectError",
    "ProvisioningError",
    "ServerMisconfiguredError",
    "ServiceStartError",
    "__version__",
    "connect",
    "require_hudi_server",
]
