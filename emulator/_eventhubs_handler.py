"""Event Hubs over AMQP: what links, transfers and management requests mean for an Event Hubs
namespace (:class:`emulator._eventhubs.EventHubsBroker` holds the state).

- A link the peer sends on (a producer) targets ``<hub>`` or ``<hub>/Partitions/<n>``; an
  event or batch lands in the named partition, by partition key, or round robin.
- A link the emulator sends on (a consumer) reads ``<hub>/ConsumerGroups/<g>/Partitions/<n>``
  from the start position in its source filter; owner levels (``com.microsoft:epoch``) take
  partitions from other receivers or are refused (``amqp:link:stolen``). Events are not
  settled by the consumer in any way that matters: whatever it answers is acknowledged.
- ``<hub>/$management`` answers READ for the hub's or a partition's properties.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from proton import Delivery, Link, Message, symbol

from ._amqp import ErrorCondition, Section
from ._codec import message_sections, split_batch, text
from ._eventhubs import EventHubsBroker, Partition
from ._handler import ManagementReply, Refusal
from ._links import (
    amqp_error,
    finish,
    is_open,
    keep_state,
    open_for_transfers,
    refuse,
    remote_filter,
    state_of,
)
from ._message import BrokerMessage
from ._persistence import eventhubs_state, restore_eventhubs

_PARTITION_KEY = symbol("x-opt-partition-key")
_EPOCH = symbol("com.microsoft:epoch")


@dataclasses.dataclass(eq=False)
class ConsumerLink:
    """A consumer's link: its partition and the index of the next event it gets."""

    partition: Partition
    next_index: int
    settled_on_send: bool
    """The consumer asked for pre-settled deliveries (the SDKs do)."""


class EventHubsHandler:
    """The :class:`emulator._handler.BrokerHandler` of an Event Hubs namespace."""

    status_key = "status-code"

    def __init__(self, broker: EventHubsBroker) -> None:
        self.broker = broker
        self.max_message_size: int = broker.max_message_size

    # ------------------------------------------------------------ links
    def open_link(self, link: Link, path: str) -> None:
        broker = self.broker
        hub, group, partition = broker.resolve(path)
        if hub is None:
            refuse(
                link, ErrorCondition.NOT_FOUND, f"The messaging entity '{path}' could not be found."
            )
            return
        if partition is not None and not (
            partition.isdigit() and int(partition) < len(hub.partitions)
        ):
            refuse(
                link,
                ErrorCondition.NOT_FOUND,
                f"The partition '{partition}' of '{hub.name}' could not be found.",
            )
            return
        if not link.is_sender:
            open_for_transfers(link)
            return
        if group not in hub.consumer_groups or partition is None:
            refuse(
                link, ErrorCondition.NOT_FOUND, f"The consumer group '{group}' could not be found."
            )
            return
        accepted, evicted = broker.owners.claim(
            (hub.name, group, partition), _owner_level(link), link, is_open
        )
        if not accepted:
            refuse(
                link,
                ErrorCondition.LINK_STOLEN,
                f"A receiver with a higher owner level holds partition {partition} of "
                f"'{hub.name}' for consumer group '{group}'.",
            )
            return
        for other in evicted:
            other.condition = amqp_error(
                ErrorCondition.LINK_STOLEN,
                f"A receiver with a higher or equal owner level took partition {partition}.",
            )
            other.close()
        chosen = hub.partitions[int(partition)]
        start = chosen.start_index(_selector(link))
        keep_state(
            link, ConsumerLink(chosen, start, link.remote_snd_settle_mode == Link.SND_SETTLED)
        )
        link.open()

    def link_closed(self, link: Link) -> None:
        """Nothing to release: an owner level ends with its link (:func:`is_open`)."""

    # ------------------------------------------------------------ incoming events
    def transfer(self, path: str, data: bytes) -> Refusal | None:
        """Publish an event or a batch; a batch's partition key is in the outer message's
        annotations unless an event carries its own."""
        hub, _, partition = self.broker.resolve(path)
        assert hub is not None  # the link was opened for an existing hub
        outer = Message()
        annotation_sections = [
            data[a:b]
            for code, a, b in message_sections(data)
            if code == Section.MESSAGE_ANNOTATIONS
        ]
        if annotation_sections:
            outer.decode(annotation_sections[0])
        outer_key = (outer.annotations or {}).get(_PARTITION_KEY)
        now = self.broker.clock()
        for encoded in split_batch(data):
            message = BrokerMessage()
            message.decode(encoded)
            key = (message.annotations or {}).get(_PARTITION_KEY, outer_key)
            hub.publish(message, partition_id=partition,
                        partition_key=None if key is None else text(key), now=now)  # fmt: skip
        return None

    # ------------------------------------------------------------ delivering
    def pump(self, link: Link) -> None:
        consumer = state_of(link, ConsumerLink)
        if consumer is None:
            return
        events = consumer.partition.events
        index = consumer.next_index
        while link.credit > 0 and index < len(events):
            delivery = link.delivery(str(index).encode())
            # The receiver runtime metric goes with every event: proton's Python binding does
            # not expose the link capability a client asks for it with, and the SDKs read it
            # only when told to track it.
            link.send(events[index].outgoing_bytes(last=events[-1]))
            link.advance()
            if consumer.settled_on_send:
                delivery.settle()
            index += 1
        consumer.next_index = index

    def disposition(self, delivery: Delivery) -> None:
        finish(delivery, delivery.remote_state)

    # ------------------------------------------------------------ management
    def management(self, entity: str, properties: dict[str, Any], body: Any) -> ManagementReply:
        """READ of ``com.microsoft:eventhub`` (the hub) or ``com.microsoft:partition``; the
        reply map's keys are the ones ``eventhub/_client_base.py`` reads."""
        hub = self.broker.hubs.get(str(properties.get("name", "")).lower())
        if hub is None:
            return ManagementReply(404)
        if str(properties.get("type")) == "com.microsoft:partition":
            partition = str(properties.get("partition", ""))
            if not partition.isdigit() or int(partition) >= len(hub.partitions):
                return ManagementReply(404)
            return ManagementReply(200, hub.partitions[int(partition)].properties(hub.name))
        return ManagementReply(200, hub.properties())

    # ------------------------------------------------------------ time and snapshots
    def sweep(self) -> None:
        self.broker.sweep()

    def snapshot(self) -> dict[str, Any]:
        return eventhubs_state(self.broker)

    def restore(self, state: dict[str, Any], source: str) -> None:
        restore_eventhubs(self.broker, state, source)


def _owner_level(link: Link) -> int | None:
    """The ``com.microsoft:epoch`` attach property the SDKs send for ``owner_level``."""
    properties = link.remote_properties or {}
    level = properties.get(_EPOCH, properties.get("com.microsoft:epoch"))
    return None if level is None else int(level)


def _selector(link: Link) -> str | None:
    """The ``apache.org:selector-filter:string`` expression of the consumer's source filter,
    if any (its start position)."""
    for item in remote_filter(link).values():
        described = getattr(item, "value", item)
        if isinstance(described, str) and "amqp.annotation" in described:
            return described
    return None


__all__ = ["ConsumerLink", "EventHubsHandler"]
