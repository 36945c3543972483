"""What a transform's result becomes: replicas that keep loop prevention intact, or a verdict.

:func:`checked_result` is the guard between user code and the pattern. Whatever the function
returned, a message is only ever replicated as one or more :class:`Envelope` s that

- carry exactly the replication properties (``repl-*``, ``replication``) of the message as it
  was received: a replica that added, removed or changed one is not sent, its message is parked
  as ``TransformFailed`` naming the properties, because loop prevention rests on them (a
  function that reset ``repl-path`` could send a message round a ring forever);
- carry the received message's broker facts (enqueue time, sequence number, offset, partition,
  delivery count, source): they are facts about the source, stamped into ``repl-*`` and used to
  recognise redeliveries, so whatever the function did to them is undone silently;
- keep the received MessageId unless the function set another one. A function that sets one must
  derive it from the message (the same input gives the same id), so that a redelivered message
  gets the same id and a target with duplicate detection keeps one copy. The received id is then
  recorded as ``repl-origin-message-id`` (once, at the first hop that changes it), by which the
  Spark audit still matches the replica with its original. A ``None`` MessageId means "keep".
- of a split (a list of more than one), get distinct MessageIds: a part left with the received
  id (or none) gets ``<id>/<n>`` (n from 1, ``<id>`` the message's id or, without one, its
  position id), the same on every redelivery; two parts with one id park the message.

Anything else a function returns (``None``, an empty list, another type) parks the message as
``TransformFailed`` with what was returned; so does an exception (:func:`failure_of`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from replication.envelope import Envelope, PropertyValue, position_message_id
from replication.properties import REPL_ORIGIN_MESSAGE_ID, is_replication_property

from ._results import RejectMessage, SkipMessage

BROKER_FACTS: tuple[str, ...] = (
    "enqueued_time_utc",
    "sequence_number",
    "offset",
    "partition_id",
    "delivery_count",
    "dead_letter_reason",
    "dead_letter_error_description",
    "source",
)
"""The envelope fields a replica always takes from the received message."""

_MAX_SHOWN = 200
"""Characters of a returned value quoted in a TransformFailed description."""


@dataclasses.dataclass(frozen=True, slots=True)
class TransformFailure:
    """The transform failed for this message; ``description`` says how (parked as
    ``TransformFailed``)."""

    description: str


Checked = tuple[Envelope, ...] | SkipMessage | RejectMessage | TransformFailure
"""A transform's result after the guard: the replicas to plan, or what happens instead."""


def failure_of(error: BaseException) -> TransformFailure:
    """The failure of a call that raised: the exception's type and message."""
    return TransformFailure(f"{type(error).__name__}: {error}"[:1024])


def checked_result(source: Envelope, result: object) -> Checked:
    """Turn what the transform returned for ``source`` into a :data:`Checked` (see the module
    docstring)."""
    if result is source:
        return (source,)
    if isinstance(result, SkipMessage | RejectMessage):
        if not isinstance(result.reason, str) or not result.reason:
            return TransformFailure(
                f"returned {type(result).__name__} without a reason (a non-empty str)"
            )
        return result
    if isinstance(result, Envelope):
        parts: Sequence[Any] = (result,)
    elif isinstance(result, list | tuple):
        parts = result
        if not parts:
            return TransformFailure(
                "returned an empty list; return SkipMessage(reason) to drop a message"
            )
    else:
        return TransformFailure(
            f"returned {_shown(result)}; a transform returns the message (an Envelope), a list "
            "of them, SkipMessage(reason) or RejectMessage(reason)"
        )
    replicas: list[Envelope] = []
    for index, part in enumerate(parts):
        where = f"element {index} of the list" if parts is result else "the replica"
        if not isinstance(part, Envelope):
            return TransformFailure(
                f"returned a list whose element {index} is {_shown(part)}, not an Envelope"
            )
        changed = changed_replication_properties(source, part)
        if changed:
            return TransformFailure(
                f"{where} changed replication properties ({', '.join(changed)}); loop "
                "prevention rests on them: return them as received"
            )
        replicas.append(_with_source_facts(source, part))
    if len(replicas) == 1:
        return (_identified(source, replicas[0]),)
    return _split_ids(source, replicas)


def changed_replication_properties(source: Envelope, replica: Envelope) -> list[str]:
    """The replication properties ``replica`` added, removed or changed, as ``+name``,
    ``-name`` and ``~name``, in name order (empty when it kept them all)."""
    theirs = source.application_properties
    ours = replica.application_properties
    if ours is theirs:
        return []
    received = _reserved(theirs)
    returned = _reserved(ours)
    if received == returned and all(type(received[k]) is type(returned[k]) for k in received):
        return []
    changes = [f"-{k}" for k in received if k not in returned]
    changes += [f"+{k}" for k in returned if k not in received]
    changes += [
        f"~{k}"
        for k in received
        if k in returned
        and (received[k] != returned[k] or type(received[k]) is not type(returned[k]))
    ]
    return sorted(changes, key=lambda change: change[1:])


def _reserved(properties: Mapping[str, PropertyValue]) -> dict[str, PropertyValue]:
    return {k: v for k, v in properties.items() if is_replication_property(k)}


def _with_source_facts(source: Envelope, replica: Envelope) -> Envelope:
    changes = {
        name: getattr(source, name)
        for name in BROKER_FACTS
        if getattr(replica, name) != getattr(source, name)
    }
    if replica.message_id is None and source.message_id is not None:
        changes["message_id"] = source.message_id
    return replica.replace(**changes) if changes else replica


def _identified(source: Envelope, replica: Envelope) -> Envelope:
    """A replica with a MessageId of its own records the received one (first change only)."""
    if (
        replica.message_id == source.message_id
        or source.message_id is None
        or REPL_ORIGIN_MESSAGE_ID in replica.application_properties
    ):
        return replica
    return replica.with_properties({REPL_ORIGIN_MESSAGE_ID: source.message_id})


def _split_ids(source: Envelope, parts: list[Envelope]) -> Checked:
    base = source.message_id
    if base is None and (source.sequence_number is not None or source.offset is not None):
        base = position_message_id(source)
    numbered: list[Envelope] = []
    for number, part in enumerate(parts, start=1):
        if base is not None and part.message_id in (None, source.message_id):
            part = part.replace(message_id=f"{base}/{number}")
        numbered.append(part)
    ids = [part.message_id for part in numbered if part.message_id is not None]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        return TransformFailure(
            f"returned a split whose parts share MessageId {', '.join(repeated)}; give each "
            "part its own (a target with duplicate detection would keep only one)"
        )
    return tuple(numbered)


def _shown(value: object) -> str:
    text = repr(value)
    if len(text) > _MAX_SHOWN:
        text = text[:_MAX_SHOWN] + "..."
    return f"{type(value).__name__} {text}" if value is not None else "None"


__all__ = [
    "BROKER_FACTS",
    "Checked",
    "TransformFailure",
    "changed_replication_properties",
    "checked_result",
    "failure_of",
]
