"""The one exception hierarchy of hudi-connect.

Every error the library raises on purpose derives from :class:`HudiConnectError`,
so ``except HudiConnectError`` catches them all. ``TypeError`` and
``ValueError`` stay for plain bad arguments.
"""

from __future__ import annotations

import re
from collections.abc import Sequence


class HudiConnectError(Exception):
    """Root of every error hudi-connect raises on purpose."""


class ServerMisconfiguredError(HudiConnectError):
    """The Spark Connect server lacks a setting a Hudi operation needs."""


class ProvisioningError(HudiConnectError):
    """A component of the stack could not be installed (tool missing, download failed)."""


class HarnessMissingError(HudiConnectError):
    """An embedded local server or ``hudi-connect stack`` was asked for, and they come with the harness, the
    distribution ``hudi-connect-stack``, which is not installed (the library never provisions or starts a
    service itself)."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"{what} needs hudi-connect's harness, the distribution hudi-connect-stack, which is not installed: "
            "`pip install -e ./hudi_connect_stack` in a checkout of hudi-connect (ci/setup.sh installs it), or "
            "give a server with --remote")


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


class TableExistsError(HudiConnectError):
    """A table already exists where a new one was to be created."""


class TableNotFoundError(HudiConnectError):
    """Nothing exists at the table path."""


class NotAHudiTableError(HudiConnectError):
    """The path exists but holds no Hudi table (no ``.hoodie/hoodie.properties``)."""


class UnsupportedTableVersionError(HudiConnectError):
    """The table's version (``hoodie.table.version``) is one hudi-connect cannot read."""


class UnsupportedTableFeatureError(HudiConnectError):
    """The table uses a feature the jar-free readers do not fully implement (a base file format, a key
    generator, a merge mode, ...). Raised instead of reading, so no answer is ever guessed.

    ``feature`` names it, ``property`` is where the table declares it (a ``hoodie.properties`` key, a
    commit metadata key, a log block header or a file name) and ``value`` is what the table says.
    """

    def __init__(self, feature: str, property: str, value: str, *, where: str = "the table", detail: str = "") -> None:
        self.feature = feature
        self.property = property
        self.value = value
        message = (f"{where} uses {feature} ({property}={value}), which hudi-connect's readers do not implement; "
                   "read it through Hudi on a Hudi Connect server (HudiTable) instead")
        if detail:
            message += f". {detail}"
        super().__init__(message)


class InvalidInstantError(HudiConnectError):
    """An instant or instant range that is malformed or not on the table's timeline."""


class HistoryUnavailableError(InvalidInstantError):
    """A read reaching history the table no longer holds whole: instants Hudi archived (their commit metadata
    moved to the archived timeline) or whose files the cleaner deleted. Never answered from what is left.

    ``earliest_answerable`` is the earliest begin (of a range) or instant (of a time travel) that can be read,
    if any.
    """

    def __init__(self, message: str, *, earliest_answerable: str | None) -> None:
        self.earliest_answerable = earliest_answerable
        if earliest_answerable is not None:
            message += f"; the earliest that can be answered is {earliest_answerable}"
        super().__init__(message)


class ConcurrentTableChangeError(HudiConnectError):
    """A file a read planned to read is gone when a Spark worker reaches it: a writer's cleaner (or a rollback,
    a restore) removed it after the read was planned on the timeline. Raised instead of answering without it.

    ``path`` is the file and ``planned_at`` the instant the read was planned at; a new read plans on the table's
    current timeline. Hudi's cleaner keeps the files of its last ``hoodie.cleaner.commits.retained`` commits
    (or file versions), so a read that takes longer than that many commits, or a DataFrame run long after it was
    planned, can meet one.
    """

    def __init__(self, path: str, planned_at: str | None, *, listing_removals: Sequence[str] = (),
                 removed_since: Sequence[str] = (), rewritten: bool = False) -> None:
        self.path = path
        self.planned_at = planned_at
        if rewritten:  # hoodie.properties, which Hudi rewrites in place (its backup beside it meanwhile)
            super().__init__(
                f"{path} and its backup were never whole (their checksum missing or wrong) in several reads: a "
                "writer was rewriting them all along, or the file is damaged. Nothing was answered; read again")
            return
        if removed_since:  # executors list a large read's files only when it runs: a removal since may hide some
            super().__init__(
                f"{path}: {', '.join(removed_since)} came after the read was planned at instant {planned_at}, and "
                "may have deleted files of the file slices the read chose when it was planned (its executors list "
                "the files only as it runs). Nothing was answered; read again to plan on the current timeline")
            return
        if listing_removals:  # the listing itself could not be made beside the cleaner, however often tried
            super().__init__(
                f"{path}: each listing of its files ran beside a new clean, rollback or restore "
                f"({', '.join(listing_removals)}), which deletes files such a listing may then miss. Nothing "
                "was answered from it; read again")
            return
        at = f"planned at instant {planned_at}" if planned_at else "planned on the table's timeline"
        super().__init__(
            f"{path} is gone: the read was {at}, and a writer (its cleaner, a rollback or a restore) removed the "
            "file since. Nothing was answered without it; read again to plan on the table's current timeline")

    @classmethod
    def from_message(cls, message: str) -> ConcurrentTableChangeError | None:
        """The error again from its message (as a worker's traceback carries it), with its details."""
        found = re.match(r"(?P<path>.+?) is gone: the read was planned (?:at instant (?P<at>\d+)|on the table)",
                         message)
        return cls(found["path"], found["at"]) if found else None


class SchemaMismatchError(HudiConnectError):
    """Data whose columns or types do not fit the table (missing key columns, incompatible types)."""


class InvalidOptionError(HudiConnectError):
    """A read option with a value Hudi does not take, or options that contradict each other."""


class UnsupportedOperationError(HudiConnectError):
    """An operation the table does not support (compaction of a COW table, CDC read without CDC)."""


class WriteFailedError(HudiConnectError):
    """A write did not commit; the table stays readable at its previous state."""


class WriteConflictError(WriteFailedError):
    """A write aborted by Hudi's optimistic concurrency control: a write that completed while it ran touched the
    same file groups. Nothing of it is visible, and running it again is safe (Hudi's
    ``hoodie.write.num.retries.on.conflict.failures`` does so by itself). ``conflicting_instants`` are the
    instant times of the writes it met (empty when the timeline no longer tells)."""

    def __init__(self, message: str, *, conflicting_instants: tuple[str, ...] = ()) -> None:
        self.conflicting_instants = conflicting_instants
        super().__init__(message)

    @property
    def conflicting_instant(self) -> str | None:
        """The latest of :attr:`conflicting_instants`, None if none is known."""
        return max(self.conflicting_instants) if self.conflicting_instants else None


class ServerUnavailableError(HudiConnectError):
    """The Spark Connect server could not be reached, or died during a call.

    ``doing`` says what was under way. For a write its outcome is unknown: it may have committed just before
    the server died. ``write_id`` then identifies it, and ``HudiTable.outcome_of(write_id)`` on a new session
    answers from the table's timeline whether it committed.
    """

    def __init__(self, message: str, *, doing: str, write_id: str | None = None) -> None:
        self.doing = doing
        self.write_id = write_id
        super().__init__(message)


class WriterActiveError(HudiConnectError):
    """Recovery refused: a writer of the table still shows signs of life (a fresh Hudi heartbeat)."""


class LogDecodeError(HudiConnectError):
    """A Hudi log file or log block that cannot be decoded: malformed, truncated or of an unsupported version."""


class MetadataTableError(HudiConnectError):
    """Content of the metadata table (``.hoodie/metadata``) that cannot be read: a record of an unknown type,
    records of one key that Hudi would refuse to merge, a payload that does not match its schema."""


class HFileDecodeError(MetadataTableError):
    """An HFile (a metadata table base file or HFile log block) that is malformed, truncated or uses a feature
    hudi-connect does not read (a compression codec, a data block encoding)."""


class StorageAccessError(HudiConnectError):
    """A file the readers need could not be reached on its storage: a missing or wrong credential, a denied
    permission, an unreachable endpoint. ``path`` is the file, ``reason`` the storage's own words.

    Spark's Python workers reach storage with their own environment and the storage's default credential
    chain, not with the Hadoop settings of the server's JVM, so the message says where they look.
    """

    def __init__(self, path: str, doing: str, reason: str, credential_sources: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(
            f"{doing} {path} failed in a Spark worker: {reason.rstrip('.')}. The server's Python workers take "
            f"credentials and settings from their own environment: {credential_sources}. Hadoop's settings "
            "(spark.hadoop.*) reach only the JVM: set them for the workers with spark.executorEnv.* (and the "
            "server's own environment for a local master), or give the hosts a role")


class UnsupportedStorageError(HudiConnectError):
    """A table path on a storage the jar-free readers have no client for (its URI scheme), refused before
    any job runs. ``scheme`` names it; ``supported`` lists the schemes there are clients for."""

    def __init__(self, scheme: str, path: str, supported: list[str], *, detail: str = "") -> None:
        self.scheme = scheme
        self.path = path
        self.supported = supported
        readable = f"(they read {', '.join(s + '://' for s in supported)} and local paths)"
        message = (f"{path}: storage scheme {scheme!r} is not one hudi-connect's workers can read {readable}"
                   if scheme else f"{path} names no storage scheme, and the workers read such a path on their "
                   "local disk")
        super().__init__(f"{message}; {detail}" if detail else message)


class SinkError(HudiConnectError):
    """A reverse-stream sink (Kafka, files, PostgreSQL) refused or failed a batch; the checkpoint did not move."""


class ForwardingFailedError(SinkError):
    """A write committed, but forwarding its commit to an inline reverse stream failed (``forwarding_to``); the
    stream's next run sends it. ``committed`` is the commit's requested time."""

    def __init__(self, message: str, *, committed: str) -> None:
        super().__init__(message)
        self.committed = committed


class CheckpointConflictError(HudiConnectError):
    """Another run of the same reverse stream advanced its checkpoint first; this run's checkpoint is not recorded."""


__all__ = [
    "CheckpointConflictError",
    "ConcurrentTableChangeError",
    "ForwardingFailedError",
    "HFileDecodeError",
    "HudiConnectError",
    "InvalidInstantError",
    "InvalidOptionError",
    "LogDecodeError",
    "MetadataTableError",
    "NotAHudiTableError",
    "ProvisioningError",
    "SchemaMismatchError",
    "ServerMisconfiguredError",
    "ServerUnavailableError",
    "ServiceStartError",
    "SinkError",
    "StorageAccessError",
    "TableExistsError",
    "TableNotFoundError",
    "UnsupportedOperationError",
    "UnsupportedStorageError",
    "UnsupportedTableFeatureError",
    "UnsupportedTableVersionError",
    "WriteConflictError",
    "WriteFailedError",
    "WriterActiveError",
]
