"""Splitting and routing: send each message to the targets whose condition it meets.

``routes`` is a list of ``{condition, targets}``: ``condition`` is a Service Bus SQL filter and
``targets`` names task targets as ``namespace/entity``. With ``mode: "all"`` (default, like topic
subscriptions) a message goes to every matching route; with ``"first"`` to the first match only.
A message no route matches is dead-lettered with reason ``NoRouteMatched`` (``unmatched: "skip"``
settles it with a logged reason instead).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field, PrivateAttr, field_validator

from replication.envelope import Envelope
from replication.planning import (
    DeadLetter,
    Decision,
    Pattern,
    PatternOptions,
    Skip,
    Target,
    TaskContext,
)
from replication.sql import SqlFilter

from ._forwarding import forward_to_targets

NO_ROUTE_MATCHED = "NoRouteMatched"


class Route(PatternOptions):
    """One route: a SQL condition and the task targets (``namespace/entity``) it sends to."""

    condition: str
    """a Service Bus SQL filter"""
    targets: list[str] = Field(min_length=1)
    """the task targets (`namespace/entity`) a message that meets it goes to"""
    _compiled: SqlFilter = PrivateAttr()

    @field_validator("condition")
    @classmethod
    def _parses(cls, value: str) -> str:
        SqlFilter(value)
        return value

    def model_post_init(self, context: object) -> None:
        self._compiled = SqlFilter(self.condition)

    def matches(self, envelope: Envelope) -> bool:
        return self._compiled.matches(envelope)


class RoutingOptions(PatternOptions):
    """``routes``, ``mode`` (``all`` | ``first``) and ``unmatched`` (``deadletter`` | ``skip``)."""

    routes: list[Route] = Field(min_length=1)
    """the routes, in order"""
    mode: Literal["all", "first"] = "all"
    """`all`: every route a message meets; `first`: the first only"""
    unmatched: Literal["deadletter", "skip"] = "deadletter"
    """park a message no route takes as `NoRouteMatched`, or skip it"""


def _selected_targets(
    envelope: Envelope, context: TaskContext, options: RoutingOptions
) -> tuple[Target, ...]:
    chosen: list[str] = []
    for route in options.routes:
        if route.matches(envelope):
            chosen.extend(t for t in route.targets if t not in chosen)
            if options.mode == "first":
                break
    return tuple(target for target in context.targets if str(target) in chosen)


def plan(
    batch: Sequence[Envelope], context: TaskContext, options: RoutingOptions
) -> list[Decision]:
    decisions: list[Decision] = []
    for envelope in batch:
        targets = _selected_targets(envelope, context, options)
        if targets:
            decisions.extend(forward_to_targets(envelope, context, targets=targets))
        elif options.unmatched == "skip":
            decisions.append(Skip(envelope, f"{NO_ROUTE_MATCHED}: no route condition is true"))
        else:
            decisions.append(DeadLetter(envelope, NO_ROUTE_MATCHED, "no route condition is true"))
    return decisions


def sql_conditions(options: RoutingOptions) -> list[tuple[str, str]]:
    """(option path, expression) pairs for ``lint-rules``."""
    return [(f"routes[{i}].condition", r.condition) for i, r in enumerate(options.routes)]


def check(options: RoutingOptions, targets: Sequence[Target]) -> list[tuple[str, str]]:
    """Route targets that are not among the task's targets (a configuration error)."""
    names = [str(target) for target in targets]
    return [
        (f"routes[{i}].targets", f"route target '{name}' is not a task target ({', '.join(names)})")
        for i, route in enumerate(options.routes)
        for name in route.targets
        if name not in names
    ]


PATTERN: Pattern[RoutingOptions] = Pattern(
    name="routing",
    summary="split a stream: send each message to the targets whose SQL condition it meets",
    options_model=RoutingOptions,
    plan=plan,
    sql_conditions=sql_conditions,
    check=check,
)
