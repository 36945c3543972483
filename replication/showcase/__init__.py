"""The showcase: every replication pattern, one scenario each, on the local emulator.

``python -m replication demo`` runs it (``--only NAME`` one scenario). Each scenario is one
topology of ``examples/`` (so a user can run it alone with ``python -m replication run``), driven
by a few lines of Python (:mod:`.scenarios`): what to publish, where each message must end up,
what to break. The figures of the table come from what the emulator holds at the end, read
and counted (:mod:`._figures`), never from what the replicator says it did.

Layout, one concern per module:

- :mod:`._scenario`: what a scenario is (:class:`Scenario`, :class:`Stage`, expectations);
- :mod:`.scenarios`: the scenarios, one module per pattern, and the registry;
- :mod:`._places`: which entities of a topology are read and counted;
- :mod:`._figures` and :mod:`._checks`: drain-and-count, pure;
- :mod:`._emulators`: one emulator process for all, one per namespace a scenario kills;
- :mod:`._runner`: one scenario end to end, several side by side;
- :mod:`._audit`: the regions' captures and the Spark audit of the mesh (shared with
  ``demo --topology``);
- :mod:`._display`: progress and the table; :mod:`._showcase`: all of it together.
"""

from __future__ import annotations

from ._audit import (
    DEMO_CAPTURE,
    SHORT_RUN_JVM,
    SparkAudit,
    audit_command,
    capture_folders,
    capture_settings,
    clear_captures,
    healthy,
    read_report,
    verdict_lines,
)
from ._emulators import ShowcaseEmulators
from ._figures import Check, Collected, Expectation, Figures, Finding, count
from ._places import Places, place, places_of
from ._scenario import Scenario, Stage, message
from ._showcase import check_prerequisites, choose, run_showcase
from .scenarios import SCENARIOS

__all__ = [
    "DEMO_CAPTURE",
    "SCENARIOS",
    "SHORT_RUN_JVM",
    "Check",
    "Collected",
    "Expectation",
    "Figures",
    "Finding",
    "Places",
    "Scenario",
    "ShowcaseEmulators",
    "SparkAudit",
    "Stage",
    "audit_command",
    "capture_folders",
    "capture_settings",
    "check_prerequisites",
    "choose",
    "clear_captures",
    "count",
    "healthy",
    "message",
    "place",
    "places_of",
    "read_report",
    "run_showcase",
    "verdict_lines",
]
