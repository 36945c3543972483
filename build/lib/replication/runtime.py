"""Run one replication task over a batch: plan with the pattern, then send, park or skip.

:class:`TaskRunner` is what every triggered function calls. It is independent of the Azure SDKs:
targets are :class:`TargetSender` objects (``replication.transport.senders`` for Service Bus and
Event Hubs, ``replication.transport.memory`` for tests and dry runs).

Failure handling, per decision of the pattern:

- ``Forward``: replicas are sent per target in batch order. A :class:`TransientForwardError`
  propagates, failing the invocation so that the host redelivers (Service Bus) or retries
  (Event Hubs retry policy); replicas already sent are sent again then, which targets with
  duplicate detection drop by MessageId. A :class:`PermanentForwardError` on a batch is narrowed
  down message by message; only the messages that fail on their own are dead-lettered.
- ``DeadLetter``: the original message is parked in the task's ``deadLetterTarget`` with
  ``DeadLetterReason`` / ``DeadLetterErrorDescription`` properties. Without one,
  :class:`MessageRejectedError` is raised after everything else was sent, so the source's
  ``maxDeliveryCount`` moves the message into the source's own dead-letter queue: it never
  vanishes.
- ``Skip``: logged at DEBUG (loop prevention is normal operation, not an error).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Protocol

from patterns import DeadLetter, Decision, Forward, Target
from replication.envelope import Envelope
from replication.exceptions import MessageRejectedError, PermanentForwardError
from replication.properties import (
    DEAD_LETTER_ERROR_DESCRIPTION,
    DEAD_LETTER_REASON,
    DEAD_LETTER_SOURCE,
)
from replication.topology import ResolvedTask

logger = logging.getLogger(__name__)


class TargetSender(Protocol):
    """Sends envelopes to one entity, in order; raises ForwardError subclasses on failure."""

    def send(self, envelopes: Sequence[Envelope]) -> None: ...


@dataclasses.dataclass(frozen=True, slots=True)
class BatchOutcome:
    """What happened to a batch: counts per decision kind, the dead-lettered messages, and the
    pattern's decisions (for dry runs and logs)."""

    received: int
    forwarded: int
    skipped: int
    dead_lettered: tuple[DeadLetter, ...]
    decisions: tuple[Decision, ...] = dataclasses.field(default=(), repr=False)


def parked_copy(decision: DeadLetter, source: str) -> Envelope:
    """The message as parked in a dead-letter target: the original plus the reason."""
    return decision.source.with_properties(
        {
            DEAD_LETTER_REASON: decision.reason,
            DEAD_LETTER_ERROR_DESCRIPTION: decision.description[:1024],
            DEAD_LETTER_SOURCE: source,
        }
    )


class TaskRunner:
    """Executes one task's pattern over batches; build once, call :meth:`run` per invocation."""

    def __init__(
        self,
        task: ResolvedTask,
        senders: Mapping[Target, TargetSender],
        dead_letter_sender: TargetSender | None = None,
    ) -> None:
        self.task = task.spec
        self.context = task.context
        self._pattern = task.pattern
        self._options = task.options
        missing = [str(t) for t in self.context.targets if t not in senders]
        if missing:
            raise ValueError(f"task {task.name}: no sender for {', '.join(missing)}")
        self._senders = senders
        self._dead_letter_sender = dead_letter_sender

    def plan(self, batch: Sequence[Envelope]) -> list[Decision]:
        """The pattern's decisions for ``batch`` (pure; nothing is sent)."""
        return self._pattern.plan(batch, self.context, self._options)

    def run(self, batch: Sequence[Envelope]) -> BatchOutcome:
        """Plan and execute; see the module docstring for what is raised when."""
        decisions = self.plan(batch)
        forwards: dict[Target, list[Forward]] = {}
        dead_letters: list[DeadLetter] = []
        skipped = 0
        for decision in decisions:
            if isinstance(decision, Forward):
                forwards.setdefault(decision.target, []).append(decision)
            elif isinstance(decision, DeadLetter):
                dead_letters.append(decision)
            else:
                skipped += 1
                logger.debug("%s: skip %s: %s", self.task.name, _id(decision), decision.reason)
        forwarded = 0
        for target, items in forwards.items():
            sent, failed = self._send(target, items)
            forwarded += sent
            dead_letters.extend(failed)
        if dead_letters:
            self._park(dead_letters)
        return BatchOutcome(len(batch), forwarded, skipped, tuple(dead_letters), tuple(decisions))

    def _send(self, target: Target, items: list[Forward]) -> tuple[int, list[DeadLetter]]:
        sender = self._senders[target]
        try:
            sender.send([item.envelope for item in items])
            return len(items), []
        except PermanentForwardError as error:
            if len(items) == 1:
                return 0, [DeadLetter(items[0].source, error.reason, str(error))]
            logger.warning(
                "%s: batch of %d to %s failed (%s); retrying one by one",
                self.task.name,
                len(items),
                target,
                error.reason,
            )
        sent = 0
        failed: list[DeadLetter] = []
        for item in items:
            count, rejected = self._send(target, [item])
            sent += count
            failed.extend(rejected)
        return sent, failed

    def _park(self, dead_letters: list[DeadLetter]) -> None:
        for decision in dead_letters:
            logger.warning(
                "%s: cannot replicate %s: %s: %s",
                self.task.name,
                _id(decision),
                decision.reason,
                decision.description,
            )
        if self._dead_letter_sender is None:
            first = dead_letters[0]
            error = MessageRejectedError(
                f"{len(dead_letters)} message(s) cannot be replicated, first "
                f"{_id(first)}: {first.reason}: {first.description}"
            )
            error.reason = first.reason
            raise error
        source = self.task.source.describe()
        self._dead_letter_sender.send([parked_copy(d, source) for d in dead_letters])


def _id(decision: Decision) -> str:
    envelope = decision.source
    return f"message {envelope.message_id or envelope.offset or envelope.sequence_number}"


__all__ = ["BatchOutcome", "TargetSender", "TaskRunner", "parked_copy"]
