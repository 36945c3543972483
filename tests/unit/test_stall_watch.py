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


def _reports_then_hangs(status: TaskStatus, release: threading.Event) -> None:
    status.touch()  # received (empty), then hangs
    _stuck_in_a_withdrawal(release)


def _keeps_receiving(status: TaskStatus, release: threading.Event) -> None:
    while not release.wait(LIMIT / 6):
        status.touch()


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
        assert report.startswith("weu-to-neu: no receive loop of the task has reported for ")
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


def test_one_hung_loop_among_a_tasks_several_is_reported_by_name_with_its_stack(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A session-enabled source has eight loops: one that hangs holds its session while the
    others keep the task's status fresh; the hung one is reported, the healthy one is not."""
    caplog.set_level(logging.ERROR, logger=WATCH_LOGGER)
    status = TaskStatus()
    release = threading.Event()
    hung = threading.Thread(target=_reports_then_hangs, args=(status, release), name="task-s-0")
    healthy = threading.Thread(target=_keeps_receiving, args=(status, release), name="task-s-1")
    hung.start()
    healthy.start()
    try:
        watch = StallWatch({"s": status}, lambda _: [hung, healthy], threading.Event(),
                           limit=LIMIT)  # fmt: skip
        time.sleep(LIMIT + 0.2)
        watch.check()
        (report,) = _errors(caplog)
        assert report.startswith("s: its loop(s) task-s-0 have not reported for over 0 s")
        assert "thread task-s-0:" in report
        assert "_stuck_in_a_withdrawal" in report
        assert "thread task-s-1:" not in report
    finally:
        release.set()
        hung.join()
        healthy.join()
    status.forget_ended_threads()
    time.sleep(LIMIT + 0.1)
    status.touch()
    watch.check()
    assert len(_errors(caplog)) == 1, "an ended loop thread is not hung"


def test_a_supervisor_that_restarted_its_loop_is_not_taken_for_a_loop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An event hub task's supervisor thread records the restart of its loop, then waits on the
    partitions' threads for as long as they run: its silence is not a hang."""
    caplog.set_level(logging.ERROR, logger=WATCH_LOGGER)
    status = TaskStatus()
    release = threading.Event()

    def supervisor() -> None:
        status.record_failure("ServiceBusConnectionError: gone", restart=True)
        release.wait(30)  # joining the partitions' threads

    thread = threading.Thread(target=supervisor, name="task-eh")
    thread.start()
    try:
        watch = StallWatch({"eh": status}, lambda _: [thread], threading.Event(), limit=LIMIT)
        deadline = time.monotonic() + 3 * LIMIT
        while time.monotonic() < deadline:
            status.touch()  # the partitions' consumer threads (here: this one) keep receiving
            time.sleep(LIMIT / 6)
            watch.check()
    finally:
        release.set()
        thread.join()
    assert _errors(caplog) == []


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
