"""Conversions between :class:`Envelope` and the azure-servicebus message types.

``envelope_from_received`` reads everything a received message carries (decoding the SDK's
bytes-valued application properties); ``to_servicebus_message`` builds the replica, keeping
MessageId so that a target with duplicate detection drops redelivered copies. For envelopes that
came from Event Hubs (they have an offset), MessageId falls back to the source offset and the
event's partition key becomes both SessionId and PartitionKey, as the official .NET replication
library does.
"""

from __future__ import annotations

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


def _offset_message_id(offset: str, partition_id: str | None) -> str:
    """The MessageId of an event that has none: its position, ``PARTITION:OFFSET``.

    The .NET replication library uses the bare offset, but offsets are positions within one
    partition and repeat across partitions: with duplicate detection on the target, the
    second partition's event at offset 0 would be dropped as a copy of the first's. The
    partition-qualified position is just as stable across redeliveries and never collides.
    The bare offset remains only where the partition is unknown.
    """
    return offset if partition_id is None else f"{partition_id}:{offset}"


def replica_ids(envelope: Envelope) -> tuple[str | None, str | None, str | None]:
    """(message_id, session_id, partition_key) a Service Bus replica of ``envelope`` gets."""
    message_id = envelope.message_id
    session_id = envelope.session_id
    partition_key = envelope.partition_key
    if envelope.offset is not None:
        message_id = message_id or _offset_message_id(envelope.offset, envelope.partition_id)
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


__all__ = ["envelope_from_received", "replica_ids", "to_servicebus_message"]
