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
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from azure.core.exceptions import AzureError
from azure.eventhub import EventHubConsumerClient
from azure.eventhub.exceptions import EventHubError
from azure.eventhub.extensions.checkpointstoreblob import BlobCheckpointStore
from azure.servicebus import ServiceBusClient, ServiceBusReceiver
from azure.servicebus.exceptions import ServiceBusError

from replication.exceptions import ConfigurationError, SourceUnreadableError
from replication.runtime import describe
from replication.settings import Settings
from replication.topology import DEFAULT_CONSUMER_GROUP, EntityRef, NamespaceKind, Topology

from .connections import event_hub_client, servicebus_client
from .eventhubs import EventReader, checkpoint_store, read_latest_heartbeats
from .servicebus import entity_receiver, peek_latest_heartbeats, peek_pages

CLIENT_OPTIONS: dict[str, Any] = {"retry_total": 1, "retry_backoff_factor": 0.5}

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


class SourceInspector:
    """Reads contents and positions of a topology's entities; :meth:`close` closes its
    clients."""

    def __init__(self, topology: Topology, settings: Settings) -> None:
        self._topology = topology
        self._settings = settings
        self._clients: dict[str, ServiceBusClient] = {}
        self._receivers: dict[tuple[str, bool], ServiceBusReceiver] = {}
        self._store: BlobCheckpointStore | None = None
        self._store_read = False

    def _client(self, namespace: str) -> ServiceBusClient:
        if namespace not in self._clients:
            spec = self._topology.namespace(namespace)
            self._clients[namespace] = servicebus_client(spec, self._settings, **CLIENT_OPTIONS)
        return self._clients[namespace]

    def _receiver(self, ref: EntityRef, dead_letter: bool) -> ServiceBusReceiver:
        key = (ref.describe(), dead_letter)
        if key not in self._receivers:
            self._receivers[key] = entity_receiver(
                self._client(ref.namespace), ref.entity, ref.subscription, dead_letter=dead_letter
            )
        return self._receivers[key]

    def peek(self, ref: EntityRef, *, dead_letter: bool = False, cap: int) -> Contents:
        """The messages of ``ref`` (its dead-letter queue with ``dead_letter``), peeking at
        most ``cap``."""
        receiver = self._receiver(ref, dead_letter)
        messages: list[PeekedMessage] = []
        try:
            with _unreadable():
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
        except SourceUnreadableError:
            self._drop(ref, dead_letter)
            raise
        return Contents(tuple(messages), capped=len(messages) >= cap)

    def _drop(self, ref: EntityRef, dead_letter: bool) -> None:
        receiver = self._receivers.pop((ref.describe(), dead_letter), None)
        if receiver is not None:
            _close_quietly(receiver)

    def checkpoint_store(self) -> BlobCheckpointStore | None:
        """The checkpoint store of ``AzureWebJobsStorage`` (None: the setting is absent).

        Raises:
            ConfigurationError: the setting names a store that cannot be reached.
        """
        if not self._store_read:
            self._store = checkpoint_store(self._settings)
            self._store_read = True
        return self._store

    def partitions(self, source: EntityRef) -> list[PartitionPosition]:
        """Per partition of the event hub ``source``: what it retains, and the checkpoint of
        the source's consumer group (None without a checkpoint store or a checkpoint)."""
        namespace = self._topology.namespace(source.namespace)
        group = source.consumer_group or DEFAULT_CONSUMER_GROUP
        with (
            _unreadable(),
            event_hub_client(
                EventHubConsumerClient,
                namespace,
                source.entity,
                self._settings,
                consumer_group=group,
                **CLIENT_OPTIONS,
            ) as client,
        ):
            checkpoints: dict[str, int] = {}
            try:
                store = self.checkpoint_store()
            except ConfigurationError as error:
                raise SourceUnreadableError(str(error)) from error
            if store is not None:
                host = client._address.hostname  # what the event processor checkpoints under
                for checkpoint in store.list_checkpoints(host, source.entity, group):
                    checkpoints[str(checkpoint["partition_id"])] = int(
                        checkpoint["sequence_number"]
                    )
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
                        last_enqueued_time=None if empty else properties["last_enqueued_time_utc"],
                        checkpoint=checkpoints.get(str(partition)),
                    )
                )
            return positions

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
        try:
            with _unreadable():
                event = reader.read(partition, sequence)
        finally:
            reader.close()
        return None if event is None else event.enqueued_time

    def latest_heartbeats(
        self, namespace: str, entity: str, *, since: datetime
    ) -> dict[str, datetime]:
        """Publish time of the newest heartbeat per origin that reached ``namespace``'s
        heartbeat ``entity`` (what a Service Bus namespace's ``heartbeat-status``
        subscription holds; an event hub's events from ``since`` on)."""
        spec = self._topology.namespace(namespace)
        with _unreadable():
            if spec.kind is NamespaceKind.EVENTHUBS:
                found = read_latest_heartbeats(
                    spec,
                    entity,
                    settings=self._settings,
                    since=since,
                    client_options=CLIENT_OPTIONS,
                )
            else:
                found = peek_latest_heartbeats(
                    spec, entity, settings=self._settings, **CLIENT_OPTIONS
                )
        return {origin: beat.published for origin, beat in found.items() if beat.published >= since}

    def close(self) -> None:
        """Close every receiver and client. Receivers are closed side by side: each close waits
        for the SDK's keep-alive thread of a receiver without prefetch, up to a second."""
        receivers = [self._receivers.pop(key) for key in list(self._receivers)]
        closing = [
            threading.Thread(target=_close_quietly, args=(receiver,), daemon=True)
            for receiver in receivers
        ]
        for thread in closing:
            thread.start()
        for thread in closing:
            thread.join(timeout=10)
        for client in self._clients.values():
            _close_quietly(client)
        self._clients.clear()


def _close_quietly(closable: ServiceBusReceiver | ServiceBusClient) -> None:
    with contextlib.suppress(Exception):  # a dead connection may not close cleanly
        closable.close()


__all__ = [
    "READ_ERRORS",
    "Contents",
    "PartitionPosition",
    "PeekedMessage",
    "SourceInspector",
]
