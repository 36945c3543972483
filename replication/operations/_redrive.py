"""Re-drive one task's parked or dead-lettered messages back through its runner.

After an incident (a target down, a bad rule) a task's messages wait in one of two places:

- ``dead-letter``: the dead-letter queue of the task's own Service Bus source queue or
  subscription (``maxDeliveryCount`` exceeded while every invocation failed). Everything in it
  belongs to the task.
- ``parked``: the task's ``deadLetterTarget`` queue, where the runtime parked copies
  (:func:`replication.runtime.parked_copy`) carrying ``DeadLetterReason``,
  ``DeadLetterErrorDescription`` and ``repl-dead-letter-source`` = the task's
  ``source.describe()``. Several tasks may share one parking queue; only the messages whose
  source is this task's belong to it.

Nothing is re-published into the source entity: on a topic that would fan the message out to
every other subscription again. Instead each message is read, turned back into the original
(:func:`replication.properties.unparked`: what parking added removed, the source's enqueue
time, sequence number and offset restored, MessageId and the replication properties kept) and
handed to the task's :class:`~replication.runtime.TaskRunner` exactly as the trigger would hand
it over, so patterns, loop prevention and parking apply as usual.

A redrive never sends a stand-in. A parked **notice** (a copy without the original's body or
some of its properties, :func:`replication.properties.omission`) is not the message:

- of an event hub source, the original is read back from the hub by the partition and sequence
  number the notice records (:class:`~replication.transport.eventhubs.EventReader`), while the
  hub retains it, and that event goes through the runner;
- otherwise (a Service Bus original waits in the source's dead-letter queue, where
  ``--from dead-letter`` takes it; an event past the hub's retention; a copy that recorded no
  original) the notice is left parked, and the report names it with the reason.

The survey decides this per message, so ``--dry-run`` shows it. The read message is completed
only after the runner returned:

- forwarded or skipped: completed;
- parked again by the runner: completed, because a fresh parked copy now exists (with a higher
  sequence number, so this run never reads it back);
- rejected without a ``deadLetterTarget`` (``MessageRejectedError``): the batch is narrowed to
  single messages and the rejected ones are left where they were;
- any other error of the runner (a transient send failure, an unreachable parking queue): the
  batch is abandoned and the redrive stops with :class:`RedriveStoppedError`. Nothing is lost;
  replicas sent before the stop are dropped by duplicate-detecting targets on the next run,
  because they keep their MessageId. Against targets without duplicate detection a redrive, like
  any redelivery, can produce a second copy.

How the messages are read, and what that costs other tasks' messages
--------------------------------------------------------------------

Service Bus cannot lock a chosen message (only deferred ones, by sequence number), and a
receiver takes messages in order. So a redrive first **surveys** the entity with peeks (no
lock, no delivery count): the sequence numbers of this task's messages present at that moment
(at most ``--max``), their reasons and enqueue times. ``--dry-run`` stops there. The redrive
then receives in peek-lock mode, never more messages at a time than it still wants (its next
ones lie at least that far ahead, so nothing behind its last message is ever locked), and

- processes the surveyed messages of the task;
- **holds** (keeps locked, without settling) every other message it receives: other tasks'
  messages, and this task's messages enqueued after the survey. Holding, instead of abandoning
  at once, keeps them from being received again in the same run. Locks are renewed by the
  SDK's ``AutoLockRenewer`` while the run lasts;
- stops once every surveyed message was handled; or when a receive returns nothing (the rest
  is locked by another receiver or was settled meanwhile: reported as "not reached"); or when a
  sequence number comes back (a held lock was lost: a safety net, reported the same way);
- finally abandons every held message.

The limit: an abandon counts as a delivery. Each redrive of a task that has to pass over
another task's messages in a shared parking queue adds one to the delivery count of those lying
before its last message (the survey reports how many: "passed over"); when that reaches the
queue's ``maxDeliveryCount`` the broker moves the message to the parking queue's own dead-letter
queue, where it is not lost but no longer visible to ``--from parked``. Deferring them instead
would hide them from every other reader; dead-lettering them would be worse. Hence: give each
task its own parking queue where you can, otherwise a high ``maxDeliveryCount`` on the shared
one, and check the dry run's "passed over" figure.

Errors reading or settling (broker unreachable, entity missing, lock lost on completion) also
end in :class:`RedriveStoppedError` with the counts so far; settling is never retried blindly.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import logging
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import datetime

from replication.envelope import Envelope
from replication.exceptions import (
    ConfigurationError,
    ForwardError,
    MessageRejectedError,
    OriginalNotAvailableError,
    RedriveStoppedError,
    ReplicationError,
)
from replication.properties import (
    DEAD_LETTER_ENQUEUED_TIME,
    DEAD_LETTER_ORIGINAL,
    DEAD_LETTER_PARTITION,
    DEAD_LETTER_SEQUENCE,
    DEAD_LETTER_SOURCE,
    format_timestamp,
    omission,
    unparked,
)
from replication.runtime import BatchOutcome, TaskRunner, runner_for
from replication.settings import Settings
from replication.topology import EntityRef, NamespaceKind, ResolvedTask, Topology
from replication.transport.errors import translated
from replication.transport.eventhubs import EventReader
from replication.transport.senders import SenderFactory
from replication.transport.servicebus import EntityReader, Locked, LockingReceiver, Peeked
from replication.values import as_text

logger = logging.getLogger(__name__)


class RedriveOrigin(enum.StrEnum):
    """Where the messages to redrive wait."""

    DEAD_LETTER = "dead-letter"
    """The dead-letter queue of the task's own Service Bus source."""
    PARKED = "parked"
    """The task's ``deadLetterTarget``, filtered by ``repl-dead-letter-source``."""


@dataclasses.dataclass(frozen=True, slots=True)
class RedriveSource:
    """One task's messages in one entity: where to read them and how to recognize them."""

    task: ResolvedTask
    origin: RedriveOrigin
    entity: EntityRef
    """The entity read: the source with ``dead_letter_queue`` set, or the parking queue."""

    @property
    def label(self) -> str:
        return self.entity.describe()

    def belongs(self, properties: Mapping[str, object]) -> bool:
        """Whether a message with these application properties is this task's."""
        if self.origin is RedriveOrigin.DEAD_LETTER:
            return True
        value = properties.get(DEAD_LETTER_SOURCE)
        return as_text(value, errors="replace") == self.task.spec.source.describe()


def redrive_source(topology: Topology, task_name: str, origin: RedriveOrigin) -> RedriveSource:
    """Where ``task_name``'s messages of ``origin`` are read.

    Raises:
        ConfigurationError: no such task; ``dead-letter`` for a source without a dead-letter
            queue (an event hub, or a task that already reads one); ``parked`` for a task
            without a Service Bus ``deadLetterTarget``.
    """
    names = [task.name for task in topology.tasks]
    if task_name not in names:
        close = difflib.get_close_matches(task_name, names, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ConfigurationError(f"unknown task '{task_name}'{hint}; known: {', '.join(names)}")
    task = topology.resolved(task_name)
    source = task.spec.source
    if origin is RedriveOrigin.DEAD_LETTER:
        if topology.namespace(source.namespace).kind is NamespaceKind.EVENTHUBS:
            raise ConfigurationError(
                f"task {task_name} reads event hub {source.describe()}, which has no "
                "dead-letter queue; use --from parked"
            )
        if source.dead_letter_queue:
            raise ConfigurationError(
                f"task {task_name} already reads the dead-letter queue {source.describe()}; "
                "a dead-letter queue has none of its own"
            )
        return RedriveSource(task, origin, source.model_copy(update={"dead_letter_queue": True}))
    parking = task.spec.dead_letter_target
    if parking is None:
        raise ConfigurationError(f"task {task_name} has no deadLetterTarget to redrive from")
    if topology.namespace(parking.namespace).kind is NamespaceKind.EVENTHUBS:
        raise ConfigurationError(
            f"task {task_name} parks in event hub {parking.describe()}, which cannot be read "
            "back message by message"
        )
    return RedriveSource(task, origin, parking)


@dataclasses.dataclass(frozen=True, slots=True)
class EventPosition:
    """Where a notice says its event is: partition, sequence number, recorded enqueue time."""

    partition: str
    sequence: int
    enqueued: str | None

    def describe(self) -> str:
        return f"partition {self.partition}, sequence {self.sequence}"


@dataclasses.dataclass(slots=True)
class Survey:
    """What a peek over the entity found (nothing locked, nothing counted as delivered)."""

    wanted: list[int] = dataclasses.field(default_factory=list)
    """Sequence numbers of the task's messages to redrive, oldest first (at most ``--max``)."""
    rereads: dict[int, tuple[str, EventPosition]] = dataclasses.field(default_factory=dict)
    """Of ``wanted``, the notices whose event is re-read from the hub: MessageId and position."""
    refused: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    """The task's notices that cannot be restored and stay parked: MessageId and why."""
    reasons: Counter[str] = dataclasses.field(default_factory=Counter)
    """``DeadLetterReason`` of the wanted messages."""
    first_enqueued: datetime | None = None
    last_enqueued: datetime | None = None
    beyond_max: int = 0
    """The task's messages left out by ``--max``."""
    others: int = 0
    """Messages of other tasks (a shared parking queue)."""
    passed_over: int = 0
    """Of ``others``, those before the last wanted message: a redrive locks and abandons them."""
    _others_since_wanted: int = 0

    def add(
        self,
        message: Peeked,
        *,
        mine: bool,
        limit: int | None,
        refusal: str | None = None,
        reread: EventPosition | None = None,
    ) -> None:
        """Count one peeked message, in sequence order; ``refusal`` says why one of the task's
        messages stays parked, ``reread`` where its original is read back from."""
        number = message.sequence_number
        if number is None:
            return
        if not mine:
            self.others += 1
            self._others_since_wanted += 1
            return
        if refusal is not None:
            # Left where it is; received (and abandoned) only when it lies between wanted ones.
            self.refused.append((message.message_id, refusal))
            self._others_since_wanted += 1
            return
        if limit is not None and len(self.wanted) >= limit:
            self.beyond_max += 1
            return
        self.wanted.append(number)
        if reread is not None:
            self.rereads[number] = (message.message_id, reread)
        self.passed_over += self._others_since_wanted
        self._others_since_wanted = 0
        self.reasons[message.dead_letter_reason or "(none)"] += 1
        enqueued = message.enqueued_time_utc
        if enqueued is not None:
            if self.first_enqueued is None or enqueued < self.first_enqueued:
                self.first_enqueued = enqueued
            if self.last_enqueued is None or enqueued > self.last_enqueued:
                self.last_enqueued = enqueued


@dataclasses.dataclass(slots=True)
class RedriveReport:
    """Counts of a redrive. ``forwarded`` and ``skipped`` count the pattern's decisions (one
    per message and target), the others count messages."""

    read: int = 0
    """The task's messages received (locked) from the entity."""
    forwarded: int = 0
    skipped: int = 0
    parked_again: int = 0
    rejected: int = 0
    """Left in place: the runner rejected them and the task has no ``deadLetterTarget``, or
    they cannot be converted (an AMQP value body)."""
    kept_whole: int = 0
    """Left in place because even their fresh parked copy had to leave the body out (a notice
    was parked; the message itself stays where it was read)."""
    refused: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    """Notices left parked because their original cannot be restored: MessageId and why (the
    survey's, and those whose re-read failed)."""
    left_for_other_tasks: int = 0
    passed_over: int = 0
    """Other messages locked on the way and abandoned (their delivery count went up by one)."""
    not_reached: int = 0
    """Surveyed messages of the task not completed by this run (see the module docstring)."""

    def add(self, outcome: BatchOutcome) -> None:
        self.forwarded += outcome.forwarded
        self.skipped += outcome.skipped
        self.parked_again += len(outcome.dead_lettered)


ProgressCallback = Callable[[RedriveReport], None]

_Item = tuple[Locked, Envelope]


class Redriver:
    """Surveys and redrives one task's messages: :meth:`survey`, then :meth:`redrive`, then
    :meth:`close` (``contextlib.closing`` does)."""

    def __init__(
        self,
        topology: Topology,
        source: RedriveSource,
        settings: Settings | None = None,
        *,
        batch_size: int = 100,
        wait_seconds: float = 5.0,
    ) -> None:
        self._topology = topology
        self._source = source
        self._settings = settings or Settings.from_environ(connections=topology.connections)
        self._batch_size = batch_size
        self._reader = EntityReader(
            topology.namespace(source.entity.namespace),
            source.entity,
            self._settings,
            wait_seconds=wait_seconds,
        )
        self._factory: SenderFactory | None = None
        self._events: EventReader | None = None

    @property
    def source(self) -> RedriveSource:
        return self._source

    def survey(self, *, limit: int | None = None) -> Survey:
        """Peek through the whole entity (see the module docstring); ``limit`` caps the
        task's messages taken into ``wanted``.

        Raises:
            RedriveStoppedError: the entity cannot be read.
        """
        survey = Survey()
        try:
            with translated(self._source.label):
                for message in self._reader.peek():
                    properties = message.properties
                    mine = self._source.belongs(properties)
                    refusal, reread = self._restorable(properties) if mine else (None, None)
                    survey.add(message, mine=mine, limit=limit, refusal=refusal, reread=reread)
        except ForwardError as error:
            raise RedriveStoppedError(
                f"cannot read {self._source.label}: {error}", RedriveReport()
            ) from error
        return survey

    def redrive(
        self, survey: Survey, *, on_progress: ProgressCallback | None = None
    ) -> RedriveReport:
        """Receive and redrive the surveyed messages (see the module docstring).

        Raises:
            RedriveStoppedError: the runner failed with anything but a rejection, or the
                entity could not be read or settled; ``report`` has the counts so far.
        """
        report = RedriveReport(left_for_other_tasks=survey.others, refused=list(survey.refused))
        wanted = set(survey.wanted)
        if not wanted:
            return report
        if self._factory is None:
            self._factory = SenderFactory(self._topology, self._settings)
        runner = runner_for(
            self._topology, self._source.task, self._factory, settings=self._settings
        )
        held: dict[int, Locked] = {}
        kept: dict[int, Locked] = {}
        try:
            with translated(self._source.label), self._reader.receiving() as receiver:
                try:
                    self._receive(receiver, runner, survey, wanted, held, kept, report, on_progress)
                finally:
                    report.passed_over = len(held)
                    for message in [*held.values(), *kept.values()]:
                        receiver.abandon(message)
        except ReplicationError as error:
            report.not_reached = len(wanted)
            raise RedriveStoppedError(
                f"redrive of task {self._source.task.name} stopped: {error}; the messages not "
                f"completed are still in {self._source.label}, run again to continue",
                report,
            ) from error
        report.not_reached = len(wanted)
        return report

    def _receive(
        self,
        receiver: LockingReceiver,
        runner: TaskRunner,
        survey: Survey,
        wanted: set[int],
        held: dict[int, Locked],
        kept: dict[int, Locked],
        report: RedriveReport,
        on_progress: ProgressCallback | None,
    ) -> None:
        seen: set[int] = set()
        while wanted:
            # Never more than the task still wants: its next messages lie at least that far
            # ahead, so nothing behind its last message is locked.
            messages = receiver.receive(min(self._batch_size, len(wanted)))
            if not messages:
                logger.warning(
                    "%s: %d surveyed message(s) not received (locked elsewhere or settled)",
                    self._source.label,
                    len(wanted),
                )
                return
            batch: list[_Item] = []
            repeated = False
            for message in messages:
                number = message.sequence_number
                repeated = repeated or number in seen
                seen.add(number)
                if number not in wanted:
                    held[number] = message  # a repeat replaces the entry whose lock was lost
                    continue
                report.read += 1
                try:
                    batch.append((message, self._original(message, survey)))
                except MessageRejectedError as error:
                    self._keep(message, error, wanted, kept, report)
            if batch:
                self._run(receiver, runner, batch, wanted, kept, report)
            if on_progress is not None:
                on_progress(report)
            if repeated:
                logger.warning(
                    "%s: a held message came back (its lock was lost); stopping this pass",
                    self._source.label,
                )
                return

    def _run(
        self,
        receiver: LockingReceiver,
        runner: TaskRunner,
        batch: list[_Item],
        wanted: set[int],
        kept: dict[int, Locked],
        report: RedriveReport,
    ) -> None:
        """Run ``batch`` through the runner and complete it; a rejection (no deadLetterTarget)
        is narrowed to single messages, any other error abandons the batch and propagates."""
        try:
            outcome = runner.run([envelope for _, envelope in batch])
        except MessageRejectedError as error:
            if len(batch) == 1:
                self._keep(batch[0][0], error, wanted, kept, report)
                return
            for item in batch:
                self._run(receiver, runner, [item], wanted, kept, report)
            return
        except ReplicationError:
            for message, _ in batch:
                receiver.abandon(message)
            raise
        report.add(outcome)
        # A message whose fresh parked copy could only be a notice must stay where it is: it
        # is the only whole copy (the notice the runner parked points to the source's DLQ).
        stays = [d.source for d in outcome.dead_letter_in_source]
        for message, envelope in batch:
            wanted.discard(message.sequence_number)
            if envelope in stays:
                report.kept_whole += 1
                kept[message.sequence_number] = message
            else:
                receiver.complete(message)

    def _keep(
        self,
        message: Locked,
        error: MessageRejectedError,
        wanted: set[int],
        kept: dict[int, Locked],
        report: RedriveReport,
    ) -> None:
        logger.warning(
            "%s: message %s cannot be replicated and stays: %s: %s",
            self._source.label,
            message.message_id,
            error.reason,
            error,
        )
        number = message.sequence_number
        kept[number] = message
        wanted.discard(number)
        if omission(message.properties()) is not None:
            # A notice whose original could not be restored (or converted): it stays parked.
            report.refused.append((message.message_id, f"{error.reason}: {error}"))
        else:
            report.rejected += 1

    # -- notices ---------------------------------------------------------------------------

    def _restorable(self, properties: dict[str, object]) -> tuple[str | None, EventPosition | None]:
        """Whether a message of the task can be redriven: (why it stays parked, None) for a
        notice whose original cannot be restored, (None, where to re-read it) for a notice of
        an event still in its hub, (None, None) for a copy that is the original."""
        problem = omission(properties)
        if problem is None:
            return None, None
        spec = self._source.task.spec.source
        position = _event_position(properties)
        if self._topology.namespace(spec.namespace).kind is NamespaceKind.EVENTHUBS:
            if position is None:
                return f"{problem}; the notice records no position in {spec.entity_path}", None
            if not self._event_reader().retained(position.partition, position.sequence):
                return (
                    f"{problem}; event hub {spec.entity_path} no longer has {position.describe()} "
                    "(its retention has passed)",
                    None,
                )
            return None, position
        where = as_text(properties.get(DEAD_LETTER_ORIGINAL), errors="replace")
        if where:
            return f"{problem}; the original is in {where} (redrive it --from dead-letter)", None
        return f"{problem}; the original was not kept", None

    def _event_reader(self) -> EventReader:
        if self._events is None:
            spec = self._source.task.spec.source
            self._events = EventReader(
                self._topology.namespace(spec.namespace), spec.entity, self._settings
            )
        return self._events

    def _original(self, message: Locked, survey: Survey) -> Envelope:
        """The original of a received message: the parked copy or dead-lettered message
        itself, or the event a notice points to, read back from its hub.

        Raises:
            MessageRejectedError: the message (or the event read back) cannot be converted;
                :class:`OriginalNotAvailableError` when the event is gone from the hub.
        """
        source = self._source.task.spec.source.entity_path
        received = unparked(message.envelope(source=source))
        reread = survey.rereads.get(message.sequence_number)
        if reread is None:
            if omission(message.properties()) is not None:
                raise OriginalNotAvailableError("a notice is never sent as the message")
            return received
        message_id, position = reread
        with translated(self._source.label):
            event = self._event_reader().read(position.partition, position.sequence)
        if event is None:
            raise OriginalNotAvailableError(
                f"event hub {source} no longer has {position.describe()} (retention passed?)"
            )
        if position.enqueued is not None and event.enqueued_time is not None:
            found = format_timestamp(event.enqueued_time)
            if found != position.enqueued:
                raise OriginalNotAvailableError(
                    f"{position.describe()} of event hub {source} was enqueued at {found}, "
                    f"not at {position.enqueued}: not the original of {message_id}"
                )
        logger.info("%s: re-read %s from %s %s", self._source.label, message_id, source,
                    position.describe())  # fmt: skip
        return event.envelope(position.partition, source=source)

    def close(self) -> None:
        """Close the senders and the clients."""
        if self._factory is not None:
            self._factory.close()
            self._factory = None
        if self._events is not None:
            self._events.close()
            self._events = None
        self._reader.close()


def _event_position(properties: Mapping[str, object]) -> EventPosition | None:
    partition = properties.get(DEAD_LETTER_PARTITION)
    sequence = properties.get(DEAD_LETTER_SEQUENCE)
    if partition is None or sequence is None:
        return None
    try:
        number = int(as_text(sequence, errors="replace") or "")
    except ValueError:
        return None
    enqueued = properties.get(DEAD_LETTER_ENQUEUED_TIME)
    return EventPosition(
        str(as_text(partition, errors="replace")),
        number,
        None if enqueued is None else as_text(enqueued, errors="replace"),
    )


__all__ = [
    "EventPosition",
    "ProgressCallback",
    "RedriveOrigin",
    "RedriveReport",
    "RedriveSource",
    "Redriver",
    "Survey",
    "redrive_source",
]
