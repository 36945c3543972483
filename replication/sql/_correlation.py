"""Service Bus correlation filters: the other kind of subscription filter, beside SQL.

A correlation filter names some system properties and application properties with a value
each; a message matches when every one of them equals the message's. Used by the emulator to
route messages to subscriptions and by the capacity plan to count what each rule lets through,
so both decide alike.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from replication.envelope import Envelope, PropertyValue

CORRELATION_FIELDS = frozenset(
    {
        "correlation_id",
        "message_id",
        "to",
        "reply_to",
        "subject",
        "session_id",
        "reply_to_session_id",
        "content_type",
    }
)
"""The envelope fields a correlation filter can name (Service Bus's CorrelationId, MessageId,
To, ReplyTo, Label/Subject, SessionId, ReplyToSessionId and ContentType)."""


@dataclasses.dataclass(frozen=True)
class CorrelationFilter:
    """Matches a message whose named fields and application properties all equal these."""

    fields: Mapping[str, object] = dataclasses.field(default_factory=dict)
    """Envelope field names (see ``CORRELATION_FIELDS``) and the value each must have."""
    properties: Mapping[str, PropertyValue] = dataclasses.field(default_factory=dict)
    """Application properties and the value each must have."""

    def __post_init__(self) -> None:
        unknown = set(self.fields) - CORRELATION_FIELDS
        if unknown:
            raise ValueError(f"a correlation filter cannot match {', '.join(sorted(unknown))}")

    def matches(self, envelope: Envelope) -> bool:
        if any(getattr(envelope, name) != value for name, value in self.fields.items()):
            return False
        found = envelope.application_properties
        return all(found.get(name) == value for name, value in self.properties.items())
