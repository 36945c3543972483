"""Federation patterns, one pure module each, looked up by name from the topology.

Each module defines ``<Pattern>Options`` (a pydantic model of the task's ``options``) and a
``PATTERN`` record (:class:`replication.planning.Pattern`, typed by that model) whose ``plan``
turns a batch of envelopes into forwarding decisions without any I/O, and whose other fields
declare what the pattern needs from the topology (subscription rule, SQL conditions, checks).
The registry of names is :mod:`replication.planning` (``_REGISTRY``); adding a pattern is one
module here and one line there.

This folder is the ``patterns`` package of a checkout (and of the Function app deployed as the
repository's files); the wheel installs it as ``replication.patterns`` instead, so that no
generic top-level name lands in site-packages (see ``setup.py``). Its modules therefore import
each other relatively and the library by absolute ``replication.`` names, which hold in both
places. The names below are re-exported from :mod:`replication.planning` for convenience.

Patterns depend only on the library's value modules (envelope, rules, properties, loops, SQL,
planning), never on the topology or the runtime, which depend on them.
"""

from __future__ import annotations

from replication.planning import (
    PATTERN_NAMES,
    DeadLetter,
    Decision,
    Forward,
    Pattern,
    PatternOptions,
    Skip,
    Target,
    TaskContext,
    load_pattern,
)

__all__ = [
    "PATTERN_NAMES",
    "DeadLetter",
    "Decision",
    "Forward",
    "Pattern",
    "PatternOptions",
    "Skip",
    "Target",
    "TaskContext",
    "load_pattern",
]
