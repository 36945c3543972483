"""Read single events back from an event hub by partition and sequence number, for ``redrive``.

An event whose parked copy is only a notice (its body too large for the parking queue, or a body
the SDK cannot give exactly) is not lost: it stays in its event hub, and the notice records its
partition, sequence number and enqueue time. ``redrive`` reads it back from there, and only
from there, so the replica is the original event and not the notice.

That works while the event hub retains the event (its retention period: 1 to 7 days on
Standard, up to 90 on Premium and Dedicated). :meth:`EventReader.retained` tells from the
partition's properties whether a sequence number is still there; after retention the event is
gone from the hub, and the notice stays parked with that reason.

Events are read with a plain (non-epoch) receiver of the consumer group ``$Default``: the
Functions host and the local host hold epoch receivers on the task's own consumer group, which
would refuse this one. Nothing is checkpointed.
"""

from __future__ import annotations

import dataclasses
import threading
from datetime import datetime

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
    ) -> None:
        self._namespace = namespace
        self._event_hub = event_hub
        self._settings = settings
        self._wait = wait_seconds
        self._client: EventHubConsumerClient | None = None

    def _consumer(self) -> EventHubConsumerClient:
        return event_hub_client(
            EventHubConsumerClient,
            self._namespace,
            self._event_hub,
            self._settings,
            consumer_group=REREAD_CONSUMER_GROUP,
        )

    def retained(self, partition: str, sequence: int) -> bool:
        """Whether the partition still holds the event with this sequence number."""
        if self._client is None:
            self._client = self._consumer()
        properties = self._client.get_partition_properties(partition)
        if properties.get("is_empty"):
            return False
        first = int(properties.get("beginning_sequence_number", 0))
        last = int(properties.get("last_enqueued_sequence_number", -1))
        return first <= sequence <= last

    def read(self, partition: str, sequence: int) -> ReadEvent | None:
        """The event at ``sequence`` in ``partition``, or None when the hub no longer has it
        (nothing arrived from there within the wait)."""
        found: list[EventData] = []
        arrived = threading.Event()
        consumer = self._consumer()

        def on_event(_context: PartitionContext, event: EventData | None) -> None:
            if event is not None and not found:
                found.append(event)
            arrived.set()

        worker = threading.Thread(
            target=consumer.receive,
            kwargs={
                "on_event": on_event,
                "partition_id": partition,
                "starting_position": sequence,
                "starting_position_inclusive": True,
                "max_wait_time": self._wait,
                "prefetch": 1,
            },
            daemon=True,
        )
        worker.start()
        try:
            arrived.wait(self._wait * 2)
        finally:
            consumer.close()
            worker.join(timeout=10)
        event = found[0] if found else None
        if event is None or event.sequence_number != sequence:
            return None
        return ReadEvent(event)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


__all__ = ["REREAD_CONSUMER_GROUP", "EventReader", "ReadEvent"]
