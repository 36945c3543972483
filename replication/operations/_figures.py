"""The figures an operator needs before pressing the failover button, read once for everyone.

``python -m replication status`` reads them for every task; ``failover|failback`` read them for
the tasks of the switch (dry run, the wait for replication to catch up, what a forced switch
loses). Both go through :class:`FiguresReader`, so the backlog, the age of the oldest
unreplicated message, the heartbeats and the RPO are computed one way. What they mean (the
task's state, the RPO) is decided in :mod:`._states`.

Per task:

- **backlog**: what the task's source holds and has not replicated. A Service Bus source: the
  messages of the queue or subscription it reads (its dead-letter queue for spillover),
  *counted by peeking* up to a cap (the data-plane SDK has no count; that is the management
  API, which needs *Manage* rights or an ARM role the replicator does not have); a message
  leaves it only once the replicator sent it to the target. A session-enabled source cannot
  be counted (only a session's holder may peek it, and taking sessions here would stall the
  replicator). An event hub source: per partition, the events after the checkpoint of the
  task's consumer group in ``AzureWebJobsStorage`` (without a checkpoint, everything the
  partition retains, as the replicator then starts at the beginning); unknown when that
  setting is absent.
- **oldest unreplicated**: seconds since the oldest message of the backlog was enqueued: the
  smallest enqueue time peeked, or per partition the enqueue time of the event after the
  checkpoint (read with a plain receiver of ``$Default``; where Event Hubs refuses it, because
  an application holds ``$Default`` with an owner level, the age of the partition's newest
  event stands in as a lower bound, shown "at least").
- **dead-lettered** (Service Bus) and **parked**: the messages in the source's dead-letter
  queue, and those in the task's ``deadLetterTarget`` queue whose ``repl-dead-letter-source`` is
  the task's source, peeked like the backlog.
- **heartbeats**: per heartbeat path of the task (its source namespace to each target
  namespace), the age of the newest heartbeat that reached the target (its
  ``heartbeat-status`` subscription, or its heartbeat event hub's events of the look-back
  window: :func:`~replication.topology.heartbeat_lookback`); none, and ``heartbeats_off``, when
  the topology has heartbeats switched off.

A namespace that cannot be reached, or does not answer within ``call_timeout`` (default 10 s;
:class:`~replication.transport.inspection.SourceInspector` bounds every read), is recorded, not
raised, and not asked again until :meth:`FiguresReader.refresh` (each try costs seconds); a
task whose source is unreachable has ``error`` set, and :attr:`FiguresReader.unreachable` names
the namespaces that failed since the last refresh.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from replication.exceptions import SourceUnreadableError
from replication.properties import DEAD_LETTER_SOURCE, REPL_ORIGIN
from replication.settings import Settings
from replication.topology import (
    CaptureSource,
    EntityRef,
    NamespaceKind,
    ResolvedTask,
    Topology,
    heartbeat_lookback,
    heartbeat_paths,
    materialize,
    requires_session,
)
from replication.transport.deadlines import DEFAULT_CALL_TIMEOUT
from replication.transport.inspection import Contents, PartitionPosition, SourceInspector
from replication.values import as_text

from ._states import Observed, PathHeartbeat, Rpo, TaskState, Thresholds, decide

PEEK_CAP = 5000
"""Most messages counted per entity by peeking."""

Clock = Callable[[], datetime]
T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True)
class Count:
    """Messages counted by peeking; ``capped`` when the count stopped at the cap."""

    value: int
    capped: bool = False

    def __str__(self) -> str:
        return f"{self.value}+" if self.capped else str(self.value)


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionLag:
    """One event hub partition: last enqueued sequence number and checkpointed one."""

    partition: str
    last_enqueued: int
    checkpoint: int | None
    first: int = 0
    """The first sequence number the partition retains."""

    @property
    def lag(self) -> int:
        """Events not replicated: after the checkpoint, or everything retained without one."""
        done = self.first - 1 if self.checkpoint is None else max(self.checkpoint, self.first - 1)
        return max(0, self.last_enqueued - done)


@dataclasses.dataclass(frozen=True, slots=True)
class Backlog:
    """What one task's source holds that is not replicated (``count`` None: it cannot be
    counted, ``unknown`` says why)."""

    task: str
    count: int | None
    capped: bool = False
    oldest_age: float | None = None
    oldest_at_least: bool = False
    message_ids: tuple[str, ...] = ()
    """The MessageIds waiting in a Service Bus source (as far as peeked)."""
    partitions: tuple[PartitionLag, ...] = ()
    """Per partition of an event hub source."""
    unknown: str | None = None

    def __str__(self) -> str:
        if self.count is None:
            return f"unknown ({self.unknown})"
        return f"{self.count}+" if self.capped else str(self.count)


@dataclasses.dataclass(slots=True)
class TaskReport:
    """Everything read and decided for one task (``error``: its source could not be read)."""

    task: str
    source: str
    backlog: Count | None = None
    dead_letters: Count | None = None
    parked: Count | None = None
    partitions: list[PartitionLag] | None = None
    oldest_age: float | None = None
    oldest_at_least: bool = False
    backlog_unknown: str | None = None
    message_ids: tuple[str, ...] = ()
    """The MessageIds of a Service Bus backlog (as far as peeked): what a failover now loses."""
    heartbeats: list[PathHeartbeat] = dataclasses.field(default_factory=list)
    heartbeats_off: bool = False
    """The topology has heartbeats switched off: ``heartbeats`` is empty because none are sent,
    not because none of the task's targets is a heartbeat path."""
    error: str | None = None
    state: TaskState = TaskState.UNKNOWN
    reasons: tuple[str, ...] = ()
    rpo: Rpo = dataclasses.field(default_factory=lambda: Rpo(None, False, None))


@dataclasses.dataclass(slots=True)
class CaptureReport:
    """What a Service Bus capture has not written yet (``error``: its namespace could not be
    read): the messages waiting in its subscription, the age of the oldest, and the ones in the
    subscription's dead-letter queue (batches the capture gave up on after ``maxDeliveryCount``:
    redrive them)."""

    capture: str
    source: str
    backlog: Count | None = None
    oldest_age: float | None = None
    dead_letters: Count | None = None
    error: str | None = None


class FiguresReader:
    """Reads the figures of a topology's tasks (see the module docstring); :meth:`close` it."""

    def __init__(
        self,
        topology: Topology,
        settings: Settings,
        *,
        cap: int = PEEK_CAP,
        clock: Clock = lambda: datetime.now(UTC),
        call_timeout: timedelta | float = DEFAULT_CALL_TIMEOUT,
    ) -> None:
        self._topology = topology
        self._inspector = SourceInspector(topology, settings, call_timeout=call_timeout)
        self._cap = cap
        self._clock = clock
        self.thresholds = Thresholds.of(topology)
        self._down: dict[str, str] = {}
        # The queues as deployed: the default parking queues are declared by materialize.
        self._queues = {
            namespace.name: {queue.name for queue in namespace.queues}
            for namespace in materialize(topology).namespaces
            if namespace.kind is NamespaceKind.SERVICEBUS
        }
        self._arrived: dict[str, tuple[datetime, dict[str, datetime]]] = {}

    def refresh(self) -> None:
        """Forget what was read (and which namespaces failed): the next reads ask again."""
        self._down.clear()
        self._arrived.clear()

    @property
    def unreachable(self) -> dict[str, str]:
        """The namespaces that could not be read since the last :meth:`refresh`, and why."""
        return dict(self._down)

    # -- per task ------------------------------------------------------------------------------

    def task(self, task: ResolvedTask | str, *, heartbeats: bool = True) -> TaskReport:
        """Every figure of ``task``, its state and its RPO; never raises for a namespace that
        cannot be read (see :class:`TaskReport`). Without ``heartbeats`` the paths are not
        read (quicker; the state then cannot be "stalled")."""
        resolved = self._resolved(task)
        source = resolved.spec.source
        report = TaskReport(
            resolved.name, source.describe(), heartbeats_off=not self._topology.heartbeats.enabled
        )
        try:
            backlog = self.backlog(resolved)
            if backlog.count is not None:
                report.backlog = Count(backlog.count, backlog.capped)
            report.backlog_unknown = backlog.unknown
            report.message_ids = backlog.message_ids
            report.oldest_age, report.oldest_at_least = backlog.oldest_age, backlog.oldest_at_least
            if self._kind(source) is NamespaceKind.EVENTHUBS:
                report.partitions = list(backlog.partitions)
            elif not source.dead_letter_queue:
                report.dead_letters = self._count(source, dead_letter=True)
        except SourceUnreadableError as error:
            report.error = str(error)
        try:
            report.parked = self._parked(resolved)
        except SourceUnreadableError as error:
            report.error = report.error or str(error)
        report.heartbeats = self.path_heartbeats(resolved) if heartbeats else []
        decision = decide(
            Observed(
                backlog=None if report.backlog is None else report.backlog.value,
                backlog_capped=report.backlog is not None and report.backlog.capped,
                oldest_age=report.oldest_age,
                oldest_at_least=report.oldest_at_least,
                parked=None if report.parked is None else report.parked.value,
                dead_lettered=None if report.dead_letters is None else report.dead_letters.value,
                counts_capped=any(
                    c is not None and c.capped for c in (report.parked, report.dead_letters)
                ),
                heartbeats=report.heartbeats,
                source_error=report.error or report.backlog_unknown,
            ),
            self.thresholds,
        )
        report.state, report.reasons, report.rpo = decision.state, decision.reasons, decision.rpo
        return report

    def backlog(self, task: ResolvedTask | str) -> Backlog:
        """What ``task``'s source holds and has not replicated.

        Raises:
            SourceUnreadableError: the source's namespace (or the checkpoint store) cannot be
                read.
        """
        resolved = self._resolved(task)
        source = resolved.spec.source
        self._check(source.namespace)
        if self._kind(source) is NamespaceKind.EVENTHUBS:
            return self._event_backlog(resolved.name, source)
        if requires_session(self._topology, source):
            return Backlog(
                resolved.name,
                None,
                unknown="a session-enabled source can be peeked only by a session's holder",
            )
        contents = self._peek(source, dead_letter=source.dead_letter_queue)
        times = [m.enqueued_time for m in contents.messages if m.enqueued_time is not None]
        return Backlog(
            resolved.name,
            len(contents.messages),
            capped=contents.capped,
            oldest_age=self._age(min(times)) if times else None,
            message_ids=tuple(str(m.message_id) for m in contents.messages),
        )

    def _event_backlog(self, task: str, source: EntityRef) -> Backlog:
        positions = self._read(source.namespace, lambda: self._inspector.partitions(source))
        lags = tuple(
            PartitionLag(p.partition, p.last_enqueued, p.checkpoint, p.first) for p in positions
        )
        if self._inspector.checkpoint_store() is None:
            return Backlog(
                task,
                None,
                partitions=lags,
                unknown="no checkpoint store: AzureWebJobsStorage is not set",
            )
        oldest: list[float] = []
        bounds: list[float] = []
        for position, lag in zip(positions, lags, strict=True):
            if not lag.lag:
                continue
            first = position.last_enqueued - lag.lag + 1
            try:
                enqueued = self._inspector.enqueued_time(source, position.partition, first)
            except SourceUnreadableError:
                enqueued = None  # refused (an owner level on $Default): the bound below
            if enqueued is not None:
                oldest.append(self._age(enqueued))
            elif position.last_enqueued_time is not None:
                bounds.append(self._age(position.last_enqueued_time))
        age = max([*oldest, *bounds], default=None)
        return Backlog(
            task,
            sum(lag.lag for lag in lags),
            oldest_age=age,
            oldest_at_least=bool(bounds),
            partitions=lags,
        )

    def _parked(self, task: ResolvedTask) -> Count | None:
        parking = task.spec.dead_letter_target
        if parking is None:
            return None
        if parking.entity not in self._queues.get(parking.namespace, set()):
            return None  # an event hub or a topic cannot be peeked
        source = task.spec.source.describe()

        def mine(properties: Mapping[Any, Any]) -> bool:
            value = properties.get(DEAD_LETTER_SOURCE.encode(), properties.get(DEAD_LETTER_SOURCE))
            return as_text(value, errors="replace") == source

        contents = self._peek(parking, dead_letter=False)
        return Count(sum(1 for m in contents.messages if mine(m.properties)), contents.capped)

    def _count(self, ref: EntityRef, *, dead_letter: bool) -> Count:
        contents = self._peek(ref, dead_letter=dead_letter)
        return Count(len(contents.messages), contents.capped)

    # -- captures ------------------------------------------------------------------------------

    def capture(self, capture: CaptureSource) -> CaptureReport:
        """The backlog of a Service Bus capture (see :class:`CaptureReport`); never raises for
        a namespace that cannot be read."""
        report = CaptureReport(capture.name, capture.source.describe())
        try:
            contents = self._peek(capture.source, dead_letter=False)
            report.backlog = Count(len(contents.messages), contents.capped)
            times = [m.enqueued_time for m in contents.messages if m.enqueued_time is not None]
            report.oldest_age = self._age(min(times)) if times else None
            report.dead_letters = self._count(capture.source, dead_letter=True)
        except SourceUnreadableError as error:
            report.error = str(error)
        return report

    # -- heartbeats ----------------------------------------------------------------------------

    def path_heartbeats(self, task: ResolvedTask | str) -> list[PathHeartbeat]:
        """The newest heartbeat of each path ``task`` sends along ([]: heartbeats are off, or
        none of its targets is a heartbeat path from its source)."""
        resolved = self._resolved(task)
        origin = resolved.spec.source.namespace
        targets = {target.namespace for target in resolved.spec.targets}
        return [
            beat for beat in self.heartbeats() if beat.origin == origin and beat.target in targets
        ]

    def heartbeats(self) -> list[PathHeartbeat]:
        """The newest heartbeat of every path of the topology, in path order; each age as of
        the moment its target was read."""
        paths = heartbeat_paths(self._topology)
        if not paths:
            return []
        lookback = _secs(heartbeat_lookback(self._topology))
        beats = []
        for path in paths:
            try:
                read_at, arrived = self._arrivals(path.target)
            except SourceUnreadableError as error:
                beats.append(PathHeartbeat(path.origin, path.target, None, lookback, str(error)))
                continue
            published = arrived.get(path.origin)
            age = None if published is None else max(0.0, (read_at - published).total_seconds())
            beats.append(PathHeartbeat(path.origin, path.target, age, lookback))
        return beats

    def _arrivals(self, target: str) -> tuple[datetime, dict[str, datetime]]:
        """When ``target`` was read, and the publish time of the newest heartbeat per origin
        that reached it within the look-back (read once until :meth:`refresh`)."""
        if target not in self._arrived:
            entity = self._topology.heartbeats.entity
            since = self._clock() - heartbeat_lookback(self._topology)
            arrived = self._read(
                target, lambda: self._inspector.latest_heartbeats(target, entity, since=since)
            )
            self._arrived[target] = (self._clock(), arrived)
        return self._arrived[target]

    # -- what a failback drains ------------------------------------------------------------------

    def message_ids(self, ref: EntityRef) -> list[str]:
        """The MessageIds waiting in a Service Bus queue or subscription (peeked)."""
        return [str(m.message_id) for m in self._peek(ref, dead_letter=False).messages]

    def direct_messages(self, refs: tuple[EntityRef, ...]) -> dict[str, int]:
        """Per Service Bus queue or subscription of ``refs``, the messages without
        ``repl-origin`` (published there directly, not replicated)."""
        return {
            ref.describe(): sum(
                1
                for message in self._peek(ref, dead_letter=False).messages
                if REPL_ORIGIN not in message.properties
                and REPL_ORIGIN.encode() not in message.properties
            )
            for ref in refs
            if self._kind(ref) is NamespaceKind.SERVICEBUS
        }

    def last_enqueued(self, ref: EntityRef) -> dict[str, int]:
        """Per partition of the event hub ``ref``, the newest sequence number (-1: empty)."""
        positions: list[PartitionPosition] = self._read(
            ref.namespace, lambda: self._inspector.partitions(ref)
        )
        return {p.partition: p.last_enqueued for p in positions}

    # -- reading -------------------------------------------------------------------------------

    def _peek(self, ref: EntityRef, *, dead_letter: bool) -> Contents:
        return self._read(
            ref.namespace, lambda: self._inspector.peek(ref, dead_letter=dead_letter, cap=self._cap)
        )

    def _read(self, namespace: str, read: Callable[[], T]) -> T:
        self._check(namespace)
        try:
            return read()
        except SourceUnreadableError as error:
            self._down[namespace] = str(error)
            raise

    def _check(self, namespace: str) -> None:
        if namespace in self._down:
            # It already failed since the last refresh: not asked again (each try costs
            # seconds).
            raise SourceUnreadableError(self._down[namespace])

    def _resolved(self, task: ResolvedTask | str) -> ResolvedTask:
        return self._topology.resolved(task) if isinstance(task, str) else task

    def _kind(self, ref: EntityRef) -> NamespaceKind:
        return self._topology.namespace(ref.namespace).kind

    def _age(self, moment: datetime) -> float:
        return max(0.0, (self._clock() - moment).total_seconds())

    def close(self) -> None:
        self._inspector.close()


def _secs(value: timedelta) -> float:
    return value.total_seconds()


__all__ = [
    "PEEK_CAP",
    "Backlog",
    "CaptureReport",
    "Count",
    "FiguresReader",
    "PartitionLag",
    "TaskReport",
]
