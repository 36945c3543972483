"""What a locally running task has done and whether it is making progress.

The local host (``python -m replication run``) keeps one :class:`TaskStatus` per task; its
receive loops record batches and failures, the CLI prints them and decides its exit code from
them, and tests read them. A task is *failing* when the last thing that happened to it was a
failure (a batch that could not be replicated, or its receive loop losing its connection):
that is the state an operator must hear about, loudly, because the task is not making progress.
"""

from __future__ import annotations

import threading
import time


class TaskStatus:
    """Counters and failure state of one task; updated under a lock from its threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.batches = 0
        self.messages = 0
        self.failures = 0
        self.parked = 0
        self.restarts = 0
        self.consecutive_failures = 0
        self.progress = 0
        """Counts batches settled and healthy receives: a loop that moved it made progress."""
        self.last_error: str | None = None
        self.last_activity = time.monotonic()
        self.last_heard = self.last_activity
        """When one of the task's loops last reported anything (a batch, a failure, a receive
        that came back): a loop that stays silent much longer than any batch may take is hung
        (the local host's :class:`~replication.hosts.local.StallWatch` reports it)."""
        self._heard_from: dict[threading.Thread, float] = {}

    @property
    def failing(self) -> bool:
        """Whether the last thing that happened to the task was a failure."""
        return self.consecutive_failures > 0

    def record(self, messages: int, *, parked: int = 0) -> None:
        """A batch of ``messages`` was settled (replicated, skipped or parked)."""
        with self._lock:
            self.batches += 1
            self.messages += messages
            self.parked += parked
            self.progress += 1
            self.consecutive_failures = 0
            self.last_activity = self.last_heard = time.monotonic()
            self._heard_from[threading.current_thread()] = self.last_heard

    def record_failure(self, error: BaseException | str, *, restart: bool = False) -> int:
        """A batch failed (or, with ``restart``, the receive loop had to reconnect); returns
        the number of failures in a row."""
        with self._lock:
            self.failures += 1
            self.restarts += int(restart)
            self.consecutive_failures += 1
            self.last_error = error if isinstance(error, str) else describe(error)
            self.last_activity = self.last_heard = time.monotonic()
            if not restart:
                # A restart is recorded by a supervisor, which for an event hub then only waits
                # on the partitions' threads: not a loop whose silence would mean a hang.
                self._heard_from[threading.current_thread()] = self.last_heard
            return self.consecutive_failures

    def record_silence(self, problem: str) -> int:
        """No loop of the task has reported anything for too long (``problem`` says how long):
        the task is failing until one does. Unlike :meth:`record_failure` it is not a sign of
        life, so the silence goes on being measured; returns the failures in a row."""
        with self._lock:
            self.failures += 1
            self.consecutive_failures += 1
            self.last_error = problem
            return self.consecutive_failures

    def touch(self) -> None:
        """The task is alive and connected (a receive returned, even empty)."""
        with self._lock:
            self.progress += 1
            self.consecutive_failures = 0
            self.last_heard = self._heard_from[threading.current_thread()] = time.monotonic()

    def heard_from(self, thread: threading.Thread) -> float | None:
        """When ``thread`` last reported a receive, a batch or a batch's failure here (None:
        never)."""
        with self._lock:
            return self._heard_from.get(thread)

    def forget_ended_threads(self) -> None:
        """Drop what ended threads reported (an event hub's consumer threads are replaced on
        every reconnect)."""
        with self._lock:
            for thread in [t for t in self._heard_from if not t.is_alive()]:
                del self._heard_from[thread]


def describe(error: BaseException) -> str:
    """One line for a log or a summary: the error's class and first line."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


__all__ = ["TaskStatus", "describe"]
