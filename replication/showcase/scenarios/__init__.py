"""The showcase's scenarios, one per pattern, in the order the table shows them.

Each module defines ``SCENARIO``, a :class:`~replication.showcase.Scenario` that runs one
topology of ``examples/``. To add one, write a module like these and add its ``SCENARIO`` to
:data:`SCENARIOS`; its ``name`` becomes a value of ``python -m replication demo --only``.

The last, ``failover``, runs the failover drill (``python -m replication drill``'s own code)
with the application's publisher and consumer on the showcase's emulators.
"""

from __future__ import annotations

from .._scenario import Scenario
from . import (
    active_passive,
    consolidation,
    failover,
    latency,
    mesh,
    outage,
    routing,
    sessions,
    spillover,
    stream,
    transforms,
    validation,
)

SCENARIOS: tuple[Scenario, ...] = (
    mesh.SCENARIO,
    active_passive.SCENARIO,
    spillover.SCENARIO,
    latency.SCENARIO,
    validation.SCENARIO,
    stream.SCENARIO,
    routing.SCENARIO,
    consolidation.SCENARIO,
    transforms.SCENARIO,
    sessions.SCENARIO,
    outage.SCENARIO,
    failover.SCENARIO,
)

__all__ = ["SCENARIOS"]
