"""Federation patterns, one pure module each, looked up by name from the topology.

Each module defines ``<Pattern>Options`` (a pydantic model of the task's ``options``) and a
``PATTERN`` record (:class:`patterns.Pattern`, typed by that model) whose ``plan`` turns a batch
of envelopes into forwarding decisions without any I/O, and whose other fields declare what the
pattern needs from the topology (subscription rule, SQL conditions, checks). Adding a pattern is
one module and one line in ``_REGISTRY``. Modules are imported lazily, so loading the registry
costs nothing and a misspelt name gets a "did you mean" error from the topology validator.

Patterns depend only on the library's value modules (envelope, rules, properties, loops, SQL),
never on the topology or the runtime, which depend on them.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._base import (
    DeadLetter,
    Decision,
    Forward,
    Pattern,
    PatternOptions,
    Skip,
    Target,
    TaskContext,
)

_REGISTRY: dict[str, str] = {
    "all_active": "patterns.all_active",
    "active_passive": "patterns.active_passive",
    "spillover": "patterns.spillover",
    "latency_optimization": "patterns.latency_optimization",
    "stream_to_queue": "patterns.stream_to_queue",
    "consolidation": "patterns.consolidation",
    "validation": "patterns.validation",
    "routing": "patterns.routing",
}

PATTERN_NAMES: tuple[str, ...] = tuple(_REGISTRY)


def load_pattern(name: str) -> Pattern[Any]:
    """The pattern registered as ``name`` (KeyError for an unknown name; the topology checks
    names with a "did you mean" before anything loads a pattern)."""
    module = importlib.import_module(_REGISTRY[name])
    pattern: Pattern[Any] = module.PATTERN
    return pattern


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
