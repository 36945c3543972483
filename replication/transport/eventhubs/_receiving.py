"""One Event Hubs consumer's blocking receive, run until a stop is asked for, failing loudly.

The SDK's ``receive`` and ``receive_batch`` block and report connection errors to an
``on_error`` callback instead of raising. The local host's loops (a task's partition, a
namespace's heartbeat reader) need the opposite: return when ``stop`` is set, and raise when the
connection fails, so that :func:`~replication.runtime.supervise` reconnects with backoff.
:func:`receive_until_stopped` runs the receive in a thread, turns the first error reported to
``on_error`` into an exception, and treats a receive that ended by itself as a failure too.

**A receive that hears nothing fails too**
(:data:`~replication.transport.deadlines.SILENCE_DEADLINE`). With ``max_wait_time`` set, the
SDK calls back at least once per wait, with an empty batch (or ``None``) when the partition is
idle. It stops calling back when the namespace accepts connections and answers nothing (a hung
region), and it reports no error then: measured against an emulator frozen with SIGSTOP,
azure-eventhub 5.15.1, none in 150 s. Worse, until the consumer's first claim has read the
partition ids (``OwnershipManager.claim_ownership``, a management call that hangs with the
namespace), ``EventProcessor.start`` (``azure/eventhub/_eventprocessor/event_processor.py``)
loops over its still empty consumer list without waiting: one core busy for as long as the
namespace stays silent, and the other threads of this process (every other task's) fighting it
for the interpreter. So once the deadline passes without a callback, time spent inside a
callback (the runner's batch) left out, the receive fails with
:class:`~replication.exceptions.CallTimeoutError`; closing the consumer ends that loop at once,
and the supervisor's backoff spaces out the next attempts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from azure.eventhub import EventHubConsumerClient, PartitionContext

from replication.transport.deadlines import SILENCE_DEADLINE, Hearing

STOP_POLL_SECONDS = 1.0

SILENCE_SECONDS = SILENCE_DEADLINE.total_seconds()

CALLBACKS = ("on_event", "on_event_batch")


def receive_until_stopped(
    consumer: EventHubConsumerClient,
    receive: Callable[..., None],
    arguments: dict[str, Any],
    stop: threading.Event,
    *,
    what: str,
    silence_seconds: float = SILENCE_SECONDS,
) -> None:
    """Run ``receive(**arguments, on_error=...)`` (``consumer.receive`` or
    ``consumer.receive_batch``) until ``stop`` is set, then close ``consumer``.

    ``arguments`` must set ``max_wait_time`` (shorter than ``silence_seconds``), so that an
    idle partition still calls back.

    Raises:
        Exception: the first error the SDK reported to ``on_error``.
        ConnectionError: the receive ended by itself (``what`` names the consumer).
        CallTimeoutError: no callback for ``silence_seconds`` (a namespace that answers
            nothing).
    """
    wait = arguments.get("max_wait_time")
    if wait is None or wait >= silence_seconds:
        raise ValueError(
            f"{what}: max_wait_time must be set and shorter than {silence_seconds} s, got {wait!r}"
        )
    failure: list[BaseException] = []

    def on_error(_context: PartitionContext | None, error: Exception) -> None:
        failure.append(error)

    hearing = Hearing(silence_seconds)
    wrapped = {name: hearing.wrap(arguments[name]) for name in CALLBACKS if name in arguments}
    worker = threading.Thread(
        target=receive,
        kwargs={**arguments, **wrapped, "on_error": hearing.wrap(on_error)},
        name=what,
        daemon=True,
    )
    worker.start()
    try:
        while not stop.wait(STOP_POLL_SECONDS):
            if failure:
                raise failure.pop()
            if not worker.is_alive():
                raise ConnectionError(f"{what}: the consumer stopped")
            silence = hearing.overdue(what)
            if silence is not None:
                raise silence
    finally:
        consumer.close()
        worker.join(timeout=10)


__all__ = ["SILENCE_SECONDS", "receive_until_stopped"]
