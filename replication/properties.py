"""The replication properties stamped on every replica: their names, parsing and stamping.

This module is the only place that spells the property names; everything else imports them.

- ``repl-origin``: logical name (from the topology) of the namespace where the message was
  first enqueued. Set on the first hop, never changed afterwards.
- ``repl-path``: the namespaces the message has been enqueued in, ``;``-separated, origin first.
  The replica's own target namespace is appended when it is stamped, so a message read in
  namespace X always has X as the last element of its path.
- ``repl-hops``: number of replications so far (an integer).
- ``repl-enqueued-time``, ``repl-sequence``, ``repl-offset``: written as the official .NET
  replication library writes them: on every hop the source's enqueue time (ISO-8601 UTC with
  milliseconds), sequence number and offset are appended after a ``;``. For Service Bus sources,
  which have no offset, ``repl-offset`` carries the sequence number (as the .NET library does).
  When reading, the documentation's spelling ``repl-enqueue-time`` is accepted too.
- ``replication``: the flag that Service Bus subscription rules set (``SET replication = 1``)
  and filter on (``replication IS NULL``). Replication copies it untouched.
- ``repl-target``: written by the .NET Event Hubs merge sample; read for compatibility.
- ``repl-origin-message-id``: the MessageId the message had where it was published, written
  only when a user transform gave a replica a MessageId of its own (the first such hop's value
  is kept); the Spark audit matches copies by it, so a re-identified replica is still a copy of
  its original (see ``replication.transforms``).

Every ``repl-`` name and the ``replication`` flag are reserved (:func:`is_replication_property`,
case-insensitive as the rule language is): loop prevention rests on them, so a task that edits
a replica's properties must leave these alone. The topology refuses options that name them and
:func:`with_replication_properties_of` undoes such an edit wherever it came from.

Property values from other writers are tolerated: malformed values are reported by
:func:`read_state` as :class:`~replication.exceptions.MalformedReplicationPropertyError`, which
callers dead-letter with that reason rather than guess.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from replication.envelope import Envelope, PropertyValue
from replication.exceptions import MalformedReplicationPropertyError
from replication.values import as_text

REPL_ORIGIN = "repl-origin"
REPL_PATH = "repl-path"
REPL_HOPS = "repl-hops"
REPL_ENQUEUED_TIME = "repl-enqueued-time"
REPL_ENQUEUE_TIME_DOCS_SPELLING = "repl-enqueue-time"
REPL_SEQUENCE = "repl-sequence"
REPL_OFFSET = "repl-offset"
REPL_TARGET = "repl-target"
REPL_ORIGIN_MESSAGE_ID = "repl-origin-message-id"
REPLICATION_FLAG = "replication"

DEAD_LETTER_REASON = "DeadLetterReason"
DEAD_LETTER_ERROR_DESCRIPTION = "DeadLetterErrorDescription"
DEAD_LETTER_SOURCE = "repl-dead-letter-source"
"""Written on messages parked in a task's ``deadLetterTarget`` (the Service Bus DLQ names)."""
DEAD_LETTER_BODY_OMITTED = "repl-dead-letter-body-omitted"
"""On a parked *notice*, a copy without the original's body: why the body is not there (too
large for the parking entity, with its size and SHA-256; a body the SDK cannot give exactly).
:data:`DEAD_LETTER_ORIGINAL` says where the original is kept instead."""
DEAD_LETTER_PROPERTIES_OMITTED = "repl-dead-letter-properties-omitted"
"""On a parked copy that lacks application properties the original has (values no replica can
carry, such as maps): their names and why. Such a copy is a notice too."""
DEAD_LETTER_ORIGINAL = "repl-dead-letter-original"
"""On a notice: where the whole original is kept (the source's dead-letter queue, or the event
hub partition and sequence number to re-read it from while the hub retains it)."""
DEAD_LETTER_ENQUEUED_TIME = "repl-dead-letter-enqueued-time"
"""On every parked copy: the original's enqueue time in its source (ISO-8601 UTC, ms)."""
DEAD_LETTER_SEQUENCE = "repl-dead-letter-sequence"
"""On every parked copy: the original's sequence number in its source (or partition)."""
DEAD_LETTER_OFFSET = "repl-dead-letter-offset"
"""On a parked event: its offset in its partition."""
DEAD_LETTER_PARTITION = "repl-dead-letter-partition"
"""On a parked event: its partition."""

DEAD_LETTER_PROPERTIES: tuple[str, ...] = (
    DEAD_LETTER_REASON,
    DEAD_LETTER_ERROR_DESCRIPTION,
    DEAD_LETTER_SOURCE,
)
"""What parking (``replication.runtime.parked_copy``) or the broker's dead-lettering adds to a
message as its reason; :func:`unparked` removes them again."""

SOURCE_FACT_PROPERTIES: tuple[str, ...] = (
    DEAD_LETTER_ENQUEUED_TIME,
    DEAD_LETTER_SEQUENCE,
    DEAD_LETTER_OFFSET,
    DEAD_LETTER_PARTITION,
)
"""Where the original was in its source, written on every parked copy (:func:`source_facts`):
a parked copy's own broker facts are the parking queue's, and a replica's ``repl-enqueued-time``,
``repl-sequence`` and ``repl-offset`` must be the source's."""

NOTICE_PROPERTIES: tuple[str, ...] = (
    DEAD_LETTER_BODY_OMITTED,
    DEAD_LETTER_PROPERTIES_OMITTED,
    DEAD_LETTER_ORIGINAL,
)
"""What makes a parked copy a notice rather than the original: it must never be sent on as the
message (:func:`omission`)."""

PARKING_PROPERTIES: tuple[str, ...] = (
    *DEAD_LETTER_PROPERTIES,
    *SOURCE_FACT_PROPERTIES,
    *NOTICE_PROPERTIES,
)
"""Everything parking adds; none of it is ever part of a replica."""

SEPARATOR = ";"

RESERVED_PREFIX = "repl-"
"""Every application property whose name starts with this (any case) belongs to replication."""

STAMPED_PROPERTIES: tuple[str, ...] = (
    REPL_ORIGIN,
    REPL_PATH,
    REPL_HOPS,
    REPL_ENQUEUED_TIME,
    REPL_SEQUENCE,
    REPL_OFFSET,
)
"""Properties this library writes on every replica."""

ALL_PROPERTIES: tuple[str, ...] = (
    *STAMPED_PROPERTIES,
    REPL_ENQUEUE_TIME_DOCS_SPELLING,
    REPL_TARGET,
    REPL_ORIGIN_MESSAGE_ID,
    REPLICATION_FLAG,
)
"""Every replication-related property name this library reads or writes."""


def is_replication_property(name: str) -> bool:
    """True for a reserved name: the ``replication`` flag or any ``repl-`` name, in any case."""
    lowered = name.lower()
    return lowered == REPLICATION_FLAG or lowered.startswith(RESERVED_PREFIX)


def reserved_property_problem(name: str) -> str | None:
    """Why an option may not edit the property ``name``, or None when it may."""
    if not is_replication_property(name):
        return None
    return f"{name!r} is a replication property; editing it would defeat loop prevention"


def with_replication_properties_of(replica: Envelope, original: Envelope) -> Envelope:
    """``replica`` carrying exactly the replication properties of ``original``.

    The guard behind the options check: a transformation that removed, renamed, set or added a
    reserved property (options built without validation, a future pattern) would restart the
    recorded path, and a ring of such tasks would replicate one message forever.
    """
    theirs = {
        key: value
        for key, value in original.application_properties.items()
        if is_replication_property(key)
    }
    ours = {
        key: value
        for key, value in replica.application_properties.items()
        if is_replication_property(key)
    }
    if ours == theirs:
        return replica
    return replica.with_properties(theirs, remove=tuple(ours))


@dataclasses.dataclass(frozen=True, slots=True)
class ReplicationState:
    """What a message's replication properties say about where it has been."""

    origin: str | None
    path: tuple[str, ...]
    hops: int
    target: str | None = None

    @property
    def visited(self) -> frozenset[str]:
        """Every namespace the message is known to have been enqueued in."""
        names = set(self.path)
        names.update(name for name in (self.origin, self.target) if name is not None)
        return frozenset(names)

    @property
    def is_replica(self) -> bool:
        """True when the message was produced by replication rather than by an application."""
        return self.hops > 0 or self.origin is not None or self.target is not None


def format_timestamp(moment: datetime) -> str:
    """ISO-8601 UTC with milliseconds and a ``Z`` suffix, e.g. ``2024-05-01T12:00:00.250Z``."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    if moment.year >= 1000:
        # The same text as the strftime below (every replica's stamp: a third of the time).
        return moment.replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _text(value: PropertyValue, name: str) -> str:
    """The text of replication property ``name``; binary that is not UTF-8 is malformed."""
    try:
        return as_text(value) or ""
    except UnicodeDecodeError:
        raise MalformedReplicationPropertyError(
            f"{name} must be text, got binary that is not UTF-8: {bytes(value)!r}"
        ) from None


def _split(value: PropertyValue, name: str) -> tuple[str, ...]:
    return tuple(part for part in _text(value, name).split(SEPARATOR) if part)


def read_state(properties: Mapping[str, PropertyValue]) -> ReplicationState:
    """Parse the replication properties of a message.

    Raises:
        MalformedReplicationPropertyError: ``repl-hops`` is not a non-negative integer, or
            ``repl-origin``, ``repl-path`` or ``repl-target`` is binary that is not UTF-8.
    """
    origin_value = properties.get(REPL_ORIGIN)
    origin = _text(origin_value, REPL_ORIGIN) if origin_value not in (None, "", b"") else None
    path_value = properties.get(REPL_PATH)
    path = _split(path_value, REPL_PATH) if path_value is not None else ()
    hops_value = properties.get(REPL_HOPS)
    if hops_value is None:
        hops = 0
    else:
        try:
            hops = (
                int(_text(hops_value, REPL_HOPS)) if not isinstance(hops_value, int) else hops_value
            )
        except ValueError:
            hops = -1
        if hops < 0 or isinstance(hops_value, bool):
            raise MalformedReplicationPropertyError(
                f"{REPL_HOPS} must be a non-negative integer, got {hops_value!r}"
            )
    target_value = properties.get(REPL_TARGET)
    target = _text(target_value, REPL_TARGET) if target_value is not None else None
    return ReplicationState(origin=origin, path=path, hops=hops, target=target)


def _append(properties: Mapping[str, PropertyValue], name: str, value: str) -> str:
    previous = properties.get(name)
    if previous is None or _text(previous, name) == "":
        return value
    return f"{_text(previous, name)}{SEPARATOR}{value}"


def stamp(
    envelope: Envelope,
    *,
    source_namespace: str,
    target_namespace: str,
    state: ReplicationState | None = None,
) -> Envelope:
    """Return the replica of ``envelope`` to be enqueued in ``target_namespace``.

    ``envelope`` is the message as received from ``source_namespace`` (its broker facts are
    the source's). The replica keeps every application property, including ``replication``,
    and gets the stamped properties described in the module docstring. The input is not changed.
    ``state``: :func:`read_state` of ``envelope``'s properties when the caller has read it
    already (it is not read again).

    Raises:
        MalformedReplicationPropertyError: see :func:`read_state`; also when a property that
            stamping appends to (``repl-enqueued-time``, ``repl-sequence``, ``repl-offset``) is
            binary that is not UTF-8.
    """
    properties = envelope.application_properties
    if state is None:
        state = read_state(properties)
    origin = state.origin or source_namespace
    path = list(state.path) or [origin]
    if path[-1] != source_namespace:
        path.append(source_namespace)
    path.append(target_namespace)
    enqueued = format_timestamp(envelope.enqueued_time_utc) if envelope.enqueued_time_utc else ""
    if REPL_ENQUEUED_TIME not in properties and REPL_ENQUEUE_TIME_DOCS_SPELLING in properties:
        properties = {
            **properties,
            REPL_ENQUEUED_TIME: properties[REPL_ENQUEUE_TIME_DOCS_SPELLING],
        }
    sequence = "" if envelope.sequence_number is None else str(envelope.sequence_number)
    offset = envelope.offset if envelope.offset is not None else sequence
    updates: dict[str, PropertyValue] = {
        REPL_ORIGIN: origin,
        REPL_PATH: SEPARATOR.join(path),
        REPL_HOPS: state.hops + 1,
        REPL_ENQUEUED_TIME: _append(properties, REPL_ENQUEUED_TIME, enqueued),
        REPL_SEQUENCE: _append(properties, REPL_SEQUENCE, sequence),
        REPL_OFFSET: _append(properties, REPL_OFFSET, offset),
    }
    return envelope.with_properties(updates)


def source_enqueued_times(properties: Mapping[str, PropertyValue]) -> tuple[str, ...]:
    """The per-hop source enqueue times, oldest first (either spelling of the property)."""
    value = properties.get(REPL_ENQUEUED_TIME, properties.get(REPL_ENQUEUE_TIME_DOCS_SPELLING))
    return () if value is None else tuple(_text(value, REPL_ENQUEUED_TIME).split(SEPARATOR))


def without_replication_properties(
    properties: Mapping[str, PropertyValue], keep: Iterable[str] = (REPLICATION_FLAG,)
) -> dict[str, PropertyValue]:
    """The application properties minus the replication ones (``keep`` are retained)."""
    dropped = set(ALL_PROPERTIES) - set(keep)
    return {key: value for key, value in properties.items() if key not in dropped}


def source_facts(envelope: Envelope) -> dict[str, PropertyValue]:
    """The properties that record where ``envelope`` was in its source (see
    :data:`SOURCE_FACT_PROPERTIES`); only the facts it has."""
    facts: dict[str, PropertyValue] = {}
    if envelope.enqueued_time_utc is not None:
        facts[DEAD_LETTER_ENQUEUED_TIME] = format_timestamp(envelope.enqueued_time_utc)
    if envelope.sequence_number is not None:
        facts[DEAD_LETTER_SEQUENCE] = envelope.sequence_number
    if envelope.offset is not None:
        facts[DEAD_LETTER_OFFSET] = envelope.offset
    if envelope.partition_id is not None:
        facts[DEAD_LETTER_PARTITION] = envelope.partition_id
    return facts


def omission(properties: Mapping[str, PropertyValue]) -> str | None:
    """Why a parked message with these properties is a notice and not the original (None: it
    is the original plus its reason)."""
    for name in (DEAD_LETTER_BODY_OMITTED, DEAD_LETTER_PROPERTIES_OMITTED):
        value = properties.get(name)
        if value is not None:
            return f"{name}: {as_text(value, errors='replace')}"
    return None


def _source_time(value: PropertyValue) -> datetime | None:
    text = as_text(value, errors="replace")
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def _source_integer(value: PropertyValue) -> int | None:
    try:
        return int(as_text(value, errors="replace") or "") if not isinstance(value, int) else value
    except ValueError:
        return None


def unparked(envelope: Envelope) -> Envelope:
    """The message as it was before it was parked or dead-lettered, for a redrive.

    Everything parking added is removed (as application properties and as the envelope's
    broker facts), and the source facts it recorded (:func:`source_facts`) become the
    envelope's broker facts again, so the replica's ``repl-enqueued-time``, ``repl-sequence``
    and ``repl-offset`` are the source's, not the parking queue's. Everything else, MessageId
    and the replication properties included, is kept, so loop prevention sees the original
    path and duplicate-detecting targets drop a copy that did arrive before. A copy parked
    before source facts were recorded keeps the facts it was received with.

    A notice (:func:`omission`) is not the original: callers must not send it on.
    """
    properties = envelope.application_properties
    facts: dict[str, object] = {}
    if DEAD_LETTER_ENQUEUED_TIME in properties:
        facts["enqueued_time_utc"] = _source_time(properties[DEAD_LETTER_ENQUEUED_TIME])
    if DEAD_LETTER_SEQUENCE in properties:
        facts["sequence_number"] = _source_integer(properties[DEAD_LETTER_SEQUENCE])
    if DEAD_LETTER_SEQUENCE in properties or DEAD_LETTER_OFFSET in properties:
        offset = properties.get(DEAD_LETTER_OFFSET)
        facts["offset"] = None if offset is None else as_text(offset, errors="replace")
        partition = properties.get(DEAD_LETTER_PARTITION)
        facts["partition_id"] = None if partition is None else as_text(partition, errors="replace")
    return envelope.with_properties(remove=PARKING_PROPERTIES).replace(
        dead_letter_reason=None, dead_letter_error_description=None, **facts
    )


__all__ = [
    "ALL_PROPERTIES",
    "DEAD_LETTER_BODY_OMITTED",
    "DEAD_LETTER_ENQUEUED_TIME",
    "DEAD_LETTER_ERROR_DESCRIPTION",
    "DEAD_LETTER_OFFSET",
    "DEAD_LETTER_ORIGINAL",
    "DEAD_LETTER_PARTITION",
    "DEAD_LETTER_PROPERTIES",
    "DEAD_LETTER_PROPERTIES_OMITTED",
    "DEAD_LETTER_REASON",
    "DEAD_LETTER_SEQUENCE",
    "DEAD_LETTER_SOURCE",
    "NOTICE_PROPERTIES",
    "PARKING_PROPERTIES",
    "REPLICATION_FLAG",
    "REPL_ENQUEUED_TIME",
    "REPL_ENQUEUE_TIME_DOCS_SPELLING",
    "REPL_HOPS",
    "REPL_OFFSET",
    "REPL_ORIGIN",
    "REPL_ORIGIN_MESSAGE_ID",
    "REPL_PATH",
    "REPL_SEQUENCE",
    "REPL_TARGET",
    "RESERVED_PREFIX",
    "SEPARATOR",
    "SOURCE_FACT_PROPERTIES",
    "STAMPED_PROPERTIES",
    "ReplicationState",
    "format_timestamp",
    "is_replication_property",
    "omission",
    "read_state",
    "reserved_property_problem",
    "source_enqueued_times",
    "source_facts",
    "stamp",
    "unparked",
    "with_replication_properties_of",
    "without_replication_properties",
]
