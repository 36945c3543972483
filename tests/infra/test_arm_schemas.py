"""The Bicep files against Azure's own resource type schemas (Azure/bicep-types-az).

Every ``resource`` declaration must name a resource type and API version that exists, and every
resource the deployment creates, for every example topology and the feature-complete one under
each template variant, must have a body the type's schema allows: declared properties only, none
read-only, values of the declared types (rendered parameter values included: a correlation
filter's ``properties`` must be strings, a rule's ``filterType`` one of the schema's literals),
required properties present. ``arm_schema.py`` explains the check; ``arm_types/SOURCES.json``
where the schemas come from.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from pathlib import Path

import pytest

from tests.infra.arm_schema import TYPES_DIR, problems, resource_types
from tests.infra.bicep_eval import Deployment, Unknown
from tests.infra.deployments import ROOT, TEMPLATE_VARIANTS, TOPOLOGIES, deploy, load

BICEP_FILES = sorted((ROOT / "infra").rglob("*.bicep"))
DECLARATION = re.compile(r"^resource\s+\w+\s+'([^'@]+)@([^']+)'", re.MULTILINE)


@functools.cache
def _deployed(topology_file: Path, variant: str) -> Deployment:
    """The evaluated deployment of ``topology_file`` under a template variant, once per run:
    the schema test and the coverage tests read the same deployments."""
    return deploy(load(topology_file), **TEMPLATE_VARIANTS[variant])


def test_the_stored_schemas_are_the_recorded_files() -> None:
    sources = json.loads((TYPES_DIR / "SOURCES.json").read_text())
    assert sources["repository"] == "https://github.com/Azure/bicep-types-az"
    assert re.fullmatch(r"[0-9a-f]{40}", sources["commit"])
    stored = {path.name for path in TYPES_DIR.glob("*@*.json")}
    assert stored == {entry["file"] for entry in sources["files"]}
    for entry in sources["files"]:
        data = (TYPES_DIR / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], entry["file"]
        assert entry["path"].startswith("generated/")
        assert entry["path"].endswith("/types.json")


def test_every_declared_resource_type_and_api_version_exists() -> None:
    declared = {
        f"{match[0]}@{match[1]}": path.name
        for path in BICEP_FILES
        for match in DECLARATION.findall(path.read_text())
    }
    assert len(declared) >= 15
    missing = {ref: file for ref, file in declared.items() if ref not in resource_types()}
    assert not missing, f"not in Azure's schemas: {missing}"


@pytest.mark.parametrize("variant", TEMPLATE_VARIANTS)
@pytest.mark.parametrize("topology_file", TOPOLOGIES, ids=lambda p: p.name)
def test_every_deployed_body_is_allowed_by_its_schema(topology_file: Path, variant: str) -> None:
    deployment = _deployed(topology_file, variant)
    found = []
    for resource in deployment.resources:
        name = resource.name.what if isinstance(resource.name, Unknown) else resource.name
        where = f"{resource.file}: {resource.symbol} ({name})"
        found += problems(resource.type_reference, resource.body, where)
    assert not found, "\n".join(found)
    assert deployment.resources, "the deployment produced no resource"


def test_every_declared_resource_type_is_checked_by_some_topology() -> None:
    """Each topology deploys what it needs (a queue-only topology has no topics, one without
    Event Hubs no event hub namespace; Key Vault, the action group and the user-assigned
    identity follow the topology and the variant), so the schema check above covers a type
    only through the topologies that deploy it: together they must deploy every type the
    Bicep files declare."""
    checked = {
        resource.type_reference
        for topology_file in TOPOLOGIES
        for variant in TEMPLATE_VARIANTS
        for resource in _deployed(topology_file, variant).resources
    }
    declared = {f"{t}@{v}" for p in BICEP_FILES for t, v in DECLARATION.findall(p.read_text())}
    assert declared <= checked, (
        f"declared but never deployed by a test topology: {declared - checked}"
    )


def test_the_feature_topology_reaches_every_declared_resource_type() -> None:
    checked = set()
    for variant in TEMPLATE_VARIANTS:
        checked |= {r.type_reference for r in _deployed(TOPOLOGIES[-1], variant).resources}
    declared = {f"{t}@{v}" for p in BICEP_FILES for t, v in DECLARATION.findall(p.read_text())}
    assert declared <= checked, declared - checked


@pytest.mark.parametrize(
    ("type_reference", "body", "expected"),
    [
        (
            "Microsoft.ServiceBus/namespaces/topics/subscriptions/rules@2024-01-01",
            {"name": "r", "properties": {"filterType": "CorrelationFilter",
                                         "correlationFilter": {"subject": "invoice"}}},
            "correlationFilter.subject: not a property of this type",
        ),
        (
            "Microsoft.ServiceBus/namespaces/topics/subscriptions/rules@2024-01-01",
            {"name": "r", "properties": {"correlationFilter": {"properties": {"tier": 2}}}},
            "correlationFilter.properties.tier: 2 is not a string",
        ),
        (
            "Microsoft.ServiceBus/namespaces/topics/subscriptions/rules@2024-01-01",
            {"name": "r", "properties": {"filterType": "Sql"}},
            "filterType: 'Sql' is none of 'SqlFilter', 'CorrelationFilter'",
        ),
        (
            "Microsoft.ServiceBus/namespaces/queues@2024-01-01",
            {"name": "q", "properties": {"messageCount": 3}},
            "messageCount: read-only in the schema",
        ),
        (
            "Microsoft.ServiceBus/namespaces@2024-01-01",
            {"name": "n", "location": "westeurope", "sku": {"tier": "Standard"}},
            "sku.name: required by the schema but not set",
        ),
        (
            "Microsoft.ServiceBus/namespaces@2099-01-01",
            {"name": "n"},
            "is not a resource type of the stored schemas",
        ),
    ],
)  # fmt: skip
def test_the_schema_check_refuses_what_azure_refuses(
    type_reference: str, body: dict[str, object], expected: str
) -> None:
    """The check itself can fail: the bodies that Bicep would warn about or ARM reject."""
    found = problems(type_reference, body, "test")
    assert any(expected in problem for problem in found), found
