"""What a switch waits for, read with the data-plane SDKs: backlogs, unreplicated messages, drain.

- :func:`replication_backlog`: per task, the messages its source still holds (Service Bus, by
  peeking) or the events after its checkpoints (Event Hubs, from ``AzureWebJobsStorage``), as
  ``python -m replication status`` reads them (:func:`replication.transport.status.read_status`).
- :func:`unreplicated` names them: the MessageIds waiting in a Service Bus task's source (at
  most ``cap``); for an event hub source the count per partition (events are not listed).
- :func:`direct_messages`: in the queues and subscriptions an application reads, the messages
  published *directly* to that namespace (no ``repl-origin``): what a failback must let the
  consumers drain, since replication does not copy them back.
- :func:`last_enqueued`: per partition of an event hub, the newest sequence number.

Peeking settles nothing and costs no delivery count. Every function raises the SDK's error when
a namespace cannot be read; the command reports it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from azure.eventhub import EventHubConsumerClient
from azure.servicebus import ServiceBusReceivedMessage, ServiceBusReceiver

from replication.properties import REPL_ORIGIN
from replication.topology import EntityRef, NamespaceKind, Topology

from ..connections import event_hub_client, servicebus_client
from ..status import CLIENT_OPTIONS, PEEK_CAP, read_status

PAGE = 250


@dataclasses.dataclass(frozen=True, slots=True)
class Backlog:
    """What one task's source holds that is not replicated yet (``count`` None: unknown)."""

    task: str
    count: int | None
    capped: bool = False
    error: str | None = None

    def __str__(self) -> str:
        if self.error:
            return f"unknown ({self.error})"
        if self.count is None:
            return "unknown"
        return f"{self.count}+" if self.capped else str(self.count)


def replication_backlog(
    topology: Topology, tasks: tuple[str, ...], environ: Mapping[str, str]
) -> dict[str, Backlog]:
    """The backlog of each of ``tasks`` (by name)."""
    report = read_status(topology, environ)
    found: dict[str, Backlog] = {}
    for task in report.tasks:
        if task.task not in tasks:
            continue
        if task.error:
            found[task.task] = Backlog(task.task, None, error=task.error)
        elif task.backlog is not None:
            found[task.task] = Backlog(task.task, task.backlog.value, task.backlog.capped)
        elif task.partitions is not None:
            lags = [lag.lag for lag in task.partitions]
            if any(lag is None for lag in lags):
                found[task.task] = Backlog(
                    task.task, None, error="no checkpoints (is AzureWebJobsStorage set?)"
                )
            else:
                found[task.task] = Backlog(task.task, sum(lag or 0 for lag in lags))
        else:
            found[task.task] = Backlog(task.task, None, error="not readable")
    return found


def _pages(receiver: ServiceBusReceiver, cap: int) -> Iterator[ServiceBusReceivedMessage]:
    sequence, seen = 0, 0
    with receiver:
        while seen < cap:
            page = receiver.peek_messages(
                max_message_count=min(PAGE, cap - seen), sequence_number=sequence
            )
            if not page:
                return
            seen += len(page)
            sequence = (page[-1].sequence_number or 0) + 1
            yield from page


def _receiver(client: Any, ref: EntityRef) -> ServiceBusReceiver:
    if ref.subscription is not None:
        receiver: ServiceBusReceiver = client.get_subscription_receiver(
            ref.entity, ref.subscription
        )
        return receiver
    queue: ServiceBusReceiver = client.get_queue_receiver(ref.entity)
    return queue


def unreplicated(
    topology: Topology, task: str, environ: Mapping[str, str], *, cap: int = PEEK_CAP
) -> tuple[list[str], dict[str, int]]:
    """(MessageIds waiting in a Service Bus source, events per partition after the checkpoint
    of an event hub source) of ``task``; one of the two is empty."""
    spec = next(t for t in topology.tasks if t.name == task)
    namespace = topology.namespace(spec.source.namespace)
    if namespace.kind is NamespaceKind.EVENTHUBS:
        backlog = read_status(topology, environ)
        for report in backlog.tasks:
            if report.task == task and report.partitions is not None:
                return [], {lag.partition: lag.lag or 0 for lag in report.partitions}
        return [], {}
    with servicebus_client(namespace, environ, **CLIENT_OPTIONS) as client:
        receiver = _receiver(client, spec.source)
        return [str(message.message_id) for message in _pages(receiver, cap)], {}


def direct_messages(
    topology: Topology,
    refs: tuple[EntityRef, ...],
    environ: Mapping[str, str],
    *,
    cap: int = PEEK_CAP,
) -> dict[str, int]:
    """Per queue or subscription of ``refs`` (Service Bus only), the messages without
    ``repl-origin``: published there directly, never copied back by replication."""
    counts: dict[str, int] = {}
    for ref in refs:
        namespace = topology.namespace(ref.namespace)
        if namespace.kind is not NamespaceKind.SERVICEBUS:
            continue
        with servicebus_client(namespace, environ, **CLIENT_OPTIONS) as client:
            counts[ref.describe()] = sum(
                1
                for message in _pages(_receiver(client, ref), cap)
                if not _has(message.application_properties, REPL_ORIGIN)
            )
    return counts


def _has(properties: Mapping[Any, Any] | None, name: str) -> bool:
    if not properties:
        return False
    return name in properties or name.encode() in properties


def last_enqueued(topology: Topology, ref: EntityRef, environ: Mapping[str, str]) -> dict[str, int]:
    """Per partition of the event hub ``ref``, the newest sequence number (-1: empty)."""
    namespace = topology.namespace(ref.namespace)
    with event_hub_client(
        EventHubConsumerClient,
        namespace,
        ref.entity,
        environ,
        consumer_group="$Default",
        **CLIENT_OPTIONS,
    ) as client:
        return {
            str(partition): int(
                client.get_partition_properties(partition)["last_enqueued_sequence_number"]
            )
            for partition in client.get_partition_ids()
        }


__all__ = ["Backlog", "direct_messages", "last_enqueued", "replication_backlog", "unreplicated"]
