"""Parking: a copy of each message that cannot be replicated, in the task's dead-letter target.

A ``DeadLetter`` decision (and a message narrowed out while sending) is parked in the task's
``deadLetterTarget`` as the original plus ``DeadLetterReason`` / ``DeadLetterErrorDescription``
/ ``repl-dead-letter-source`` and the original's place in its source
(:func:`replication.properties.source_facts`). A copy too large for the parking entity cannot
be parked whole, so the original must survive where it is: a **notice** is parked instead (no
body; ``repl-dead-letter-body-omitted`` gives the reason, the body's size and SHA-256;
``repl-dead-letter-original`` where the original is), and if even that does not fit, the
notice keeps only the replication and dead-letter properties. For a Service Bus source the
message is listed for the host to dead-letter in the source instead of completing it; an
event stays in its event hub, where ``redrive`` re-reads it by partition and sequence number
while the hub retains it. Without a dead-letter target (dry runs) parking raises
:class:`MessageRejectedError`. Transient failures of the parking entity are retried with the
task's backoff within the invocation's budget, like the targets'.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging

from replication.envelope import Envelope
from replication.exceptions import (
    ForwardError,
    MessageRejectedError,
    PermanentForwardError,
    TransientForwardError,
)
from replication.planning import DeadLetter, Target
from replication.properties import (
    DEAD_LETTER_BODY_OMITTED,
    DEAD_LETTER_ERROR_DESCRIPTION,
    DEAD_LETTER_ORIGINAL,
    DEAD_LETTER_PROPERTIES_OMITTED,
    DEAD_LETTER_REASON,
    DEAD_LETTER_SOURCE,
    is_replication_property,
    omission,
    source_facts,
)
from replication.telemetry import BatchTelemetry
from replication.topology import NamespaceKind, TaskSpec

from ._backoff import Budget
from ._delivery import TargetSender, describe_decision
from ._ledger import Ledger, position

logger = logging.getLogger(__name__)

PARKING = Target("", "dead-letter target")
"""The ledger's key for the parking entity, whichever it is."""


def parked_copy(decision: DeadLetter, source: str, original_at: str | None = None) -> Envelope:
    """The message as parked in a dead-letter target: the original plus the reason and its
    place in its source. A copy that already lacks something of the original (a notice, see
    :func:`replication.properties.omission`) also says where the original is, ``original_at``,
    when it is kept somewhere."""
    updates = {
        DEAD_LETTER_REASON: decision.reason,
        DEAD_LETTER_ERROR_DESCRIPTION: decision.description[:1024],
        DEAD_LETTER_SOURCE: source,
        **source_facts(decision.source),
    }
    properties = decision.source.application_properties
    if original_at is not None and omission(properties) and DEAD_LETTER_ORIGINAL not in properties:
        updates[DEAD_LETTER_ORIGINAL] = original_at
    return decision.source.with_properties(updates)


def smaller_parked_copy(copy: Envelope, original_at: str) -> Envelope | None:
    """A notice that fits where ``copy`` did not: first without the body (its size and SHA-256
    recorded, so it can be matched with the original), then also without the application
    properties other than replication and dead-letter ones; either way naming where the whole
    original is kept, ``original_at``. None when nothing smaller is left."""
    if copy.body:
        digest = hashlib.sha256(copy.body).hexdigest()
        return dataclasses.replace(copy, body=b"").with_properties(
            {
                DEAD_LETTER_BODY_OMITTED: (
                    f"{len(copy.body)} bytes, sha256 {digest}: too large for the parking entity"
                ),
                DEAD_LETTER_ORIGINAL: original_at,
            }
        )
    kept = {
        name: value
        for name, value in copy.application_properties.items()
        if is_replication_property(name) or name.startswith("DeadLetter")
    }
    dropped = sorted(set(copy.application_properties) - set(kept))
    if dropped:
        kept[DEAD_LETTER_PROPERTIES_OMITTED] = (
            f"{', '.join(dropped)}: too large for the parking entity"
        )[:1024]
        kept[DEAD_LETTER_ORIGINAL] = original_at
        return dataclasses.replace(copy, application_properties=kept)
    return None


class Parking:
    """One task's parking: its dead-letter target's sender (None: a dry run) and the ledger
    of what it acknowledged."""

    def __init__(
        self,
        task: TaskSpec,
        sender: TargetSender | None,
        ledger: Ledger,
        source_kind: NamespaceKind,
    ) -> None:
        self._task = task
        self._sender = sender
        self._ledger = ledger
        self._source_kind = source_kind
        parking = task.dead_letter_target
        self.label = f"{parking.namespace}/{parking.entity}" if parking else ""
        """``namespace/entity`` of the parking entity (empty without one)."""

    def original_at(self, envelope: Envelope) -> str:
        """Where the whole original of ``envelope`` is kept when only a notice is parked: the
        source's dead-letter queue (Service Bus; the host moves it there), or its place in the
        event hub (re-read by ``redrive`` while the hub retains it)."""
        source = self._task.source
        if self._source_kind is NamespaceKind.EVENTHUBS:
            return (
                f"event hub {source.entity_path} partition {envelope.partition_id} sequence "
                f"{envelope.sequence_number}, until the event hub's retention ends"
            )
        return f"{source.describe()}/$DeadLetterQueue"

    def park(
        self,
        dead_letters: list[DeadLetter],
        budget: Budget,
        sensor: BatchTelemetry,
        in_source: list[DeadLetter],
    ) -> int:
        """Send the parked copies; returns the number of transient failures ridden out and adds
        to ``in_source`` the messages whose original must be dead-lettered in the source."""
        for decision in dead_letters:
            logger.warning(
                "%s: parking %s: %s: %s",
                self._task.name,
                describe_decision(decision),
                decision.reason,
                decision.description,
            )
        sender = self._sender
        if sender is None:
            first = dead_letters[0]
            error = MessageRejectedError(
                f"{len(dead_letters)} message(s) cannot be replicated, first "
                f"{describe_decision(first)}: {first.reason}: {first.description}",
                reason=first.reason,
            )
            sensor.on_give_up("", len(dead_letters), error)
            raise error
        source = self._task.source.describe()
        pending: list[Envelope] = []
        for decision in dead_letters:
            key = (PARKING, position(decision.source))
            if key not in self._ledger:
                # A notice made before parking (an event whose body the SDK cannot give
                # exactly) points to the event in its hub; a Service Bus message that reaches
                # here whole is completed by the host, so there is nothing to point to.
                original_at = (
                    self.original_at(decision.source)
                    if self._source_kind is NamespaceKind.EVENTHUBS
                    else None
                )
                pending.append(parked_copy(decision, source, original_at))
        by_position = {position(d.source): d for d in dead_letters}
        try:
            return self._send(sender, pending, budget, sensor)
        finally:
            # Also for copies parked by an earlier attempt: the original still has to stay.
            for decision in dead_letters:
                if self._ledger.notice((PARKING, position(decision.source))):
                    in_source.append(by_position[position(decision.source)])
            if self._source_kind is NamespaceKind.EVENTHUBS:
                in_source.clear()  # an event stays in its hub; there is nothing to settle

    def _send(
        self,
        sender: TargetSender,
        pending: list[Envelope],
        budget: Budget,
        sensor: BatchTelemetry,
    ) -> int:
        retries = budget.retries()
        while pending:
            try:
                sender.send(pending, timeout=budget.timeout())
                acknowledged = frozenset(range(len(pending)))
                error: ForwardError | None = None
            except ForwardError as failure:
                acknowledged, error = failure.acknowledged, failure
                sensor.on_send_error(self.label, failure)
            for index in acknowledged:
                self._parked(pending[index], sensor)
            if error is None:
                break
            rest = [(i, c) for i, c in enumerate(pending) if i not in acknowledged]
            if isinstance(error, TransientForwardError):
                if retries.exhausted():
                    sensor.on_give_up(self.label, len(rest), error)
                    raise error
                retries.wait()
                pending = [c for _, c in rest]
                continue
            assert isinstance(error, PermanentForwardError)
            culprit = error.culprit
            if culprit is None and len(rest) == 1:
                culprit = rest[0][0]
            if culprit is None:
                # Which copy was refused is unknown: park the rest one at a time.
                for _, copy in rest:
                    self._park_alone(sender, copy, budget, sensor)
                break
            smaller = smaller_parked_copy(pending[culprit], self.original_at(pending[culprit]))
            if smaller is None:
                sensor.on_give_up(self.label, len(rest), error)
                raise error
            logger.warning(
                "%s: the parked copy of message %s does not fit the dead-letter target; "
                "parking it without its body",
                self._task.name,
                pending[culprit].message_id,
            )
            pending = [smaller if i == culprit else c for i, c in rest]
        return retries.count

    def _park_alone(
        self, sender: TargetSender, copy: Envelope, budget: Budget, sensor: BatchTelemetry
    ) -> None:
        candidate: Envelope | None = copy
        while candidate is not None:
            try:
                sender.send([candidate], timeout=budget.timeout())
            except PermanentForwardError as failure:
                sensor.on_send_error(self.label, failure)
                candidate = smaller_parked_copy(candidate, self.original_at(candidate))
                if candidate is None:
                    sensor.on_give_up(self.label, 1, failure)
                    raise
                continue
            self._parked(candidate, sensor)
            return

    def _parked(self, copy: Envelope, sensor: BatchTelemetry) -> None:
        """The parking entity acknowledged ``copy``: remember and count it."""
        # Only a notice made here, for size, names an original the host must keep.
        notice = DEAD_LETTER_ORIGINAL in copy.application_properties
        self._ledger.add((PARKING, position(copy)), notice=notice)
        reason = copy.application_properties.get(DEAD_LETTER_REASON)
        sensor.on_parked(self.label, str(reason))


__all__ = ["Parking", "parked_copy", "smaller_parked_copy"]
