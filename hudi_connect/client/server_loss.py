"""A Spark Connect server that is gone: bounded waits, and one error that says so.

pyspark's Connect client retries an unreachable server for about ten minutes
(15 retries, backoff up to 60 s), in every call and in the background threads
that release finished results. :func:`bound_server_wait` shrinks that to a
budget of seconds on one session; :func:`is_server_lost` tells a lost server
from a query the server refused; :func:`over_connect` turns the first into
:class:`~hudi_connect.core.errors.ServerUnavailableError` at hudi-connect's entry
points.

A lost server also loses the session: a Spark 3.5 server that comes back gives
the same session id a new, empty session, and a write the client re-sends may
run twice. So once a loss is seen, the session fails fast from then on, and the
error says to connect again.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar, cast

from pyspark.sql import SparkSession

from hudi_connect.client.session_close import guard_close
from hudi_connect.client.storage_settings import with_server_settings
from hudi_connect.client.worker_errors import worker_refusal
from hudi_connect.core.errors import HudiConnectError, ServerUnavailableError, StorageAccessError

log = logging.getLogger(__name__)

DEFAULT_SERVER_TIMEOUT = 30.0  # seconds of retrying an unreachable server before giving up
_TIMEOUT_ATTRIBUTE = "_hudi_connect_server_timeout"
_LOST_ATTRIBUTE = "_hudi_connect_server_lost"


@dataclass(frozen=True)
class RetryPolicy:
    """pyspark's retry settings for an unreachable server (its ``Retrying`` arguments, times in ms)."""

    max_retries: int
    initial_backoff: int = 100
    backoff_multiplier: float = 2.0
    max_backoff: int = 4000
    jitter: int = 250
    min_jitter_threshold: int = 2000

    @classmethod
    def within(cls, seconds: float) -> RetryPolicy:
        """The most retries whose sleeps, jitter included, add up to at most ``seconds``."""
        if seconds < 0:
            raise ValueError(f"server_timeout must be at least 0 seconds, not {seconds}")
        policy = cls(max_retries=0)
        while cls(max_retries=policy.max_retries + 1).worst_case_seconds() <= seconds:
            policy = cls(max_retries=policy.max_retries + 1)
        return policy

    def sleeps_ms(self) -> list[float]:
        """What pyspark sleeps before each retry, at most (backoff plus jitter)."""
        sleeps, backoff = [], float(self.initial_backoff)
        for _ in range(self.max_retries):
            sleeps.append(backoff + (self.jitter if backoff >= self.min_jitter_threshold else 0))
            backoff = min(self.max_backoff, backoff * self.backoff_multiplier)
        return sleeps

    def worst_case_seconds(self) -> float:
        """How long pyspark sleeps over all retries, at most, in seconds."""
        return sum(self.sleeps_ms()) / 1000

    def as_kwargs(self) -> dict[str, Any]:
        """The policy as keyword arguments of pyspark's retry policy."""
        return dataclasses.asdict(self)  # the fields are named as pyspark's arguments


def _apply_policy(spark: SparkSession, policy: RetryPolicy) -> None:
    client = spark.client
    if hasattr(client, "set_retry_policies"):  # pyspark 4.x: a list of policy objects
        from pyspark.sql.connect.client.retries import DefaultPolicy  # type: ignore[import-not-found,unused-ignore]

        kwargs: dict[str, object] = dict(policy.as_kwargs())
        if "recognize_server_retry_delay" in inspect.signature(DefaultPolicy).parameters:
            # 4.1 would otherwise wait as long as a server's RetryInfo asks, up to ten minutes per retry
            kwargs["recognize_server_retry_delay"] = False
        client.set_retry_policies([DefaultPolicy(**kwargs)])
    else:  # pyspark 3.5: one dict, shared by reply iterators and release threads, so update it in place
        client._retry_policy.update(policy.as_kwargs())


def bound_server_wait(spark: SparkSession, seconds: float = DEFAULT_SERVER_TIMEOUT) -> SparkSession:
    """Make every call on ``spark`` give up on an unreachable server after about ``seconds`` of retrying.

    Each retry against a dead local server fails in milliseconds; against a host that does not answer at
    all, gRPC's connect timeout can add up to 20 s per attempt. ``seconds=0`` never retries, so a write is
    never re-sent. Call it right after creating the session: calls already retrying keep their budget.
    """
    guard_close(spark)  # every session hudi-connect bounds also closes without hanging the process
    _apply_policy(spark, RetryPolicy.within(seconds))
    setattr(spark.client, _TIMEOUT_ATTRIBUTE, float(seconds))
    return spark


def ensure_bounded(spark: SparkSession) -> SparkSession:
    """Give a session made elsewhere (``SparkSession.builder.remote(...)``) the default bound, once."""
    if not hasattr(spark.client, _TIMEOUT_ATTRIBUTE):
        bound_server_wait(spark, DEFAULT_SERVER_TIMEOUT)
    return spark


def server_timeout(spark: SparkSession) -> float | None:
    """The bound set on ``spark`` by hudi-connect, if any."""
    return getattr(spark.client, _TIMEOUT_ATTRIBUTE, None)


def is_server_lost(error: BaseException) -> bool:
    """Whether ``error`` (or what it was raised from) says the server is unreachable or died mid-call,
    as opposed to an error the server reported for the query itself."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if _is_lost_signal(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def _is_lost_signal(error: BaseException) -> bool:
    if isinstance(error, ServerUnavailableError):
        return True
    code = getattr(error, "code", None)
    if callable(code) and type(error).__module__.startswith("grpc"):
        try:
            return getattr(code(), "name", None) == "UNAVAILABLE"
        except Exception:  # a grpc error object whose call state is gone
            pass
    text = str(error)
    if type(error).__name__ == "SparkConnectGrpcException" and text.startswith("<_") \
            and "StatusCode.UNAVAILABLE" in text:  # the transport failure pyspark re-raised without its cause
        return True
    if type(error).__name__ == "RetriesExceeded":  # pyspark 4.0's end of retries
        return True
    if isinstance(error, RuntimeError) and text.startswith("OPERATION_NOT_FOUND"):  # a restarted server
        return True
    return isinstance(error, ValueError) and "closed channel" in text


def describe_server(spark: SparkSession) -> str:
    """The server of ``spark`` for error messages, with its endpoint where the client knows it."""
    builder = getattr(spark.client, "_builder", None)
    endpoint = getattr(builder, "endpoint", None)
    return f"the Spark Connect server at {endpoint}" if endpoint else "the Spark Connect server"


def mark_lost(spark: SparkSession) -> None:
    """Fail fast from now on: no call on this session retries a server already found gone."""
    if not getattr(spark.client, _LOST_ATTRIBUTE, False):
        setattr(spark.client, _LOST_ATTRIBUTE, True)
        _apply_policy(spark, RetryPolicy(max_retries=0))


def was_lost(spark: SparkSession) -> bool:
    """Whether a call on ``spark`` already found its server gone (see :func:`mark_lost`)."""
    return bool(getattr(spark.client, _LOST_ATTRIBUTE, False))


def lost_server_error(spark: SparkSession, doing: str, *, outcome: str = "", write_id: str | None = None,
                      earlier: bool = False) -> ServerUnavailableError:
    """The :class:`ServerUnavailableError` for a loss seen while ``doing``; the session is marked lost."""
    mark_lost(spark)
    timeout = server_timeout(spark)
    waited = f" (retried for up to {timeout:g}s)" if timeout is not None else ""
    lost = (f"this session lost {describe_server(spark)} earlier, so it is not used for {doing}" if earlier
            else f"{describe_server(spark)} is unreachable or died while {doing}{waited}")
    message = (f"{lost}. "
               + (f"{outcome} " if outcome else "")
               + "This session cannot be used again: connect anew (hudi_connect.connect) once the server is back.")
    return ServerUnavailableError(message, doing=doing, write_id=write_id)


P = ParamSpec("P")
R = TypeVar("R")


def _is_connect_session(value: object) -> bool:
    # pyspark's Connect SparkSession is its own class, not a subclass of pyspark.sql.SparkSession
    return type(value).__name__ == "SparkSession" and hasattr(value, "client")


def _session_among(args: tuple[object, ...]) -> SparkSession | None:
    for arg in args:
        session = arg if _is_connect_session(arg) else getattr(arg, "_spark", None)
        if _is_connect_session(session):
            return session  # type: ignore[return-value]
    return None


def over_connect(doing: str, *, outcome: str = "") -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a method that talks to a server (found as an argument or the ``_spark`` of one): a lost
    server raises ServerUnavailableError saying what was under way (the outermost such call) and
    ``outcome``, what that means for the caller. A generator method is guarded while it is iterated: its body
    runs, and meets the server, only as the caller consumes it."""

    def decorate(method: Callable[P, R]) -> Callable[P, R]:
        if inspect.isgeneratorfunction(method):
            @functools.wraps(method)
            def iterate(*args: P.args, **kwargs: P.kwargs) -> Any:
                _refuse_known_lost(args, doing)
                try:
                    yield from cast(Iterator[Any], method(*args, **kwargs))
                except Exception as error:
                    _translate_logged(error, args, doing, outcome)
                    raise

            return cast(Callable[P, R], iterate)

        @functools.wraps(method)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            _refuse_known_lost(args, doing)
            try:
                return method(*args, **kwargs)
            except Exception as error:
                _translate_logged(error, args, doing, outcome)
                raise

        return call

    return decorate


def _refuse_known_lost(args: tuple[Any, ...], doing: str) -> None:
    known = _session_among(args)
    if known is not None and was_lost(known):  # a Spark 3.5 server back up would answer with a new,
        raise lost_server_error(known, doing, earlier=True)  # empty session: never use it again


def _translate_logged(error: Exception, args: tuple[Any, ...], doing: str, outcome: str) -> None:
    """:func:`_translate`, logging the library's error once (the innermost guarded call that met it)."""
    try:
        _translate(error, args, doing, outcome)
    except HudiConnectError as translated:
        _log_once(doing, translated)
        raise
    if isinstance(error, HudiConnectError):
        _log_once(doing, error)


def _log_once(doing: str, error: HudiConnectError) -> None:
    if not getattr(error, "_hudi_connect_logged", False):
        log.info("%s: %s: %s", doing, type(error).__name__, error)
        error._hudi_connect_logged = True  # type: ignore[attr-defined]


def _translate(error: Exception, args: tuple[Any, ...], doing: str, outcome: str) -> None:
    """Raise what ``error`` means for the caller of a guarded call: ServerUnavailableError for a lost server, a
    worker's refusal by its own type; return (the caller re-raises ``error``) for anything else."""
    session = _session_among(args) if is_server_lost(error) else None
    if session is None:
        refusal = worker_refusal(error) if not isinstance(error, HudiConnectError) else None
        known = _session_among(args)
        if isinstance(refusal, StorageAccessError) and known is not None:
            refusal = with_server_settings(refusal, known)
        if refusal is not None:
            raise refusal from None  # the Spark error (a worker traceback) stays its __context__
        return
    inner = error if isinstance(error, ServerUnavailableError) else None
    if inner is not None and not outcome:
        return  # the inner call said it all
    what = f"{doing} (at: {inner.doing})" if inner is not None else doing
    raise lost_server_error(session, what, outcome=outcome,
                            write_id=inner.write_id if inner is not None else None) from error
