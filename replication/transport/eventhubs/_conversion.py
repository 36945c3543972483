"""Conversions between :class:`Envelope` and ``azure.eventhub.EventData``.

Event Hubs carries no TTL, session, scheduling or dead-letter facts; an envelope's partition key
is not a property of the event but of the batch it is sent in (the sender groups by it). A replica
of a message or event without message-id gets the stable id of its source position
(:func:`replication.transport.servicebus.replica_ids`), as a Service Bus replica does.
Application properties are converted as :mod:`._properties` describes; an event that cannot be
copied faithfully raises :class:`~replication.exceptions.MessageRejectedError`.
"""

from __future__ import annotations

from azure.eventhub import EventData

from replication.envelope import Envelope, PropertyUpdate
from replication.transport._common import STRICT, FieldReader, Salvage, properties_section
from replication.transport._properties import sdk_properties
from replication.transport.servicebus import replica_ids

_MESSAGE_PROPERTY_FIELDS = ("subject", "to", "reply_to")
"""The message properties an event carries only in its AMQP properties section."""


def envelope_from_event(
    event: EventData, partition_id: str | None = None, *, source: str | None = None
) -> Envelope:
    """The envelope of an event received with the SDK from partition ``partition_id`` (the
    receive callback's context knows it; the event itself does not) of the event hub ``source``
    (logical ``namespace/entity``)."""
    return _envelope(event, partition_id, source, STRICT)


def salvaged_event(
    event: EventData, partition_id: str | None = None, *, source: str | None = None
) -> Envelope:
    """What can be kept of an event :func:`envelope_from_event` refuses, for its parked copy:
    every field and application property that converts, a data body, the position, and the
    markers of what is missing (see :class:`~replication.transport._common.Salvage`). Never
    raises: whatever the event holds, the partition must move past it."""
    return _envelope(event, partition_id, source, Salvage())


def _envelope(
    event: EventData, partition_id: str | None, source: str | None, read: FieldReader
) -> Envelope:
    """The one field map of an event, read strictly or salvaging what converts."""
    # The AMQP properties section is read once, with the values ``event.message_id`` and the
    # other accessors give (see ``properties_section``).
    fields = properties_section(event)
    return Envelope(
        body=read.body(event.body, event.body_type.value),
        message_id=read.text(fields.message_id, "message-id"),
        correlation_id=read.text(fields.correlation_id, "correlation-id"),
        content_type=read.text(fields.content_type, "content-type"),
        subject=read.text(fields.subject, "subject"),
        to=read.text(fields.to, "to"),
        reply_to=read.text(fields.reply_to, "reply_to"),
        partition_key=read.text(event.partition_key, "partition key"),
        application_properties={**read.properties(event.properties), **read.markers()},
        enqueued_time_utc=event.enqueued_time,
        sequence_number=event.sequence_number,
        offset=read.text(event.offset, "offset"),
        partition_id=partition_id,
        source=source,
    )


def to_event_data(envelope: Envelope, update: PropertyUpdate | None = None) -> EventData:
    """The ``EventData`` replica of ``envelope`` (partition key and message-id: see the module
    docstring), its application properties with ``update`` applied.

    Raises:
        UnsupportedPropertyError: an application property no AMQP simple type can carry.
    """
    event = EventData(envelope.body)
    properties = sdk_properties(envelope.application_properties, update)
    if properties:
        event.properties = properties
    message_id = replica_ids(envelope)[0]
    if message_id is not None:
        event.message_id = message_id
    if envelope.content_type is not None:
        event.content_type = envelope.content_type
    if envelope.correlation_id is not None:
        event.correlation_id = envelope.correlation_id
    amqp_properties = event.raw_amqp_message.properties
    for name in _MESSAGE_PROPERTY_FIELDS:
        value = getattr(envelope, name)
        if value is not None and amqp_properties is not None:
            setattr(amqp_properties, name, value)
    return event


__all__ = ["envelope_from_event", "salvaged_event", "to_event_data"]
