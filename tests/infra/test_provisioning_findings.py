"""Provisioning must deploy what the topology says: one test per difference found between them.

Each test failed before its fix (issue 22): a correlation filter's ``subject`` was sent as a
property ARM does not have; non-string correlation values were accepted although ARM holds strings
only; the az CLI script dropped custom correlation properties and never set
``deadLetteringOnFilterEvaluationExceptions``; namespaces of another tenant were deployed as our
own; and nothing sent diagnostics to the Log Analytics workspace.

The Bicep side is evaluated with :mod:`tests.infra.bicep_eval` (no Bicep compiler is installable);
the az side is the rendered script's command lines, parsed as bash would split them.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from replication.exceptions import ConfigurationError
from replication.render import app_settings, az_cli_script, bicep_parameters
from replication.topology import load_topology
from tests.infra.arm_schema import problems
from tests.infra.bicep_eval import Resource, Unknown
from tests.infra.deployments import FEATURE_TOPOLOGY, deploy, load

FOREIGN = {"partner-orders", "partner-ingest"}
"""The resource names of the feature topology's namespaces with ``keyVaultSecret``."""


def _az_commands(script: str) -> list[list[str]]:
    """The script's az commands, split as bash splits them (comments skipped)."""
    commands = []
    for line in script.splitlines():
        if line.startswith("run az "):
            words = shlex.split(line.replace('"$RESOURCE_GROUP"', "RG"))
            commands.append(words[1:])
    return commands


def _flag(words: list[str], flag: str) -> list[str]:
    """The values following ``flag`` up to the next flag."""
    if flag not in words:
        return []
    start = words.index(flag) + 1
    end = next((i for i in range(start, len(words)) if words[i].startswith("--")), len(words))
    return words[start:end]


def _rule(resources: list[Resource], name: str) -> Resource:
    (rule,) = [
        r
        for r in resources
        if r.type == "Microsoft.ServiceBus/namespaces/topics/subscriptions/rules"
        and isinstance(r.name, str)
        and r.name.endswith(f"/{name}")
    ]
    return rule


def test_correlation_subject_is_deployed_as_arms_label() -> None:
    """ARM's CorrelationFilter has ``label``, never ``subject`` (template reference and the
    schema in tests/infra/arm_types); Bicep only warns about an unknown property and drops it."""
    deployment = deploy(load(FEATURE_TOPOLOGY))
    rule = _rule(deployment.resources, "invoices")
    correlation = rule.body["properties"]["correlationFilter"]
    assert correlation["label"] == "invoice"
    assert "subject" not in correlation
    assert problems(rule.type_reference, rule.body, "invoices") == []


def test_non_string_correlation_property_values_are_refused_with_their_json_path(
    tmp_path: Path,
) -> None:
    document = json.loads(FEATURE_TOPOLOGY.read_text())
    rule = document["namespaces"][0]["topics"][0]["subscriptions"][0]["rules"][0]
    rule["filter"]["correlation"]["properties"] = {"region": "weu", "tier": 2, "vip": True}
    path = tmp_path / "topology.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ConfigurationError) as error:
        load_topology(path)
    text = str(error.value)
    where = "namespaces[0].topics[0].subscriptions[0].rules[0].filter.correlation.properties"
    assert f"{path}: {where}.tier: 2 is a number, not a string" in text
    assert f"{path}: {where}.vip: true is a boolean, not a string" in text
    assert "region" not in text


def test_az_cli_passes_custom_correlation_properties() -> None:
    script = az_cli_script(load(FEATURE_TOPOLOGY))
    (words,) = [
        w for w in _az_commands(script) if "rule" in w and _flag(w, "--name") == ["invoices"]
    ]
    assert _flag(words, "--correlation-filter-property") == ["region=weu", "tier=gold"]
    assert _flag(words, "--label") == ["invoice"]
    assert _flag(words, "--filter-type") == ["CorrelationFilter"]


def test_az_cli_sets_dead_lettering_on_filter_exceptions_as_the_topology_says() -> None:
    topology = load(FEATURE_TOPOLOGY)
    script = az_cli_script(topology)
    created = {
        (_flag(w, "--namespace-name")[0], _flag(w, "--topic-name")[0], _flag(w, "--name")[0]):
            _flag(w, "--dead-letter-on-filter-exceptions")
        for w in _az_commands(script)
        if w[1:5] == ["servicebus", "topic", "subscription", "create"]
    }  # fmt: skip
    assert created[("fabrikam-weu", "orders", "billing")] == ["false"]
    assert created[("fabrikam-weu", "orders", "archive")] == ["true"]
    assert all(value in (["true"], ["false"]) for value in created.values()), created


def test_namespaces_of_another_tenant_are_referenced_not_deployed() -> None:
    """A ``keyVaultSecret`` namespace belongs to another tenant: deploying it would collide with
    a global name someone else owns, or create a namespace of ours with SAS disabled."""
    topology = load(FEATURE_TOPOLOGY)
    parameters = bicep_parameters(topology)["parameters"]
    deployed = {n["name"] for n in parameters["serviceBusNamespaces"]["value"]}
    deployed |= {n["name"] for n in parameters["eventHubNamespaces"]["value"]}
    assert deployed == {"fabrikam-weu", "fabrikam-neu", "fabrikam-ingest"}
    assert not {a["namespace"] for a in parameters["roleAssignments"]["value"]} & FOREIGN
    assert parameters["enableKeyVault"]["value"] is True

    deployment = deploy(topology)
    for resource in deployment.resources:
        name = resource.name if isinstance(resource.name, str) else ""
        scope = resource.body.get("scope")
        scope_name = getattr(scope, "name", "")
        assert name.split("/")[0] not in FOREIGN, (resource.symbol, name)
        assert str(scope_name).split("/")[0] not in FOREIGN, (resource.symbol, scope_name)

    settings = app_settings(topology)
    assert settings["SB_PARTNER"] == (
        "@Microsoft.KeyVault(VaultName={keyVaultName};SecretName=partner-orders-connection)"
    )
    script = az_cli_script(topology)
    for words in _az_commands(script):
        namespace = _flag(words, "--namespace-name") or _flag(words, "--name")
        assert not set(namespace) & FOREIGN, words
    assert "# Service Bus namespace partner (partner-orders, eastus): in another tenant" in script


def _diagnostic_settings(resources: list[Resource]) -> dict[tuple[str, Any], dict[str, Any]]:
    found = {}
    for resource in resources:
        if resource.type == "Microsoft.Insights/diagnosticSettings":
            scope = resource.body["scope"]
            found[(scope.type, scope.name)] = resource.body["properties"]
    return found


def test_diagnostic_settings_send_every_service_to_the_log_analytics_workspace() -> None:
    deployment = deploy(load(FEATURE_TOPOLOGY))
    settings = _diagnostic_settings(deployment.resources)
    by_type: dict[str, list[dict[str, Any]]] = {}
    for (scope_type, _), properties in settings.items():
        by_type.setdefault(scope_type, []).append(properties)
        assert properties["workspaceId"] == Unknown("logs.id"), scope_type
    assert {name for t, name in settings if t == "Microsoft.ServiceBus/namespaces"} == {
        "fabrikam-weu", "fabrikam-neu",
    }  # fmt: skip
    assert {name for t, name in settings if t == "Microsoft.EventHub/namespaces"} == {
        "fabrikam-ingest"
    }
    (vault,) = by_type["Microsoft.KeyVault/vaults"]
    assert {"category": "AuditEvent", "enabled": True} in vault["logs"]
    (app,) = by_type["Microsoft.Web/sites"]
    assert {"category": "FunctionAppLogs", "enabled": True} in app["logs"]
    for scope_type in ("Microsoft.ServiceBus/namespaces", "Microsoft.EventHub/namespaces"):
        for properties in by_type[scope_type]:
            assert {"categoryGroup": "allLogs", "enabled": True} in properties["logs"]
            assert {"category": "AllMetrics", "enabled": True} in properties["metrics"]


def test_function_app_disables_ftp_and_zone_redundancy_is_a_parameter() -> None:
    topology = load(FEATURE_TOPOLOGY)
    for zone_redundant, storage_sku in ((False, "Standard_LRS"), (True, "Standard_ZRS")):
        deployment = deploy(topology, zoneRedundant=zone_redundant)
        (app,) = deployment.of_type("Microsoft.Web/sites")
        assert app.body["properties"]["siteConfig"]["ftpsState"] == "Disabled"
        (plan,) = deployment.of_type("Microsoft.Web/serverfarms")
        assert plan.body["properties"]["zoneRedundant"] is zone_redundant
        (storage,) = deployment.of_type("Microsoft.Storage/storageAccounts")
        assert storage.body["sku"]["name"] == storage_sku
