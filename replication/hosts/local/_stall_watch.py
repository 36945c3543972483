"""Telling a hung task from a quiet one: the local host's watch over its receive loops.

Every receive loop reports to its task's :class:`~replication.runtime.TaskStatus` at least once
a second while it is healthy (a receive that came back, even empty, a batch settled, a failure);
only a batch in flight keeps it silent. A Service Bus batch's locks are renewed for at most 10
minutes, after which its messages go back to the source anyway (the loop logs both the batch
being overdue and the renewal stopping), and a failing batch reports each failure. A task none of
whose loops has reported anything for :data:`SILENCE_LIMIT_SECONDS` is therefore hung: a
deadlock, or a call into an SDK that never returns. Nothing else would say so: its threads are
alive, their supervisors wait for them, and the task simply stops replicating.

:class:`StallWatch` checks every task each :data:`CHECK_SECONDS`, and for a silent one logs an
ERROR with where the task's threads are and marks the task failing
(:meth:`~replication.runtime.TaskStatus.record_silence`), so the live table and ``--until-idle``
report it, until one of its loops reports again; it repeats the report every
:data:`SILENCE_LIMIT_SECONDS` while the silence lasts. One hung loop of a task that has several
(the eight loops of a session-enabled source) is reported the same way, by its thread, though
the task stops counting as failing as soon as another loop reports. An event hub's partitions
report from the SDK's consumer threads, which are replaced on every reconnect, so for them only
the whole task's silence is watched.

Seen on 2026-11-26: a receive loop hung for good in the lock renewal's withdrawal after a target
outage (fixed); with this watch, such a hang is reported instead of silent.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence

from replication.runtime import TaskStatus

logger = logging.getLogger(__name__)

SILENCE_LIMIT_SECONDS = 11 * 60.0
"""Seconds without a word from any loop of a task after which it is reported as hung: the
longest a Service Bus batch keeps its locks renewed (10 minutes, the receive loops'
``lock_renewal_seconds``), and a minute more."""

CHECK_SECONDS = 5.0
"""How often the watch looks."""


class StallWatch:
    """A thread that reports the tasks of ``statuses`` whose loops went silent (see the module
    docstring); ``threads_of(task)`` are the task's loop threads: each one that reported
    before and then stays silent is reported on its own, with its stack."""

    def __init__(
        self,
        statuses: Mapping[str, TaskStatus],
        threads_of: Callable[[str], Sequence[threading.Thread]],
        stop: threading.Event,
        *,
        limit: float = SILENCE_LIMIT_SECONDS,
        interval: float = CHECK_SECONDS,
    ) -> None:
        self._statuses = statuses
        self._threads_of = threads_of
        self._stop = stop
        self._limit = limit
        self._interval = interval
        self._reported: dict[str, float] = {}
        """Task name -> when its current silence was last reported."""

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self._run, name="stall-watch", daemon=True)
        thread.start()
        return thread

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.check()

    def check(self, now: float | None = None) -> None:
        """Report every task that is silent, or has a silent loop, for longer than the limit;
        once per limit. ``now``: the ``time.monotonic()`` to judge at (default: now)."""
        now = time.monotonic() if now is None else now
        for name, status in self._statuses.items():
            status.forget_ended_threads()
            threads = self._threads_of(name)
            silent_loops = [
                thread
                for thread in threads
                if (heard := status.heard_from(thread)) is not None and now - heard > self._limit
            ]
            silent = now - status.last_heard
            if silent <= self._limit and not silent_loops:
                continue
            if now - self._reported.get(name, now - 2 * self._limit) <= self._limit:
                continue
            self._reported[name] = now
            if silent > self._limit:
                problem = f"no receive loop of the task has reported for {silent:.0f} s"
                shown = threads
            else:
                names = ", ".join(thread.name for thread in silent_loops)
                problem = f"its loop(s) {names} have not reported for over {self._limit:.0f} s"
                shown = silent_loops
            failures = status.record_silence(f"{problem} (hung?)")
            logger.error(
                "%s: %s, longer than any batch may stay in flight: hung, replicating nothing "
                "until it returns (%d failure(s) in a row). Where its threads are:\n%s",
                name,
                problem,
                failures,
                thread_stacks(shown),
            )


def thread_stacks(threads: Sequence[threading.Thread]) -> str:
    """The current stack of each of ``threads`` that is alive, named."""
    frames = sys._current_frames()
    stacks = [
        f"thread {thread.name}:\n{''.join(traceback.format_stack(frames[thread.ident]))}"
        for thread in threads
        if thread.ident is not None and thread.ident in frames
    ]
    return "\n".join(stacks) or "(no thread of the task is alive)"


__all__ = ["CHECK_SECONDS", "SILENCE_LIMIT_SECONDS", "StallWatch", "thread_stacks"]
