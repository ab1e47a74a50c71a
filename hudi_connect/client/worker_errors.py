"""Refusals raised inside Spark's Python workers, arriving on the client as the library's own errors.

A worker that meets something the readers do not implement raises one of :mod:`hudi_connect.core.errors`; Spark
hands the client a ``PythonException`` whose text ends with the worker's traceback, its last line
``hudi_connect.core.errors.<Class>: <message>``. Calls that collect on the client (:func:`over_connect`) raise
that class again with the message, so a user catches the same class whether a refusal was found while
planning or while reading. A DataFrame the user runs runs outside the library: :func:`library_errors` does
the same around any code of theirs. The Spark error stays reachable as the refusal's ``__context__``, but is
not printed: its text is the worker's traceback.

    with hudi_connect.library_errors():
        rows = TableReader(spark, path).snapshot().collect()   # UnsupportedTableFeatureError, not PythonException
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from contextlib import contextmanager

from hudi_connect.core import errors
from hudi_connect.core.errors import ConcurrentTableChangeError, HudiConnectError, ServerMisconfiguredError
from hudi_connect.core.format.fs_view import is_data_file_name

_RAISED = re.compile(r"^hudi_connect\.core\.errors\.(?P<name>[A-Za-z]+): (?P<message>.+)$", re.MULTILINE)
# Spark's own scan (base-only slices) of a file gone since the plan: at analysis ([PATH_NOT_FOUND] Path does not
# exist), in a task (java.io.FileNotFoundException: File ... does not exist) or on Spark 4 (FAILED_READ_FILE.
# FILE_NOT_EXIST); the path is a URI or an absolute path
_SPARK_MISSING = re.compile(r"PATH_NOT_FOUND|FileNotFoundException|FILE_NOT_EXIST|does not exist")
_PATH = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*:)?/[^\s'\"]+")


# pyspark's worker refusing a client of another Python (PYTHON_VERSION_MISMATCH): Spark Connect sends the client's
# version with every Python function, and the server's workers must run the same minor version
_PYTHON_MISMATCH = re.compile(r"Python in worker has different version:? (?P<worker>[\d.]+) than that in driver:? "
                              r"(?P<client>[\d.]+)")  # 3.5 writes "version 3.11", 4.x "version: 3.11"


def worker_refusal(error: BaseException) -> HudiConnectError | None:
    """The library error a worker raised, as found in the text of the Spark error that carried it; where
    Spark's own scan found a table's data file gone, :class:`ConcurrentTableChangeError` naming it; where the
    server's Python workers run another Python than the client, :class:`ServerMisconfiguredError` saying both."""
    mismatch = _PYTHON_MISMATCH.search(str(error))
    if mismatch is not None:
        return ServerMisconfiguredError(
            f"the server's Python workers run Python {mismatch['worker']} and this client Python "
            f"{mismatch['client']}: Spark Connect runs the client's Python functions in the workers, which needs "
            f"the same minor version on both. Use a Python {mismatch['worker']} client, or start the server with "
            f"PYSPARK_PYTHON naming a Python {mismatch['client']}")
    found = list(_RAISED.finditer(str(error)))
    if not found:
        return _data_file_gone(str(error))
    kind = getattr(errors, found[-1]["name"], None)
    if not (isinstance(kind, type) and issubclass(kind, HudiConnectError)):
        return None
    if kind is ConcurrentTableChangeError:
        again = ConcurrentTableChangeError.from_message(found[-1]["message"])
        if again is not None:
            HudiConnectError.__init__(again, f"{again} (raised in a Spark worker)")
            return again
    refusal = kind.__new__(kind)  # the message is whole already: the class's own constructor composes one
    HudiConnectError.__init__(refusal, f"{found[-1]['message']} (raised in a Spark worker)")
    for name, parameter in inspect.signature(kind.__init__).parameters.items():  # details it keeps: unknown here
        if parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD) \
                and name not in ("self", "message", "where", "detail"):
            setattr(refusal, name, None)
    return refusal


def _data_file_gone(text: str) -> ConcurrentTableChangeError | None:
    """A Hudi data file (a base or log file of a file group) Spark's scan reported missing, if any: the plan
    named it, and only a writer's cleaner, a rollback or a restore removes one."""
    if not _SPARK_MISSING.search(text):
        return None
    for path in _PATH.findall(text):
        path = path.rstrip(".,;:)")
        if is_data_file_name(path.rsplit("/", 1)[-1]):
            return ConcurrentTableChangeError(path, None)
    return None


@contextmanager
def library_errors() -> Iterator[None]:
    """Around code that runs DataFrames the library planned: a refusal raised in a Spark worker is raised as
    the library's own class (:func:`worker_refusal`); every other error passes unchanged."""
    try:
        yield
    except HudiConnectError:
        raise
    except Exception as error:
        refusal = worker_refusal(error)
        if refusal is None:
            raise
        raise refusal from None
