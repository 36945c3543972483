"""Read events back from an event hub by partition and position, for ``redrive`` and ``status``.

An event whose parked copy is only a notice (its body too large for the parking queue, or a body
the SDK cannot give exactly) is not lost: it stays in its event hub, and the notice records its
partition, sequence number and enqueue time. ``redrive`` reads it back from there, and only
from there, so the replica is the original event and not the notice.

That works while the event hub retains the event (its retention period: 1 to 7 days on
Standard, up to 90 on Premium and Dedicated). :meth:`EventReader.retained` tells from the
partition's properties whether a sequence number is still there; after retention the event is
gone from the hub, and the notice stays parked with that reason.

``status`` reads with it the enqueue time of the oldest event a task has not replicated
(:meth:`EventReader.read`, at the checkpoint's next sequence number) and the heartbeats of a
heartbeat event hub's look-back window (:meth:`EventReader.read_since`).

Events are read with a plain (non-epoch) receiver of the consumer group ``$Default`` unless
another is named: the Functions host and the local host hold epoch receivers on the task's own
consumer group, which would refuse this one. A plain receiver never disturbs an epoch receiver
(Event Hubs refuses the plain one instead). Nothing is checkpointed.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from azure.eventhub import EventData, EventHubConsumerClient, PartitionContext

from replication.envelope import Envelope
from replication.settings import Settings
from replication.topology import NamespaceSpec
from replication.transport.connections import event_hub_client

from ._conversion import envelope_from_event

REREAD_CONSUMER_GROUP = "$Default"
"""The consumer group events are read back with (see the module docstring)."""


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class ReadEvent:
    """An event read back: when it was enqueued, and its envelope on demand."""

    event: EventData

    @property
    def enqueued_time(self) -> datetime | None:
        return self.event.enqueued_time

    def envelope(self, partition: str, *, source: str) -> Envelope:
        """The event as an envelope of partition ``partition`` of the event hub ``source``.

        Raises:
            MessageRejectedError: it cannot be converted faithfully.
        """
        return envelope_from_event(self.event, partition, source=source)


class EventReader:
    """Reads events of one event hub by position; :meth:`close` when done."""

    def __init__(
        self,
        namespace: NamespaceSpec,
        event_hub: str,
        settings: Settings,
        *,
        wait_seconds: float = 5.0,
        consumer_group: str = REREAD_CONSUMER_GROUP,
        client_options: dict[str, Any] | None = None,
    ) -> None:
        self._namespace = namespace
        self._event_hub = event_hub
        self._settings = settings
        self._wait = wait_seconds
        self._group = consumer_group
        self._options = client_options or {}
        self._client: EventHubConsumerClient | None = None

    def _consumer(self) -> EventHubConsumerClient:
        return event_hub_client(
            EventHubConsumerClient,
            self._namespace,
            self._event_hub,
            self._settings,
            consumer_group=self._group,
            **self._options,
        )

    def _properties(self, partition: str) -> dict[str, Any]:
        if self._client is None:
            self._client = self._consumer()
        return dict(self._client.get_partition_properties(partition))

    def retained(self, partition: str, sequence: int) -> bool:
        """Whether the partition still holds the event with this sequence number."""
        properties = self._properties(partition)
        if properties.get("is_empty"):
            return False
        first = int(properties.get("beginning_sequence_number", 0))
        last = int(properties.get("last_enqueued_sequence_number", -1))
        return first <= sequence <= last

    def read(self, partition: str, sequence: int) -> ReadEvent | None:
        """The event at ``sequence`` in ``partition``, or None when the hub no longer has it
        (nothing arrived from there within the wait)."""
        found = self._receive(partition, sequence, prefetch=1, enough=lambda _: True)
        event = found[0] if found else None
        if event is None or event.sequence_number != sequence:
            return None
        return ReadEvent(event)

    def read_since(self, partition: str, since: datetime) -> list[ReadEvent]:
        """The events ``partition`` received from ``since`` on, up to the last one it held when
        asked (none when nothing arrived since)."""
        properties = self._properties(partition)
        last = int(properties.get("last_enqueued_sequence_number", -1))
        newest = properties.get("last_enqueued_time_utc")
        if properties.get("is_empty") or last < 0:
            return []
        if isinstance(newest, datetime) and newest < since:
            return []

        def at_last(event: EventData) -> bool:
            return (event.sequence_number or -1) >= last

        found = self._receive(partition, since, prefetch=300, enough=at_last)
        return [ReadEvent(event) for event in found]

    def _receive(
        self,
        partition: str,
        start: int | datetime,
        *,
        prefetch: int,
        enough: Callable[[EventData], bool],
    ) -> list[EventData]:
        """Events of ``partition`` from ``start`` (inclusive) until one is ``enough``, or none
        arrives within the wait."""
        found: list[EventData] = []
        done = threading.Event()
        consumer = self._consumer()

        def on_event(_context: PartitionContext, event: EventData | None) -> None:
            if done.is_set():
                return
            if event is not None:
                found.append(event)
            if event is None or enough(event):
                done.set()

        worker = threading.Thread(
            target=consumer.receive,
            kwargs={
                "on_event": on_event,
                "partition_id": partition,
                "starting_position": start,
                "starting_position_inclusive": True,
                "max_wait_time": self._wait,
                "prefetch": prefetch,
            },
            daemon=True,
        )
        worker.start()
        try:
            seen = -1
            # Wait while events keep arriving; stop after a wait without progress.
            while not done.wait(self._wait * 2) and len(found) != seen:
                seen = len(found)
        finally:
            consumer.close()
            worker.join(timeout=10)
        return list(found)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


__all__ = ["REREAD_CONSUMER_GROUP", "EventReader", "ReadEvent"]
