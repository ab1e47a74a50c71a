"""Refusals raised inside Spark's Python workers, arriving on the client as the library's own errors.

A worker that meets something the readers do not implement raises one of :mod:`hudi_connect.errors`; Spark
hands the client a ``PythonException`` whose text ends with the worker's traceback, its last line
``hudi_connect.errors.<Class>: <message>``. Calls that collect on the client (:func:`over_connect`) raise
that class again with the message, so a user catches the same class whether a refusal was found while
planning or while reading. (A DataFrame the user collects raises pyspark's error: it runs outside the
library.)
"""

from __future__ import annotations

import inspect
import re

from hudi_connect import errors
from hudi_connect.errors import HudiConnectError

_RAISED = re.compile(r"^hudi_connect\.errors\.(?P<name>[A-Za-z]+): (?P<message>.+)$", re.MULTILINE)


def worker_refusal(error: BaseException) -> HudiConnectError | None:
    """The library error a worker raised, as found in the text of the Spark error that carried it."""
    found = list(_RAISED.finditer(str(error)))
    if not found:
        return None
    kind = getattr(errors, found[-1]["name"], None)
    if not (isinstance(kind, type) and issubclass(kind, HudiConnectError)):
        return None
    refusal = kind.__new__(kind)  # the message is whole already: the class's own constructor composes one
    HudiConnectError.__init__(refusal, f"{found[-1]['message']} (raised in a Spark worker)")
    for name in inspect.signature(kind.__init__).parameters:  # the details its constructor keeps: unknown here
        if name not in ("self", "message", "where", "detail"):
            setattr(refusal, name, None)
    return refusal
