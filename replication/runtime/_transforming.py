"""Calling a task's user transform over a batch, then its pattern over what the transform returned.

:class:`TransformStage` is the one place where the runtime runs user code
(:mod:`replication.transforms`). For each received message it calls the function, passes the
result through the guard (:func:`~replication.transforms.checked_result`: replication
properties and broker facts as received, MessageIds of a split), then lets the pattern plan the
replicas as it would plan received messages, and maps every decision back to the received
message: a forwarded replica is remembered per source position and ``part``, a dead-lettered
or skipped one parks or settles the message as received.

Containment, per message:

- an exception: the message is parked as ``TransformFailed`` with the exception's type and
  message; the batch goes on;
- a call that does not return within ``transform.timeout``: parked as ``TransformFailed``
  ("did not return within ..."). A ``def`` function runs in a worker thread of the batch, which
  the stage abandons when a call hangs (Python cannot stop a thread: it finishes whenever the
  call returns, and its result is ignored); the rest of the batch goes on in a new thread. An
  ``async def`` function runs on the stage's event loop, where a call that outlasts its time is
  cancelled; the calls of one batch run concurrently, at most :data:`ASYNC_CONCURRENCY` at a
  time, and their results keep the batch's order. One that blocks the loop itself (a blocking
  call inside ``async def``) fails every message it held up, and the stage starts a new loop;
- the batch's budget: all calls of a batch together may take :data:`TRANSFORM_SHARE` of the
  invocation's attempt budget (the rest is for sending and parking, within the source's lock).
  A call still running then, and the messages not yet transformed, are parked as
  ``TransformFailed``: nothing is lost, and they can be redriven once the function is fixed.

A message is never sent unless its transform returned in time and passed the guard.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import math
import threading
import time
from collections.abc import Callable, Sequence

from replication.envelope import Envelope
from replication.planning import DeadLetter, Decision, Forward, Skip
from replication.transforms import (
    TRANSFORM_FAILED,
    TRANSFORM_REJECTED,
    TRANSFORM_SKIPPED,
    Checked,
    RejectMessage,
    SkipMessage,
    Transform,
    TransformFailure,
    checked_result,
    failure_of,
)

TRANSFORM_SHARE = 0.5
"""Share of an invocation's attempt budget that the transform calls of one batch may use."""

ASYNC_CONCURRENCY = 16
"""Calls of an ``async def`` transform that run at the same time within one batch."""

_LOOP_GRACE = 1.0
"""Seconds past the last call's limit before an event loop that has not answered counts as
blocked."""


class TransformStage:
    """A task's transform, ready to run over batches (build once per runner)."""

    def __init__(
        self, transform: Transform, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.transform = transform
        self._clock = clock
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_lock = threading.Lock()

    def plan(
        self,
        batch: Sequence[Envelope],
        plan: Callable[[Sequence[Envelope]], list[Decision]],
        *,
        budget: float,
    ) -> list[Decision]:
        """Transform ``batch``, plan the replicas with ``plan`` (the pattern), and return the
        decisions about the received messages. ``budget``: the invocation's attempt budget in
        seconds (0: none; only ``transform.timeout`` bounds each call)."""
        deadline = self._clock() + budget * TRANSFORM_SHARE if budget else None
        results = self.apply(batch, deadline)
        if all(
            isinstance(result, tuple) and len(result) == 1 and result[0] is source
            for source, result in zip(batch, results, strict=True)
        ):
            return plan(batch)  # every message returned as received: nothing to map back
        decisions: list[Decision] = []
        replicas: list[Envelope] = []
        origins: dict[int, tuple[Envelope, int]] = {}
        for source, result in zip(batch, results, strict=True):
            if isinstance(result, tuple):
                split = len(result) > 1
                for number, replica in enumerate(result, start=1):
                    if id(replica) in origins:
                        replica = replica.replace()  # one object returned twice: tell them apart
                    origins[id(replica)] = (source, number if split else 0)
                    replicas.append(replica)
            else:
                decisions.append(_verdict(source, result, self.transform.name))
        parked: set[int] = set()
        for decision in plan(replicas) if replicas else ():
            source, part = origins[id(decision.source)]
            if isinstance(decision, Forward):
                decisions.append(Forward(source, decision.envelope, decision.target, part))
            elif isinstance(decision, DeadLetter):
                if id(source) not in parked:  # two parts refused: the message is parked once
                    parked.add(id(source))
                    decisions.append(DeadLetter(source, decision.reason, decision.description))
            else:
                decisions.append(Skip(source, decision.reason))
        return decisions

    def apply(self, batch: Sequence[Envelope], deadline: float | None) -> list[Checked]:
        """The checked result of the transform for every message of ``batch``, in order."""
        if not batch:
            return []
        if self.transform.is_async:
            return self._apply_async(batch, deadline)
        return self._apply_sync(batch, deadline)

    # -- def functions: one worker thread per batch, replaced when a call hangs -----------

    def _apply_sync(self, batch: Sequence[Envelope], deadline: float | None) -> list[Checked]:
        results: list[Checked | None] = [None] * len(batch)
        start = 0
        while start < len(batch):
            if deadline is not None and self._clock() >= deadline:
                for index in range(start, len(batch)):
                    results[index] = self._not_reached()
                break
            calls = _SyncCalls(self.transform, batch, start, results, self._clock)
            worker = threading.Thread(
                target=contextvars.copy_context().run,
                args=(calls.run,),
                name=f"transform-{self.transform.name}",
                daemon=True,
            )
            worker.start()
            hung = calls.wait(deadline)
            if hung is None:
                break
            index, over_budget = hung
            results[index] = (
                TransformFailure(
                    "did not return before the batch's time budget for transforms ran out"
                )
                if over_budget
                else self._timed_out()
            )
            start = index + 1
        return [_known(result) for result in results]

    # -- async def functions: the stage's event loop, calls cancelled when late --------------

    def _apply_async(self, batch: Sequence[Envelope], deadline: float | None) -> list[Checked]:
        results: list[Checked | None] = [None] * len(batch)
        loop = self._event_loop()
        future = asyncio.run_coroutine_threadsafe(self._calls(batch, deadline, results), loop)
        rounds = math.ceil(len(batch) / ASYNC_CONCURRENCY)
        wait = rounds * self.transform.timeout
        if deadline is not None:
            wait = min(wait, max(0.0, deadline - self._clock()))
        try:
            future.result(wait + _LOOP_GRACE)
        except concurrent.futures.TimeoutError:
            # The loop did not get to cancel late calls: something blocks it.
            future.cancel()
            with self._loop_lock:
                if self._loop is loop:
                    self._loop = None
            snapshot = list(results)
            return [
                result
                if result is not None
                else TransformFailure(
                    "did not complete: the transform blocked its event loop (a blocking call "
                    "inside async def?)"
                )
                for result in snapshot
            ]
        return [_known(result) for result in results]

    async def _calls(
        self,
        batch: Sequence[Envelope],
        deadline: float | None,
        results: list[Checked | None],
    ) -> None:
        pending = iter(range(len(batch)))

        async def calls() -> None:
            # One of ASYNC_CONCURRENCY lanes: takes the next message until none is left.
            for index in pending:
                results[index] = await self._call(batch[index], deadline)

        lanes = min(ASYNC_CONCURRENCY, len(batch))
        await asyncio.gather(*(calls() for _ in range(lanes)))

    async def _call(self, message: Envelope, deadline: float | None) -> Checked:
        limit = self.transform.timeout
        if deadline is not None:
            limit = min(limit, deadline - self._clock())
            if limit <= 0:
                return self._not_reached()
        try:
            async with asyncio.timeout(limit):
                value = self.transform.function(message)
                result = await value if inspect.isawaitable(value) else value
        except TimeoutError:
            if limit == self.transform.timeout:
                return self._timed_out()
            return TransformFailure(
                "did not return before the batch's time budget for transforms ran out"
            )
        except (Exception, asyncio.CancelledError) as error:
            return failure_of(error)
        return checked_result(message, result)

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._loop_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(
                    target=loop.run_forever,
                    name=f"transform-{self.transform.name}-loop",
                    daemon=True,
                ).start()
                self._loop = loop
            return self._loop

    # -- descriptions -------------------------------------------------------------------------

    def _timed_out(self) -> TransformFailure:
        return TransformFailure(
            f"did not return within {self.transform.timeout:g} s (the task's transform.timeout)"
        )

    @staticmethod
    def _not_reached() -> TransformFailure:
        return TransformFailure(
            "not transformed: the batch's time budget for transforms ran out before this "
            "message's turn (an earlier call was slow or hung)"
        )


class _SyncCalls:
    """The calls of one worker thread: messages ``start``.. of the batch, one after the other.

    The thread writes each checked result and moves on; the caller waits until the thread is
    done or the call in progress is late (:meth:`wait`), and then abandons the thread, whose
    later results are dropped."""

    def __init__(
        self,
        transform: Transform,
        batch: Sequence[Envelope],
        start: int,
        results: list[Checked | None],
        clock: Callable[[], float],
    ) -> None:
        self._transform = transform
        self._batch = batch
        self._results = results
        self._clock = clock
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._abandoned = False
        self._current = (start, clock())

    def run(self) -> None:
        function = self._transform.function
        index = self._current[0]
        try:
            for index in range(self._current[0], len(self._batch)):
                message = self._batch[index]
                checked: Checked
                try:
                    result = function(message)
                    if inspect.isawaitable(result):
                        close = getattr(result, "close", None)
                        if close is not None:
                            close()  # a coroutine never awaited: close it quietly
                        checked = TransformFailure(
                            "returned an awaitable; declare the function 'async def' so that "
                            "the runtime awaits it"
                        )
                    else:
                        checked = checked_result(message, result)
                except BaseException as error:  # user code: whatever it raises is its message's
                    checked = failure_of(error)
                with self._lock:
                    if self._abandoned:
                        return
                    self._results[index] = checked
                    self._current = (index + 1, self._clock())
        finally:
            self._done.set()

    def wait(self, deadline: float | None) -> tuple[int, bool] | None:
        """None when every call returned; else (index of the late call, whether the batch's
        budget rather than the call's own timeout ran out), and the thread is abandoned."""
        while True:
            with self._lock:
                if self._done.is_set() and not self._abandoned:
                    return None
                index, started = self._current
                limit = started + self._transform.timeout
                over_budget = deadline is not None and deadline < limit
                if over_budget:
                    assert deadline is not None
                    limit = deadline
                now = self._clock()
                if now >= limit and index < len(self._batch):
                    self._abandoned = True
                    return index, over_budget
            if index >= len(self._batch):
                self._done.wait()
                continue
            self._done.wait(limit - now)


def _known(result: Checked | None) -> Checked:
    assert result is not None, "every message of the batch has a result"
    return result


def _verdict(source: Envelope, result: Checked, name: str) -> Decision:
    if isinstance(result, SkipMessage):
        return Skip(source, f"{TRANSFORM_SKIPPED}: {result.reason}")
    if isinstance(result, RejectMessage):
        return DeadLetter(source, TRANSFORM_REJECTED, result.reason[:1024])
    assert isinstance(result, TransformFailure)
    return DeadLetter(source, TRANSFORM_FAILED, f"transform {name}: {result.description}")


__all__ = ["ASYNC_CONCURRENCY", "TRANSFORM_SHARE", "TransformStage"]
