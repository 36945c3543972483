"""Latency optimization: copy a message once between continents, then fan out locally.

Unlike all-active, replicas *are* forwarded onwards (a chain or hub-and-spoke: region A sends to
hub B once, B forwards to its local namespaces). Loop prevention guarantees that each namespace
receives a message at most once and that forwarding stops after ``maxHops``.
"""

from __future__ import annotations

from collections.abc import Sequence

from replication.envelope import Envelope

from ._base import Decision, Pattern, PatternOptions, TaskContext, no_subscription_rule
from ._forwarding import forward_each


class LatencyOptimizationOptions(PatternOptions):
    """Latency optimization takes no options; the hop limit is the task's ``maxHops``."""


def plan(
    batch: Sequence[Envelope], context: TaskContext, options: LatencyOptimizationOptions
) -> list[Decision]:
    return forward_each(batch, context)


PATTERN = Pattern(
    name="latency_optimization",
    summary="forward messages, including transit replicas, once to each namespace on the route",
    options_model=LatencyOptimizationOptions,
    plan=plan,
    subscription_rule=no_subscription_rule,
)
