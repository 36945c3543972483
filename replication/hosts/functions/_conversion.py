"""Envelopes from what the Azure Functions host really delivers to a batch-triggered function.

The host's shapes, read from its source (``docs/explanation/host-delivery.md``):

- **Bodies**: the triggers declare ``dataType: binary``, so a batch's bodies arrive as
  ``collection_bytes``, byte-exact. (Without a data type the host binds bodies as JSON: JSON
  bodies are re-serialized, dates inside them rewritten, non-JSON bodies cannot be bound.)
- **Per-message fields** arrive as trigger metadata, one array per field, built by the
  extension's ``AddBindingData(..., messages[])`` and converted by the host's
  ``GrpcMessageConversionExtensions.ToRpc``: ``string[]`` becomes ``collection_string`` with
  null and empty entries DROPPED (no Python worker advertises the capability
  ``IncludeEmptyEntriesInMessagePayload``), ``long[]`` becomes ``collection_sint64``,
  everything else (``int[]``, ``DateTime[]``, dictionaries) becomes JSON text, whose arrays
  keep one entry per message.

So a string array is only trusted when it has one entry per message (every message has the
field) or none (no message has it). Fields are never attributed by position in a shortened
array, which is what ``azure.functions`` does (``CorrelationIdArray[i]``) and why its
per-message properties are not used here.

A batch also does not carry everything (Service Bus extension 5.x): no ``TimeToLive`` (only
``ExpiresAt``, which is the sender's absolute expiry: its clock, and for the Python SDK its
creation time cut to whole seconds), no ``ScheduledEnqueueTime``, and application property
values only as JSON (timestamps, GUIDs and TimeSpans become strings). The dead-letter reason and
description do arrive: Service Bus keeps them as the application properties
``DeadLetterReason`` / ``DeadLetterErrorDescription``.

Whenever the metadata cannot give an exact copy, the converter re-reads the batch's messages
from the source by sequence number and takes the fields the metadata lacks from those complete
messages (a peek: it takes no lock and does not count as a delivery; see
:class:`replication.transport.servicebus.ServiceBusPeeker`). That is the case when a string array is
shorter than the batch, or when a message has a TTL (``ExpiresAt`` is not
``DateTimeOffset.MaxValue``). Other batches are converted from the metadata alone, exactly, at
no extra cost; :func:`reread_reasons` says which case applies. Application properties always
come from ``ApplicationPropertiesArray`` (complete, one entry per message), so a replica's
property types do not depend on whether its batch was re-read.

Event Hubs batches carry every per-event system property in ``SystemPropertiesArray`` (JSON, one
entry per event), so no re-read is needed: partition key, message-id, correlation-id,
content-type, subject, to, reply-to, sequence number and position all come from there. On a
geo-replicated namespace ``Offset`` is -1 and the position is in ``OffsetString``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Protocol

from replication.envelope import MESSAGE_FIELDS, Envelope
from replication.exceptions import MessageRejectedError, TriggerMetadataError
from replication.planning import DeadLetter
from replication.properties import DEAD_LETTER_ERROR_DESCRIPTION, DEAD_LETTER_REASON
from replication.transport._common import STRICT, FieldReader, Salvage, text
from replication.transport._properties import decode_properties

logger = logging.getLogger(__name__)

STRING_FIELDS: dict[str, str] = {
    "MessageId": "message_id",
    "CorrelationId": "correlation_id",
    "ContentType": "content_type",
    "Subject": "subject",
    "To": "to",
    "ReplyTo": "reply_to",
    "ReplyToSessionId": "reply_to_session_id",
    "SessionId": "session_id",
    "PartitionKey": "partition_key",
}
"""String fields of a Service Bus batch whose arrays (``<Field>Array``) can lose entries, and
the envelope field each one fills."""

Reread = Callable[[Sequence[int]], Mapping[int, Envelope]]
"""Reads complete messages of the trigger's source by sequence number."""


class TriggerMessage(Protocol):
    """What the converters use of ``azure.functions.ServiceBusMessage`` / ``EventHubEvent``."""

    def get_body(self) -> bytes: ...

    @property
    def metadata(self) -> Mapping[str, Any] | None: ...


def _metadata(batch: Sequence[TriggerMessage]) -> Mapping[str, Any]:
    # azure.functions gives every message of a batch the whole trigger metadata, decoded to
    # Python values (collection_string -> list[str], collection_sint64 -> list[int], json ->
    # parsed JSON).
    metadata = batch[0].metadata if batch else None
    return metadata or {}


def _column(metadata: Mapping[str, Any], name: str, size: int) -> list[Any]:
    """An array that must have one entry per message (JSON or ``collection_sint64``)."""
    values = metadata.get(name)
    if not isinstance(values, list) or len(values) != size:
        found = f"{len(values)} entries" if isinstance(values, list) else repr(type(values))
        raise TriggerMetadataError(f"trigger metadata {name}: expected {size} entries, got {found}")
    return values


def _strings(metadata: Mapping[str, Any], name: str, size: int) -> list[str | None] | None:
    """A string array's values per message, or None when they cannot be attributed."""
    values = metadata.get(f"{name}Array")
    if not isinstance(values, list):
        return None
    if len(values) == 0:
        return [None] * size
    if len(values) == size:
        # With IncludeEmptyEntriesInMessagePayload the host would send null as "": no field is
        # ever the empty string on purpose, so both read as absent.
        return [value or None for value in values]
    return None


def parse_host_time(value: Any) -> datetime | None:
    """A time as the host's Json.NET writes it; a time without an offset is UTC.

    ``DateTime`` values the extensions take from a ``DateTimeOffset`` (``.DateTime``) have no
    kind, so Json.NET writes them without ``Z``; they are UTC all the same. Seven fractional
    digits are cut to Python's six.
    """
    if value is None:
        return None
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def reread_reasons(metadata: Mapping[str, Any], size: int) -> list[str]:
    """Why a Service Bus batch's metadata cannot give exact copies (empty: it can)."""
    return _reasons(metadata, _string_columns(metadata, size), size)


def _string_columns(metadata: Mapping[str, Any], size: int) -> dict[str, list[str | None] | None]:
    return {name: _strings(metadata, name, size) for name in STRING_FIELDS}


def _reasons(
    metadata: Mapping[str, Any], columns: Mapping[str, list[str | None] | None], size: int
) -> list[str]:
    reasons = [
        f"{name}Array has entries for some messages only"
        for name, values in columns.items()
        if values is None
    ]
    if not ({"ExpiresAtArray", "ExpiresAtUtcArray"} & metadata.keys()):
        reasons.append("the batch metadata has no expiry times")
        return reasons
    name = "ExpiresAtArray" if "ExpiresAtArray" in metadata else "ExpiresAtUtcArray"
    if any(_expires(value) for value in _column(metadata, name, size)):
        reasons.append("a message has a time to live, which the batch metadata does not carry")
    return reasons


def _expires(value: Any) -> bool:
    """Whether a message's ``ExpiresAt`` is a real expiry (it has a TTL), not the ``MaxValue``
    (year 9999) of a message without one. Read without parsing in that common case."""
    if isinstance(value, str) and value.startswith("9999-"):
        return False
    moment = parse_host_time(value)
    return moment is not None and moment.year < 9999


def _unreadable(
    unreadable: list[DeadLetter] | None,
    error: MessageRejectedError,
    envelope: Envelope,
) -> None:
    """Record a message that cannot be converted (its properties hold values no replica can
    carry), or raise when the caller keeps no such list."""
    if unreadable is None:
        raise error
    unreadable.append(DeadLetter(envelope, error.reason, str(error)))


def envelopes_from_servicebus_batch(
    messages: Sequence[TriggerMessage],
    *,
    source: str | None = None,
    reread: Reread | None = None,
    unreadable: list[DeadLetter] | None = None,
) -> list[Envelope]:
    """The envelopes of a Service Bus batch trigger, in order (see the module docstring).

    ``reread`` is called with the batch's sequence numbers when the metadata cannot give exact
    copies; without it such a batch raises :class:`TriggerMetadataError`. A message that cannot
    be converted is left out and added to ``unreadable`` for parking, with everything of it that
    converts and the markers of what does not (:class:`~replication.transport._common.Salvage`);
    without that list its :class:`MessageRejectedError` is raised.
    """
    size = len(messages)
    metadata = _metadata(messages)
    sequence_numbers = [int(n) for n in _column(metadata, "SequenceNumberArray", size)]
    columns = _string_columns(metadata, size)
    reasons = _reasons(metadata, columns, size)
    if reasons and reread is None:
        raise TriggerMetadataError(
            f"batch of {size} cannot be copied exactly from its metadata "
            f"({'; '.join(reasons)}) and cannot be re-read"
        )
    properties = _column(metadata, "ApplicationPropertiesArray", size)
    # Not copied to replicas: an extension that stops sending it costs nothing.
    delivery_counts = (
        _column(metadata, "DeliveryCountArray", size)
        if "DeliveryCountArray" in metadata
        else [None] * size
    )
    enqueued = _times(metadata, "EnqueuedTimeArray", "EnqueuedTimeUtcArray", size)
    # The fields some message of the batch has. A short (ambiguous) array leaves its field
    # empty here, the re-read below fills it; a field no message has keeps its default, None.
    present = [
        (STRING_FIELDS[name], values)
        for name, values in columns.items()
        if values is not None and any(value is not None for value in values)
    ]
    envelopes = []
    for index, message in enumerate(messages):
        fields: dict[str, Any] = {field: values[index] for field, values in present}
        try:
            application_properties = decode_properties(properties[index])
        except MessageRejectedError as error:
            salvage = Salvage()
            kept = salvage.properties(properties[index])
            salvaged = Envelope(
                body=message.get_body() or b"",
                **fields,
                application_properties={**kept, **salvage.markers()},
                enqueued_time_utc=enqueued[index],
                sequence_number=sequence_numbers[index],
                delivery_count=delivery_counts[index],
                source=source,
            )
            _unreadable(unreadable, error, salvaged)
            continue
        if (  # a dead-lettered message
            DEAD_LETTER_REASON in application_properties
            or DEAD_LETTER_ERROR_DESCRIPTION in application_properties
        ):
            fields["dead_letter_reason"] = text(application_properties.get(DEAD_LETTER_REASON))
            fields["dead_letter_error_description"] = text(
                application_properties.get(DEAD_LETTER_ERROR_DESCRIPTION)
            )
        envelopes.append(
            Envelope(
                body=message.get_body() or b"",
                **fields,
                # A new dict nobody else holds: the envelope need not copy it.
                application_properties=MappingProxyType(application_properties),
                enqueued_time_utc=enqueued[index],
                sequence_number=sequence_numbers[index],
                delivery_count=delivery_counts[index],
                source=source,
            )
        )
    if reasons and reread is not None:
        logger.debug("re-reading a batch of %d: %s", size, "; ".join(reasons))
        numbers = [envelope.sequence_number or 0 for envelope in envelopes]
        return _complete_from_source(envelopes, numbers, reread)
    return envelopes


def _times(
    metadata: Mapping[str, Any], offset_name: str, utc_name: str, size: int
) -> list[datetime | None]:
    # Prefer the DateTimeOffset array (explicit +00:00); older extensions only send the
    # DateTime one.
    name = offset_name if offset_name in metadata else utc_name
    return [parse_host_time(value) for value in _column(metadata, name, size)]


def _complete_from_source(
    envelopes: list[Envelope], sequence_numbers: list[int], reread: Reread
) -> list[Envelope]:
    """The envelopes with every message field (``MESSAGE_FIELDS``) taken from the source."""
    found = reread(sequence_numbers)
    completed = []
    for envelope, number in zip(envelopes, sequence_numbers, strict=True):
        complete = found.get(number)
        if complete is None:
            raise TriggerMetadataError(
                f"message with sequence number {number} is no longer in the source; "
                "the batch is redelivered"
            )
        completed.append(
            envelope.replace(**{name: getattr(complete, name) for name in MESSAGE_FIELDS})
        )
    return completed


def envelopes_from_event_hub_batch(
    events: Sequence[TriggerMessage],
    *,
    source: str | None = None,
    unreadable: list[DeadLetter] | None = None,
) -> list[Envelope]:
    """The envelopes of an Event Hubs batch trigger, in order (see the module docstring).

    An event that cannot be converted is left out and added to ``unreadable`` (for parking: an
    event hub has no dead-letter queue, and the checkpoint must move past it), with everything
    of it that converts and the markers of what does not; without that list its
    :class:`MessageRejectedError` is raised.
    """
    size = len(events)
    metadata = _metadata(events)
    system = _column(metadata, "SystemPropertiesArray", size)
    properties = _column(metadata, "PropertiesArray", size)
    context = metadata.get("PartitionContext") or metadata.get("TriggerPartitionContext") or {}
    partition_id = text(context.get("PartitionId")) if isinstance(context, Mapping) else None
    envelopes = []
    for index, event in enumerate(events):
        facts = system[index] if isinstance(system[index], Mapping) else {}
        try:
            envelope = _event_envelope(event, facts, properties[index], partition_id, source)
        except MessageRejectedError as error:
            salvage = Salvage()
            salvaged = _event_envelope(
                event, facts, properties[index], partition_id, source, read=salvage
            )
            salvaged = salvaged.with_properties(salvage.markers())
            _unreadable(unreadable, error, salvaged)
            continue
        envelopes.append(envelope)
    return envelopes


def _event_envelope(
    event: TriggerMessage,
    facts: Mapping[str, Any],
    properties: Any,
    partition_id: str | None,
    source: str | None,
    *,
    read: FieldReader = STRICT,
) -> Envelope:
    """One event's envelope; read with a :class:`Salvage`, what converts of an event that does
    not (the salvage records what was left out) instead of raising."""
    as_text = read.text
    return Envelope(
        body=event.get_body() or b"",
        message_id=as_text(facts.get("message-id"), "message-id"),
        correlation_id=as_text(facts.get("correlation-id"), "correlation-id"),
        content_type=as_text(facts.get("content-type"), "content-type"),
        subject=as_text(facts.get("subject"), "subject"),
        to=as_text(facts.get("to"), "to"),
        reply_to=as_text(facts.get("reply-to"), "reply-to"),
        partition_key=as_text(
            facts.get("PartitionKey", facts.get("x-opt-partition-key")), "partition key"
        ),
        application_properties=read.properties(properties),
        enqueued_time_utc=parse_host_time(
            facts.get("x-opt-enqueued-time", facts.get("EnqueuedTimeUtc"))
        ),
        sequence_number=_integer(facts.get("SequenceNumber", facts.get("x-opt-sequence-number"))),
        offset=_event_position(facts),
        partition_id=partition_id,
        source=source,
    )


def _integer(value: Any) -> int | None:
    return None if value is None else int(value)


def _event_position(facts: Mapping[str, Any]) -> str | None:
    # Extension 6.5+: OffsetString is the position (a number, or on a geo-replicated namespace
    # an opaque string while Offset is -1). Older extensions only have Offset.
    position = facts.get("OffsetString")
    if position is None:
        position = facts.get("x-opt-offset", facts.get("Offset"))
    return text(position)


__all__ = [
    "STRING_FIELDS",
    "Reread",
    "TriggerMessage",
    "TriggerMetadataError",
    "envelopes_from_event_hub_batch",
    "envelopes_from_servicebus_batch",
    "parse_host_time",
    "reread_reasons",
]
