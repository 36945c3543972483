"""Deadlines on blocking calls (``replication.transport.deadlines``), with calls that block on
an event instead of a network: what a caller waits, what runs late, and what never runs.

A deadline a call is meant to miss is a few tenths of a second (:data:`SHORT`), or a second where
the call must have started first (:data:`STARTED`); a call that must answer gets :data:`ANSWER`,
as the fast tier runs on a loaded machine where a thread can wait long for a core; the progress
test, which needs both, leaves 0.6 s of slack. Nothing listens."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid

import pytest

from replication.exceptions import CallTimeoutError
from replication.transport.deadlines import (
    CallLane,
    Hearing,
    blob_timeouts,
    bounded,
    progress,
    within,
)

SHORT = 0.2
"""A deadline the call under test runs past."""
STARTED = 1.0
"""A deadline a hanging call must have started within, to be overdue rather than not started:
the lane's thread picks a call up at once, or, on a loaded machine, some tenths of a second
later (it once missed 0.2 s at a load average of 10)."""
ANSWER = 30.0
"""A deadline for a call that answers at once (only reached when the test fails)."""


def endpoint() -> str:
    return f"test-{uuid.uuid4().hex[:8]}:1"


def test_a_call_returns_its_result_or_raises_its_error() -> None:
    lane = CallLane(endpoint(), name="lane")
    assert lane.run(lambda: 42, timeout=ANSWER, what="answer") == 42

    def fail() -> None:
        raise KeyError("missing")

    with pytest.raises(KeyError):
        lane.run(fail, timeout=ANSWER, what="fail")
    lane.retire()


def test_a_call_past_its_deadline_raises_and_goes_on_in_the_lane() -> None:
    released, finished = threading.Event(), threading.Event()

    def hang() -> None:
        released.wait(ANSWER)
        finished.set()

    lane = CallLane(endpoint(), name="lane")
    started = time.monotonic()
    with pytest.raises(CallTimeoutError, match=r"no answer from .* within 1 s"):
        lane.run(hang, timeout=STARTED, what="hang")
    assert time.monotonic() - started < ANSWER / 2  # the caller did not wait for the call
    assert lane.stuck
    released.set()
    assert finished.wait(5)
    lane.retire()


def test_a_call_whose_caller_gave_up_before_it_started_never_runs() -> None:
    """A call queued behind a long one, whose caller stopped waiting, is not run afterwards
    (a send nobody waits for any more must not go out late)."""
    running, released = threading.Event(), threading.Event()
    ran: list[str] = []
    lane = CallLane(endpoint(), name="lane")

    def long() -> None:
        running.set()
        released.wait(ANSWER)

    long_call = threading.Thread(
        target=lambda: lane.run(long, timeout=ANSWER, what="long"), daemon=True
    )
    long_call.start()
    assert running.wait(ANSWER)
    with pytest.raises(CallTimeoutError, match="not started within"):
        lane.run(lambda: ran.append("late"), timeout=SHORT, what="queued")
    released.set()
    long_call.join(ANSWER)
    assert lane.run(lambda: "next", timeout=ANSWER, what="next") == "next"
    assert ran == []
    lane.retire()


def test_an_overdue_call_holds_back_other_lanes_to_the_same_endpoint() -> None:
    """At most one thread waits on a silent endpoint: a second client's call waits for the
    overdue one (within its own deadline) instead of opening another connection."""
    target, released = endpoint(), threading.Event()
    first = CallLane(target, name="first")
    with pytest.raises(CallTimeoutError, match="no answer"):
        first.run(lambda: released.wait(ANSWER), timeout=STARTED, what="hang")
    ran: list[str] = []
    second = CallLane(target, name="second")
    with pytest.raises(CallTimeoutError, match="has not answered a call"):
        second.run(lambda: ran.append("second"), timeout=SHORT, what="second")
    assert ran == []
    released.set()
    assert second.run(lambda: "answered", timeout=ANSWER, what="after") == "answered"
    first.retire()
    second.retire()


def test_progress_restarts_the_deadline() -> None:
    """Three pages 0.4 s apart under a 1-second deadline: 1.2 s in all, which only the
    restarts let through (a silence would have to last 0.6 s longer to miss it)."""
    timeout, silence = 1.0, 0.4

    def pages() -> int:
        for _ in range(3):
            time.sleep(silence)
            progress()
        return 3

    lane = CallLane(endpoint(), name="lane")
    started = time.monotonic()
    assert lane.run(pages, timeout=timeout, what="pages") == 3
    assert time.monotonic() - started > timeout
    lane.retire()


def test_retire_closes_after_the_overdue_call_returns() -> None:
    released, closed = threading.Event(), threading.Event()
    lane = CallLane(endpoint(), name="lane")
    with pytest.raises(CallTimeoutError, match="no answer"):
        lane.run(lambda: released.wait(ANSWER), timeout=STARTED, what="hang")
    lane.retire(closed.set, wait=5)  # not waited for: the lane is stuck
    assert not closed.is_set()
    released.set()
    assert closed.wait(5)


def test_bounded_runs_a_one_off_call() -> None:
    assert bounded(lambda: "ok", endpoint=endpoint(), timeout=ANSWER, what="once") == "ok"
    released = threading.Event()
    with pytest.raises(CallTimeoutError):
        bounded(lambda: released.wait(5), endpoint=endpoint(), timeout=SHORT, what="once")
    released.set()


def test_within_cancels_an_asyncio_call() -> None:
    async def scenario() -> tuple[str, bool]:
        cancelled = False

        async def hang() -> None:
            nonlocal cancelled
            try:
                await asyncio.sleep(5)
            except asyncio.CancelledError:
                cancelled = True
                raise

        with pytest.raises(CallTimeoutError):
            await within(hang(), timeout=SHORT, what="hang")

        async def own_timeout() -> None:
            raise TimeoutError("the SDK's own")

        with pytest.raises(TimeoutError, match="the SDK's own") as raised:
            await within(own_timeout(), timeout=1, what="own")
        assert not isinstance(raised.value, CallTimeoutError)
        return await within(asyncio.sleep(0, "done"), timeout=ANSWER, what="quick"), cancelled

    assert asyncio.run(scenario()) == ("done", True)


def test_blob_timeouts_keep_a_call_within_its_deadline() -> None:
    options = blob_timeouts(10)
    assert (options["connection_timeout"], options["read_timeout"]) == (2.5, 2.5)
    assert options["retry_policy"].total_retries == 1
    with pytest.raises(ValueError, match="positive"):
        blob_timeouts(0)


def test_hearing_counts_silence_between_callbacks_never_inside_one() -> None:
    began = time.monotonic()
    hearing = Hearing(ANSWER)
    inside = threading.Event()
    release = threading.Event()

    def slow_batch(events: list[int]) -> None:
        inside.set()
        release.wait(10)

    heard = hearing.wrap(slow_batch)
    time.sleep(0.3)
    assert hearing.silent_for() >= 0.3  # nothing heard since the receive began
    worker = threading.Thread(target=heard, args=([1, 2],))
    worker.start()
    assert inside.wait(10)
    time.sleep(0.3)
    assert hearing.silent_for() == 0.0  # the runner's work is not silence
    release.set()
    worker.join(10)
    # The clock started again when the callback returned, at least 0.6 s after the start.
    assert hearing.silent_for() <= time.monotonic() - began - 0.6
    time.sleep(0.3)
    assert hearing.silent_for() >= 0.3
    pardoned = time.monotonic()
    hearing.pardon()
    assert hearing.silent_for() <= time.monotonic() - pardoned


def test_hearing_restarts_its_clock_after_a_callback_that_raised() -> None:
    began = time.monotonic()
    hearing = Hearing(ANSWER)

    def failing(error: Exception) -> None:
        raise error

    time.sleep(0.3)
    with pytest.raises(ValueError, match="bad"):
        hearing.wrap(failing)(ValueError("bad"))
    assert hearing.silent_for() <= time.monotonic() - began - 0.3


def test_hearing_is_overdue_after_its_deadline_unless_its_checks_were_late() -> None:
    hearing = Hearing(SHORT, starved_after=ANSWER)
    assert hearing.overdue("partition 0") is None
    time.sleep(SHORT + 0.1)
    error = hearing.overdue("partition 0")
    assert isinstance(error, CallTimeoutError)
    assert str(error).startswith("partition 0: no answer from the event hub for 0.2 s")
    # A check long after the previous one: this process did not run, the silence starts over.
    starved = Hearing(SHORT, starved_after=2 * SHORT)
    time.sleep(3 * SHORT)
    assert starved.overdue("partition 1") is None
