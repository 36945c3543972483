"""What a user transform returns besides messages: skip one, or reject it (parks it).

A transform returns the replica to send (an :class:`~replication.envelope.Envelope`, usually
the one it was given, changed with ``replace`` / ``with_properties``), a list of replicas (a
split), :class:`SkipMessage` or :class:`RejectMessage`. Nothing else: ``None`` (a forgotten
``return``) would drop a message silently, so it parks the message as ``TransformFailed``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence

from replication.envelope import Envelope

TRANSFORM_FAILED = "TransformFailed"
"""DeadLetterReason of a message whose transform raised, hung, returned something that is not a
result, or changed the replication properties."""

TRANSFORM_REJECTED = "TransformRejected"
"""DeadLetterReason of a message the transform rejected (:class:`RejectMessage`); the
transform's own reason is the DeadLetterErrorDescription."""

TRANSFORM_SKIPPED = "TransformSkipped"
"""Prefix of the logged reason of a message the transform skipped (:class:`SkipMessage`)."""


@dataclasses.dataclass(frozen=True, slots=True)
class SkipMessage:
    """Do not replicate this message; it is settled (completed) like a filtered one.

    ``reason`` is logged at DEBUG and counted as a skip, as loop prevention's skips are.
    """

    reason: str


@dataclasses.dataclass(frozen=True, slots=True)
class RejectMessage:
    """Do not replicate this message: park it in the task's ``deadLetterTarget`` with
    DeadLetterReason ``TransformRejected`` and ``reason`` as the error description."""

    reason: str


TransformResult = Envelope | Sequence[Envelope] | SkipMessage | RejectMessage
"""What a transform returns (see the module docstring)."""

TransformFunction = Callable[[Envelope], TransformResult | Awaitable[TransformResult]]
"""A transform: one message in, a :data:`TransformResult` out; ``def`` or ``async def``."""


__all__ = [
    "TRANSFORM_FAILED",
    "TRANSFORM_REJECTED",
    "TRANSFORM_SKIPPED",
    "RejectMessage",
    "SkipMessage",
    "TransformFunction",
    "TransformResult",
]
