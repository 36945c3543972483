"""What a federation pattern is, what it decides, and the registry that finds patterns by name.

A pattern is pure: given a batch of :class:`~replication.envelope.Envelope` and the task's
context and options, it returns one or more :data:`Decision` per input message. It never does
I/O; the runtime executes the decisions (send, dead-letter, or log a skip).

Everything the rest of the library needs from a pattern is declared on its one
:class:`Pattern` record, typed by its options model: the plan, the subscription rule it needs
on a topic subscription it reads, the SQL conditions among its options (for ``lint-rules``)
and its own checks of a task's configuration. The topology validates a task's options once,
into that model, and hands the same object to every hook.

The pattern modules themselves (one per pattern) live in the repository's top-level
``patterns/`` folder. The library never imports them by a fixed name: :func:`load_pattern`
imports ``<package>.<module>`` from :data:`replication.layout.PATTERNS`, which is
``replication.patterns`` where the library is installed as a wheel and the top-level
``patterns`` package in a checkout and in the Function app deployed as the repository's files.
Adding a pattern is one module in ``patterns/`` and one line in ``_REGISTRY``; modules are
imported lazily, so a misspelt name costs nothing and gets a "did you mean" from the topology
validator.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from replication.envelope import Envelope
from replication.layout import PATTERNS
from replication.rules import RuleSpec


class PatternOptions(BaseModel):
    """Base of every ``<Pattern>Options`` model: camelCase keys, unknown keys rejected."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
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
    """Send ``envelope`` (already stamped as a replica) to ``target``.

    ``part`` tells the replicas of one message apart when a user transform split it (1, 2, ...;
    0 when the message has one replica): the runtime remembers what a target acknowledged per
    source position and part, so a redelivered batch re-sends only the parts that are missing.
    """

    source: Envelope
    envelope: Envelope
    target: Target
    part: int = 0


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

OptionsT = TypeVar("OptionsT", bound=PatternOptions)


def no_subscription_rule(options: PatternOptions) -> RuleSpec | None:
    """For patterns that read whatever the subscription's own rules select."""
    return None


def no_sql_conditions(options: PatternOptions) -> Iterable[tuple[str, str]]:
    """For patterns whose options hold no SQL."""
    return ()


def no_checks(options: PatternOptions, targets: Sequence[Target]) -> Iterable[tuple[str, str]]:
    """For patterns whose options need no check against the task."""
    return ()


@dataclasses.dataclass(frozen=True, slots=True)
class Pattern(Generic[OptionsT]):
    """A federation pattern as the registry hands it out, typed by its options model.

    - ``plan`` maps a batch to decisions;
    - ``subscription_rule`` is the rule the pattern needs on a Service Bus subscription it
      reads (``None``: keep the subscription's own rules);
    - ``sql_conditions`` lists the SQL expressions among the options as (option path,
      expression), for ``lint-rules``;
    - ``check`` finds problems of the options against the task's targets, as (option path,
      message); the topology reports them with the file and JSON path;
    - ``fans_out``: every message goes to every target (no per-message choice of targets), so
      the topology may run a task with several targets as one *lane* per target, each reading
      its own subscription or consumer group (a dead target then holds back only its lane).
      Patterns that choose targets per message (routing, validation) leave it False.
    """

    name: str
    summary: str
    options_model: type[OptionsT]
    plan: Callable[[Sequence[Envelope], TaskContext, OptionsT], list[Decision]]
    subscription_rule: Callable[[OptionsT], RuleSpec | None] = no_subscription_rule
    sql_conditions: Callable[[OptionsT], Iterable[tuple[str, str]]] = no_sql_conditions
    check: Callable[[OptionsT, Sequence[Target]], Iterable[tuple[str, str]]] = no_checks
    fans_out: bool = False


_REGISTRY: dict[str, str] = {
    "all_active": "all_active",
    "active_passive": "active_passive",
    "spillover": "spillover",
    "latency_optimization": "latency_optimization",
    "stream_to_queue": "stream_to_queue",
    "consolidation": "consolidation",
    "validation": "validation",
    "routing": "routing",
}
"""Pattern name -> module of the patterns package."""

PATTERN_NAMES: tuple[str, ...] = tuple(_REGISTRY)


def load_pattern(name: str) -> Pattern[Any]:
    """The pattern registered as ``name`` (KeyError for an unknown name; the topology checks
    names with a "did you mean" before anything loads a pattern)."""
    module = importlib.import_module(f"{PATTERNS.module()}.{_REGISTRY[name]}")
    pattern: Pattern[Any] = module.PATTERN
    return pattern


__all__ = [
    "PATTERN_NAMES",
    "DeadLetter",
    "Decision",
    "Forward",
    "OptionsT",
    "Pattern",
    "PatternOptions",
    "Skip",
    "Target",
    "TaskContext",
    "load_pattern",
    "no_checks",
    "no_sql_conditions",
    "no_subscription_rule",
]
