"""Senders that put replicas on Service Bus queues/topics and event hubs with the SDKs.

Clients are created once per namespace and reused across invocations (the SDK opens a
connection, with its own token exchange, per client). Messages are grouped by partition key
(Service Bus: session id, else partition key), first-seen order kept, and each group is sent in
as few batches as fit: a batch on a partitioned entity must not mix keys, and order per key is
what both services promise. SDK errors are translated by :mod:`replication.transport.errors`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from azure.eventhub import EventHubProducerClient
from azure.servicebus import ServiceBusClient
from azure.servicebus.exceptions import MessageSizeExceededError

from patterns import Target
from replication.envelope import Envelope
from replication.exceptions import ForwardError, PermanentForwardError
from replication.runtime import TargetSender, TaskRunner
from replication.topology import EntityRef, NamespaceKind, NamespaceSpec, ResolvedTask, Topology

from .connections import event_hub_client, servicebus_client
from .errors import translate
from .eventhubs import to_event_data
from .peek import ServiceBusPeeker
from .servicebus import replica_ids, to_servicebus_message

K = TypeVar("K")


def group_in_order(
    envelopes: Iterable[Envelope], key: Callable[[Envelope], K]
) -> list[tuple[K, list[Envelope]]]:
    """Envelopes grouped by ``key``; groups in first-seen order, members in input order."""
    groups: dict[K, list[Envelope]] = {}
    for envelope in envelopes:
        groups.setdefault(key(envelope), []).append(envelope)
    return list(groups.items())


def _too_large(envelope: Envelope, target: str) -> PermanentForwardError:
    error = PermanentForwardError(
        f"message {envelope.message_id} ({envelope.size} bytes) exceeds the target's maximum "
        "message size",
        target=target,
    )
    error.reason = "MessageSizeExceeded"
    return error


def fill_batches(
    items: Sequence[tuple[Envelope, Any]],
    *,
    new_batch: Callable[[], Any],
    add: Callable[[Any, Any], None],
    send: Callable[[Any], None],
    overflow: type[Exception],
    label: str,
) -> None:
    """Send SDK messages in as few size-limited batches as they fit, in order.

    A message that does not fit even into an empty batch raises a permanent
    ``MessageSizeExceeded`` error naming it; the runtime then dead-letters it alone.
    """
    batch = new_batch()
    for envelope, message in items:
        try:
            add(batch, message)
            continue
        except overflow:
            if len(batch) == 0:
                raise _too_large(envelope, label) from None
        send(batch)
        batch = new_batch()
        try:
            add(batch, message)
        except overflow:
            raise _too_large(envelope, label) from None
    if len(batch):
        send(batch)


class ServiceBusTargetSender:
    """Sends to one Service Bus queue or topic."""

    def __init__(self, client: ServiceBusClient, entity: str, *, label: str) -> None:
        self._sender = client.get_queue_sender(entity)
        self._label = label
        self._lock = threading.Lock()

    def send(self, envelopes: Sequence[Envelope]) -> None:
        with self._lock:
            try:
                for _, group in group_in_order(envelopes, lambda e: replica_ids(e)[1:]):
                    self._send_group(group)
            except ForwardError:
                raise
            except Exception as error:
                raise translate(error, target=self._label) from error

    def _send_group(self, group: list[Envelope]) -> None:
        fill_batches(
            [(envelope, to_servicebus_message(envelope)) for envelope in group],
            new_batch=self._sender.create_message_batch,
            add=lambda batch, message: batch.add_message(message),
            send=self._sender.send_messages,
            overflow=MessageSizeExceededError,
            label=self._label,
        )

    def close(self) -> None:
        self._sender.close()


class EventHubTargetSender:
    """Sends to one event hub; the envelope's partition key selects the partition."""

    def __init__(self, producer: EventHubProducerClient, *, label: str) -> None:
        self._producer = producer
        self._label = label
        self._lock = threading.Lock()

    def send(self, envelopes: Sequence[Envelope]) -> None:
        with self._lock:
            try:
                for key, group in group_in_order(envelopes, lambda e: e.partition_key):
                    self._send_group(key, group)
            except ForwardError:
                raise
            except Exception as error:
                raise translate(error, target=self._label) from error

    def _send_group(self, key: str | None, group: list[Envelope]) -> None:
        fill_batches(
            [(envelope, to_event_data(envelope)) for envelope in group],
            new_batch=lambda: self._producer.create_batch(partition_key=key),
            add=lambda batch, event: batch.add(event),
            send=self._producer.send_batch,
            # EventDataBatch.add reports "too large for the batch" as ValueError.
            overflow=ValueError,
            label=self._label,
        )

    def close(self) -> None:
        self._producer.close()


class _LazySender:
    """A target whose SDK client is created on the first send (not when the app is indexed)."""

    def __init__(self, factory: SenderFactory, target: Target) -> None:
        self._factory = factory
        self._target = target

    def send(self, envelopes: Sequence[Envelope]) -> None:
        self._factory.sender(self._target.namespace, self._target.entity).send(envelopes)


class SenderFactory:
    """Builds and caches one client per namespace and one sender per target entity."""

    def __init__(self, topology: Topology, environ: dict[str, str] | None = None) -> None:
        self._topology = topology
        self._environ = environ
        self._servicebus_clients: dict[str, ServiceBusClient] = {}
        self._senders: dict[tuple[str, str], Any] = {}
        self._peekers: dict[str, ServiceBusPeeker] = {}
        self._lock = threading.Lock()

    def sender(
        self, namespace_name: str, entity: str
    ) -> ServiceBusTargetSender | EventHubTargetSender:
        """The (cached) sender for ``namespace_name/entity``."""
        with self._lock:
            key = (namespace_name, entity)
            if key not in self._senders:
                namespace = self._topology.namespace(namespace_name)
                self._senders[key] = self._create(namespace, entity)
            sender: ServiceBusTargetSender | EventHubTargetSender = self._senders[key]
            return sender

    def runner(self, task: ResolvedTask) -> TaskRunner:
        """The task's runner, with senders for its targets and dead-letter target that connect
        on their first send."""
        senders: dict[Target, TargetSender] = {
            target: _LazySender(self, target) for target in task.context.targets
        }
        parking = task.spec.dead_letter_target
        dead_letter = (
            _LazySender(self, Target(parking.namespace, parking.entity)) if parking else None
        )
        return TaskRunner(task, senders, dead_letter)

    def peeker(self, source: EntityRef) -> ServiceBusPeeker:
        """The (cached) peeker of a Service Bus source, for re-reading a trigger's batch."""
        with self._lock:
            label = source.describe()
            peeker = self._peekers.get(label)
            if peeker is None:
                namespace = self._topology.namespace(source.namespace)
                peeker = ServiceBusPeeker(
                    self._servicebus_client(namespace),
                    source.entity,
                    subscription=source.subscription,
                    dead_letter_queue=source.dead_letter_queue,
                    label=label,
                )
                self._peekers[label] = peeker
            return peeker

    def _servicebus_client(self, namespace: NamespaceSpec) -> ServiceBusClient:
        client = self._servicebus_clients.get(namespace.name)
        if client is None:
            client = servicebus_client(namespace, self._environ)
            self._servicebus_clients[namespace.name] = client
        return client

    def _create(self, namespace: NamespaceSpec, entity: str) -> Any:
        label = f"{namespace.name}/{entity}"
        if namespace.kind is NamespaceKind.EVENTHUBS:
            producer = event_hub_client(EventHubProducerClient, namespace, entity, self._environ)
            return EventHubTargetSender(producer, label=label)
        return ServiceBusTargetSender(self._servicebus_client(namespace), entity, label=label)

    def close(self) -> None:
        """Close every sender and client (at shutdown; the Functions host never calls it)."""
        with self._lock:
            for sender in self._senders.values():
                sender.close()
            for peeker in self._peekers.values():
                peeker.close()
            for client in self._servicebus_clients.values():
                client.close()
            self._senders.clear()
            self._peekers.clear()
            self._servicebus_clients.clear()


__all__ = ["EventHubTargetSender", "SenderFactory", "ServiceBusTargetSender", "group_in_order"]
