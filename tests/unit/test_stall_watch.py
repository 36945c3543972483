"""The local host's watch over hung tasks: a task none of whose loops reports anything for
longer than any batch may take, or one loop of several that stops reporting, is reported at
ERROR with where its threads are, and the task is marked failing until a loop reports again; a
task that reported within the limit never is.

The watch reads only :class:`TaskStatus` and thread stacks, so these tests drive it with plain
threads, synchronised by events, and call ``check`` directly at chosen moments (``now``), so
nothing here sleeps.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator

import pytest

from replication.hosts.local import StallWatch
from replication.runtime import TaskStatus

WATCH_LOGGER = "replication.hosts.local._stall_watch"
LIMIT = 60.0


@pytest.fixture
def errors(caplog: pytest.LogCaptureFixture) -> Callable[[], list[str]]:
    caplog.set_level(logging.ERROR, logger=WATCH_LOGGER)
    return lambda: [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]


def _stuck_in_a_withdrawal(release: threading.Event) -> None:
    release.wait(30)


class _Loop:
    """A loop thread that reports to ``status`` when told to, or hangs until released."""

    def __init__(self, status: TaskStatus, name: str, *, hangs: bool = False) -> None:
        self._status = status
        self._hangs = hangs
        self.release = threading.Event()
        self._asked = threading.Event()
        self._done = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name)
        self.thread.start()

    def _run(self) -> None:
        while True:
            self._asked.wait(30)
            self._asked.clear()
            if self.release.is_set():
                return
            self._status.touch()
            self._done.set()
            if self._hangs:
                _stuck_in_a_withdrawal(self.release)
                return

    def report(self) -> float:
        """Make the loop report once; when it did."""
        self._asked.set()
        assert self._done.wait(30), "the loop did not report"
        self._done.clear()
        heard = self._status.heard_from(self.thread)
        assert heard is not None
        return heard

    def end(self) -> None:
        self.release.set()
        self._asked.set()
        self.thread.join()


@pytest.fixture
def loops() -> Iterator[list[_Loop]]:
    started: list[_Loop] = []
    yield started
    for loop in started:
        loop.end()


def test_a_task_whose_loop_hangs_is_reported_with_its_stack_until_it_reports_again(
    errors: Callable[[], list[str]], loops: list[_Loop]
) -> None:
    status = TaskStatus()
    loop = _Loop(status, "task-weu", hangs=True)
    loops.append(loop)
    heard = loop.report()  # received once, then hangs
    watch = StallWatch({"weu-to-neu": status}, lambda _: [loop.thread], threading.Event(),
                       limit=LIMIT)  # fmt: skip
    watch.check(now=heard + LIMIT / 2)
    assert errors() == [], "reported before the limit"
    assert status.consecutive_failures == 0

    watch.check(now=heard + LIMIT + 1)
    (report,) = errors()
    assert report.startswith("weu-to-neu: no receive loop of the task has reported for 61 s")
    assert "thread task-weu:" in report
    assert "_stuck_in_a_withdrawal" in report
    assert status.consecutive_failures == 1
    assert "hung" in str(status.last_error)

    watch.check(now=heard + LIMIT + 2)
    assert len(errors()) == 1, "reported again before another limit passed"
    watch.check(now=heard + 2 * LIMIT + 3)
    assert len(errors()) == 2
    assert status.consecutive_failures == 2

    loop.end()
    status.touch()  # the loop came back and received
    watch.check(now=status.last_heard + LIMIT / 2)
    assert status.consecutive_failures == 0
    assert len(errors()) == 2


def test_one_hung_loop_among_a_tasks_several_is_reported_by_name_with_its_stack(
    errors: Callable[[], list[str]], loops: list[_Loop]
) -> None:
    """A session-enabled source has eight loops: one that hangs holds its session while the
    others keep the task's status fresh; the hung one is reported, the healthy one is not."""
    status = TaskStatus()
    hung = _Loop(status, "task-s-0", hangs=True)
    healthy = _Loop(status, "task-s-1")
    loops += [hung, healthy]
    hung_heard = hung.report()
    healthy_heard = healthy.report()
    assert healthy_heard > hung_heard
    # A moment past the limit for the hung loop, within it for the healthy one and the task.
    now = (hung_heard + healthy_heard) / 2 + LIMIT
    watch = StallWatch({"s": status}, lambda _: [hung.thread, healthy.thread], threading.Event(),
                       limit=LIMIT)  # fmt: skip
    watch.check(now=now)
    (report,) = errors()
    assert report.startswith("s: its loop(s) task-s-0 have not reported for over 60 s")
    assert "thread task-s-0:" in report
    assert "_stuck_in_a_withdrawal" in report
    assert "thread task-s-1:" not in report

    hung.end()
    healthy.end()
    status.forget_ended_threads()
    status.touch()  # another loop reports; the ended one's old report must not count
    fresh = StallWatch({"s": status}, lambda _: [hung.thread], threading.Event(), limit=LIMIT)
    fresh.check(now=(hung_heard + status.last_heard) / 2 + LIMIT)
    assert len(errors()) == 1, "an ended loop thread is not hung"


def test_a_supervisor_that_restarted_its_loop_is_not_taken_for_a_loop(
    errors: Callable[[], list[str]], loops: list[_Loop]
) -> None:
    """An event hub task's supervisor thread records the restart of its loop, then waits on the
    partitions' threads for as long as they run: its silence is not a hang."""
    status = TaskStatus()
    release = threading.Event()
    restarted = threading.Event()

    def supervisor() -> None:
        status.record_failure("ServiceBusConnectionError: gone", restart=True)
        restarted.set()
        release.wait(30)  # joining the partitions' threads

    thread = threading.Thread(target=supervisor, name="task-eh")
    thread.start()
    try:
        assert restarted.wait(30)
        restart_heard = status.last_heard
        partition = _Loop(status, "consumer-p0")  # the partition's consumer keeps receiving
        loops.append(partition)
        heard = partition.report()
        assert heard > restart_heard
        watch = StallWatch({"eh": status}, lambda _: [thread], threading.Event(), limit=LIMIT)
        watch.check(now=(restart_heard + heard) / 2 + LIMIT)
    finally:
        release.set()
        thread.join()
    assert errors() == []


@pytest.mark.parametrize(
    "report",
    [
        pytest.param(TaskStatus.touch, id="an empty receive"),
        pytest.param(lambda status: status.record(10), id="a batch settled"),
        pytest.param(
            lambda status: status.record_failure("TransientForwardError: neu/orders: refused"),
            id="a batch that failed",
        ),
    ],
)
def test_a_task_is_silent_from_its_last_report_on(
    errors: Callable[[], list[str]], report: Callable[[TaskStatus], object]
) -> None:
    """Each thing a loop reports counts as a sign of life, a failing batch too (a target down
    is failing, loudly, but not hung): the silence is measured from it."""
    status = TaskStatus()
    report(status)
    watch = StallWatch({"task": status}, lambda _: [], threading.Event(), limit=LIMIT)
    watch.check(now=status.last_heard + LIMIT - 1)
    assert errors() == []
    watch.check(now=status.last_heard + LIMIT + 1)
    assert len(errors()) == 1
