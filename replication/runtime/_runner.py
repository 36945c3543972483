"""Run one replication task over a batch: plan with the pattern, then send, park or skip.

:class:`TaskRunner` is what every triggered function (and the local host) calls. It is
independent of the Azure SDKs: targets are :class:`TargetSender` objects
(``replication.transport.senders`` for Service Bus and Event Hubs,
:class:`~replication.runtime.MemoryTarget` for tests and dry runs).

What happens to each decision of the pattern:

- ``Forward``: replicas are sent per target in batch order (``_delivery``: transient failures
  retried with the task's backoff, ``retry.minBackoff`` .. ``retry.maxBackoff``, for as long as
  the invocation's attempt budget allows, :func:`replication.topology.attempt_budget`, under
  the source's lock duration; then the batch is redelivered; a message refused for itself is
  parked and the rest sent on).
- ``DeadLetter`` (and messages narrowed out while sending): a copy of the original is parked in
  the task's ``deadLetterTarget`` (``_parking``: the original plus its reason and its place in
  its source, or a notice when it does not fit; for a Service Bus source the outcome then
  lists the message in ``dead_letter_in_source``, for the host to dead-letter it in the source
  instead of completing it). A runner without a dead-letter target (dry runs) raises
  :class:`MessageRejectedError` after everything else was sent.
- ``Skip``: logged at DEBUG (loop prevention is normal operation, not an error).

A task with a user transform plans through ``_transforming.TransformStage``: the transform
runs on every message first, within part of the budget, and a message whose transform fails is
parked as ``TransformFailed`` without holding back its batch-mates.

Every run is measured and traced by the batch's sensor, :meth:`TaskTelemetry.batch
<replication.telemetry.TaskTelemetry.batch>` (the OpenTelemetry API; a no-op until the
application configures an SDK), wrapped around the run: the runner fires its hooks (a skip, a
send, an acknowledgement, a failed send, giving up, a parked copy) and the sensor derives the
message counts per outcome, the lag per forwarded replica, the batch duration, the failed sends
and a span per batch and per target whose context every replica carries
(``REPLICATION_TELEMETRY=off``: nothing). The
callers log one INFO line per batch (:meth:`BatchOutcome.summary`) and a WARNING per failure.

A replica a target acknowledged is never sent to it again by the same runner (``_ledger``):
a batch that is redelivered after a failure sends only what is missing, and a message that a
batch holds twice (see :meth:`TaskRunner.run`) is sent once.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from replication.envelope import Envelope
from replication.planning import DeadLetter, Decision, Forward, Target
from replication.settings import Settings
from replication.telemetry import TaskTelemetry
from replication.topology import NamespaceKind, ResolvedTask

from ._backoff import Budget, RetryPolicy
from ._delivery import Delivery, Sending, TargetSender, describe_decision
from ._ledger import Ledger, replica_position
from ._parking import Parking

if TYPE_CHECKING:
    from ._transforming import TransformStage

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class BatchOutcome:
    """What happened to a batch: counts per decision kind, the dead-lettered messages, and the
    pattern's decisions (for dry runs and logs).

    ``dead_letter_in_source`` are the messages of a Service Bus source whose parked copy could
    only be a notice: the host must dead-letter them in the source (with the decision's reason)
    instead of completing them, or their body is lost. ``already_sent`` counts replicas not
    sent again because the target had acknowledged them in an earlier attempt, or because the
    batch held the same source message twice (sent once); ``retries`` the
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


class Named(Protocol):
    """What a batch runner runs for: a task or a capture, by its name."""

    @property
    def name(self) -> str: ...


class BatchRunner(Protocol):
    """What a host's receive loop feeds batches to: a :class:`TaskRunner`, or a Service Bus
    capture (:class:`replication.capture.CaptureRunner`). :meth:`run` returns the batch's
    outcome, the host then settles it; a :class:`~replication.exceptions.ReplicationError`
    leaves the whole batch unsettled, to come back."""

    @property
    def task(self) -> Named: ...

    @property
    def retry(self) -> RetryPolicy: ...

    def run(self, batch: Sequence[Envelope]) -> BatchOutcome: ...


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
        if not task.user_code:
            raise ValueError(f"task {task.name}: loaded without the app's code (user_code=False)")
        self._transform: TransformStage | None = None
        if task.transform is not None:
            # Imported here: asyncio and the worker threads are for tasks with a transform only
            # (about 20 ms of every host's start-up otherwise).
            from ._transforming import TransformStage

            self._transform = TransformStage(task.transform)
        missing = [str(t) for t in self.context.targets if t not in senders]
        if missing:
            raise ValueError(f"task {task.name}: no sender for {', '.join(missing)}")
        self._senders = senders
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._clock = clock
        self._ledger = Ledger()
        self._parking = Parking(self.task, dead_letter_sender, self._ledger, source_kind)
        if telemetry is None:
            settings = Settings.from_environ()
            telemetry = TaskTelemetry(
                task.name,
                source_namespace=self.task.source.namespace,
                source_entity=self.task.source.entity,
                subscription=self.task.source.subscription,
                consumer_group=self.task.source.consumer_group,
                enabled=settings.telemetry_enabled,
                lag_per_replica=settings.lag_per_replica,
            )
        self.telemetry = telemetry

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
        with self.telemetry.batch(batch) as sensor:
            budget = Budget(self.retry, self._clock, self._sleep)
            decisions = self.plan(batch)
            deliveries: dict[Target, Delivery] = {}
            dead_letters: list[DeadLetter] = []
            skipped = already_sent = 0
            planned: set[tuple[Target, Hashable]] = set()
            for decision in decisions:
                if isinstance(decision, Forward):
                    key = (decision.target, replica_position(decision))
                    # Also a message the batch holds twice: a Service Bus receiver can hand out a
                    # delivery whose lock expired while it waited in the SDK's buffer (a stalled
                    # process) together with the broker's redelivery of the same message.
                    if key in self._ledger or key in planned:
                        already_sent += 1
                        continue
                    planned.add(key)
                    delivery = deliveries.setdefault(decision.target, Delivery(decision.target, []))
                    delivery.pending.append(decision)
                elif isinstance(decision, DeadLetter):
                    dead_letters.append(decision)
                else:
                    skipped += 1
                    sensor.on_skip(decision.reason)
                    logger.debug(
                        "%s: skip %s: %s",
                        self.task.name,
                        describe_decision(decision),
                        decision.reason,
                    )
            sending = Sending(
                self.task.name, self._senders, self._ledger, budget, sensor, dead_letters
            )
            retries = sending.deliver(list(deliveries.values()))
            in_source: list[DeadLetter] = []
            if dead_letters:
                retries += self._parking.park(dead_letters, budget, sensor, in_source)
            forwarded = sum(d.sent for d in deliveries.values()) + already_sent
            return BatchOutcome(
                len(batch),
                forwarded,
                skipped,
                tuple(dead_letters),
                tuple(decisions),
                already_sent,
                retries,
                tuple(sending.lag),
                tuple(in_source),
            )

    def park(self, dead_letters: Sequence[DeadLetter]) -> tuple[DeadLetter, ...]:
        """Park messages the caller could not even turn into envelopes for the pattern (an
        event whose body or properties cannot be read): same retries and fallbacks as
        :meth:`run`'s own parking. Returns the ones to dead-letter in the source (see
        :class:`BatchOutcome`)."""
        in_source: list[DeadLetter] = []
        with self.telemetry.parking(len(dead_letters)) as sensor:
            budget = Budget(self.retry, self._clock, self._sleep)
            self._parking.park(list(dead_letters), budget, sensor, in_source)
        return tuple(in_source)

    def original_at(self, envelope: Envelope) -> str:
        """Where the whole original of ``envelope`` is kept when only a notice is parked (see
        :meth:`Parking.original_at <replication.runtime._parking.Parking.original_at>`)."""
        return self._parking.original_at(envelope)


__all__ = ["BatchOutcome", "BatchRunner", "Named", "TaskRunner"]
