"""Shared inputs of the provisioning tests: the topologies they render and the Bicep deployment
of each, evaluated for several template parameter sets.

``FEATURE_TOPOLOGY`` uses every feature that reaches provisioning (correlation filters with every
field, SQL filters with actions, sessions, forwarding, namespaces of another tenant, Event Hubs
consumer groups, lanes, parking, heartbeats, monitoring); the shipped examples use few of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replication.render import bicep_parameters
from replication.topology import Topology, load_topology
from tests.infra.bicep_eval import Deployment, parameter_values

ROOT = Path(__file__).resolve().parents[2]
MAIN_BICEP = ROOT / "infra" / "main.bicep"
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
FEATURE_TOPOLOGY = Path(__file__).resolve().parent / "feature_topology.json"
TOPOLOGIES = [*EXAMPLES, FEATURE_TOPOLOGY]

TEMPLATE_VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "user-assigned-zone-redundant": {
        "userAssignedIdentityName": "id-replication",
        "zoneRedundant": True,
        "actionGroupId": "/subscriptions/s/resourceGroups/r/providers/Microsoft.Insights/"
        "actionGroups/existing",
    },
}
"""Template parameters beyond the rendered ones: each branch of the templates' conditions is
taken by one of these (with the topologies' own: Key Vault on or off, e-mails or none)."""


def load(path: Path) -> Topology:
    return load_topology(path)


def deploy(topology: Topology, **template_parameters: Any) -> Deployment:
    """What ``infra/main.bicep`` deploys with the topology's rendered parameters."""
    parameters = parameter_values(bicep_parameters(topology))
    parameters.update(template_parameters)
    return Deployment(MAIN_BICEP, parameters)


__all__ = [
    "EXAMPLES",
    "FEATURE_TOPOLOGY",
    "MAIN_BICEP",
    "ROOT",
    "TEMPLATE_VARIANTS",
    "TOPOLOGIES",
    "deploy",
    "load",
]
