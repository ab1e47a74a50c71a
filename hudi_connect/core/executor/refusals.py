"""Refusals that leave a Spark worker whole.

A worker's exception reaches the client as the text of its Python traceback, which Spark 3.5's Connect server
cuts at 2,048 characters; the library's class and message stand on its last line (where
``client/worker_errors.py`` finds them). Each frame of a worker's traceback names the session's artifact
(a path of some 250 characters), and an error raised ``from`` another prints the other's traceback first,
so a refusal from a few calls deep arrived without its last line. Every ``mapInArrow`` body is therefore a
:func:`worker_body`: a refusal leaves it raised anew from the body's own frame, without its cause.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from hudi_connect.core.errors import ConcurrentTableChangeError, HudiConnectError
from hudi_connect.core.executor.import_caches import keep_unchanged_archives

P = ParamSpec("P")
T = TypeVar("T")


def worker_body(body: Callable[P, Iterator[T]]) -> Callable[P, Iterator[T]]:
    """``body`` (a generator of batches), whose refusals leave with a one-frame traceback; running it, a worker
    stops re-reading unchanged zip archives before each task (:mod:`~hudi_connect.core.executor.import_caches`)."""

    @functools.wraps(body)
    def run(*args: P.args, **kwargs: P.kwargs) -> Iterator[T]:
        keep_unchanged_archives()
        try:
            yield from body(*args, **kwargs)
        except HudiConnectError as refusal:
            raise refusal.with_traceback(None) from None

    return run


@contextmanager
def planned_file(*uris: str, planned_at: str | None) -> Iterator[None]:
    """Around reading files a read's plan named: one's absence is a change of the table since the plan (the
    cleaner, a rollback), refused by name, never read as an empty file."""
    try:
        yield
    except FileNotFoundError as gone:
        if len(uris) == 1:
            path = uris[0]
        elif gone.filename in uris:
            path = gone.filename
        else:  # read together (metadata table slices): the storage's error does not always say which
            path = f"one of {', '.join(uris)}"
        raise ConcurrentTableChangeError(path, planned_at) from None
