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
from typing import TYPE_CHECKING, Any, TypeVar

from azure.servicebus import ServiceBusClient
from azure.servicebus.exceptions import MessageSizeExceededError

from replication.envelope import Envelope, PropertyUpdate
from replication.exceptions import ForwardError, PermanentForwardError
from replication.settings import Settings
from replication.topology import (
    EntityRef,
    NamespaceKind,
    NamespaceSpec,
    Topology,
    requires_session,
)

from .connections import event_hub_client, servicebus_client
from .errors import translate
from .servicebus import ServiceBusPeeker, replica_ids, to_servicebus_message

if TYPE_CHECKING:
    # azure-eventhub (with this package's Event Hubs adapters) is imported where an event hub
    # is a target: a topology of Service Bus namespaces only does not load it.
    from azure.eventhub import EventHubProducerClient

K = TypeVar("K")
T = TypeVar("T")


def group_in_order(items: Iterable[T], key: Callable[[T], K]) -> list[tuple[K, list[T]]]:
    """Items grouped by ``key``; groups in first-seen order, members in input order."""
    groups: dict[K, list[T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return list(groups.items())


def _culprit(
    reason: str, problem: str, index: int, target: str, acknowledged: set[int]
) -> PermanentForwardError:
    """The permanent error of the message at ``index`` alone (the runner parks only it)."""
    return PermanentForwardError(
        problem, target=target, acknowledged=frozenset(acknowledged), culprit=index, reason=reason
    )


def _too_large(
    envelope: Envelope,
    index: int,
    target: str,
    acknowledged: set[int],
    update: PropertyUpdate | None = None,
) -> PermanentForwardError:
    if update is not None:
        envelope = update.applied(envelope)  # its size as sent
    problem = (
        f"message {replica_ids(envelope)[0]} ({envelope.size} bytes) exceeds the target's maximum "
        "message size"
    )
    return _culprit("MessageSizeExceeded", problem, index, target, acknowledged)


def fill_batches(
    items: Sequence[tuple[int, Envelope, Any]],
    acknowledged: set[int],
    *,
    new_batch: Callable[[], Any],
    add: Callable[[Any, Any], None],
    send: Callable[[Any], None],
    overflow: type[Exception],
    label: str,
    update: PropertyUpdate | None = None,
) -> None:
    """Send SDK messages in as few size-limited batches as they fit, in order.

    ``items`` are (position in the caller's sequence, envelope, SDK message built with
    ``update``); the positions of the messages of every batch the service accepted are added
    to ``acknowledged``. A message that does not fit even into an empty batch raises a
    permanent ``MessageSizeExceeded`` error naming it as the culprit, before anything after it
    is sent.
    """
    batch = new_batch()
    members: list[int] = []
    for index, envelope, message in items:
        try:
            add(batch, message)
            members.append(index)
            continue
        except overflow:
            if not members:
                raise _too_large(envelope, index, label, acknowledged, update) from None
        send(batch)
        acknowledged.update(members)
        batch, members = new_batch(), []
        try:
            add(batch, message)
            members.append(index)
        except overflow:
            raise _too_large(envelope, index, label, acknowledged, update) from None
    if members:
        send(batch)
        acknowledged.update(members)


def _send_grouped(
    envelopes: Sequence[Envelope],
    key: Callable[[Envelope], object],
    send_group: Callable[[object, list[tuple[int, Envelope]], set[int]], None],
    label: str,
) -> None:
    """Send ``envelopes`` group by group; on failure raise the translated error with the
    positions already acknowledged."""
    acknowledged: set[int] = set()
    try:
        for group_key, group in group_in_order(enumerate(envelopes), lambda item: key(item[1])):
            send_group(group_key, group, acknowledged)
    except ForwardError:
        raise
    except Exception as error:
        raise translate(error, target=label, acknowledged=frozenset(acknowledged)) from error


def _without_session(
    envelope: Envelope, index: int, target: str, acknowledged: set[int]
) -> PermanentForwardError:
    problem = (
        f"message {replica_ids(envelope)[0]} has no SessionId (nor a partition key to take it "
        "from), and the target requires sessions"
    )
    return _culprit("SessionIdMissing", problem, index, target, acknowledged)


class ServiceBusTargetSender:
    """Sends to one Service Bus queue or topic.

    ``requires_session``: the target is a session-enabled queue, which Service Bus refuses
    messages without SessionId; such a message is reported as the culprit of a permanent
    ``SessionIdMissing`` error (the runner parks it alone) before it is sent.
    """

    def __init__(
        self, client: ServiceBusClient, entity: str, *, label: str, requires_session: bool = False
    ) -> None:
        self._sender = client.get_queue_sender(entity)
        self._label = label
        self._requires_session = requires_session
        self._lock = threading.Lock()

    def send(
        self,
        envelopes: Sequence[Envelope],
        *,
        timeout: float | None = None,
        update: PropertyUpdate | None = None,
    ) -> None:
        """Send in order; ``timeout`` bounds each SDK send (seconds, retries included);
        ``update`` is applied to every message's application properties."""
        with self._lock:
            _send_grouped(
                envelopes,
                lambda e: replica_ids(e)[1:],
                lambda key, group, acknowledged: self._send_group(
                    group, acknowledged, timeout, update
                ),
                self._label,
            )

    def _send_group(
        self,
        group: list[tuple[int, Envelope]],
        acknowledged: set[int],
        timeout: float | None,
        update: PropertyUpdate | None,
    ) -> None:
        if self._requires_session:
            index, envelope = group[0]
            if replica_ids(envelope)[1] is None:  # the whole group shares its (missing) SessionId
                raise _without_session(envelope, index, self._label, acknowledged)
        fill_batches(
            [(i, envelope, to_servicebus_message(envelope, update)) for i, envelope in group],
            acknowledged,
            new_batch=self._sender.create_message_batch,
            add=lambda batch, message: batch.add_message(message),
            send=lambda batch: self._sender.send_messages(batch, timeout=timeout),
            overflow=MessageSizeExceededError,
            label=self._label,
            update=update,
        )

    def close(self) -> None:
        self._sender.close()


def event_hub_partition_key(envelope: Envelope) -> str | None:
    """The partition key of an event replica: the envelope's partition key, else its SessionId,
    so that the messages of a Service Bus session stay in order on one partition (the official
    .NET replication library keys by ``PartitionKey ?? SessionId`` too)."""
    return envelope.partition_key if envelope.partition_key is not None else envelope.session_id


class EventHubTargetSender:
    """Sends to one event hub; :func:`event_hub_partition_key` selects the partition."""

    def __init__(self, producer: EventHubProducerClient, *, label: str) -> None:
        self._producer = producer
        self._label = label
        self._lock = threading.Lock()

    def send(
        self,
        envelopes: Sequence[Envelope],
        *,
        timeout: float | None = None,
        update: PropertyUpdate | None = None,
    ) -> None:
        """Send in order; ``timeout`` bounds each SDK send (seconds, retries included);
        ``update`` is applied to every event's application properties."""
        with self._lock:
            _send_grouped(
                envelopes,
                event_hub_partition_key,
                lambda key, group, acknowledged: self._send_group(
                    key, group, acknowledged, timeout, update
                ),
                self._label,
            )

    def _send_group(
        self,
        key: object,
        group: list[tuple[int, Envelope]],
        acknowledged: set[int],
        timeout: float | None,
        update: PropertyUpdate | None,
    ) -> None:
        from .eventhubs import to_event_data  # loaded with the producer (see the imports)

        partition_key = key if isinstance(key, str) else None
        fill_batches(
            [(index, envelope, to_event_data(envelope, update)) for index, envelope in group],
            acknowledged,
            new_batch=lambda: self._producer.create_batch(partition_key=partition_key),
            add=lambda batch, event: batch.add(event),
            send=lambda batch: self._producer.send_batch(batch, timeout=timeout),
            # EventDataBatch.add reports "too large for the batch" as ValueError.
            overflow=ValueError,
            label=self._label,
            update=update,
        )

    def close(self) -> None:
        self._producer.close()


SENDER_RETRIES: dict[str, Any] = {"retry_total": 1, "retry_backoff_factor": 0.5}
"""SDK retry options of the sending clients: one quick retry inside the SDK (a dropped
connection is re-opened at once); longer outages are ridden out by the runner, whose backoff
stays within the invocation's budget. The SDK's default (3 retries, backoff from 0.8 s) can
spend longer than that budget on a single send to a namespace that is down."""


class SenderFactory:
    """Builds and caches one client per namespace and one sender per target entity."""

    def __init__(self, topology: Topology, settings: Settings) -> None:
        self._topology = topology
        self._settings = settings
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
            client = servicebus_client(namespace, self._settings, **SENDER_RETRIES)
            self._servicebus_clients[namespace.name] = client
        return client

    def _create(self, namespace: NamespaceSpec, entity: str) -> Any:
        label = f"{namespace.name}/{entity}"
        if namespace.kind is NamespaceKind.EVENTHUBS:
            from azure.eventhub import EventHubProducerClient

            producer = event_hub_client(
                EventHubProducerClient, namespace, entity, self._settings, **SENDER_RETRIES
            )
            return EventHubTargetSender(producer, label=label)
        return ServiceBusTargetSender(
            self._servicebus_client(namespace),
            entity,
            label=label,
            requires_session=requires_session(
                self._topology, EntityRef(namespace=namespace.name, entity=entity)
            ),
        )

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


__all__ = [
    "EventHubTargetSender",
    "SenderFactory",
    "ServiceBusTargetSender",
    "event_hub_partition_key",
    "group_in_order",
]
