"""A capture task's batch runner: what the hosts' receive loops call for each received batch.

:class:`CaptureRunner` is the capture's counterpart of :class:`~replication.runtime.TaskRunner`
(the :class:`~replication.runtime.BatchRunner` protocol): the Function app's capture trigger and
the local host's Service Bus receive loop hand it a batch and settle the batch when it returns.
It writes the batch with its :class:`CaptureWriter` and returns only once every file is durable;
when the store fails it raises :class:`~replication.exceptions.CaptureWriteError`, so the host
abandons the whole batch (the Functions host when the function raises; the local loop itself)
and the broker delivers it again: nothing is completed that is not written.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from replication.envelope import Envelope
from replication.exceptions import CaptureWriteError
from replication.runtime import BatchOutcome, RetryPolicy
from replication.topology import CaptureSource

from ._writer import CaptureStore, CaptureWriter

logger = logging.getLogger(__name__)


class CaptureRunner:
    """Writes each batch of ``task``'s capture subscription into ``store``."""

    def __init__(self, task: CaptureSource, store: CaptureStore) -> None:
        self.task = task
        self.retry = RetryPolicy()
        """The default attempt budget: only the receive loop's overdue warning reads it."""
        self.writer = CaptureWriter(store, task.region)

    def run(self, batch: Sequence[Envelope]) -> BatchOutcome:
        """Write ``batch``; its outcome counts every copy as forwarded (written).

        Raises:
            CaptureWriteError: the store did not take every file; settle nothing.
        """
        if not batch:
            return BatchOutcome(0, 0, 0, ())
        try:
            written = self.writer.write(batch)
        except Exception as error:
            raise CaptureWriteError(
                f"{self.task.name}: a batch of {len(batch)} not captured: "
                f"{type(error).__name__}: {error}"
            ) from error
        logger.debug("%s: %d copies in %s", self.task.name, len(batch), ", ".join(written))
        return BatchOutcome(len(batch), len(batch), 0, ())


__all__ = ["CaptureRunner"]
