"""What each task's source holds: ``python -m replication status``.

Per task (lanes and heartbeat tasks included):

- **Service Bus source**: the backlog of the queue or subscription it reads and of its
  dead-letter queue. The data-plane SDK has no message count (that is the management API,
  which needs *Manage* rights or an ARM role the replicator does not have), so messages are
  *counted by peeking*, up to :data:`PEEK_CAP` per entity; a count at the cap is shown as
  ``5000+``. Peeking settles nothing and costs no delivery count. Scheduled and locked
  messages are included (peek sees them); a spillover task reads the dead-letter queue, which
  is then its backlog. A session-enabled source shows no backlog: only the receiver holding a
  session may peek it, and taking sessions here would stall the replicator.
- **Event Hubs source**: per partition, the last enqueued sequence number, and the sequence
  number of the checkpoint of the task's consumer group when ``AzureWebJobsStorage`` is set
  (the store the local host and the Functions host write; the difference is the lag).
- **Parked**: the messages in the task's ``deadLetterTarget`` (a Service Bus queue) whose
  ``repl-dead-letter-source`` is this task's source, counted by peeking like the backlog.

With heartbeats enabled it also peeks each receiving namespace's ``heartbeat-reader``
subscription for the latest heartbeat per path (see
:func:`~replication.transport.servicebus.peek_latest_heartbeats`: a running reader consumes
heartbeats, so an empty subscription there says "read", not "silent"; the reader's gauge is
the authoritative age).

A namespace that cannot be reached is recorded per task (``error``) rather than raised, so the
report covers everything that can be read, and not asked again in the same run; the CLI exits
``UNAVAILABLE`` when any task has one. The reading itself is the SDK layer's
(:class:`~replication.transport.inspection.SourceInspector`; its clients retry once, so that an
unreachable namespace costs seconds); this module decides what to read for each task and
reports it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from replication.exceptions import SourceUnreadableError
from replication.properties import DEAD_LETTER_SOURCE
from replication.settings import Settings
from replication.topology import (
    EntityRef,
    NamespaceKind,
    ResolvedTask,
    Topology,
    heartbeat_paths,
    heartbeat_receivers,
    requires_session,
)
from replication.transport.inspection import PropertyMatch, SourceInspector
from replication.values import as_text

PEEK_CAP = 5000
"""Most messages counted per entity by peeking."""


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

    @property
    def lag(self) -> int | None:
        if self.checkpoint is None:
            return None
        return max(0, self.last_enqueued - self.checkpoint)


@dataclasses.dataclass(slots=True)
class TaskReport:
    """What could be read for one task (``error``: the first thing that could not)."""

    task: str
    source: str
    backlog: Count | None = None
    dead_letters: Count | None = None
    parked: Count | None = None
    partitions: list[PartitionLag] | None = None
    error: str | None = None


@dataclasses.dataclass(slots=True)
class HeartbeatReport:
    """The newest unread heartbeat of one path (``age`` None: none waiting)."""

    origin: str
    target: str
    age: float | None
    error: str | None = None


@dataclasses.dataclass(slots=True)
class StatusReport:
    tasks: list[TaskReport]
    heartbeats: list[HeartbeatReport]

    @property
    def unreachable(self) -> bool:
        return any(t.error for t in self.tasks) or any(h.error for h in self.heartbeats)


def read_status(topology: Topology, settings: Settings, *, cap: int = PEEK_CAP) -> StatusReport:
    """Read every task's counts and the heartbeats (see the module docstring)."""
    reader = _Reader(topology, settings, cap)
    try:
        tasks = [reader.task(topology.resolved(spec)) for spec in topology.tasks]
        return StatusReport(tasks, reader.heartbeats())
    finally:
        reader.close()


class _Reader:
    def __init__(self, topology: Topology, settings: Settings, cap: int) -> None:
        self._topology = topology
        self._inspector = SourceInspector(topology, settings)
        self._cap = cap
        self._down: dict[str, str] = {}

    def task(self, task: ResolvedTask) -> TaskReport:
        source = task.spec.source
        report = TaskReport(task.name, source.describe())
        try:
            kind = self._topology.namespace(source.namespace).kind
            if kind is NamespaceKind.EVENTHUBS:
                report.partitions = [
                    PartitionLag(*position) for position in self._inspector.partitions(source)
                ]
            else:
                if not requires_session(self._topology, source):
                    # A session-enabled entity can be peeked only by a session's holder.
                    report.backlog = self._count(source, dead_letter=source.dead_letter_queue)
                if not source.dead_letter_queue:
                    report.dead_letters = self._count(source, dead_letter=True)
            report.parked = self._parked(task)
        except SourceUnreadableError as error:
            report.error = str(error)
        return report

    def _count(
        self, ref: EntityRef, *, dead_letter: bool, match: PropertyMatch | None = None
    ) -> Count:
        if ref.namespace in self._down:
            # It already failed in this run: not asked again (each try costs seconds).
            raise SourceUnreadableError(self._down[ref.namespace])
        try:
            total, capped = self._inspector.count(
                ref, dead_letter=dead_letter, cap=self._cap, match=match
            )
        except SourceUnreadableError as error:
            self._down[ref.namespace] = str(error)
            raise
        return Count(total, capped)

    def _parked(self, task: ResolvedTask) -> Count | None:
        parking = task.spec.dead_letter_target
        if parking is None:
            return None
        namespace = self._topology.namespace(parking.namespace)
        if namespace.kind is not NamespaceKind.SERVICEBUS or parking.entity not in {
            queue.name for queue in namespace.queues
        }:
            return None  # an event hub or a topic cannot be peeked
        source = task.spec.source.describe()

        def mine(properties: Mapping[Any, Any]) -> bool:
            value = properties.get(DEAD_LETTER_SOURCE.encode(), properties.get(DEAD_LETTER_SOURCE))
            return as_text(value, errors="replace") == source

        return self._count(parking, dead_letter=False, match=mine)

    def heartbeats(self) -> list[HeartbeatReport]:
        paths = heartbeat_paths(self._topology)
        if not paths:
            return []
        entity = self._topology.heartbeats.entity
        now = datetime.now(UTC)
        latest: dict[str, dict[str, datetime]] = {}
        errors: dict[str, str] = {}
        for target in heartbeat_receivers(self._topology):
            if target in self._down:
                errors[target] = self._down[target]
                continue
            try:
                latest[target] = self._inspector.latest_heartbeats(target, entity)
            except SourceUnreadableError as error:
                errors[target] = str(error)
        reports = []
        for path in paths:
            published = latest.get(path.target, {}).get(path.origin)
            age = None if published is None else max(0.0, (now - published).total_seconds())
            reports.append(HeartbeatReport(path.origin, path.target, age, errors.get(path.target)))
        return reports

    def close(self) -> None:
        self._inspector.close()


__all__ = [
    "PEEK_CAP",
    "Count",
    "HeartbeatReport",
    "PartitionLag",
    "StatusReport",
    "TaskReport",
    "read_status",
]
