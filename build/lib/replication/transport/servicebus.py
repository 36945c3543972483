"""Conversions between :class:`Envelope` and the azure-servicebus message types.

``envelope_from_received`` reads everything a received message carries (decoding the SDK's
bytes-valued application properties); ``to_servicebus_message`` builds the replica, keeping
MessageId so that a target with duplicate detection drops redelivered copies. For envelopes that
came from Event Hubs (they have an offset), MessageId falls back to the event's position (see
:func:`event_message_id`) and the event's partition key becomes both SessionId and PartitionKey,
as the official .NET replication library does.
"""

from __future__ import annotations

import uuid

from azure.servicebus import ServiceBusMessage, ServiceBusReceivedMessage

from replication.envelope import Envelope

from ._common import body_bytes, decode_properties, sdk_properties, text


def envelope_from_received(message: ServiceBusReceivedMessage) -> Envelope:
    """The envelope of a message received with the SDK (from a queue, subscription or DLQ)."""
    return Envelope(
        body=body_bytes(message.body, message.body_type.value),
        message_id=text(message.message_id),
        correlation_id=text(message.correlation_id),
        content_type=text(message.content_type),
        subject=text(message.subject),
        to=text(message.to),
        reply_to=text(message.reply_to),
        reply_to_session_id=text(message.reply_to_session_id),
        session_id=text(message.session_id),
        partition_key=text(message.partition_key),
        time_to_live=message.time_to_live,
        scheduled_enqueue_time_utc=message.scheduled_enqueue_time_utc,
        application_properties=decode_properties(message.application_properties),
        enqueued_time_utc=message.enqueued_time_utc,
        sequence_number=message.sequence_number,
        delivery_count=message.delivery_count,
        dead_letter_reason=text(message.dead_letter_reason),
        dead_letter_error_description=text(message.dead_letter_error_description),
    )


MAX_MESSAGE_ID_LENGTH = 128
"""Service Bus refuses longer MessageIds."""


def event_message_id(envelope: Envelope) -> str:
    """The MessageId of an event that has none: ``SOURCE/PARTITION/SEQUENCE``.

    The sequence number is the event's stable, unique position within its partition. The offset
    is not: on a geo-replicated Event Hubs namespace the Functions extension (6.5 and later)
    reports ``Offset`` as -1 for every event and moves the position into ``OffsetString``, so an
    offset-based id (the .NET replication library uses the bare offset) would give every such
    event the same MessageId and a target with duplicate detection would keep only one. The
    source (logical ``namespace/entity``) keeps events of different hubs apart when several are
    consolidated into one queue. Ids longer than Service Bus allows become a UUID derived from
    the same text, just as stable across redeliveries.
    """
    if envelope.sequence_number is not None:
        position = str(envelope.sequence_number)
    elif envelope.offset is not None:
        position = f"offset-{envelope.offset}"
    else:
        raise ValueError("an event without message-id needs a sequence number or an offset")
    parts = [envelope.source, envelope.partition_id, position]
    message_id = "/".join(part for part in parts if part is not None)
    if len(message_id) > MAX_MESSAGE_ID_LENGTH:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, message_id))
    return message_id


def replica_ids(envelope: Envelope) -> tuple[str | None, str | None, str | None]:
    """(message_id, session_id, partition_key) a Service Bus replica of ``envelope`` gets."""
    message_id = envelope.message_id
    session_id = envelope.session_id
    partition_key = envelope.partition_key
    if envelope.offset is not None:
        message_id = message_id or event_message_id(envelope)
        session_id = session_id or partition_key
    if session_id is not None and partition_key is not None and session_id != partition_key:
        # Service Bus requires both to be equal when both are set; the session wins, because it
        # is what orders the messages for session receivers.
        partition_key = session_id
    return message_id, session_id, partition_key


def to_servicebus_message(envelope: Envelope) -> ServiceBusMessage:
    """The ``ServiceBusMessage`` replica of ``envelope`` (broker facts are not copied)."""
    message_id, session_id, partition_key = replica_ids(envelope)
    properties = sdk_properties(envelope.application_properties)
    return ServiceBusMessage(
        body=envelope.body,
        application_properties=properties or None,
        session_id=session_id,
        message_id=message_id,
        scheduled_enqueue_time_utc=envelope.scheduled_enqueue_time_utc,
        time_to_live=envelope.time_to_live,
        content_type=envelope.content_type,
        correlation_id=envelope.correlation_id,
        subject=envelope.subject,
        partition_key=partition_key,
        to=envelope.to,
        reply_to=envelope.reply_to,
        reply_to_session_id=envelope.reply_to_session_id,
    )


__all__ = [
    "MAX_MESSAGE_ID_LENGTH",
    "envelope_from_received",
    "event_message_id",
    "replica_ids",
    "to_servicebus_message",
]
