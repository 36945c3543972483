"""Envelopes from the Azure Functions trigger types, as the host delivers batches.

Service Bus batch triggers (``cardinality="many"``) hand every message its own fields. Event
Hubs batch triggers do not: each ``func.EventHubEvent`` has body, partition key, sequence number,
offset and enqueued time, but its application properties and AMQP message properties
(``message-id``, ``content-type``...) arrive only in the batch's trigger metadata
(``PropertiesArray`` and ``SystemPropertiesArray``, one entry per event, in order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import azure.functions as func

from replication.envelope import Envelope

from ._common import decode_properties, text


def envelope_from_servicebus_message(message: func.ServiceBusMessage) -> Envelope:
    """The envelope of one message of a Service Bus trigger."""
    properties = message.application_properties or message.user_properties or {}
    return Envelope(
        body=message.get_body() or b"",
        message_id=text(message.message_id),
        correlation_id=text(message.correlation_id),
        content_type=text(message.content_type),
        subject=text(message.subject or message.label),
        to=text(message.to),
        reply_to=text(message.reply_to),
        reply_to_session_id=text(message.reply_to_session_id),
        session_id=text(message.session_id),
        partition_key=text(message.partition_key),
        time_to_live=message.time_to_live,
        scheduled_enqueue_time_utc=message.scheduled_enqueue_time_utc,
        application_properties=decode_properties(properties),
        enqueued_time_utc=message.enqueued_time_utc,
        sequence_number=message.sequence_number,
        delivery_count=message.delivery_count,
        dead_letter_reason=text(message.dead_letter_reason),
        dead_letter_error_description=text(message.dead_letter_error_description),
    )


def envelopes_from_servicebus_batch(messages: Sequence[func.ServiceBusMessage]) -> list[Envelope]:
    """The envelopes of a Service Bus batch trigger, in order."""
    return [envelope_from_servicebus_message(message) for message in messages]


def _entry(metadata: Mapping[str, Any] | None, name: str, index: int) -> Mapping[str, Any]:
    entries = (metadata or {}).get(name) or []
    entry = entries[index] if index < len(entries) else None
    return entry if isinstance(entry, Mapping) else {}


def envelopes_from_event_hub_batch(events: Sequence[func.EventHubEvent]) -> list[Envelope]:
    """The envelopes of an Event Hubs batch trigger, in order (see the module docstring)."""
    envelopes = []
    for index, event in enumerate(events):
        metadata = event.metadata
        system = _entry(metadata, "SystemPropertiesArray", index)
        offset = event.offset if event.offset is not None else system.get("Offset")
        partition = (metadata or {}).get("PartitionContext") or {}
        envelopes.append(
            Envelope(
                body=event.get_body() or b"",
                message_id=text(system.get("message-id")),
                correlation_id=text(system.get("correlation-id")),
                content_type=text(system.get("content-type")),
                subject=text(system.get("subject")),
                to=text(system.get("to")),
                reply_to=text(system.get("reply-to")),
                partition_key=text(event.partition_key),
                application_properties=decode_properties(
                    _entry(metadata, "PropertiesArray", index)
                ),
                enqueued_time_utc=event.enqueued_time,
                sequence_number=event.sequence_number,
                offset=text(offset),
                partition_id=text(partition.get("PartitionId")),
            )
        )
    return envelopes


__all__ = [
    "envelope_from_servicebus_message",
    "envelopes_from_event_hub_batch",
    "envelopes_from_servicebus_batch",
]
