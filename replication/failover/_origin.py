"""Where a message was first enqueued, read from the replication properties it carries.

Replication changes a message's broker facts (enqueue time, sequence number) but stamps the
source's on every replica (:mod:`replication.properties`): ``repl-origin`` names the namespace of
the first enqueue, and the first ``;``-separated element of ``repl-enqueued-time`` and
``repl-sequence`` is that first enqueue's time and sequence number. :func:`origin_of` reads them
back, so that a consumer can tell that the replica it reads in the secondary is the message it
processed in the primary, and where in the primary's stream it stood.

A message without replication properties was published directly to the namespace it is read
from: its origin is that namespace and its own broker facts are the origin's. Values that cannot
be parsed (another writer's properties) leave the time or sequence unknown (``None``) rather than
fail: the processed-message log identifies messages by MessageId; the origin is what it uses to
bound itself and to count what it could not vouch for.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import UTC, datetime

from replication.envelope import PropertyValue
from replication.properties import REPL_ORIGIN, REPL_SEQUENCE, SEPARATOR, source_enqueued_times
from replication.values import as_text


@dataclasses.dataclass(frozen=True, slots=True)
class OriginPosition:
    """The namespace a message was first enqueued in, and its enqueue time and sequence number
    there (``None`` where unknown)."""

    namespace: str
    enqueued_time: datetime | None
    sequence: int | None


def origin_of(
    properties: Mapping[str, PropertyValue],
    *,
    namespace: str,
    enqueued_time: datetime | None,
    sequence: int | None,
) -> OriginPosition:
    """The origin of a message read from ``namespace`` with these broker facts and application
    properties (keys already decoded to ``str``)."""
    origin = _text(properties.get(REPL_ORIGIN))
    if not origin:
        return OriginPosition(namespace, _utc(enqueued_time), sequence)
    try:
        times = source_enqueued_times(properties)
    except ValueError:  # MalformedReplicationPropertyError: binary that is not UTF-8
        times = ()
    first_time = _parse_time(times[0]) if times else None
    sequences = (_text(properties.get(REPL_SEQUENCE)) or "").split(SEPARATOR)
    return OriginPosition(origin, first_time, _parse_int(sequences[0]))


def _text(value: PropertyValue) -> str | None:
    try:
        return as_text(value)
    except (UnicodeDecodeError, TypeError):
        return None


def _parse_time(text: str) -> datetime | None:
    try:
        return _utc(datetime.fromisoformat(text.strip()))
    except ValueError:
        return None


def _parse_int(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None


def _utc(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


__all__ = ["OriginPosition", "origin_of"]
