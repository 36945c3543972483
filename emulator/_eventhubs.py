"""Event Hubs semantics: partitions, stable partition-key hashing, sequence numbers, string
offsets, enqueued times, consumer groups and start positions."""

from __future__ import annotations

import dataclasses
import re
import time
import zlib
from collections.abc import Callable
from typing import Any

from proton import Message, symbol, timestamp

from ._message import BrokerMessage

_SEQUENCE = symbol("x-opt-sequence-number")
_OFFSET = symbol("x-opt-offset")
_ENQUEUED = symbol("x-opt-enqueued-time")
_PARTITION_KEY = symbol("x-opt-partition-key")
_FILTER = re.compile(
    r"amqp\.annotation\.(x-opt-offset|x-opt-sequence-number|x-opt-enqueued-time)\s*(>=|>|=)\s*'([^']*)'"
)


@dataclasses.dataclass
class Event:
    message: Message
    sequence_number: int
    offset: int
    enqueued_time: float
    partition_key: str | None

    def outgoing_bytes(self, last: Event | None = None) -> bytes:
        """The event as a consumer gets it: broker annotations added and, with ``last`` (the
        partition's newest event), the receiver runtime metric in its delivery annotations."""
        copy = BrokerMessage()
        copy.decode(self.message.encode())
        if last is not None:
            copy.instructions = runtime_metric(last, time.time())
        annotations = dict(copy.annotations or {})
        annotations[_SEQUENCE] = self.sequence_number
        annotations[_OFFSET] = str(self.offset)
        annotations[_ENQUEUED] = timestamp(int(self.enqueued_time * 1000))
        if self.partition_key is not None:
            annotations[_PARTITION_KEY] = self.partition_key
        copy.annotations = annotations
        encoded: bytes = copy.encode()
        return encoded


_LAST_SEQUENCE = symbol("last_enqueued_sequence_number")
_LAST_OFFSET = symbol("last_enqueued_offset")
_LAST_ENQUEUED = symbol("last_enqueued_time_utc")
_RETRIEVED = symbol("runtime_info_retrieval_time_utc")


def runtime_metric(last: Event, now: float) -> dict[Any, Any]:
    """The delivery annotations of Event Hubs' receiver runtime metric: the partition's newest
    event and when that was read. The SDKs ask for it with the link capability
    ``com.microsoft:enable-receiver-runtime-metric`` (``track_last_enqueued_event_properties``)
    and read these four keys (azure-eventhub ``_constants.py``, ``_utils.py``
    ``get_last_enqueued_event_properties``: sequence number, offset as a string, times in
    milliseconds)."""
    return {
        _LAST_SEQUENCE: last.sequence_number,
        _LAST_OFFSET: str(last.offset),
        _LAST_ENQUEUED: timestamp(int(last.enqueued_time * 1000)),
        _RETRIEVED: timestamp(int(now * 1000)),
    }


class Partition:
    def __init__(self, partition_id: str) -> None:
        self.id = partition_id
        self.events: list[Event] = []
        self.next_offset = 0

    def append(self, message: Message, partition_key: str | None, now: float) -> None:
        sequence = len(self.events)
        self.events.append(Event(message, sequence, self.next_offset, now, partition_key))
        self.next_offset += len(message.encode())

    def start_index(self, selector: str | None) -> int:
        """Index of the first event a consumer with this start-position filter receives."""
        if not selector:
            return len(self.events)
        match = _FILTER.search(selector)
        if match is None:
            return len(self.events)
        field, operator, value = match.groups()
        if field == "x-opt-offset" and value == "-1":
            return 0
        if field == "x-opt-offset" and value == "@latest":
            return len(self.events)
        key: Callable[[Event], float] = {
            "x-opt-offset": lambda e: e.offset,
            "x-opt-sequence-number": lambda e: e.sequence_number,
            "x-opt-enqueued-time": lambda e: e.enqueued_time * 1000,
        }[field]
        bound = float(value)
        for index, event in enumerate(self.events):
            position = key(event)
            if position > bound or (operator in (">=", "=") and position == bound):
                return index
        return len(self.events)

    def properties(self, hub: str) -> dict[str, Any]:
        last = self.events[-1] if self.events else None
        return {
            "name": hub,
            "type": "com.microsoft:partition",
            "partition": self.id,
            "begin_sequence_number": 0 if self.events else -1,
            "last_enqueued_sequence_number": last.sequence_number if last else -1,
            "last_enqueued_offset": str(last.offset) if last else "-1",
            "last_enqueued_time_utc": timestamp(int((last.enqueued_time if last else 0) * 1000)),
            "is_partition_empty": not self.events,
        }


class EventHub:
    def __init__(self, name: str, partition_count: int, consumer_groups: list[str]) -> None:
        self.name = name
        self.created_at = time.time()
        self.partitions = [Partition(str(i)) for i in range(partition_count)]
        self.consumer_groups = {"$default", *(group.lower() for group in consumer_groups)}
        self._round_robin = 0

    def publish(self, message: Message, *, partition_id: str | None, partition_key: str | None,
                now: float) -> None:  # fmt: skip
        if partition_id is not None:
            partition = self.partitions[int(partition_id)]
        elif partition_key is not None:
            # Stable: the same key always lands in the same partition.
            partition = self.partitions[zlib.crc32(partition_key.encode()) % len(self.partitions)]
        else:
            partition = self.partitions[self._round_robin % len(self.partitions)]
            self._round_robin += 1
        partition.append(message, partition_key, now)

    def properties(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": "com.microsoft:eventhub",
            "created_at": timestamp(int(self.created_at * 1000)),
            "partition_count": len(self.partitions),
            "partition_ids": [p.id for p in self.partitions],
        }


class PartitionOwners:
    """Owner levels ("epochs") of the receivers of each partition and consumer group.

    As in Event Hubs: a receiver with an owner level disconnects every receiver of the same
    partition and group whose level is lower or equal and every receiver without one; a
    receiver whose level is lower than the highest present, or that has none while a level is
    present, is refused.
    """

    def __init__(self) -> None:
        self._holders: dict[tuple[str, str, str], list[tuple[int | None, Any]]] = {}

    def claim(
        self,
        key: tuple[str, str, str],
        level: int | None,
        receiver: Any,
        alive: Callable[[Any], bool],
    ) -> tuple[bool, list[Any]]:
        """(accepted, receivers to disconnect) for a new ``receiver`` at ``level``."""
        holders = [(held, other) for held, other in self._holders.get(key, []) if alive(other)]
        top = max((held for held, _ in holders if held is not None), default=None)
        if top is not None and (level is None or level < top):
            self._holders[key] = holders
            return False, []
        if level is None:
            self._holders[key] = [*holders, (None, receiver)]
            return True, []
        self._holders[key] = [(level, receiver)]
        return True, [other for _, other in holders]


class EventHubsBroker:
    """One Event Hubs namespace."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        # Event Hubs Basic's event size limit (Standard and above allow 1 MB).
        self.max_message_size = 256 * 1024
        self.hubs: dict[str, EventHub] = {}
        self.owners = PartitionOwners()

    def add(self, hub: EventHub) -> None:
        self.hubs[hub.name.lower()] = hub

    def resolve(self, path: str) -> tuple[EventHub | None, str | None, str | None]:
        """(hub, consumer group, partition id) of a link address; None parts when absent."""
        parts = path.strip("/").split("/")
        hub = self.hubs.get(parts[0].lower())
        group = partition = None
        lowered = [p.lower() for p in parts]
        if "consumergroups" in lowered:
            group = parts[lowered.index("consumergroups") + 1].lower()
        if "partitions" in lowered:
            partition = parts[lowered.index("partitions") + 1]
        return hub, group, partition

    def sweep(self) -> None:
        """Events do not expire within a local run."""
