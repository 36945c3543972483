"""What each task's source holds, read with the data-plane SDKs: ``python -m replication status``.

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
:func:`~replication.transport.heartbeats.peek_latest_heartbeats`: a running reader consumes
heartbeats, so an empty subscription there says "read", not "silent"; the reader's gauge is
the authoritative age).

A namespace that cannot be reached is recorded per task (``error``) rather than raised, so the
report covers everything that can be read, and not asked again in the same run; the CLI exits
``UNAVAILABLE`` when any task has one.
Clients retry once (one quick SDK retry) so that an unreachable namespace costs seconds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from azure.core.exceptions import AzureError
from azure.eventhub import EventHubConsumerClient
from azure.eventhub.exceptions import EventHubError
from azure.servicebus import ServiceBusClient, ServiceBusReceiver, ServiceBusSubQueue
from azure.servicebus.exceptions import ServiceBusError

from replication.properties import DEAD_LETTER_SOURCE
from replication.runtime import describe
from replication.topology import (
    EntityRef,
    NamespaceKind,
    ResolvedTask,
    Topology,
    heartbeat_paths,
    heartbeat_receivers,
    requires_session,
)
from replication.values import as_text

from .connections import event_hub_client, servicebus_client
from .eventhubs import checkpoint_store
from .heartbeats import peek_latest_heartbeats

PEEK_CAP = 5000
"""Most messages counted per entity by peeking."""

PEEK_PAGE = 250

CLIENT_OPTIONS: dict[str, Any] = {"retry_total": 1, "retry_backoff_factor": 0.5}

SDK_ERRORS = (ServiceBusError, EventHubError, AzureError, OSError)


class _UnreachableError(Exception):
    """A namespace that already failed in this run: not asked again (each try costs seconds)."""


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


def read_status(
    topology: Topology, environ: Mapping[str, str], *, cap: int = PEEK_CAP
) -> StatusReport:
    """Read every task's counts and the heartbeats (see the module docstring)."""
    reader = _Reader(topology, environ, cap)
    try:
        tasks = [reader.task(topology.resolved(spec)) for spec in topology.tasks]
        return StatusReport(tasks, reader.heartbeats())
    finally:
        reader.close()


class _Reader:
    def __init__(self, topology: Topology, environ: Mapping[str, str], cap: int) -> None:
        self._topology = topology
        self._environ = environ
        self._cap = cap
        self._clients: dict[str, ServiceBusClient] = {}
        self._down: dict[str, str] = {}

    def _client(self, namespace: str) -> ServiceBusClient:
        if namespace in self._down:
            raise _UnreachableError(self._down[namespace])
        if namespace not in self._clients:
            spec = self._topology.namespace(namespace)
            self._clients[namespace] = servicebus_client(spec, self._environ, **CLIENT_OPTIONS)
        return self._clients[namespace]

    def task(self, task: ResolvedTask) -> TaskReport:
        source = task.spec.source
        report = TaskReport(task.name, source.describe())
        try:
            kind = self._topology.namespace(source.namespace).kind
            if kind is NamespaceKind.EVENTHUBS:
                report.partitions = self._partitions(source)
            else:
                if not requires_session(self._topology, source):
                    # A session-enabled entity can be peeked only by a session's holder.
                    report.backlog = self._count(source, dead_letter=source.dead_letter_queue)
                if not source.dead_letter_queue:
                    report.dead_letters = self._count(source, dead_letter=True)
            report.parked = self._parked(task)
        except SDK_ERRORS as error:
            report.error = describe(error)
        except _UnreachableError as error:
            report.error = str(error)
        return report

    def _count(
        self,
        ref: EntityRef,
        *,
        dead_letter: bool,
        match: Callable[[Mapping[Any, Any]], bool] | None = None,
    ) -> Count:
        client = self._client(ref.namespace)
        sub_queue = ServiceBusSubQueue.DEAD_LETTER if dead_letter else None
        receiver: ServiceBusReceiver
        if ref.subscription is not None:
            receiver = client.get_subscription_receiver(
                ref.entity, ref.subscription, sub_queue=sub_queue
            )
        else:
            receiver = client.get_queue_receiver(ref.entity, sub_queue=sub_queue)
        try:
            return self._peek_count(receiver, match)
        except SDK_ERRORS as error:
            self._down[ref.namespace] = describe(error)
            raise

    def _peek_count(
        self, receiver: ServiceBusReceiver, match: Callable[[Mapping[Any, Any]], bool] | None
    ) -> Count:
        total = seen = 0
        sequence = 0
        with receiver:
            while seen < self._cap:
                page = receiver.peek_messages(
                    max_message_count=min(PEEK_PAGE, self._cap - seen), sequence_number=sequence
                )
                if not page:
                    return Count(total)
                seen += len(page)
                sequence = (page[-1].sequence_number or 0) + 1
                for message in page:
                    properties = message.application_properties or {}
                    if match is None or match(properties):
                        total += 1
        return Count(total, capped=True)

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

    def _partitions(self, source: EntityRef) -> list[PartitionLag]:
        namespace = self._topology.namespace(source.namespace)
        group = source.consumer_group or "$Default"
        store = checkpoint_store(self._environ)
        with event_hub_client(
            EventHubConsumerClient,
            namespace,
            source.entity,
            self._environ,
            consumer_group=group,
            **CLIENT_OPTIONS,
        ) as client:
            checkpoints: dict[str, int] = {}
            if store is not None:
                host = client._address.hostname  # what the event processor checkpoints under
                for checkpoint in store.list_checkpoints(host, source.entity, group):
                    checkpoints[str(checkpoint["partition_id"])] = int(
                        checkpoint["sequence_number"]
                    )
            lags = []
            for partition in client.get_partition_ids():
                properties = client.get_partition_properties(partition)
                lags.append(
                    PartitionLag(
                        partition,
                        int(properties["last_enqueued_sequence_number"]),
                        checkpoints.get(partition),
                    )
                )
            return lags

    def heartbeats(self) -> list[HeartbeatReport]:
        paths = heartbeat_paths(self._topology)
        if not paths:
            return []
        entity = self._topology.heartbeats.entity
        now = datetime.now(UTC)
        latest: dict[str, dict[str, datetime]] = {}
        errors: dict[str, str] = {}
        for target in heartbeat_receivers(self._topology):
            namespace = self._topology.namespace(target)
            if target in self._down:
                errors[target] = self._down[target]
                continue
            try:
                found = peek_latest_heartbeats(namespace, entity, environ=self._environ)
            except SDK_ERRORS as error:
                errors[target] = describe(error)
                continue
            latest[target] = {origin: beat.published for origin, beat in found.items()}
        reports = []
        for path in paths:
            published = latest.get(path.target, {}).get(path.origin)
            age = None if published is None else max(0.0, (now - published).total_seconds())
            reports.append(HeartbeatReport(path.origin, path.target, age, errors.get(path.target)))
        return reports

    def close(self) -> None:
        for client in self._clients.values():
            client.close()


__all__ = [
    "PEEK_CAP",
    "Count",
    "HeartbeatReport",
    "PartitionLag",
    "StatusReport",
    "TaskReport",
    "read_status",
]
