"""One Event Hubs consumer's blocking receive, run until a stop is asked for, failing loudly.

The SDK's ``receive`` and ``receive_batch`` block and report connection errors to an
``on_error`` callback instead of raising. The local host's loops (a task's partition, a
namespace's heartbeat reader) need the opposite: return when ``stop`` is set, and raise when the
connection fails, so that :func:`~replication.runtime.supervise` reconnects with backoff.
:func:`receive_until_stopped` runs the receive in a thread, turns the first error reported to
``on_error`` into an exception, and treats a receive that ended by itself as a failure too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from azure.eventhub import EventHubConsumerClient, PartitionContext

STOP_POLL_SECONDS = 1.0


def receive_until_stopped(
    consumer: EventHubConsumerClient,
    receive: Callable[..., None],
    arguments: dict[str, Any],
    stop: threading.Event,
    *,
    what: str,
) -> None:
    """Run ``receive(**arguments, on_error=...)`` (``consumer.receive`` or
    ``consumer.receive_batch``) until ``stop`` is set, then close ``consumer``.

    Raises:
        Exception: the first error the SDK reported to ``on_error``.
        ConnectionError: the receive ended by itself (``what`` names the consumer).
    """
    failure: list[BaseException] = []

    def on_error(_context: PartitionContext | None, error: Exception) -> None:
        failure.append(error)

    worker = threading.Thread(
        target=receive, kwargs={**arguments, "on_error": on_error}, name=what, daemon=True
    )
    worker.start()
    try:
        while not stop.wait(STOP_POLL_SECONDS):
            if failure:
                raise failure.pop()
            if not worker.is_alive():
                raise ConnectionError(f"{what}: the consumer stopped")
    finally:
        consumer.close()
        worker.join(timeout=10)


__all__ = ["receive_until_stopped"]
