"""The topology file: namespaces, entities and replication tasks, validated with pydantic.

One JSON document (default ``topology.json``; the app setting ``REPLICATION_TOPOLOGY`` names
another path) is the single source of truth from which the Function triggers, the Bicep
parameters, the az CLI script and the emulator configuration are rendered, so they never
disagree. :func:`load_topology` reads and validates it; every problem names the file, the JSON
path and what is wrong.

Modules, in dependency order: ``_specs`` (namespaces and entities) and ``_tasks`` (tasks, and
tasks resolved with their pattern's typed options) -> ``_topology`` (the document) ->
``_errors`` / ``_checks`` (reporting and cross-references) -> ``_load``; ``_outage`` (retry
budgets and delivery counts), ``_materialize`` (the subscriptions and consumer groups tasks
need) and ``_sql`` (every SQL expression, for the linter) work on a loaded topology.
"""

from __future__ import annotations

import re

from ._errors import json_path
from ._load import DEFAULT_TOPOLOGY_PATH, TOPOLOGY_SETTING, load_topology, parse_topology
from ._materialize import materialize
from ._outage import attempt_budget, required_delivery_count, tolerated_outage
from ._specs import (
    DEFAULT_CONSUMER_GROUP,
    EntityRef,
    EventHubSpec,
    NamespaceKind,
    NamespaceSpec,
    QueueSpec,
    SubscriptionSpec,
    TopicSpec,
)
from ._sql import sql_texts
from ._tasks import ResolvedTask, RetrySpec, TaskSpec
from ._topology import Topology


def slug(name: str) -> str:
    """A name made safe for Function names and Azure resource names (letters, digits, dashes)."""
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()


__all__ = [
    "DEFAULT_CONSUMER_GROUP",
    "DEFAULT_TOPOLOGY_PATH",
    "TOPOLOGY_SETTING",
    "EntityRef",
    "EventHubSpec",
    "NamespaceKind",
    "NamespaceSpec",
    "QueueSpec",
    "ResolvedTask",
    "RetrySpec",
    "SubscriptionSpec",
    "TaskSpec",
    "TopicSpec",
    "Topology",
    "attempt_budget",
    "json_path",
    "load_topology",
    "materialize",
    "parse_topology",
    "required_delivery_count",
    "slug",
    "sql_texts",
    "tolerated_outage",
]
