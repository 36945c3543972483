"""The ``sys.`` properties of the rule language: one table for the parser, the evaluator and
the actions (which of them a rule action may change)."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class SystemProperty:
    """``sys.<name>`` reads ``Envelope.<field>``; only ``writable`` ones may be SET or REMOVEd."""

    name: str
    field: str
    writable: bool


SYSTEM_PROPERTIES: tuple[SystemProperty, ...] = (
    SystemProperty("MessageId", "message_id", writable=True),
    SystemProperty("CorrelationId", "correlation_id", writable=True),
    SystemProperty("ContentType", "content_type", writable=True),
    SystemProperty("Label", "subject", writable=True),
    SystemProperty("Subject", "subject", writable=True),
    SystemProperty("To", "to", writable=True),
    SystemProperty("ReplyTo", "reply_to", writable=True),
    SystemProperty("ReplyToSessionId", "reply_to_session_id", writable=True),
    SystemProperty("SessionId", "session_id", writable=True),
    SystemProperty("PartitionKey", "partition_key", writable=True),
    SystemProperty("TimeToLive", "time_to_live", writable=True),
    SystemProperty("ScheduledEnqueueTimeUtc", "scheduled_enqueue_time_utc", writable=True),
    # Broker facts: readable in filters, never changed by an action.
    SystemProperty("EnqueuedTimeUtc", "enqueued_time_utc", writable=False),
    SystemProperty("SequenceNumber", "sequence_number", writable=False),
    SystemProperty("DeliveryCount", "delivery_count", writable=False),
    SystemProperty("Size", "size", writable=False),
)

BY_NAME: dict[str, SystemProperty] = {p.name.lower(): p for p in SYSTEM_PROPERTIES}
"""The table by lower-cased name (the language is case-insensitive)."""

SYSTEM_PROPERTY_NAMES: tuple[str, ...] = tuple(p.name for p in SYSTEM_PROPERTIES)

__all__ = ["BY_NAME", "SYSTEM_PROPERTIES", "SYSTEM_PROPERTY_NAMES", "SystemProperty"]
