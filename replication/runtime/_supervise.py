"""Keeping a local loop running: restarted with backoff whenever it fails, never given up.

The local host's receive loops and heartbeat readers run under :func:`supervise`: whatever the
broker or a message does to them (a namespace restart, a dropped connection, an error inside
the SDK), the loop is restarted after a wait from the one backoff policy (:class:`Backoff`, 1 s
doubling to 60 s), and the failure is recorded in the loop's :class:`TaskStatus`. The wait
starts over when the loop made progress in between (a new incident), or when a message broke
the receive on a working connection (:class:`~replication.exceptions.UnreadableTransferError`:
reconnect at once, before that message's lock expires). A task that keeps failing is reported
at ERROR (:func:`failure_level`) and as failing in its status, for ``--until-idle`` and the
live table.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from replication.exceptions import UnreadableTransferError

from ._backoff import Backoff
from ._task_status import TaskStatus, describe

logger = logging.getLogger(__name__)

RECONNECT_MIN_SECONDS = 1.0
RECONNECT_MAX_SECONDS = 60.0
LOUD_AFTER_FAILURES = 3
"""Failures in a row after which a task is reported at ERROR: it is not making progress."""


def failure_level(failures: int) -> int:
    """The log level of a failure that is the ``failures``-th in a row: WARNING, then ERROR
    once the task is not making progress."""
    return logging.ERROR if failures >= LOUD_AFTER_FAILURES else logging.WARNING


def supervise(
    name: str,
    loop: Callable[[], None],
    stop: threading.Event,
    status: TaskStatus,
    *,
    min_delay: float = RECONNECT_MIN_SECONDS,
    max_delay: float = RECONNECT_MAX_SECONDS,
) -> None:
    """Run ``loop`` until ``stop`` is set, restarting it with backoff whenever it fails."""
    backoff = Backoff(min_delay, max_delay)
    delays = backoff.delays()
    while not stop.is_set():
        progress = status.progress
        try:
            loop()
            delays = backoff.delays()
        except Exception as error:
            if status.progress != progress or isinstance(error, UnreadableTransferError):
                # It worked in between (a new incident), or a message broke the receive (the
                # connection is fine; reconnect at once, before that message's lock expires).
                delays = backoff.delays()
            delay = next(delays)
            failures = status.record_failure(error, restart=True)
            logger.log(
                failure_level(failures),
                "%s: receive loop failed (%d in a row), reconnecting in %.0f s: %s",
                name,
                failures,
                delay,
                describe(error),
            )
            logger.debug("%s: receive loop failure", name, exc_info=True)
            stop.wait(delay)


__all__ = [
    "LOUD_AFTER_FAILURES",
    "RECONNECT_MAX_SECONDS",
    "RECONNECT_MIN_SECONDS",
    "failure_level",
    "supervise",
]
