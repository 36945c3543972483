"""The showcase's scenarios, one per pattern, in the order the table shows them.

Each module defines ``SCENARIO``, a :class:`~replication.showcase.Scenario` that runs one
topology of ``examples/``. To add one, write a module like these and add its ``SCENARIO`` to
:data:`SCENARIOS`; its ``name`` becomes a value of ``python -m replication demo --only``.

**Slot for the failover drill** (``python -m replication drill``, issue 24): once it exists, it
joins as one more module here, ``failover.py``, whose ``drive`` runs the drill through the
:class:`~replication.showcase.Stage` (``kill`` / ``restart`` an isolated namespace,
``publish``, ``settings`` for its own clients) and whose expectations say where each message
must be consumed. Its ``SCENARIO`` goes last in :data:`SCENARIOS`.
"""

from __future__ import annotations

from .._scenario import Scenario
from . import (
    active_passive,
    consolidation,
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
    # failover drill (issue 24): add failover.SCENARIO here.
)

__all__ = ["SCENARIOS"]
