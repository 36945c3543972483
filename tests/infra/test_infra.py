"""Infrastructure checks that need no Azure subscription.

The Bicep files are parsed with a real Bicep parser (pycep-parser); the rendered parameters,
emulator configuration and az CLI script are produced from the example topologies and compared
with each other and with the tasks.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from pycep import BicepParser

from patterns.active_passive import format_timespan
from replication.render import az_cli_script, bicep_parameters, emulator_config
from replication.render.access import ROLE_IDS
from replication.sql import SqlFilter, SqlRuleAction
from replication.topology import load_topology

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
BICEP_FILES = sorted(INFRA.rglob("*.bicep"))
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))

CURRENT_API_VERSIONS = {
    "Microsoft.ServiceBus": "2024-01-01",
    "Microsoft.EventHub": "2024-01-01",
    "Microsoft.Web": "2024-04-01",
    "Microsoft.Authorization/roleAssignments": "2022-04-01",
    "Microsoft.Storage": "2023-05-01",
    "Microsoft.OperationalInsights": "2023-09-01",
    "Microsoft.Insights/components": "2020-02-02",
    "Microsoft.KeyVault": "2023-07-01",
}
KNOWN_ROLE_IDS = set(ROLE_IDS.values()) | {
    "b7e6dc6d-f1e8-4753-8033-0f276bb0955b",  # Storage Blob Data Owner
    "974c5e8b-45b9-4653-ba55-5f855dd0fb88",  # Storage Queue Data Contributor
    "0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3",  # Storage Table Data Contributor
    "3913510d-42f4-4e42-8a64-420c390055eb",  # Monitoring Metrics Publisher
    "4633458b-17de-408a-b874-0445c86b69e6",  # Key Vault Secrets User
}
OWNER_ROLE_IDS = {"8e3af657-a8ff-443c-a75c-2fe8c4bcb635", "090c5cfd-751d-490a-894a-3ce6f1109419"}


@pytest.fixture(scope="module")
def parsed() -> dict[Path, dict[str, Any]]:
    parser = BicepParser()
    return {path: parser.parse(file_path=path) for path in BICEP_FILES}


def test_all_bicep_files_parse(parsed: dict[Path, dict[str, Any]]) -> None:
    assert {p.name for p in parsed} >= {
        "main.bicep", "servicebus.bicep", "eventhubs.bicep", "functionapp.bicep", "roles.bicep",
        "keyvault.bicep",
    }  # fmt: skip


def test_resource_types_use_current_api_versions(parsed: dict[Path, dict[str, Any]]) -> None:
    for path, document in parsed.items():
        for name, resource in document.get("resources", {}).items():
            wanted = next(
                (v for k, v in CURRENT_API_VERSIONS.items() if resource["type"].startswith(k)), None
            )
            assert wanted is not None, f"{path.name}: {name}: unexpected type {resource['type']}"
            assert resource["api_version"] == wanted, f"{path.name}: {name}"


def test_role_assignments_are_entity_scoped_with_known_roles(
    parsed: dict[Path, dict[str, Any]],
) -> None:
    roles = parsed[INFRA / "modules" / "roles.bicep"]["resources"]
    entity_types = {name: r["type"] for name, r in roles.items() if r["existing"]}
    assert set(entity_types.values()) == {
        "Microsoft.ServiceBus/namespaces/queues",
        "Microsoft.ServiceBus/namespaces/topics",
        "Microsoft.EventHub/namespaces/eventhubs",
    }
    for name, resource in roles.items():
        if resource["type"] == "Microsoft.Authorization/roleAssignments":
            assert resource["config"]["config"]["scope"] in entity_types, name
    text = "\n".join(path.read_text() for path in BICEP_FILES)
    literal_ids = set(
        re.findall(r"'([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})'", text)
    )
    assert literal_ids <= KNOWN_ROLE_IDS
    assert not literal_ids & OWNER_ROLE_IDS


def test_no_secret_literal_or_key_listing_anywhere() -> None:
    files = [*BICEP_FILES, *INFRA.rglob("*.sh"), *INFRA.rglob("*.yml"), ROOT / "azure.yaml"]
    for path in files:
        text = path.read_text()
        assert "listKeys" not in text, path
        assert not re.search(r"(SharedAccessKey|AccountKey)=[A-Za-z0-9+/]{8,}", text), path
        assert not re.search(r"(?i)password\s*[:=]\s*'[^'$]", text), path


def test_sql_rules_declare_compatibility_level_20(parsed: dict[Path, dict[str, Any]]) -> None:
    text = (INFRA / "modules" / "servicebus.bicep").read_text()
    assert text.count("compatibilityLevel: 20") == 2
    rules = parsed[INFRA / "modules" / "servicebus.bicep"]["resources"]["rules"]
    assert rules["type"] == "Microsoft.ServiceBus/namespaces/topics/subscriptions/rules"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_replication_subscriptions_have_exactly_the_loop_prevention_rule(example: Path) -> None:
    topology = load_topology(example)
    parameters = bicep_parameters(topology)["parameters"]
    rules = {ns["name"]: ns["rules"] for ns in parameters["serviceBusNamespaces"]["value"]}
    for task in topology.tasks:
        if task.source.subscription is None:
            continue
        host = topology.namespace(task.source.namespace).fully_qualified_namespace
        where = (task.source.entity, task.source.subscription)
        mine = [r for r in rules[host.split(".")[0]] if (r["topic"], r["subscription"]) == where]
        assert len(mine) == 1, task.name
        (rule,) = mine
        assert rule["name"] == "$Default"
        assert rule["filterType"] == "SqlFilter"
        assert rule["sqlExpression"] == "replication IS NULL"
        action = rule["actionSqlExpression"]
        assert action.startswith("SET replication = 1")
        if task.pattern == "active_passive":
            ttl = format_timespan(topology.pattern_options(task).replica_time_to_live)  # type: ignore[attr-defined]
            assert action.endswith(f"SET sys.TimeToLive = '{ttl}'")
        SqlFilter(rule["sqlExpression"])
        SqlRuleAction(action)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_role_assignments_follow_the_tasks(example: Path) -> None:
    topology = load_topology(example)
    assignments = bicep_parameters(topology)["parameters"]["roleAssignments"]["value"]
    got = {(a["entity"], a["role"]) for a in assignments}
    wanted = set()
    for task in topology.tasks:
        wanted.add((task.source.entity, "receiver"))
        dead_letter = [task.dead_letter_target] if task.dead_letter_target else []
        for target in [*task.targets, *dead_letter]:
            wanted.add((target.entity, "sender"))
    assert got == wanted
    for assignment in assignments:
        assert assignment["entityType"] in {"queue", "topic", "eventhub"}
        assert assignment["roleDefinitionId"] in ROLE_IDS.values()


def _emulator_rules(config: dict[str, Any]) -> set[tuple[str, str, str, str, str, str]]:
    found = set()
    for namespace in config["UserConfig"].get("Namespaces", []):
        for topic in namespace["Topics"]:
            for subscription in topic["Subscriptions"]:
                for rule in subscription.get("Rules", []):
                    props = rule["Properties"]
                    found.add((namespace["Name"], topic["Name"], subscription["Name"], rule["Name"],
                               props["SqlFilter"]["SqlExpression"],
                               props.get("Action", {}).get("SqlExpression", "")))  # fmt: skip
    return found


def _az_rules(script: str, names: dict[str, str]) -> set[tuple[str, str, str, str, str, str]]:
    found = set()
    for line in script.splitlines():
        if "subscription rule create" not in line:
            continue
        words = shlex.split(line.replace('"$RESOURCE_GROUP"', "RG"))
        value = {words[i]: words[i + 1] for i in range(len(words) - 1) if words[i].startswith("--")}
        found.add(
            (
                names[value["--namespace-name"]],
                value["--topic-name"],
                value["--subscription-name"],
                value["--name"],
                value["--filter-sql-expression"],
                value.get("--action-sql-expression", ""),
            )
        )
    return found


def _bicep_rules(parameters: dict[str, Any], names: dict[str, str]) -> set[tuple[str, ...]]:
    return {
        (
            names[ns["name"]],
            r["topic"],
            r["subscription"],
            r["name"],
            r["sqlExpression"],
            r.get("actionSqlExpression", ""),
        )
        for ns in parameters["serviceBusNamespaces"]["value"]
        for r in ns["rules"]
    }


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_emulator_config_az_cli_and_bicep_agree(example: Path) -> None:
    topology = load_topology(example)
    names = {n.fully_qualified_namespace.split(".")[0]: n.name for n in topology.namespaces}
    config = emulator_config(topology)
    script = az_cli_script(topology)
    parameters = bicep_parameters(topology)["parameters"]
    assert _emulator_rules(config) == _az_rules(script, names) == _bicep_rules(parameters, names)
    assert _emulator_rules(config), "every example replicates at least one topic"
    emulator_entities = {
        (ns["Name"], e["Name"])
        for ns in config["UserConfig"].get("Namespaces", [])
        for e in [*ns["Queues"], *ns["Topics"]]
    } | {
        (ns["Name"], e["Name"])
        for ns in config["UserConfig"].get("NamespaceConfig", [])
        for e in ns["Entities"]
    }
    bicep_entities = {
        (names[ns["name"]], e["name"])
        for ns in parameters["serviceBusNamespaces"]["value"]
        for e in [*ns["queues"], *ns["topics"]]
    } | {
        (names[ns["name"]], e["name"])
        for ns in parameters["eventHubNamespaces"]["value"]
        for e in ns["eventHubs"]
    }
    assert emulator_entities == bicep_entities
    for namespace, entity in bicep_entities:
        assert f"--name {entity}" in script or f"--name '{entity}'" in script, (namespace, entity)


def test_render_cli_writes_parameters(tmp_path: Path) -> None:
    from replication.cli import main

    output = tmp_path / "main.parameters.json"
    example = str(ROOT / "examples" / "two-region-all-active.json")
    assert main(["render", "bicep-params", "--topology", example, "--output", str(output)]) == 0
    document = json.loads(output.read_text())
    assert set(document["parameters"]) == {
        "serviceBusNamespaces", "eventHubNamespaces", "roleAssignments",
        "replicationAppSettings", "enableKeyVault",
    }  # fmt: skip
    settings = document["parameters"]["replicationAppSettings"]["value"]
    assert (
        settings["SB_WEU__fullyQualifiedNamespace"] == "contoso-orders-weu.servicebus.windows.net"
    )
    official = tmp_path / "official"
    assert (
        main(["render", "emulator-config", "--topology", example, "--official", str(official)]) == 0
    )
    weu = json.loads((official / "weu.json").read_text())
    assert weu["UserConfig"]["Namespaces"][0]["Name"] == "sbemulatorns"
