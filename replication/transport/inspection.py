"""What entities hold, read with the data-plane SDKs without settling anything.

The SDK side of the figures an operator reads before a failover
(:mod:`replication.operations`, which decides what to read for each task and what it means;
``python -m replication status`` and ``failover|failback`` both read through it), one
:class:`SourceInspector` per command:

- :meth:`SourceInspector.peek`: the messages of a queue, subscription or dead-letter queue,
  *by peeking* (the data-plane SDK has no message count; that is the management API, which
  needs rights the replicator does not have), up to a cap: their MessageIds, enqueue times and
  application properties. Locked and scheduled messages are included;
- :meth:`SourceInspector.partitions`: per event hub partition, the first retained and the last
  enqueued sequence numbers, the last enqueue time, and the sequence number checkpointed for a
  consumer group in the checkpoint store ``AzureWebJobsStorage`` names
  (:mod:`replication.transport.eventhubs`; what the local host and the Functions host write);
- :meth:`SourceInspector.enqueued_time`: when one event was enqueued (the oldest one a task has
  not replicated), read with a plain receiver of ``$Default``
  (:class:`~replication.transport.eventhubs.EventReader`);
- :meth:`SourceInspector.latest_heartbeats`: the publish time of the newest heartbeat per
  origin that reached a namespace (its ``heartbeat-status`` subscription, or its heartbeat
  event hub's look-back window).

Clients are created once per namespace and kept, with one peek receiver per entity, for the
inspector's life (a switch polls once a second); they retry once, so an unreachable namespace
costs seconds. Whatever the SDK raises while reading (its own errors, an ``AzureError``, an
``OSError``) becomes :class:`~replication.exceptions.SourceUnreadableError` with the SDK
error's class and first line as its message; a receiver that failed is dropped and made again
on the next read.

**Deadlines.** Every read of a namespace runs on that namespace's
:class:`~replication.transport.deadlines.CallLane` and is given up after ``call_timeout``
(default 10 s) without an answer (a long peek restarts it with each page): a namespace that
accepts connections and answers nothing (frozen, blackholed) makes the read fail as
unreachable (a ``CallTimeoutError`` in the :class:`SourceUnreadableError`) instead of hanging
``status`` or a switch. Its clients are then dropped (closed when the SDK returns) and made
again on the next read; while the overdue call goes on, the next read of that namespace waits
for it within its own deadline rather than opening another connection. The checkpoint store is
read with the storage SDK's timeouts, bounded the same way. :meth:`SourceInspector.close`
never waits for a namespace that stopped answering.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any, TypeVar

from azure.core.exceptions import AzureError
from azure.eventhub import EventHubConsumerClient
from azure.eventhub.exceptions import EventHubError
from azure.eventhub.extensions.checkpointstoreblob import BlobCheckpointStore
from azure.servicebus import ServiceBusClient, ServiceBusReceiver
from azure.servicebus.exceptions import ServiceBusError

from replication.exceptions import CallTimeoutError, ConfigurationError, SourceUnreadableError
from replication.runtime import describe
from replication.settings import Settings
from replication.topology import DEFAULT_CONSUMER_GROUP, EntityRef, NamespaceKind, Topology

from .connections import event_hub_client, servicebus_client
from .deadlines import DEFAULT_CALL_TIMEOUT, CallLane, seconds
from .eventhubs import EventReader, checkpoint_store, read_latest_heartbeats
from .servicebus import entity_receiver, peek_latest_heartbeats, peek_pages

CLIENT_OPTIONS: dict[str, Any] = {"retry_total": 1, "retry_backoff_factor": 0.5}

T = TypeVar("T")

READ_ERRORS = (ServiceBusError, EventHubError, AzureError, OSError)
"""What reading may raise when a namespace is unreachable, refuses us or lacks the entity."""


@contextlib.contextmanager
def _unreadable() -> Iterator[None]:
    try:
        yield
    except READ_ERRORS as error:
        raise SourceUnreadableError(describe(error)) from error


@dataclasses.dataclass(frozen=True, slots=True)
class PeekedMessage:
    """One message seen by peeking: what the figures need of it."""

    message_id: str | None
    enqueued_time: datetime | None
    properties: Mapping[Any, Any]
    """Application properties as the SDK hands them out (keys may be ``bytes``)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Contents:
    """The messages of an entity, as far as peeked; ``capped`` when the peek stopped at the
    cap (the entity may hold more)."""

    messages: tuple[PeekedMessage, ...]
    capped: bool


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionPosition:
    """One event hub partition: what it retains, and where a consumer group's checkpoint is."""

    partition: str
    first: int
    """The first retained sequence number."""
    last_enqueued: int
    """The newest sequence number (-1: the partition never held an event)."""
    last_enqueued_time: datetime | None
    checkpoint: int | None
    """The checkpointed sequence number (None: no checkpoint, or no checkpoint store)."""


class _Namespace:
    """One namespace's Service Bus client and peek receivers, used on the namespace's lane."""

    def __init__(self, name: str, lane: CallLane) -> None:
        self.name = name
        self.lane = lane
        self.client: ServiceBusClient | None = None
        self.receivers: dict[tuple[str, bool], ServiceBusReceiver] = {}

    def close(self) -> None:
        """Close every receiver, side by side (each close waits for the SDK's keep-alive thread
        of a receiver without prefetch, up to a second), then the client."""
        receivers = [self.receivers.pop(key) for key in list(self.receivers)]
        closing = [
            threading.Thread(target=_close_quietly, args=(receiver,), daemon=True)
            for receiver in receivers
        ]
        for thread in closing:
            thread.start()
        for thread in closing:
            thread.join(timeout=10)
        if self.client is not None:
            _close_quietly(self.client)
            self.client = None


class SourceInspector:
    """Reads contents and positions of a topology's entities, each read of a namespace bounded
    by ``call_timeout`` (see the module docstring); :meth:`close` closes its clients."""

    def __init__(
        self,
        topology: Topology,
        settings: Settings,
        *,
        call_timeout: timedelta | float = DEFAULT_CALL_TIMEOUT,
    ) -> None:
        self._topology = topology
        self._settings = settings
        self.call_timeout = seconds(call_timeout)
        self._namespaces: dict[str, _Namespace] = {}
        self._store: BlobCheckpointStore | None = None
        self._store_read = False

    def _namespace(self, name: str) -> _Namespace:
        if name not in self._namespaces:
            lane = CallLane(self._endpoint(name), name=f"inspect {name}")
            self._namespaces[name] = _Namespace(name, lane)
        return self._namespaces[name]

    def _endpoint(self, name: str) -> str:
        """The key of the namespace's calls: its connection setting's endpoint when it has a
        connection string, else its host name."""
        spec = self._topology.namespace(name)
        secret = self._settings.connection(spec.connection).secret()
        host = _endpoint_in(secret) if secret else None
        return host or spec.fully_qualified_namespace or name

    def _on_lane(self, name: str, read: Callable[[_Namespace], T], what: str) -> T:
        """``read`` on the namespace's lane within the deadline; an overdue read drops the
        namespace's clients (closed once the SDK returns)."""
        namespace = self._namespace(name)
        try:
            return namespace.lane.run(
                lambda: read(namespace), timeout=self.call_timeout, what=f"{name}: {what}"
            )
        except CallTimeoutError:
            del self._namespaces[name]
            namespace.lane.retire(namespace.close)
            raise

    def _client(self, namespace: _Namespace) -> ServiceBusClient:
        if namespace.client is None:
            spec = self._topology.namespace(namespace.name)
            namespace.client = servicebus_client(spec, self._settings, **CLIENT_OPTIONS)
        return namespace.client

    def _receiver(
        self, namespace: _Namespace, ref: EntityRef, dead_letter: bool
    ) -> ServiceBusReceiver:
        key = (ref.describe(), dead_letter)
        if key not in namespace.receivers:
            namespace.receivers[key] = entity_receiver(
                self._client(namespace), ref.entity, ref.subscription, dead_letter=dead_letter
            )
        return namespace.receivers[key]

    def peek(self, ref: EntityRef, *, dead_letter: bool = False, cap: int) -> Contents:
        """The messages of ``ref`` (its dead-letter queue with ``dead_letter``), peeking at
        most ``cap``."""

        def read(namespace: _Namespace) -> list[PeekedMessage]:
            receiver = self._receiver(namespace, ref, dead_letter)
            messages: list[PeekedMessage] = []
            try:
                # From 1, not 0: the SDK takes 0 as "where this receiver's last peek ended".
                for page in peek_pages(receiver, start=1, limit=cap):
                    messages += (
                        PeekedMessage(
                            None if m.message_id is None else str(m.message_id),
                            m.enqueued_time_utc,
                            m.application_properties or {},
                        )
                        for m in page
                    )
            except READ_ERRORS:
                dropped = namespace.receivers.pop((ref.describe(), dead_letter), None)
                if dropped is not None:
                    _close_quietly(dropped)
                raise
            return messages

        with _unreadable():
            messages = self._on_lane(ref.namespace, read, f"peek {ref.describe()}")
        return Contents(tuple(messages), capped=len(messages) >= cap)

    def checkpoint_store(self) -> BlobCheckpointStore | None:
        """The checkpoint store of ``AzureWebJobsStorage`` (None: the setting is absent).

        Raises:
            ConfigurationError: the setting names a store that cannot be reached.
        """
        if not self._store_read:
            self._store = checkpoint_store(self._settings, timeout=self.call_timeout)
            self._store_read = True
        return self._store

    def partitions(self, source: EntityRef) -> list[PartitionPosition]:
        """Per partition of the event hub ``source``: what it retains, and the checkpoint of
        the source's consumer group (None without a checkpoint store or a checkpoint)."""
        namespace = self._topology.namespace(source.namespace)
        group = source.consumer_group or DEFAULT_CONSUMER_GROUP
        client = event_hub_client(
            EventHubConsumerClient,
            namespace,
            source.entity,
            self._settings,
            consumer_group=group,
            **CLIENT_OPTIONS,
        )
        checkpoints: dict[str, int] = {}
        with _unreadable():
            try:
                try:
                    store = self.checkpoint_store()
                except ConfigurationError as error:
                    raise SourceUnreadableError(str(error)) from error
                if store is not None:  # read here, with the storage SDK's own timeouts
                    host = client._address.hostname  # what the event processor checkpoints under
                    for checkpoint in store.list_checkpoints(host, source.entity, group):
                        checkpoints[str(checkpoint["partition_id"])] = int(
                            checkpoint["sequence_number"]
                        )
            except BaseException:
                _close_quietly(client)
                raise

            def read(_namespace: _Namespace) -> list[PartitionPosition]:
                with client:
                    positions = []
                    for partition in client.get_partition_ids():
                        properties = client.get_partition_properties(partition)
                        empty = bool(properties.get("is_empty"))
                        positions.append(
                            PartitionPosition(
                                partition=str(partition),
                                first=int(properties.get("beginning_sequence_number", 0)),
                                last_enqueued=-1
                                if empty
                                else int(properties["last_enqueued_sequence_number"]),
                                last_enqueued_time=None
                                if empty
                                else properties["last_enqueued_time_utc"],
                                checkpoint=checkpoints.get(str(partition)),
                            )
                        )
                    return positions

            return self._on_lane(source.namespace, read, f"partitions of {source.describe()}")

    def enqueued_time(self, ref: EntityRef, partition: str, sequence: int) -> datetime | None:
        """When the event ``sequence`` of ``partition`` of the event hub ``ref`` was enqueued
        (None: the hub no longer holds it)."""
        reader = EventReader(
            self._topology.namespace(ref.namespace),
            ref.entity,
            self._settings,
            wait_seconds=2.0,
            client_options=CLIENT_OPTIONS,
        )

        def read(_namespace: _Namespace) -> datetime | None:
            try:
                event = reader.read(partition, sequence)
            finally:
                reader.close()
            return None if event is None else event.enqueued_time

        with _unreadable():
            return self._on_lane(ref.namespace, read, f"event {sequence} of {ref.describe()}")

    def latest_heartbeats(
        self, namespace: str, entity: str, *, since: datetime
    ) -> dict[str, datetime]:
        """Publish time of the newest heartbeat per origin that reached ``namespace``'s
        heartbeat ``entity`` (what a Service Bus namespace's ``heartbeat-status``
        subscription holds; an event hub's events from ``since`` on)."""
        spec = self._topology.namespace(namespace)

        def read(_namespace: _Namespace) -> dict[str, Any]:
            if spec.kind is NamespaceKind.EVENTHUBS:
                return read_latest_heartbeats(
                    spec,
                    entity,
                    settings=self._settings,
                    since=since,
                    client_options=CLIENT_OPTIONS,
                )
            return peek_latest_heartbeats(spec, entity, settings=self._settings, **CLIENT_OPTIONS)

        with _unreadable():
            found = self._on_lane(namespace, read, f"heartbeats in {entity}")
        return {origin: beat.published for origin, beat in found.items() if beat.published >= since}

    def close(self) -> None:
        """Close every namespace's receivers and client; a namespace whose read is overdue is
        not waited for (its clients close when the SDK returns)."""
        namespaces = list(self._namespaces.values())
        self._namespaces.clear()
        for namespace in namespaces:
            namespace.lane.retire(namespace.close, wait=self.call_timeout)


def _endpoint_in(connection_string: str) -> str | None:
    """``host:port`` (or ``host``) of a connection string's ``Endpoint=sb://...``."""
    for part in connection_string.split(";"):
        key, _, value = part.partition("=")
        if key.strip().lower() == "endpoint":
            return value.strip().split("://", 1)[-1].rstrip("/") or None
    return None


def _close_quietly(closable: Any) -> None:
    with contextlib.suppress(Exception):  # a dead connection may not close cleanly
        closable.close()


__all__ = [
    "READ_ERRORS",
    "Contents",
    "PartitionPosition",
    "PeekedMessage",
    "SourceInspector",
]
