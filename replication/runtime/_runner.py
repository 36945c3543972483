"""Run one replication task over a batch: plan with the pattern, then send, park or skip.

:class:`TaskRunner` is what every triggered function (and the local host) calls. It is
independent of the Azure SDKs: targets are :class:`TargetSender` objects
(``replication.transport.senders`` for Service Bus and Event Hubs,
:class:`~replication.runtime.MemoryTarget` for tests and dry runs).

What happens to each decision of the pattern:

- ``Forward``: replicas are sent per target in batch order. Every target gets its first attempt
  before any target is retried, so a target that is down does not hold back a healthy one.
  A :class:`TransientForwardError` (throttling, a lost connection, a target that is down,
  missing or not yet authorized) is retried with exponential backoff
  (``retry.minBackoff`` .. ``retry.maxBackoff``) for as long as the invocation's attempt budget
  allows (:func:`replication.topology.attempt_budget`: under the source's lock duration); then
  it propagates and the source redelivers the batch. A :class:`PermanentForwardError` concerns
  one message: the message is parked and the rest is sent on. A permanent error that does not
  say which message caused it is narrowed down by sending the unsent messages one by one; when
  none of them gets through, the target is what fails, and the error is treated as transient.
- ``DeadLetter`` (and messages narrowed out above): a copy of the original is parked in the
  task's ``deadLetterTarget`` with ``DeadLetterReason`` / ``DeadLetterErrorDescription`` /
  ``repl-dead-letter-source`` and the original's place in its source
  (:func:`replication.properties.source_facts`). A copy too large for the parking entity cannot
  be parked whole, so the original must survive where it is: a **notice** is parked instead
  (no body; ``repl-dead-letter-body-omitted`` gives the reason, the body's size and SHA-256;
  ``repl-dead-letter-original`` where the original is), and if even that does not fit, the
  notice keeps only the replication and dead-letter properties. For a Service Bus source the
  outcome lists the message in ``dead_letter_in_source``: the host dead-letters the original in
  the source instead of completing it. An event stays in its event hub, where ``redrive``
  re-reads it by partition and sequence number while the hub retains it. A runner without a
  dead-letter target (dry runs) raises :class:`MessageRejectedError` after everything else was
  sent.
- ``Skip``: logged at DEBUG (loop prevention is normal operation, not an error).

A task with a user transform plans through ``_transforming.TransformStage``: the transform
runs on every message first, within part of the budget, and a message whose transform fails is
parked as ``TransformFailed`` without holding back its batch-mates.

Every run is measured and traced through :class:`replication.telemetry.TaskTelemetry` (the
OpenTelemetry API; a no-op until the application configures an SDK): message counts per
outcome, lag per forwarded replica, batch duration, failed sends, a span per batch and per
target whose context every replica carries (``REPLICATION_TELEMETRY=off``: nothing). The
callers log one INFO line per batch (:meth:`BatchOutcome.summary`) and a WARNING per failure.

A replica a target acknowledged is never sent to it again by the same runner: the runner
remembers the source positions it delivered (the last :data:`LEDGER_SIZE`), so a batch that is
redelivered after a failure sends only what is missing. Across processes, the replica's
MessageId (kept, or derived from the source position) lets targets with duplicate detection
drop the copies.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from datetime import timedelta
from typing import Protocol

from replication.envelope import Envelope
from replication.exceptions import (
    ForwardError,
    MessageRejectedError,
    PermanentForwardError,
    TransientForwardError,
)
from replication.planning import DeadLetter, Decision, Forward, Target
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
from replication.telemetry import BatchTelemetry, TaskTelemetry, telemetry_enabled
from replication.topology import NamespaceKind, ResolvedTask

from ._transforming import TransformStage

logger = logging.getLogger(__name__)

MIN_SEND_TIMEOUT = 5.0
"""Seconds a send gets even when the budget is spent (the last attempt must be able to finish)."""

LEDGER_SIZE = 100_000
"""Source positions of acknowledged replicas a runner remembers (about 10 MB at most)."""


class TargetSender(Protocol):
    """Sends envelopes to one entity, in order; raises ForwardError subclasses on failure,
    with the positions of the envelopes already acknowledged. ``timeout`` (seconds) bounds the
    call, so that one send to a target that hangs cannot outlast the invocation's budget."""

    def send(self, envelopes: Sequence[Envelope], *, timeout: float | None = None) -> None: ...


@dataclasses.dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Backoff between attempts of one invocation, and how long the invocation may retry.

    The default retries nothing (dry runs and tests); :meth:`from_task` is what deployed and
    local runs use.
    """

    min_backoff: float = 1.0
    max_backoff: float = 30.0
    budget: float = 0.0
    bound_sends: bool = True
    """Bound each send by what is left of the budget. Needed where nothing renews the
    source's locks (the Functions host, for batches); a host that renews them (the local host)
    turns it off and lets a send to a hung target finish instead of re-sending it."""

    @classmethod
    def from_task(
        cls, task: ResolvedTask, budget: timedelta, *, bound_sends: bool = True
    ) -> RetryPolicy:
        retry = task.spec.retry
        return cls(
            retry.min_backoff.total_seconds(),
            retry.max_backoff.total_seconds(),
            budget.total_seconds(),
            bound_sends,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class BatchOutcome:
    """What happened to a batch: counts per decision kind, the dead-lettered messages, and the
    pattern's decisions (for dry runs and logs).

    ``dead_letter_in_source`` are the messages of a Service Bus source whose parked copy could
    only be a notice: the host must dead-letter them in the source (with the decision's reason)
    instead of completing them, or their body is lost. ``already_sent`` counts replicas not
    sent again because the target had acknowledged them in an earlier attempt; ``retries`` the
    transient failures ridden out; ``lag`` the seconds from each forwarded replica's source
    enqueue time to the target's acknowledgement.
    """

    received: int
    forwarded: int
    skipped: int
    dead_lettered: tuple[DeadLetter, ...]
    decisions: tuple[Decision, ...] = dataclasses.field(default=(), repr=False)
    already_sent: int = 0
    retries: int = 0
    lag: tuple[float, ...] = dataclasses.field(default=(), repr=False)
    dead_letter_in_source: tuple[DeadLetter, ...] = ()

    def summary(self) -> str:
        """The batch's one log line: counts and the lag of its forwarded replicas (p50/max)."""
        text = (
            f"received={self.received} forwarded={self.forwarded} skipped={self.skipped} "
            f"dead_lettered={len(self.dead_lettered)}"
        )
        if self.dead_letter_in_source:
            text += f" dead_letter_in_source={len(self.dead_letter_in_source)}"
        if self.already_sent:
            text += f" already_sent={self.already_sent}"
        if self.retries:
            text += f" retries={self.retries}"
        if self.lag:
            ordered = sorted(self.lag)
            text += f" lag_p50={ordered[len(ordered) // 2]:.3f}s lag_max={ordered[-1]:.3f}s"
        return text


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


def position(envelope: Envelope) -> Hashable:
    """What identifies a source message across redeliveries: its place in its source."""
    if envelope.sequence_number is not None:
        return (envelope.source, envelope.partition_id, envelope.sequence_number)
    return (envelope.source, envelope.partition_id, envelope.offset, envelope.message_id)


def replica_position(forward: Forward) -> Hashable:
    """What identifies a forwarded replica across redeliveries: its source's position, and which
    part of a split it is (see :attr:`Forward.part <replication.planning.Forward.part>`)."""
    if forward.part == 0:
        return position(forward.source)
    return (position(forward.source), forward.part)


class _Ledger:
    """The bounded set of (target, source position) pairs a target has acknowledged.

    Shared by the batches a runner handles at the same time (one per Event Hubs partition or
    Service Bus session in the local host, concurrent invocations in the Function app)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: collections.OrderedDict[tuple[Target, Hashable], bool] = (
            collections.OrderedDict()
        )
        self._lock = threading.Lock()

    def __contains__(self, key: tuple[Target, Hashable]) -> bool:
        return key in self._entries

    def add(self, key: tuple[Target, Hashable], *, notice: bool = False) -> None:
        """Remember ``key``; ``notice``: what was parked for it is a notice (the original must
        stay in the source, on every redelivery too)."""
        with self._lock:
            self._entries[key] = notice
            if len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def notice(self, key: tuple[Target, Hashable]) -> bool:
        return self._entries.get(key, False)


@dataclasses.dataclass
class _Delivery:
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


class TaskRunner:
    """Executes one task's pattern over batches; build once, call :meth:`run` per invocation."""

    def __init__(
        self,
        task: ResolvedTask,
        senders: Mapping[Target, TargetSender],
        dead_letter_sender: TargetSender | None = None,
        *,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], object] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        telemetry: TaskTelemetry | None = None,
        source_kind: NamespaceKind = NamespaceKind.SERVICEBUS,
    ) -> None:
        self.task = task.spec
        self.source_kind = source_kind
        self.context = task.context
        self._pattern = task.pattern
        self._options = task.options
        if task.spec.transform is not None and task.transform is None:
            raise ValueError(f"task {task.name}: loaded without its transform (user_code=False)")
        self._transform = TransformStage(task.transform) if task.transform else None
        missing = [str(t) for t in self.context.targets if t not in senders]
        if missing:
            raise ValueError(f"task {task.name}: no sender for {', '.join(missing)}")
        self._senders = senders
        self._dead_letter_sender = dead_letter_sender
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._clock = clock
        self._ledger = _Ledger(LEDGER_SIZE)
        self._parking = Target("", "dead-letter target")
        self.telemetry = telemetry or TaskTelemetry(
            task.name,
            source_namespace=self.task.source.namespace,
            source_entity=self.task.source.entity,
            subscription=self.task.source.subscription,
            consumer_group=self.task.source.consumer_group,
            enabled=telemetry_enabled(os.environ),
        )
        parking = self.task.dead_letter_target
        self._parking_label = f"{parking.namespace}/{parking.entity}" if parking else ""

    def _timeout(self, deadline: float) -> float | None:
        """What is left of the budget for one send (None: no budget, the SDK's default)."""
        if not self.retry.budget or not self.retry.bound_sends:
            return None
        return max(MIN_SEND_TIMEOUT, deadline - self._clock())

    def plan(self, batch: Sequence[Envelope]) -> list[Decision]:
        """The decisions for ``batch``: the pattern's, over what the task's transform returned
        when it has one (nothing is sent)."""
        if self._transform is None:
            return self._plan_pattern(batch)
        return self._transform.plan(batch, self._plan_pattern, budget=self.retry.budget)

    def _plan_pattern(self, batch: Sequence[Envelope]) -> list[Decision]:
        return self._pattern.plan(batch, self.context, self._options)

    def run(self, batch: Sequence[Envelope]) -> BatchOutcome:
        """Plan and execute; see the module docstring for what is raised when."""
        with self.telemetry.batch(batch) as record:
            return self._run(batch, record)

    def _run(self, batch: Sequence[Envelope], record: BatchTelemetry) -> BatchOutcome:
        deadline = self._clock() + self.retry.budget
        lag: list[float] = []
        decisions = self.plan(batch)
        deliveries: dict[Target, _Delivery] = {}
        dead_letters: list[DeadLetter] = []
        skipped = already_sent = 0
        for decision in decisions:
            if isinstance(decision, Forward):
                if (decision.target, replica_position(decision)) in self._ledger:
                    already_sent += 1
                    continue
                delivery = deliveries.setdefault(decision.target, _Delivery(decision.target, []))
                delivery.pending.append(decision)
            elif isinstance(decision, DeadLetter):
                dead_letters.append(decision)
            else:
                skipped += 1
                self.telemetry.skipped(decision.reason)
                logger.debug("%s: skip %s: %s", self.task.name, _id(decision), decision.reason)
        retries = self._deliver(list(deliveries.values()), dead_letters, deadline, record, lag)
        in_source: list[DeadLetter] = []
        if dead_letters:
            retries += self._park(dead_letters, deadline, in_source)
        forwarded = sum(d.sent for d in deliveries.values()) + already_sent
        return BatchOutcome(
            len(batch),
            forwarded,
            skipped,
            tuple(dead_letters),
            tuple(decisions),
            already_sent,
            retries,
            tuple(lag),
            tuple(in_source),
        )

    def park(self, dead_letters: Sequence[DeadLetter]) -> tuple[DeadLetter, ...]:
        """Park messages the caller could not even turn into envelopes for the pattern (an
        event whose body or properties cannot be read): same retries and fallbacks as
        :meth:`run`'s own parking. Returns the ones to dead-letter in the source (see
        :class:`BatchOutcome`)."""
        self.telemetry.received(len(dead_letters))
        in_source: list[DeadLetter] = []
        self._park(list(dead_letters), self._clock() + self.retry.budget, in_source)
        return tuple(in_source)

    def original_at(self, envelope: Envelope) -> str:
        """Where the whole original of ``envelope`` is kept when only a notice is parked: the
        source's dead-letter queue (Service Bus; the host moves it there), or its place in the
        event hub (re-read by ``redrive`` while the hub retains it)."""
        source = self.task.source
        if self.source_kind is NamespaceKind.EVENTHUBS:
            return (
                f"event hub {source.entity_path} partition {envelope.partition_id} sequence "
                f"{envelope.sequence_number}, until the event hub's retention ends"
            )
        return f"{source.describe()}/$DeadLetterQueue"

    # -- sending ---------------------------------------------------------------------------

    def _deliver(
        self,
        deliveries: list[_Delivery],
        dead_letters: list[DeadLetter],
        deadline: float,
        record: BatchTelemetry,
        lag: list[float],
    ) -> int:
        """Send every delivery; transient failures are retried in rounds with backoff until
        the deadline, then the last one is raised. Returns the number of retries."""
        delay = self.retry.min_backoff
        retries = 0
        while True:
            for delivery in deliveries:
                self._attempt(delivery, dead_letters, deadline, record, lag)
            waiting = [d for d in deliveries if d.pending]
            if not waiting:
                return retries
            error = waiting[0].last_error
            assert error is not None
            if self._clock() + delay > deadline:
                for delivery in waiting:
                    self.telemetry.failed(str(delivery.target), len(delivery.pending), error)
                raise error
            retries += 1
            logger.info(
                "%s: %s unavailable, retry in %.1f s: %s",
                self.task.name,
                ", ".join(str(d.target) for d in waiting),
                delay,
                error,
            )
            self._sleep(delay)
            delay = min(delay * 2, self.retry.max_backoff)

    def _attempt(
        self,
        delivery: _Delivery,
        dead_letters: list[DeadLetter],
        deadline: float,
        record: BatchTelemetry,
        lag: list[float],
    ) -> None:
        """Send ``delivery.pending`` until it is empty or a transient error stops it."""
        sender = self._senders[delivery.target]
        target = str(delivery.target)
        while delivery.pending:
            chunk = delivery.pending[:1] if delivery.one_by_one else delivery.pending
            replicas = record.stamp(target, delivery.target.entity, [i.envelope for i in chunk])
            try:
                sender.send(replicas, timeout=self._timeout(deadline))
                acknowledged = frozenset(range(len(chunk)))
                error: ForwardError | None = None
            except ForwardError as failure:
                acknowledged = failure.acknowledged
                error = failure
                self.telemetry.send_failed(target, failure)
            self._acknowledge(delivery, chunk, acknowledged, record, lag)
            culprit = error.culprit if isinstance(error, PermanentForwardError) else None
            rest = [item for i, item in enumerate(chunk) if i not in acknowledged and i != culprit]
            delivery.pending = rest + delivery.pending[len(chunk) :]
            if acknowledged and delivery.suspect is not None:
                # Another message got through: the suspect was refused for itself.
                dead_letters.append(delivery.suspect)
                delivery.suspect = None
            if error is None:
                delivery.last_error = None
            elif isinstance(error, TransientForwardError):
                delivery.last_error = error
                return
            elif isinstance(error, PermanentForwardError):
                if culprit is not None:
                    dead_letters.append(_dead_letter(chunk[culprit], error))
                elif len(chunk) > 1:
                    logger.warning(
                        "%s: batch of %d to %s failed (%s); narrowing down one by one",
                        self.task.name,
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
            dead_letters.append(delivery.suspect)
            delivery.suspect = None

    def _acknowledge(
        self,
        delivery: _Delivery,
        chunk: list[Forward],
        acknowledged: frozenset[int],
        record: BatchTelemetry,
        lag: list[float],
    ) -> None:
        enqueued: list[float | None] = []
        now = time.time()
        for index in acknowledged:
            source = chunk[index].source
            self._ledger.add((delivery.target, replica_position(chunk[index])))
            when = source.enqueued_time_utc.timestamp() if source.enqueued_time_utc else None
            enqueued.append(when)
            if when is not None:
                lag.append(max(0.0, now - when))
        delivery.sent += len(acknowledged)
        record.sent(str(delivery.target), len(acknowledged))
        self.telemetry.forwarded(str(delivery.target), enqueued)

    # -- parking ---------------------------------------------------------------------------

    def _park(
        self, dead_letters: list[DeadLetter], deadline: float, in_source: list[DeadLetter]
    ) -> int:
        """Send the parked copies; returns the number of transient failures ridden out and adds
        to ``in_source`` the messages whose original must be dead-lettered in the source."""
        for decision in dead_letters:
            logger.warning(
                "%s: parking %s: %s: %s",
                self.task.name,
                _id(decision),
                decision.reason,
                decision.description,
            )
        sender = self._dead_letter_sender
        if sender is None:
            first = dead_letters[0]
            error = MessageRejectedError(
                f"{len(dead_letters)} message(s) cannot be replicated, first "
                f"{_id(first)}: {first.reason}: {first.description}"
            )
            error.reason = first.reason
            self.telemetry.failed("", len(dead_letters), error)
            raise error
        source = self.task.source.describe()
        pending: list[Envelope] = []
        for decision in dead_letters:
            key = (self._parking, position(decision.source))
            if key not in self._ledger:
                # A notice made before parking (an event whose body the SDK cannot give
                # exactly) points to the event in its hub; a Service Bus message that reaches
                # here whole is completed by the host, so there is nothing to point to.
                original_at = (
                    self.original_at(decision.source)
                    if self.source_kind is NamespaceKind.EVENTHUBS
                    else None
                )
                pending.append(parked_copy(decision, source, original_at))
        by_position = {position(d.source): d for d in dead_letters}
        try:
            return self._send_parked(sender, pending, deadline)
        finally:
            # Also for copies parked by an earlier attempt: the original still has to stay.
            for decision in dead_letters:
                if self._ledger.notice((self._parking, position(decision.source))):
                    in_source.append(by_position[position(decision.source)])
            if self.source_kind is NamespaceKind.EVENTHUBS:
                in_source.clear()  # an event stays in its hub; there is nothing to settle

    def _send_parked(self, sender: TargetSender, pending: list[Envelope], deadline: float) -> int:
        delay = self.retry.min_backoff
        retries = 0
        while pending:
            try:
                sender.send(pending, timeout=self._timeout(deadline))
                acknowledged = frozenset(range(len(pending)))
                error_: ForwardError | None = None
            except ForwardError as failure:
                acknowledged, error_ = failure.acknowledged, failure
                self.telemetry.send_failed(self._parking_label, failure)
            for index in acknowledged:
                self._parked(pending[index])
            if error_ is None:
                break
            rest = [(i, c) for i, c in enumerate(pending) if i not in acknowledged]
            if isinstance(error_, TransientForwardError):
                if self._clock() + delay > deadline:
                    self.telemetry.failed(self._parking_label, len(rest), error_)
                    raise error_
                retries += 1
                self._sleep(delay)
                delay = min(delay * 2, self.retry.max_backoff)
                pending = [c for _, c in rest]
                continue
            assert isinstance(error_, PermanentForwardError)
            culprit = error_.culprit
            if culprit is None and len(rest) == 1:
                culprit = rest[0][0]
            if culprit is None:
                # Which copy was refused is unknown: park the rest one at a time.
                for _, copy in rest:
                    self._park_alone(sender, copy, deadline)
                break
            smaller = smaller_parked_copy(pending[culprit], self.original_at(pending[culprit]))
            if smaller is None:
                self.telemetry.failed(self._parking_label, len(rest), error_)
                raise error_
            logger.warning(
                "%s: the parked copy of message %s does not fit the dead-letter target; "
                "parking it without its body",
                self.task.name,
                pending[culprit].message_id,
            )
            pending = [smaller if i == culprit else c for i, c in rest]
        return retries

    def _park_alone(self, sender: TargetSender, copy: Envelope, deadline: float) -> None:
        candidate: Envelope | None = copy
        while candidate is not None:
            try:
                sender.send([candidate], timeout=self._timeout(deadline))
            except PermanentForwardError as failure:
                self.telemetry.send_failed(self._parking_label, failure)
                candidate = smaller_parked_copy(candidate, self.original_at(candidate))
                if candidate is None:
                    self.telemetry.failed(self._parking_label, 1, failure)
                    raise
                continue
            self._parked(candidate)
            return

    def _parked(self, copy: Envelope) -> None:
        """The parking entity acknowledged ``copy``: remember and count it."""
        # Only a notice made here, for size, names an original the host must keep.
        notice = DEAD_LETTER_ORIGINAL in copy.application_properties
        self._ledger.add((self._parking, position(copy)), notice=notice)
        reason = copy.application_properties.get(DEAD_LETTER_REASON)
        self.telemetry.dead_lettered(self._parking_label, str(reason))


def _dead_letter(item: Forward, error: PermanentForwardError) -> DeadLetter:
    return DeadLetter(item.source, error.reason, str(error))


def _id(decision: Decision) -> str:
    envelope = decision.source
    return f"message {envelope.message_id or envelope.offset or envelope.sequence_number}"


__all__ = [
    "LEDGER_SIZE",
    "BatchOutcome",
    "RetryPolicy",
    "TargetSender",
    "TaskRunner",
    "parked_copy",
    "position",
    "replica_position",
    "smaller_parked_copy",
]
