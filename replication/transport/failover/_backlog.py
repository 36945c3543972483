"""What a switch waits for, read with the data-plane SDKs: backlogs, unreplicated messages, drain.

:class:`BacklogReader` keeps one client (and one peek receiver per entity) per namespace for
the length of a switch, which polls once a second:

- :meth:`~BacklogReader.backlog`: what a task's source still holds, i.e. has not replicated:
  for a Service Bus source the messages in the queue or subscription it reads (by peeking,
  locked ones included, up to ``cap``); for an event hub source the events after the task's
  checkpoints in ``AzureWebJobsStorage`` (what the local host and the Functions host write);
- :meth:`~BacklogReader.unreplicated`: their MessageIds (Service Bus), or the count per
  partition (Event Hubs: events are not listed);
- :meth:`~BacklogReader.direct_messages`: in the queues and subscriptions an application reads,
  the messages published *directly* to that namespace (no ``repl-origin``), which replication
  does not copy back and a failback must let the consumers drain;
- :meth:`~BacklogReader.last_enqueued`: per partition of an event hub, the newest sequence number.

Peeking settles nothing and costs no delivery count. Every method raises the SDK's error when
a namespace cannot be read; the switch reports it. (``python -m replication status`` reads the
same figures for every task at once; a switch needs a few of them, often.)
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from azure.eventhub import EventHubConsumerClient
from azure.servicebus import ServiceBusClient, ServiceBusReceivedMessage, ServiceBusReceiver

from replication.properties import REPL_ORIGIN
from replication.settings import Settings
from replication.topology import EntityRef, NamespaceKind, Topology

from ..connections import event_hub_client, servicebus_client
from ..eventhubs import checkpoint_store

PAGE = 250
CAP = 5000
CLIENT_OPTIONS: dict[str, Any] = {"retry_total": 1, "retry_backoff_factor": 0.5}


@dataclasses.dataclass(frozen=True, slots=True)
class Backlog:
    """What one task's source holds that is not replicated yet."""

    task: str
    count: int
    capped: bool = False

    def __str__(self) -> str:
        return f"{self.count}+" if self.capped else str(self.count)


class BacklogReader:
    """Reads backlogs of one topology's entities (see the module docstring); close it."""

    def __init__(self, topology: Topology, environ: Mapping[str, str], *, cap: int = CAP) -> None:
        self._topology = topology
        self._settings = Settings.from_environ(environ, connections=topology.connections)
        self._cap = cap
        self._clients: dict[str, ServiceBusClient] = {}
        self._receivers: dict[str, ServiceBusReceiver] = {}
        self._checkpoints = checkpoint_store(self._settings)

    def _client(self, namespace: str) -> ServiceBusClient:
        if namespace not in self._clients:
            spec = self._topology.namespace(namespace)
            self._clients[namespace] = servicebus_client(spec, self._settings, **CLIENT_OPTIONS)
        return self._clients[namespace]

    def _receiver(self, ref: EntityRef) -> ServiceBusReceiver:
        key = ref.describe()
        if key not in self._receivers:
            client = self._client(ref.namespace)
            receiver: ServiceBusReceiver = (
                client.get_subscription_receiver(ref.entity, ref.subscription)
                if ref.subscription is not None
                else client.get_queue_receiver(ref.entity)
            )
            self._receivers[key] = receiver
        return self._receivers[key]

    def _pages(self, ref: EntityRef) -> Iterator[ServiceBusReceivedMessage]:
        receiver = self._receiver(ref)
        # From 1, not 0: the SDK takes 0 as "where this receiver's last peek ended".
        sequence, seen = 1, 0
        try:
            while seen < self._cap:
                page = receiver.peek_messages(
                    max_message_count=min(PAGE, self._cap - seen), sequence_number=sequence
                )
                if not page:
                    return
                seen += len(page)
                sequence = (page[-1].sequence_number or 0) + 1
                yield from page
        except Exception:
            self._drop(ref)
            raise

    def _drop(self, ref: EntityRef) -> None:
        receiver = self._receivers.pop(ref.describe(), None)
        if receiver is not None:
            with contextlib.suppress(Exception):  # a dead connection may not close cleanly
                receiver.close()

    def _source(self, task: str) -> EntityRef:
        return next(t.source for t in self._topology.tasks if t.name == task)

    def backlog(self, task: str) -> Backlog:
        """What ``task``'s source holds that is not replicated.

        Raises:
            ValueError: an event hub source without readable checkpoints.
        """
        source = self._source(task)
        if self._topology.namespace(source.namespace).kind is NamespaceKind.EVENTHUBS:
            return Backlog(task, sum(self._partition_lags(source).values()))
        count = sum(1 for _ in self._pages(source))
        return Backlog(task, count, capped=count >= self._cap)

    def unreplicated(self, task: str) -> tuple[list[str], dict[str, int]]:
        """(MessageIds waiting in a Service Bus source, events per partition after the
        checkpoints of an event hub source) of ``task``; one of the two is empty."""
        source = self._source(task)
        if self._topology.namespace(source.namespace).kind is NamespaceKind.EVENTHUBS:
            return [], self._partition_lags(source)
        return self.message_ids(source), {}

    def message_ids(self, ref: EntityRef) -> list[str]:
        """The MessageIds waiting in a Service Bus queue or subscription (peeked)."""
        return [str(message.message_id) for message in self._pages(ref)]

    def direct_messages(self, refs: tuple[EntityRef, ...]) -> dict[str, int]:
        """Per Service Bus queue or subscription of ``refs``, the messages without
        ``repl-origin`` (published there directly)."""
        return {
            ref.describe(): sum(
                1
                for message in self._pages(ref)
                if not _has(message.application_properties, REPL_ORIGIN)
            )
            for ref in refs
            if self._topology.namespace(ref.namespace).kind is NamespaceKind.SERVICEBUS
        }

    def last_enqueued(self, ref: EntityRef) -> dict[str, int]:
        """Per partition of the event hub ``ref``, the newest sequence number (-1: empty)."""
        with self._event_hub(ref, "$Default") as client:
            return {
                str(p): int(client.get_partition_properties(p)["last_enqueued_sequence_number"])
                for p in client.get_partition_ids()
            }

    def _event_hub(self, ref: EntityRef, group: str) -> Any:
        namespace = self._topology.namespace(ref.namespace)
        return event_hub_client(
            EventHubConsumerClient,
            namespace,
            ref.entity,
            self._settings,
            consumer_group=group,
            **CLIENT_OPTIONS,
        )

    def _partition_lags(self, source: EntityRef) -> dict[str, int]:
        if self._checkpoints is None:
            raise ValueError(
                "the replication checkpoints of an event hub source are in AzureWebJobsStorage, "
                "which is not set"
            )
        group = source.consumer_group or "$Default"
        with self._event_hub(source, group) as client:
            host = client._address.hostname  # what the event processor checkpoints under
            done = {
                str(c["partition_id"]): int(c["sequence_number"])
                for c in self._checkpoints.list_checkpoints(host, source.entity, group)
            }
            lags = {}
            for partition in client.get_partition_ids():
                last = int(
                    client.get_partition_properties(partition)["last_enqueued_sequence_number"]
                )
                lags[str(partition)] = max(0, last - done.get(str(partition), -1))
            return lags

    def close(self) -> None:
        for key in list(self._receivers):
            receiver = self._receivers.pop(key)
            with contextlib.suppress(Exception):
                receiver.close()
        for client in self._clients.values():
            client.close()
        self._clients.clear()


def _has(properties: Mapping[Any, Any] | None, name: str) -> bool:
    if not properties:
        return False
    return name in properties or name.encode() in properties


__all__ = ["Backlog", "BacklogReader"]
