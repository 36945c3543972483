"""The local host's watch over hung tasks: a task none of whose loops reports anything for
longer than any batch may take is reported at ERROR, with where its threads are, and marked
failing until a loop reports again; a task that keeps reporting never is.

The watch reads only :class:`TaskStatus` and thread stacks, so these tests drive it with
plain threads; ``check`` is called directly, with limits of a fraction of a second.
"""

from __future__ import annotations

import logging
import threading
import time

import pytest

from replication.hosts.local import StallWatch
from replication.runtime import TaskStatus

WATCH_LOGGER = "replication.hosts.local._stall_watch"
LIMIT = 0.3


def _errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]


def _stuck_in_a_withdrawal(release: threading.Event) -> None:
    release.wait(30)


def test_a_task_whose_loop_hangs_is_reported_with_its_stack_until_it_reports_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger=WATCH_LOGGER)
    status = TaskStatus()
    release = threading.Event()
    loop = threading.Thread(target=_stuck_in_a_withdrawal, args=(release,), name="task-weu")
    loop.start()
    try:
        watch = StallWatch({"weu-to-neu": status}, lambda _: [loop], threading.Event(),
                           limit=LIMIT)  # fmt: skip
        watch.check()
        assert _errors(caplog) == [], "reported before the limit"
        assert status.consecutive_failures == 0
        time.sleep(LIMIT + 0.1)
        watch.check()
        (report,) = _errors(caplog)
        assert report.startswith("weu-to-neu: no receive loop of this task has reported")
        assert "thread task-weu:" in report
        assert "_stuck_in_a_withdrawal" in report
        assert status.consecutive_failures == 1
        assert "hung" in str(status.last_error)

        watch.check()
        assert len(_errors(caplog)) == 1, "reported again before another limit passed"
        time.sleep(LIMIT + 0.1)
        watch.check()
        assert len(_errors(caplog)) == 2
        assert status.consecutive_failures == 2
    finally:
        release.set()
        loop.join()
    status.touch()  # the loop came back and received
    time.sleep(LIMIT / 2)
    watch.check()
    assert status.consecutive_failures == 0
    assert len(_errors(caplog)) == 2


def test_a_task_that_keeps_reporting_is_never_reported(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger=WATCH_LOGGER)
    idle, busy = TaskStatus(), TaskStatus()
    watch = StallWatch({"idle": idle, "busy": busy}, lambda _: [], threading.Event(), limit=LIMIT)
    deadline = time.monotonic() + 3 * LIMIT
    while time.monotonic() < deadline:
        idle.touch()  # empty receives
        busy.record(10)  # batches settled
        time.sleep(LIMIT / 6)
        watch.check()
    assert _errors(caplog) == []
    assert not idle.failing
    assert not busy.failing


def test_a_failing_task_is_not_hung(caplog: pytest.LogCaptureFixture) -> None:
    """A task whose batches keep failing (a target down) reports each failure: it is failing,
    loudly, but not silent."""
    caplog.set_level(logging.ERROR, logger=WATCH_LOGGER)
    status = TaskStatus()
    watch = StallWatch({"down": status}, lambda _: [], threading.Event(), limit=LIMIT)
    deadline = time.monotonic() + 3 * LIMIT
    while time.monotonic() < deadline:
        status.record_failure("TransientForwardError: neu/orders: connection refused")
        time.sleep(LIMIT / 6)
        watch.check()
    assert _errors(caplog) == []
    assert status.last_error == "TransientForwardError: neu/orders: connection refused"
