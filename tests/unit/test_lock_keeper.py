"""The local host's lock renewal: one thread per receive loop renews each batch's locks while
the batch is in flight, and never after the batch is withdrawn.

:class:`LockKeeper` takes plain callables (what renews, when the locks expire), so these tests
need no broker; the Service Bus receivers they wrap are exercised by the fault test of a target
that hangs longer than a lock (``tests/faults/test_crashes.py``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from replication.runtime import RetryPolicy
from replication.transport.servicebus import LockKeeper, LockRenewer, overdue_after

LOOPS_LOGGER = "replication.transport.servicebus._loops"


def _soon(seconds: float = 0.4) -> Callable[[], list[datetime]]:
    """Locks that always expire ``seconds`` from now: renewed every 0.2 s (the shortest wait)."""
    return lambda: [datetime.now(UTC) + timedelta(seconds=seconds)]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def _eventually(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_one_thread_renews_every_batch_of_a_loop_and_nothing_after_each() -> None:
    renewals: list[tuple[str, int]] = []

    def renew(batch: str) -> Callable[[], None]:
        return lambda: renewals.append((batch, threading.get_ident()))

    with LockRenewer() as renewer:
        for batch in ("first", "second"):

            def renewed(batch: str = batch) -> bool:
                return any(b == batch for b, _ in renewals)

            with LockKeeper(renew(batch), _soon(), limit=600, renewer=renewer):
                _eventually(renewed)
            withdrawn = len(renewals)
            time.sleep(0.5)  # more than two renewal intervals
            assert len(renewals) == withdrawn, "renewed after the batch was withdrawn"
    assert len({thread for _, thread in renewals}) == 1
    assert {batch for batch, _ in renewals} == {"first", "second"}


def test_a_batch_withdrawn_while_its_locks_are_being_renewed_is_let_go() -> None:
    """The batch is settled (its keeper withdrawn) while the renewer thread is inside a
    renewal: the renewal stops at its next message, and the withdrawal returns, so the loop
    receives again. Until 2026-11-26 the renewer then spun holding its lock, and the loop
    hung in the withdrawal for good: the local host stopped replicating that source after a
    target outage (seen in CI and reproduced with sixteen outages side by side)."""
    renewing = threading.Event()
    keeper: LockKeeper

    def renew() -> None:  # renewing, message after message, until the batch is withdrawn
        renewing.set()
        keeper.done.wait(30)

    renewer = LockRenewer()  # closed only if the withdrawal returned (closing would hang too)
    keeper = LockKeeper(renew, _soon(), limit=600, renewer=renewer)
    keeper.__enter__()
    assert renewing.wait(30), "never renewed"
    withdrawal = threading.Thread(target=keeper.__exit__, daemon=True)
    withdrawal.start()
    withdrawal.join(30)
    assert not withdrawal.is_alive(), "the withdrawal hung behind the renewer"
    with renewer, LockKeeper(renewing.clear, _soon(), limit=600, renewer=renewer):
        _eventually(lambda: not renewing.is_set())  # the thread serves the next batch


def test_a_keeper_without_a_loop_renews_on_a_thread_of_its_own() -> None:
    renewals: list[int] = []
    with LockKeeper(lambda: renewals.append(1), _soon(), limit=600):
        _eventually(lambda: len(renewals) >= 2)
    withdrawn = len(renewals)
    time.sleep(0.5)
    assert len(renewals) == withdrawn


def test_renewal_stops_at_the_limit_and_survives_a_failing_renewal() -> None:
    calls: list[str] = []

    def failing() -> None:
        calls.append("failing")
        raise RuntimeError("boom")

    with LockRenewer() as renewer:
        with LockKeeper(failing, _soon(), limit=600, renewer=renewer):
            _eventually(lambda: calls == ["failing"])
            time.sleep(0.5)
            assert calls == ["failing"], "a failed renewal is not retried for the same batch"
        with LockKeeper(lambda: calls.append("limited"), _soon(), limit=0, renewer=renewer):
            time.sleep(0.5)
            assert "limited" not in calls, "renewed past the limit"
        with LockKeeper(lambda: calls.append("next"), _soon(), limit=600, renewer=renewer):
            _eventually(lambda: "next" in calls)


def test_a_batch_in_flight_too_long_is_logged_once_and_again_at_the_limit(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The local host does not bound its sends: a send that never returns would hold its loop
    while the locks are renewed, with nothing logged. The keeper says so once the batch is
    overdue, once, and again when renewal stops at the limit."""
    renewals: list[int] = []
    caplog.set_level(logging.WARNING, logger=LOOPS_LOGGER)
    with LockRenewer() as renewer:
        keeper = LockKeeper(
            lambda: renewals.append(1), _soon(), limit=1.2, renewer=renewer,
            overdue=0.3, what="weu/orders: a batch of 3 message(s)",
        )  # fmt: skip
        with keeper:
            _eventually(lambda: len(_warnings(caplog)) == 2)
            time.sleep(0.5)  # more than two renewal intervals: nothing is logged again
    overdue, limit = _warnings(caplog)
    assert overdue.startswith("weu/orders: a batch of 3 message(s) has been in flight for ")
    assert "longer than its retries may take" in overdue
    assert limit.startswith("weu/orders: a batch of 3 message(s) has been in flight for ")
    assert "the lock renewal limit" in limit
    assert renewals, "renewed until the limit"


def test_a_batch_settled_in_time_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOOPS_LOGGER)
    renewals: list[int] = []
    with LockKeeper(lambda: renewals.append(1), _soon(), limit=600, overdue=60):
        _eventually(lambda: len(renewals) >= 2)
    assert _warnings(caplog) == []


def test_a_batch_is_overdue_after_twice_its_attempt_budget_and_at_least_a_minute() -> None:
    assert overdue_after(RetryPolicy(budget=48)) == 96
    assert overdue_after(RetryPolicy(budget=5)) == 60
