"""What every pattern module provides and returns: targets, decisions and the pattern record.

A pattern is pure: given a batch of :class:`~replication.envelope.Envelope` and the task's
context and options, it returns one or more :data:`Decision` per input message. It never does
I/O; the runtime executes the decisions (send, dead-letter, or log a skip).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from replication.envelope import Envelope

if TYPE_CHECKING:
    from replication.topology import RuleSpec


class PatternOptions(BaseModel):
    """Base of every ``<Pattern>Options`` model: camelCase keys, unknown keys rejected."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
    """An entity a replica is sent to: the namespace's logical name and the entity name."""

    namespace: str
    entity: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.entity}"


@dataclasses.dataclass(frozen=True, slots=True)
class TaskContext:
    """What a pattern needs to know about the task it runs for."""

    task_name: str
    source_namespace: str
    targets: tuple[Target, ...]
    max_hops: int


@dataclasses.dataclass(frozen=True, slots=True)
class Forward:
    """Send ``envelope`` (already stamped as a replica) to ``target``."""

    source: Envelope
    envelope: Envelope
    target: Target


@dataclasses.dataclass(frozen=True, slots=True)
class Skip:
    """Deliberately do not replicate ``source`` (loop prevention, a filter); it is settled."""

    source: Envelope
    reason: str


@dataclasses.dataclass(frozen=True, slots=True)
class DeadLetter:
    """``source`` cannot be replicated: dead-letter it with ``reason`` and ``description``."""

    source: Envelope
    reason: str
    description: str


Decision = Forward | Skip | DeadLetter


@dataclasses.dataclass(frozen=True, slots=True)
class Pattern:
    """A federation pattern as the registry hands it out.

    ``plan`` maps a batch to decisions; ``subscription_rule`` is the rule the pattern needs on
    a Service Bus subscription it reads (``None``: keep the subscription's own rules).
    """

    name: str
    summary: str
    options_model: type[PatternOptions]
    plan: Callable[[Sequence[Envelope], TaskContext, Any], list[Decision]]
    subscription_rule: Callable[[Any], RuleSpec | None]


def no_subscription_rule(options: Any) -> RuleSpec | None:
    """For patterns that read whatever the subscription's own rules select."""
    return None


__all__ = [
    "DeadLetter",
    "Decision",
    "Forward",
    "Pattern",
    "PatternOptions",
    "Skip",
    "Target",
    "TaskContext",
    "no_subscription_rule",
]
