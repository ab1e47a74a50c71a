"""The one exception hierarchy of hudi-connect.

Every error the library raises on purpose derives from :class:`HudiConnectError`,
so ``except HudiConnectError`` catches them all. ``TypeError`` and
``ValueError`` stay for plain bad arguments.
"""

from __future__ import annotations


class HudiConnectError(Exception):
    """Root of every error hudi-connect raises on purpose."""


class ServerMisconfiguredError(HudiConnectError):
    """The Spark Connect server lacks a setting a Hudi operation needs."""


class ProvisioningError(HudiConnectError):
    """A component of the stack could not be installed (tool missing, download failed)."""


class ServiceStartError(HudiConnectError):
    """A service of the stack did not become ready; the message carries its log tail."""

    def __init__(self, service: str, reason: str, log_tail: str = "") -> None:
        self.service = service
        self.reason = reason
        self.log_tail = log_tail
        message = f"{service} did not start: {reason}"
        if log_tail:
            message += f"\n--- last lines of the {service} log ---\n{log_tail}"
        super().__init__(message)


__all__ = [
    "HudiConnectError",
    "ProvisioningError",
    "ServerMisconfiguredError",
    "ServiceStartError",
]
