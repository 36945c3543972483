"""Sending a batch's replicas to their targets: retries, narrowing down, the ledger.

Replicas are sent per target in batch order. Every target gets its first attempt before any
target is retried, so a target that is down does not hold back a healthy one. A
:class:`TransientForwardError` (throttling, a lost connection, a target that is down, missing
or not yet authorized) is retried with the task's backoff for as long as the invocation's
budget allows; then it propagates and the source redelivers the batch. A
:class:`PermanentForwardError` concerns one message: the message is parked and the rest is
sent on. A permanent error that does not say which message caused it is narrowed down by
sending the unsent messages one by one; when none of them gets through, the target is what
fails, and the error is treated as transient.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Protocol

from replication.envelope import Envelope, PropertyUpdate
from replication.exceptions import ForwardError, PermanentForwardError, TransientForwardError
from replication.planning import DeadLetter, Decision, Forward, Target
from replication.telemetry import BatchTelemetry

from ._backoff import Budget
from ._ledger import Ledger, replica_position

logger = logging.getLogger(__name__)


class TargetSender(Protocol):
    """Sends envelopes to one entity, in order; raises ForwardError subclasses on failure,
    with the positions of the envelopes already acknowledged. ``timeout`` (seconds) bounds the
    call, so that one send to a target that hangs cannot outlast the invocation's budget.
    ``update``: application properties every envelope is sent with instead of its own (the
    send span's trace context), applied where the sender copies the properties anyway."""

    def send(
        self,
        envelopes: Sequence[Envelope],
        *,
        timeout: float | None = None,
        update: PropertyUpdate | None = None,
    ) -> None: ...


@dataclasses.dataclass
class Delivery:
    """One target's share of a batch while it is being sent.

    While narrowing down, a message refused on its own is a ``suspect`` until the next one
    shows whether the target accepts anything at all.
    """

    target: Target
    pending: list[Forward]
    one_by_one: bool = False
    suspect: DeadLetter | None = None
    suspect_forward: Forward | None = None
    last_error: TransientForwardError | None = None
    sent: int = 0

    def suspect_item(self) -> Forward:
        assert self.suspect_forward is not None
        return self.suspect_forward


class Sending:
    """One batch's sends: what the targets acknowledged goes into the ledger and ``lag``;
    messages refused for themselves are added to ``dead_letters`` (the pattern's own come
    first)."""

    def __init__(
        self,
        task: str,
        senders: Mapping[Target, TargetSender],
        ledger: Ledger,
        budget: Budget,
        sensor: BatchTelemetry,
        dead_letters: list[DeadLetter],
    ) -> None:
        self._task = task
        self._senders = senders
        self._ledger = ledger
        self._budget = budget
        self._sensor = sensor
        self.dead_letters = dead_letters
        self.lag: list[float] = []

    def deliver(self, deliveries: list[Delivery]) -> int:
        """Send every delivery; transient failures are retried in rounds with backoff until
        the deadline, then the last one is raised. Returns the number of retries."""
        retries = self._budget.retries()
        while True:
            for delivery in deliveries:
                self._attempt(delivery)
            waiting = [d for d in deliveries if d.pending]
            if not waiting:
                return retries.count
            error = waiting[0].last_error
            assert error is not None
            if retries.exhausted():
                for delivery in waiting:
                    self._sensor.on_give_up(str(delivery.target), len(delivery.pending), error)
                raise error
            logger.info(
                "%s: %s unavailable, retry in %.1f s: %s",
                self._task,
                ", ".join(str(d.target) for d in waiting),
                retries.delay,
                error,
            )
            retries.wait()

    def _attempt(self, delivery: Delivery) -> None:
        """Send ``delivery.pending`` until it is empty or a transient error stops it."""
        sender = self._senders[delivery.target]
        target = str(delivery.target)
        while delivery.pending:
            chunk = delivery.pending[:1] if delivery.one_by_one else delivery.pending
            update = self._sensor.on_send(target, delivery.target.entity, len(chunk))
            try:
                sender.send(
                    [i.envelope for i in chunk], timeout=self._budget.timeout(), update=update
                )
                acknowledged = frozenset(range(len(chunk)))
                error: ForwardError | None = None
            except ForwardError as failure:
                acknowledged = failure.acknowledged
                error = failure
                self._sensor.on_send_error(target, failure)
            self._acknowledge(delivery, chunk, acknowledged)
            culprit = error.culprit if isinstance(error, PermanentForwardError) else None
            rest = [item for i, item in enumerate(chunk) if i not in acknowledged and i != culprit]
            delivery.pending = rest + delivery.pending[len(chunk) :]
            if acknowledged and delivery.suspect is not None:
                # Another message got through: the suspect was refused for itself.
                self.dead_letters.append(delivery.suspect)
                delivery.suspect = None
            if error is None:
                delivery.last_error = None
            elif isinstance(error, TransientForwardError):
                delivery.last_error = error
                return
            elif isinstance(error, PermanentForwardError):
                if culprit is not None:
                    self.dead_letters.append(_dead_letter(chunk[culprit], error))
                elif len(chunk) > 1:
                    logger.warning(
                        "%s: batch of %d to %s failed (%s); narrowing down one by one",
                        self._task,
                        len(chunk),
                        delivery.target,
                        error.reason,
                    )
                    delivery.one_by_one = True
                elif delivery.suspect is not None:
                    # Two messages in a row refused alone: the target is what fails, not the
                    # messages. Ride it out like an outage instead of parking everything.
                    delivery.pending.insert(0, delivery.suspect_item())
                    delivery.suspect = None
                    delivery.last_error = TransientForwardError(
                        f"{error.reason}: {error}", target=error.target
                    )
                    return
                else:
                    delivery.suspect_forward = chunk[0]
                    delivery.suspect = _dead_letter(chunk[0], error)
                    delivery.pending.pop(0)
        if delivery.suspect is not None:
            # The last message refused alone: park it when anything else got through, or
            # when it was alone (nothing says the target is at fault).
            self.dead_letters.append(delivery.suspect)
            delivery.suspect = None

    def _acknowledge(
        self, delivery: Delivery, chunk: list[Forward], acknowledged: frozenset[int]
    ) -> None:
        enqueued: list[float | None] = []
        now = time.time()
        for index in acknowledged:
            source = chunk[index].source
            self._ledger.add((delivery.target, replica_position(chunk[index])))
            when = source.enqueued_time_utc.timestamp() if source.enqueued_time_utc else None
            enqueued.append(when)
            if when is not None:
                self.lag.append(max(0.0, now - when))
        delivery.sent += len(acknowledged)
        self._sensor.on_sent(str(delivery.target), enqueued)


def _dead_letter(item: Forward, error: PermanentForwardError) -> DeadLetter:
    return DeadLetter(item.source, error.reason, str(error))


def describe_decision(decision: Decision) -> str:
    """``message <id>`` for logs: the MessageId, else the offset or sequence number."""
    envelope = decision.source
    return f"message {envelope.message_id or envelope.offset or envelope.sequence_number}"


__all__ = ["Delivery", "Sending", "TargetSender", "describe_decision"]
