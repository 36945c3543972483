"""Deadlines on network calls: a namespace that accepts connections and answers nothing costs
a caller one deadline, never a hang.

**Why this exists.** A regional outage often looks like silence, not refusal: connections open
and nothing answers. The SDKs' own timeouts do not cover that everywhere. The sync clients of
azure-servicebus (7.15) and azure-eventhub (5.15), both on their pure-Python AMQP stack
(``_pyamqp``), negotiate SASL on a socket switched to blocking mode without a timeout
(``SASLTransport.negotiate`` runs under ``_transport.block()``), before ``timeout=``,
``max_wait_time`` or the client's ``try_timeout`` apply; and a settlement waits for the broker's
outcome up to the client's internal 60 s, then retries over the management link. Against an
emulator frozen with SIGSTOP, measured on this machine: ``complete_message``, ``peek_messages``
(with ``timeout=3``), ``send_messages`` on a new sender (``timeout=3``) and the first
``receive_messages`` of a new receiver (``max_wait_time=1``) were all still running after 40 s,
with and without ``try_timeout=3``; a send on a sender whose link was already open raised the
SDK's ``OperationTimeoutError`` after its 3 s, and a receive on an open link returned after its
wait. The asyncio clients can be cancelled (``asyncio.timeout``); a sync call cannot.

So every call keeps the SDK's own timeout where it has one (``timeout=`` of a send or a peek,
``max_wait_time`` of a receive: an open link then ends the call cleanly), and this module bounds
what is left, in one place:

- :class:`CallLane`: one daemon thread that makes one client's blocking SDK calls, in order;
  :meth:`CallLane.run` waits for each at most its deadline and raises
  :class:`~replication.exceptions.CallTimeoutError` (a ``TimeoutError``: "unreachable") when it
  passes. The call itself goes on in the lane's thread until the SDK returns (a sync call cannot
  be interrupted); its owner retires the lane (:meth:`CallLane.retire`: the client is closed
  once that call returns) and makes a new client for its next call. A call that has not started
  when its caller gave up never runs.
- **One overdue call per endpoint.** While a call to an endpoint (``host:port``) is overdue,
  every other lane's call to that endpoint in this process first waits for it, within its own
  deadline, and fails as that one did if it does not return: a client retrying a silent
  namespace never opens connection after connection that would each hang, and at most one
  thread per silent endpoint is left waiting on it.
- :func:`progress`: code running on a lane says it got an answer (a page of a long peek), so
  the deadline bounds the time *without an answer*, not the length of a long read.
- :func:`bounded`: one call on a lane of its own (a one-off read: partition ids).
- :func:`within`: the asyncio side, ``asyncio.timeout`` around an awaitable, the same error.
- :class:`Hearing`: for a receive the SDK runs on its own thread and that calls back at least
  once per wait (Event Hubs' ``max_wait_time``): how long it has heard nothing, time inside
  the callbacks left out. Past :data:`SILENCE_DEADLINE` the receive counts as hung.
- :func:`blob_timeouts`: Blob Storage has timeouts of its own that do bound a silent endpoint
  (``connection_timeout``, ``read_timeout``, its retry policy): the options that keep one call
  within a deadline.

Defaults: :data:`DEFAULT_CALL_TIMEOUT` (10 s) per call, configurable where each client or
command is made (``call_timeout=``, ``--call-timeout``); see ``docs/explanation/failover-model.md``.
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

from replication.exceptions import CallTimeoutError

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_CALL_TIMEOUT = timedelta(seconds=10)
"""The deadline of one network call unless its client or command says otherwise."""

SILENCE_DEADLINE = timedelta(seconds=30)
"""How long an Event Hubs receive may hear nothing from the SDK (no events, no empty wait, no
error) before it counts as hung: well above a healthy start on a loaded machine (a few seconds,
16 partitions included) and far above the one-second waits, low enough that a silent namespace
costs a busy core for at most this long per attempt (see
:mod:`replication.transport.eventhubs._receiving`)."""

STARVED_CHECK_SECONDS = 5.0
"""A :meth:`Hearing.overdue` check this late after the previous one means this process did not
run (a suspended laptop, a starved machine)."""

SDK_GRACE = 0.5
"""Seconds a call whose SDK has a timeout of its own gets beyond it, so that the SDK reports
first and its link stays usable (the lane's deadline is the backstop)."""

_running = threading.local()


class Hearing:
    """When the SDK last called back into a receive, and whether it is inside a callback now.

    Wrap every callback of the receive (:meth:`wrap`); :meth:`silent_for` is then the time the
    receive has heard nothing, which the runner's own work inside a callback never adds to, and
    :meth:`overdue`, checked regularly, says when that passed ``deadline`` seconds.
    """

    def __init__(self, deadline: float, *, starved_after: float = STARVED_CHECK_SECONDS) -> None:
        self.deadline = deadline
        self._starved_after = starved_after
        self._lock = threading.Lock()
        self._inside = 0
        self._last = self._checked = time.monotonic()

    def wrap(self, callback: Callable[..., Any]) -> Callable[..., None]:
        def heard(*args: Any, **kwargs: Any) -> None:
            with self._lock:
                self._inside += 1
            try:
                callback(*args, **kwargs)
            finally:
                with self._lock:
                    self._inside -= 1
                    self._last = time.monotonic()

        return heard

    def silent_for(self) -> float:
        """Seconds since the last callback returned (0 while one runs)."""
        with self._lock:
            return 0.0 if self._inside else time.monotonic() - self._last

    def pardon(self) -> None:
        """Start the silence over: this process itself did not run for a while (suspended,
        or starved of CPU), so the SDK had no chance to call back either."""
        with self._lock:
            self._last = time.monotonic()

    def overdue(self, what: str) -> CallTimeoutError | None:
        """The error to fail the receive ``what`` with once it has heard nothing for longer
        than the deadline, else None. A check more than ``starved_after`` seconds after the
        previous one means this process did not run meanwhile: the silence starts over
        (:meth:`pardon`) instead of counting time the SDK could not use either."""
        now = time.monotonic()
        if now - self._checked > self._starved_after:
            self.pardon()
        self._checked = now
        if self.silent_for() <= self.deadline:
            return None
        return CallTimeoutError(
            f"{what}: no answer from the event hub for {self.deadline:g} s (no event, no empty "
            "wait, no error): the namespace accepts connections and answers nothing"
        )


def progress() -> None:
    """Tell the lane whose thread calls this that its call got an answer: its deadline starts
    again (a no-op outside a lane)."""
    job: _Job | None = getattr(_running, "job", None)
    if job is not None:
        job.touch()


class _Job:
    """One call submitted to a lane: its future, and when its deadline passes."""

    def __init__(self, call: Callable[[], Any], timeout: float, what: str) -> None:
        self.call = call
        self.timeout = timeout
        self.what = what
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.submitted = time.monotonic()
        self.deadline = self.submitted + timeout

    def touch(self) -> None:
        self.deadline = time.monotonic() + self.timeout

    def run(self) -> None:
        if not self.future.set_running_or_notify_cancel():
            return  # its caller gave up before it started: never run it late
        _running.job = self
        try:
            result = self.call()
        except BaseException as error:
            self.future.set_exception(error)
        else:
            self.future.set_result(result)
        finally:
            _running.job = None


_overdue: dict[str, _Job] = {}
_overdue_lock = threading.Lock()


def _await_overdue(endpoint: str, timeout: float, what: str) -> None:
    """Wait (at most ``timeout``) for an overdue call to ``endpoint``; raise if it goes on."""
    with _overdue_lock:
        job = _overdue.get(endpoint)
    if job is None:
        return
    concurrent.futures.wait([job.future], timeout=max(0.0, timeout))
    if not job.future.done():
        age = time.monotonic() - job.submitted
        raise CallTimeoutError(
            f"{what}: {endpoint} has not answered a call ({job.what}) made {age:.1f} s ago"
        )
    with _overdue_lock:
        if _overdue.get(endpoint) is job:
            del _overdue[endpoint]


def _mark_overdue(endpoint: str, job: _Job) -> None:
    with _overdue_lock:
        current = _overdue.get(endpoint)
        if current is None or current.future.done():
            _overdue[endpoint] = job


class CallLane:
    """A thread that makes one client's blocking calls, each waited for at most its deadline
    (see the module docstring). ``endpoint`` (``host:port``) groups lanes that talk to the same
    service; ``name`` names the thread."""

    def __init__(self, endpoint: str, *, name: str) -> None:
        self.endpoint = endpoint
        self.name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._retired = False
        self.overdue: _Job | None = None

    @property
    def stuck(self) -> bool:
        """True while a call that passed its deadline is still running."""
        return self.overdue is not None and not self.overdue.future.done()

    def run(self, call: Callable[[], T], *, timeout: float, what: str) -> T:
        """``call()`` on the lane's thread; its result, or what it raised.

        Raises:
            CallTimeoutError: no result within ``timeout`` seconds (after :func:`progress`,
                ``timeout`` more), or an earlier call to the same endpoint is still overdue.
        """
        started = time.monotonic()
        _await_overdue(self.endpoint, timeout, what)
        job = _Job(call, timeout - (time.monotonic() - started), what)
        with self._lock:
            if self._retired:
                raise RuntimeError(f"lane {self.name} is retired")
            self._start()
            self._jobs.put(job)
        while True:
            left = job.deadline - time.monotonic()
            try:
                return job.future.result(timeout=max(0.0, left))  # type: ignore[no-any-return]
            except concurrent.futures.TimeoutError:
                if time.monotonic() < job.deadline:
                    continue  # progress() moved the deadline
            if job.future.cancel():  # had not started: it never will
                raise CallTimeoutError(
                    f"{what}: not started within {timeout:g} s (an earlier call still runs)"
                ) from None
            self.overdue = job
            _mark_overdue(self.endpoint, job)
            raise CallTimeoutError(f"{what}: no answer from {self.endpoint} within {timeout:g} s")

    def retire(self, cleanup: Callable[[], object] | None = None, *, wait: float = 0.0) -> None:
        """Run ``cleanup`` (closing the client) after whatever the lane is running, then end
        the thread; wait at most ``wait`` seconds for that (a lane with an overdue call is never
        waited for: its cleanup runs when the call returns)."""
        with self._lock:
            if self._retired:
                return
            self._retired = True
            thread = self._thread
            if cleanup is not None:
                if thread is None:
                    _quietly(cleanup, self.name)
                else:
                    self._jobs.put(_Job(lambda: _quietly(cleanup, self.name), 0.0, "close"))
            if thread is not None:
                self._jobs.put(None)
        if thread is not None and wait > 0 and not self.stuck:
            thread.join(timeout=wait)

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
            self._thread.start()

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            job.run()


def _quietly(cleanup: Callable[[], object], name: str) -> None:
    try:
        cleanup()
    except Exception as error:  # a connection that went silent may not close cleanly
        logger.debug("%s: closing: %s", name, error)


def bounded(call: Callable[[], T], *, endpoint: str, timeout: float, what: str) -> T:
    """``call()`` on a lane of its own (a one-off call), at most ``timeout`` seconds.

    Raises:
        CallTimeoutError: see :meth:`CallLane.run`.
    """
    lane = CallLane(endpoint, name=f"call-{what}")
    try:
        return lane.run(call, timeout=timeout, what=what)
    finally:
        lane.retire()


async def within(awaitable: Awaitable[T], *, timeout: float, what: str) -> T:
    """Await ``awaitable`` at most ``timeout`` seconds (then cancelled: an asyncio SDK call can
    be).

    Raises:
        CallTimeoutError: it did not finish in time.
    """
    import asyncio  # here: the sync clients (the local host's start) load this module too

    try:
        async with asyncio.timeout(timeout) as scope:
            return await awaitable
    except TimeoutError:
        if scope.expired():
            raise CallTimeoutError(f"{what}: no answer within {timeout:g} s") from None
        raise


def blob_timeouts(timeout: float) -> dict[str, Any]:
    """Storage SDK client options that bound each call to about ``timeout`` seconds with the
    SDK's own parameters: one retry at once (its default waits 15 s and more between its three),
    and a connect and a read timeout of a quarter of ``timeout`` per attempt (its defaults are
    20 s and 60 s)."""
    from azure.storage.blob import LinearRetry  # imported where blob storage is used

    attempt = seconds(timeout) / 4
    return {
        "retry_policy": LinearRetry(backoff=0, random_jitter_range=0, retry_total=1),
        "connection_timeout": attempt,
        "read_timeout": attempt,
    }


def seconds(value: timedelta | float) -> float:
    """A deadline in seconds (a ``timedelta`` or a number of seconds), which must be positive."""
    number = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if number <= 0:
        raise ValueError(f"a deadline must be positive, got {value}")
    return number


__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "SDK_GRACE",
    "SILENCE_DEADLINE",
    "STARVED_CHECK_SECONDS",
    "CallLane",
    "CallTimeoutError",
    "Hearing",
    "blob_timeouts",
    "bounded",
    "progress",
    "seconds",
    "within",
]
