"""Federation patterns, one pure module each, looked up by name from the topology.

Each module defines ``<Pattern>Options`` (a pydantic model of the task's ``options``) and a
``PATTERN`` record (:class:`patterns.Pattern`) whose ``plan`` turns a batch of envelopes into
forwarding decisions without any I/O. Modules are imported lazily, so loading the registry costs
nothing and a misspelt name gets a "did you mean" error from the topology validator.
"""

from __future__ import annotations

import importlib

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


def load_pattern(name: str) -> Pattern:
    """The pattern registered as ``name`` (KeyError for an unknown name)."""
    module = importlib.import_module(_REGISTRY[name])
    pattern: Pattern = module.PATTERN
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
