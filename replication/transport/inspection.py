"""What sources hold, read with the data-plane SDKs without settling anything.

The SDK side of ``python -m replication status`` (:mod:`replication.operations`, which decides
what to read for each task and how to report it):

- :meth:`SourceInspector.count`: the messages of a queue, subscription or dead-letter queue,
  *counted by peeking* (the data-plane SDK has no message count; that is the management API,
  which needs rights the replicator does not have), up to a cap, optionally only those whose
  application properties match;
- :meth:`SourceInspector.partitions`: per event hub partition, the last enqueued sequence number
  and the checkpointed one of the consumer group, from the checkpoint store
  ``AzureWebJobsStorage`` names (:mod:`replication.transport.eventhubs`);
- :meth:`SourceInspector.latest_heartbeats`: the publish time of the newest heartbeat per
  origin waiting in a namespace's reader subscription
  (:func:`~replication.transport.servicebus.peek_latest_heartbeats`).

Service Bus clients are created once per namespace and retry once (one quick SDK retry), so an
unreachable namespace costs seconds. Whatever the SDK raises while reading (its own errors, an
``AzureError``, an ``OSError``) becomes :class:`~replication.exceptions.SourceUnreadableError`
with the SDK error's class and first line as its message.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import Any

from azure.core.exceptions import AzureError
from azure.eventhub import EventHubConsumerClient
from azure.eventhub.exceptions import EventHubError
from azure.servicebus import ServiceBusClient
from azure.servicebus.exceptions import ServiceBusError

from replication.exceptions import SourceUnreadableError
from replication.runtime import describe
from replication.settings import Settings
from replication.topology import EntityRef, Topology

from .connections import event_hub_client, servicebus_client
from .eventhubs import checkpoint_store
from .servicebus import entity_receiver, peek_latest_heartbeats, peek_pages

CLIENT_OPTIONS: dict[str, Any] = {"retry_total": 1, "retry_backoff_factor": 0.5}

READ_ERRORS = (ServiceBusError, EventHubError, AzureError, OSError)
"""What reading may raise when a namespace is unreachable, refuses us or lacks the entity."""

PropertyMatch = Callable[[Mapping[Any, Any]], bool]
"""A test on a message's application properties as the SDK hands them out (keys may be
``bytes``)."""


@contextlib.contextmanager
def _unreadable() -> Iterator[None]:
    try:
        yield
    except READ_ERRORS as error:
        raise SourceUnreadableError(describe(error)) from error


class SourceInspector:
    """Reads counts and positions of a topology's entities; :meth:`close` closes its clients."""

    def __init__(self, topology: Topology, settings: Settings) -> None:
        self._topology = topology
        self._settings = settings
        self._clients: dict[str, ServiceBusClient] = {}

    def _client(self, namespace: str) -> ServiceBusClient:
        if namespace not in self._clients:
            spec = self._topology.namespace(namespace)
            self._clients[namespace] = servicebus_client(spec, self._settings, **CLIENT_OPTIONS)
        return self._clients[namespace]

    def count(
        self, ref: EntityRef, *, dead_letter: bool, cap: int, match: PropertyMatch | None = None
    ) -> tuple[int, bool]:
        """The messages of ``ref`` (its dead-letter queue with ``dead_letter``) that ``match``,
        counted by peeking at most ``cap`` messages; True when the count stopped at the cap."""
        receiver = entity_receiver(
            self._client(ref.namespace), ref.entity, ref.subscription, dead_letter=dead_letter
        )
        total = seen = 0
        with _unreadable(), receiver:
            for page in peek_pages(receiver, limit=cap):
                seen += len(page)
                total += sum(
                    1
                    for message in page
                    if match is None or match(message.application_properties or {})
                )
        return total, seen >= cap

    def partitions(self, source: EntityRef) -> list[tuple[str, int, int | None]]:
        """Per partition of the event hub ``source``: its id, last enqueued sequence number and
        the sequence number checkpointed for the source's consumer group (None: none, or no
        checkpoint store configured)."""
        namespace = self._topology.namespace(source.namespace)
        group = source.consumer_group or "$Default"
        with _unreadable():
            store = checkpoint_store(self._settings)
            with event_hub_client(
                EventHubConsumerClient,
                namespace,
                source.entity,
                self._settings,
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
                positions = []
                for partition in client.get_partition_ids():
                    properties = client.get_partition_properties(partition)
                    positions.append(
                        (
                            partition,
                            int(properties["last_enqueued_sequence_number"]),
                            checkpoints.get(partition),
                        )
                    )
                return positions

    def latest_heartbeats(self, namespace: str, entity: str) -> dict[str, datetime]:
        """Publish time of the newest heartbeat per origin waiting in ``namespace``'s
        heartbeat reader subscription of topic ``entity``."""
        with _unreadable():
            found = peek_latest_heartbeats(
                self._topology.namespace(namespace), entity, settings=self._settings
            )
        return {origin: beat.published for origin, beat in found.items()}

    def close(self) -> None:
        for client in self._clients.values():
            client.close()


__all__ = ["READ_ERRORS", "PropertyMatch", "SourceInspector"]
