"""The neutral per-message type that every pattern, rule and transport works with.

An :class:`Envelope` carries one message between a trigger (Azure Functions binding or SDK
receiver) and a sender, independent of whether it came from Service Bus or Event Hubs. Field
names follow ``azure.servicebus.ServiceBusMessage`` so that code reads the same on both sides.

Envelopes are immutable: patterns and rule actions return new envelopes (``envelope.replace``
or :meth:`Envelope.with_properties`) instead of changing the one they were given, so a batch
can be re-planned after a partial failure without surprises. The application-property mapping is
read-only for the same reason.

The converters to and from the Azure SDK and Functions types live in
``replication.transport``; this module imports no SDK.
"""

from __future__ import annotations

import dataclasses
import operator
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any

PropertyValue = Any
"""An application-property value: str, int, float, bool, bytes, uuid, datetime or None."""

_EMPTY_PROPERTIES: Mapping[str, PropertyValue] = MappingProxyType({})


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Envelope:
    """One message, as sent or as received, with the broker facts known about it.

    Writable fields (copied to a replica): ``body`` to ``application_properties``.
    Read-only broker facts (set by the broker on receipt, never sent): ``enqueued_time_utc``,
    ``sequence_number``, ``offset`` and ``partition_id`` (Event Hubs), ``delivery_count``,
    ``dead_letter_reason`` and ``dead_letter_error_description``. ``source`` is the logical
    ``namespace/entity`` of the topology the message was received from (set by the converters);
    an event without a message-id gets its Service Bus MessageId from it, its partition and its
    sequence number (``replication.transport.servicebus.replica_ids``).
    """

    body: bytes = b""
    message_id: str | None = None
    correlation_id: str | None = None
    content_type: str | None = None
    subject: str | None = None
    to: str | None = None
    reply_to: str | None = None
    reply_to_session_id: str | None = None
    session_id: str | None = None
    partition_key: str | None = None
    time_to_live: timedelta | None = None
    scheduled_enqueue_time_utc: datetime | None = None
    application_properties: Mapping[str, PropertyValue] = dataclasses.field(
        default_factory=lambda: _EMPTY_PROPERTIES
    )
    enqueued_time_utc: datetime | None = None
    sequence_number: int | None = None
    offset: str | None = None
    partition_id: str | None = None
    delivery_count: int | None = None
    dead_letter_reason: str | None = None
    dead_letter_error_description: str | None = None
    source: str | None = None

    def __post_init__(self) -> None:
        body: Any = self.body
        if not isinstance(body, bytes):
            if isinstance(body, bytearray | memoryview):
                object.__setattr__(self, "body", bytes(body))
            elif isinstance(body, str):
                object.__setattr__(self, "body", body.encode("utf-8"))
            else:
                raise TypeError(f"Envelope.body must be bytes, not {type(body).__name__}")
        properties = self.application_properties
        if not isinstance(properties, MappingProxyType):
            for key in properties:
                if not isinstance(key, str):
                    raise TypeError(
                        f"application property keys must be str, got {type(key).__name__}: {key!r}"
                    )
            object.__setattr__(self, "application_properties", MappingProxyType(dict(properties)))

    def replace(self, **changes: Any) -> Envelope:
        """Return a copy with the given fields changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    def with_properties(
        self,
        updates: Mapping[str, PropertyValue] | None = None,
        *,
        remove: tuple[str, ...] = (),
    ) -> Envelope:
        """Return a copy whose application properties are updated and/or have keys removed."""
        merged = dict(self.application_properties)
        for key in remove:
            merged.pop(key, None)
        if updates:
            merged.update(updates)
        # Every replica is made here (the replication properties, the trace context), so the
        # copy skips what dataclasses.replace does generically: re-reading the field list and
        # running __init__ and __post_init__ again, which cost twice a plain field copy.
        copy = _new_envelope(Envelope)
        for set_field, value in zip(_FIELD_SETTERS, _field_values(self), strict=True):
            set_field(copy, value)
        _set_properties(copy, MappingProxyType(merged))
        return copy

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
        # MappingProxyType cannot be pickled; rebuild from a plain dict (multiprocessing, Spark,
        # the emulator's data directory).
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        fields["application_properties"] = dict(self.application_properties)
        return (_envelope_from_fields, (fields,))

    @property
    def size(self) -> int:
        """An estimate of the message size in bytes (body plus property keys and values).

        Used for ``sys.Size`` in rule filters and for batch budgeting; the broker's own figure
        also counts AMQP framing, so this is a lower bound.
        """
        total = len(self.body)
        for key, value in self.application_properties.items():
            total += len(key.encode("utf-8")) + len(str(value).encode("utf-8"))
        return total


@dataclasses.dataclass(frozen=True, slots=True)
class PropertyUpdate:
    """Application properties to set on, and remove from, every envelope of one send.

    The send span's trace context (``traceparent``, ``Diagnostic-Id``, and ``tracestate`` or
    none) travels this way from the telemetry to the senders, which write it while they build
    each SDK message, where the properties are copied anyway, instead of copying every envelope
    first (see ``TargetSender.send`` in :mod:`replication.runtime`).
    """

    values: Mapping[str, PropertyValue]
    remove: tuple[str, ...] = ()

    def apply(self, properties: dict[str, Any]) -> None:
        """Update ``properties`` in place: the removals first, then the values."""
        for key in self.remove:
            properties.pop(key, None)
        properties.update(self.values)

    def applied(self, envelope: Envelope) -> Envelope:
        """``envelope`` as sent with this update."""
        return envelope.with_properties(self.values, remove=self.remove)


def _envelope_from_fields(fields: dict[str, Any]) -> Envelope:
    return Envelope(**fields)


_FIELD_NAMES: tuple[str, ...] = tuple(field.name for field in dataclasses.fields(Envelope))
_field_values = operator.attrgetter(*_FIELD_NAMES)
_new_envelope = object.__new__
# The slots' own setters: the frozen class's __setattr__ refuses every write, and calling the
# slot descriptor directly skips the attribute lookup object.__setattr__ does.
_FIELD_SETTERS: tuple[Callable[[Envelope, Any], None], ...] = tuple(
    vars(Envelope)[name].__set__ for name in _FIELD_NAMES
)
_set_properties = vars(Envelope)["application_properties"].__set__


MESSAGE_FIELDS: tuple[str, ...] = (
    "message_id",
    "correlation_id",
    "content_type",
    "subject",
    "to",
    "reply_to",
    "reply_to_session_id",
    "session_id",
    "partition_key",
    "time_to_live",
    "scheduled_enqueue_time_utc",
)
"""The writable fields a replica copies besides the body and the application properties: every
converter and every replica comparison works from this one list."""


MAX_MESSAGE_ID_LENGTH = 128
"""Service Bus refuses longer MessageIds."""


def position_message_id(envelope: Envelope) -> str:
    """The MessageId of a message that has none: ``SOURCE/SEQUENCE`` for a Service Bus message,
    ``SOURCE/PARTITION/SEQUENCE`` for an event.

    The sequence number is the message's stable, unique position within its entity (or the
    event's within its partition), so every redelivery of the message gets the same id and a
    target with duplicate detection keeps one copy. The offset is not stable: on a
    geo-replicated Event Hubs namespace the Functions extension (6.5 and later) reports
    ``Offset`` as -1 for every event and moves the position into ``OffsetString``, so an
    offset-based id (the .NET replication library uses the bare offset) would give every such
    event the same MessageId and a target with duplicate detection would keep only one. The
    source (logical ``namespace/entity``) keeps messages of different entities apart when
    several are consolidated into one. Ids longer than Service Bus allows become a UUID derived
    from the same text, just as stable across redeliveries.

    Raises:
        ValueError: the envelope has neither a sequence number nor an offset.
    """
    if envelope.sequence_number is not None:
        position = str(envelope.sequence_number)
    elif envelope.offset is not None:
        position = f"offset-{envelope.offset}"
    else:
        raise ValueError("a message without message-id needs a sequence number or an offset")
    parts = [envelope.source, envelope.partition_id, position]
    message_id = "/".join(part for part in parts if part is not None)
    if len(message_id) > MAX_MESSAGE_ID_LENGTH:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, message_id))
    return message_id


__all__ = [
    "MAX_MESSAGE_ID_LENGTH",
    "MESSAGE_FIELDS",
    "Envelope",
    "PropertyUpdate",
    "PropertyValue",
    "position_message_id",
]
