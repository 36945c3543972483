"""Latency optimization: copy a message once between continents, then fan out locally.

Unlike all-active, replicas *are* forwarded onwards (a chain or hub-and-spoke: region A sends to
hub B once, B forwards to its local namespaces). Loop prevention guarantees that each namespace
receives a message at most once and that forwarding stops after ``maxHops``.
"""

from __future__ import annotations

from replication.planning import Pattern, PatternOptions

from ._forwarding import forward_every_message


class LatencyOptimizationOptions(PatternOptions):
    """Latency optimization takes no options; the hop limit is the task's ``maxHops``."""


PATTERN: Pattern[LatencyOptimizationOptions] = Pattern(
    name="latency_optimization",
    summary="forward messages, including transit replicas, once to each namespace on the route",
    options_model=LatencyOptimizationOptions,
    plan=forward_every_message,
    fans_out=True,
)
