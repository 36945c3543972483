"""Conversions between :class:`Envelope` and the azure-servicebus message types.

``envelope_from_received`` reads everything a received message carries (decoding the SDK's
bytes-valued application properties, see :mod:`._properties`); ``to_servicebus_message`` builds
the replica, keeping MessageId so that a target with duplicate detection drops redelivered
copies. A message without MessageId gets one from its position in the source (see
:func:`position_message_id`), the same on every redelivery; otherwise the SDK would leave it
empty, or give it a new random one when it is scheduled, and duplicate detection could not work.
For envelopes that came from Event Hubs (they have an offset) the event's partition key becomes
both SessionId and PartitionKey, as the official .NET replication library does.

A message the converter cannot copy faithfully raises a
:class:`~replication.exceptions.MessageRejectedError` (non-UTF-8 binary in MessageId or another
text field, unsupported application properties, a value or sequence body), never another error,
so that the caller can dead-letter that one message.
"""

from __future__ import annotations

from types import MappingProxyType

from azure.servicebus import ServiceBusMessage, ServiceBusReceivedMessage

from replication.envelope import (
    MAX_MESSAGE_ID_LENGTH,
    Envelope,
    PropertyUpdate,
    position_message_id,
)
from replication.transport._common import body_bytes, properties_section, text
from replication.transport._properties import decode_properties, sdk_properties


def envelope_from_received(
    message: ServiceBusReceivedMessage, *, source: str | None = None
) -> Envelope:
    """The envelope of a message received with the SDK (from a queue, subscription or DLQ) of the
    entity ``source`` (logical ``namespace/entity``; it names the replica's MessageId when the
    message has none).

    Raises:
        MessageRejectedError: the message cannot be replicated faithfully (see the module
            docstring); ``reason`` says why.
    """
    # The AMQP properties section is read once, with the values ``message.message_id`` and the
    # other accessors give (UTF-8-decoded where bytes, as ``text`` does; see
    # ``properties_section``): through the eight accessors it was half of this conversion's cost.
    fields = properties_section(message)
    return Envelope(
        body=body_bytes(message.body, message.body_type.value),
        message_id=text(fields.message_id, "MessageId"),
        correlation_id=text(fields.correlation_id, "CorrelationId"),
        content_type=text(fields.content_type, "ContentType"),
        subject=text(fields.subject, "Subject"),
        to=text(fields.to, "To"),
        reply_to=text(fields.reply_to, "ReplyTo"),
        reply_to_session_id=text(fields.reply_to_group_id, "ReplyToSessionId"),
        session_id=text(fields.group_id, "SessionId"),
        partition_key=text(message.partition_key, "PartitionKey"),
        time_to_live=message.time_to_live,
        scheduled_enqueue_time_utc=message.scheduled_enqueue_time_utc,
        # A new dict nobody else holds: the envelope need not copy it.
        application_properties=MappingProxyType(decode_properties(message.application_properties)),
        enqueued_time_utc=message.enqueued_time_utc,
        sequence_number=message.sequence_number,
        delivery_count=message.delivery_count,
        dead_letter_reason=text(message.dead_letter_reason, "DeadLetterReason"),
        dead_letter_error_description=text(
            message.dead_letter_error_description, "DeadLetterErrorDescription"
        ),
        source=source,
    )


def replica_ids(envelope: Envelope) -> tuple[str | None, str | None, str | None]:
    """(message_id, session_id, partition_key) a replica of ``envelope`` gets (Event Hubs
    targets use the message_id only)."""
    message_id = envelope.message_id
    if message_id is None and (envelope.sequence_number is not None or envelope.offset is not None):
        message_id = position_message_id(envelope)
    session_id = envelope.session_id
    partition_key = envelope.partition_key
    if envelope.offset is not None:
        session_id = session_id or partition_key
    if session_id is not None and partition_key is not None and session_id != partition_key:
        # Service Bus requires both to be equal when both are set; the session wins, because it
        # is what orders the messages for session receivers.
        partition_key = session_id
    return message_id, session_id, partition_key


def to_servicebus_message(
    envelope: Envelope, update: PropertyUpdate | None = None
) -> ServiceBusMessage:
    """The ``ServiceBusMessage`` replica of ``envelope`` (broker facts are not copied), its
    application properties with ``update`` applied.

    Raises:
        UnsupportedPropertyError: an application property no AMQP simple type can carry.
    """
    message_id, session_id, partition_key = replica_ids(envelope)
    properties = sdk_properties(envelope.application_properties, update)
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
    "position_message_id",
    "replica_ids",
    "to_servicebus_message",
]
