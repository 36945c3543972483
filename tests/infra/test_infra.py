"""Infrastructure checks that need no Azure subscription.

The Bicep files are parsed with a real Bicep parser (pycep-parser); the rendered parameters,
emulator configuration and az CLI script are produced from the example topologies and compared
with each other and with the tasks. The configuration files the platform reads (host.json,
local.settings.sample.json, the Docker compose file) are checked for the settings infra/README.md
explains.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any, cast

import pytest
from pycep import BicepParser

from replication.durations import format_timespan
from replication.render import (
    app_settings,
    az_cli_script,
    bicep_parameters,
    emulator_config,
    official_configs,
)
from replication.render.access import ENTITY_TYPES, ROLE_IDS
from replication.render.app_settings import IDENTITY_CLIENT_ID_PLACEHOLDER
from replication.sql import SqlFilter, SqlRuleAction
from replication.topology import load_topology
from tests.infra.deployments import FEATURE_TOPOLOGY

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
    "Microsoft.Insights/scheduledQueryRules": "2023-12-01",
    "Microsoft.Insights/actionGroups": "2023-01-01",
    "Microsoft.Insights/workbooks": "2023-06-01",
    # The newest API version of diagnostic settings (Azure/bicep-types-az, generated/monitor_1).
    "Microsoft.Insights/diagnosticSettings": "2021-05-01-preview",
    "Microsoft.KeyVault": "2023-07-01",
    "Microsoft.ManagedIdentity": "2024-11-30",
}
STORAGE_BLOB_DATA_OWNER = "b7e6dc6d-f1e8-4753-8033-0f276bb0955b"
STORAGE_TABLE_DATA_CONTRIBUTOR = "0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3"
STORAGE_QUEUE_DATA_CONTRIBUTOR = "974c5e8b-45b9-4653-ba55-5f855dd0fb88"
MONITORING_METRICS_PUBLISHER = "3913510d-42f4-4e42-8a64-420c390055eb"
KNOWN_ROLE_IDS = set(ROLE_IDS.values()) | {
    STORAGE_BLOB_DATA_OWNER,
    STORAGE_TABLE_DATA_CONTRIBUTOR,
    MONITORING_METRICS_PUBLISHER,
    "4633458b-17de-408a-b874-0445c86b69e6",  # Key Vault Secrets User
}
OWNER_ROLE_IDS = {"8e3af657-a8ff-443c-a75c-2fe8c4bcb635", "090c5cfd-751d-490a-894a-3ce6f1109419"}


@pytest.fixture(scope="module")
def parsed() -> dict[Path, dict[str, Any]]:
    parser = BicepParser()
    return {path: cast("dict[str, Any]", parser.parse(file_path=path)) for path in BICEP_FILES}


def test_all_bicep_files_parse(parsed: dict[Path, dict[str, Any]]) -> None:
    assert {p.name for p in parsed} >= {
        "main.bicep", "servicebus.bicep", "eventhubs.bicep", "functionapp.bicep", "roles.bicep",
        "keyvault.bicep", "monitoring.bicep",
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
        "Microsoft.ServiceBus/namespaces/topics/subscriptions",
        "Microsoft.EventHub/namespaces/eventhubs",
        # A Service Bus capture's container, never the storage account.
        "Microsoft.Storage/storageAccounts/blobServices/containers",
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
        if topology.resolved(task).subscription_rule() is None:
            # The pattern keeps replicas apart in code (validation) or must see them (the
            # latency hub fans replicas out): no rule is deployed, Service Bus's own $Default.
            assert mine == [], task.name
            continue
        assert len(mine) == 1, task.name
        (rule,) = mine
        assert rule["name"] == "$Default"
        assert rule["filterType"] == "SqlFilter"
        assert rule["sqlExpression"] == "replication IS NULL"
        action = rule["actionSqlExpression"]
        assert action.startswith("SET replication = 1")
        if task.pattern == "active_passive":
            ttl = format_timespan(topology.resolved(task).options.replica_time_to_live)  # type: ignore[attr-defined]
            assert action.endswith(f"SET sys.TimeToLive = '{ttl}'")
        SqlFilter(rule["sqlExpression"])
        SqlRuleAction(action)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_role_assignments_follow_the_tasks(example: Path) -> None:
    topology = load_topology(example)
    assignments = bicep_parameters(topology)["parameters"]["roleAssignments"]["value"]
    got = {(a["entity"], a.get("subscription"), a["role"]) for a in assignments}
    wanted = set()
    for task in topology.tasks:
        wanted.add((task.source.entity, task.source.subscription, "receiver"))
        dead_letter = [task.dead_letter_target] if task.dead_letter_target else []
        for target in [*task.targets, *dead_letter]:
            wanted.add((target.entity, None, "sender"))
    assert got == wanted
    for assignment in assignments:
        assert assignment["entityType"] in ENTITY_TYPES
        assert assignment["roleDefinitionId"] in ROLE_IDS.values()
        assert ("subscription" in assignment) == (assignment["entityType"] == "subscription")


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_subscription_sources_are_read_with_a_role_on_the_subscription_only(
    example: Path,
) -> None:
    topology = load_topology(example)
    assignments = bicep_parameters(topology)["parameters"]["roleAssignments"]["value"]
    for task in topology.tasks:
        if task.source.subscription is None:
            continue
        namespace = topology.namespace(task.source.namespace).fully_qualified_namespace
        receivers = [
            a for a in assignments
            if a["role"] == "receiver" and a["namespace"] == namespace.split(".")[0]
            and a["entity"] == task.source.entity
        ]  # fmt: skip
        assert {a["entityType"] for a in receivers} == {"subscription"}, task.name
        assert {
            "namespace": namespace.split(".")[0],
            "entityType": "subscription",
            "entity": task.source.entity,
            "subscription": task.source.subscription,
            "role": "receiver",
            "roleDefinitionId": ROLE_IDS[("servicebus", "receiver")],
        } in receivers, task.name


def test_subscription_role_is_scoped_to_the_subscription(
    parsed: dict[Path, dict[str, Any]],
) -> None:
    roles = parsed[INFRA / "modules" / "roles.bicep"]["resources"]
    when_subscription = {
        "operator": {
            "type": "property_accessor",
            "operands": {
                "operand_1": "assignment",
                "operand_2": {"operator": {"type": "equals", "operands": {
                    "operand_1": "entityType", "operand_2": "subscription"}}},
            },
        }
    }  # fmt: skip
    subscription = roles["topicSubscription"]
    assert subscription["existing"]
    assert subscription["config"]["condition"] == when_subscription
    assignment = roles["onSubscription"]["config"]
    assert assignment["condition"] == when_subscription
    assert assignment["config"]["scope"] == "topicSubscription"


def test_host_storage_roles_are_the_documented_minimum(
    parsed: dict[Path, dict[str, Any]],
) -> None:
    """Blob Data Owner and Table Data Contributor on host storage; no queue role, no Owner."""
    document = parsed[INFRA / "modules" / "functionapp.bicep"]
    role_ids = {
        name: variable["value"]
        for name, variable in document["variables"].items()
        if isinstance(variable["value"], str) and re.fullmatch(r"[0-9a-f-]{36}", variable["value"])
    }
    granted = set()
    for name, resource in document["resources"].items():
        if resource["type"] != "Microsoft.Authorization/roleAssignments":
            continue
        config = resource["config"]
        role = config["properties"]["roleDefinitionId"]["function"]["parameters"]
        granted.add((config["scope"], role_ids[role["resource_name_1"]]))
        assert config["properties"]["principalId"] == "principalId", name
    assert granted == {
        ("storage", STORAGE_BLOB_DATA_OWNER),
        ("storage", STORAGE_TABLE_DATA_CONTRIBUTOR),
        ("insights", MONITORING_METRICS_PUBLISHER),
    }
    text = (INFRA / "modules" / "functionapp.bicep").read_text()
    assert STORAGE_QUEUE_DATA_CONTRIBUTOR not in text


def test_python_version_is_a_parameter_defaulting_to_3_13(
    parsed: dict[Path, dict[str, Any]],
) -> None:
    for path in (INFRA / "main.bicep", INFRA / "modules" / "functionapp.bicep"):
        parameter = parsed[path]["parameters"]["pythonVersion"]
        assert parameter["default"] == "3.13", path.name
        (allowed,) = [d["argument"] for d in parameter["decorators"] if d["type"] == "allowed"]
        assert {"3.11", "3.12", "3.13"} <= set(allowed), path.name
    app = parsed[INFRA / "modules" / "functionapp.bicep"]["resources"]["app"]
    runtime = app["config"]["properties"]["functionAppConfig"]["runtime"]
    assert runtime == {"name": "python", "version": "pythonVersion"}
    modules = parsed[INFRA / "main.bicep"]["modules"]
    assert modules["functionApp"]["config"]["params"]["pythonVersion"] == "pythonVersion"


def test_user_assigned_identity_is_an_option_with_system_assigned_as_default(
    parsed: dict[Path, dict[str, Any]],
) -> None:
    functionapp = parsed[INFRA / "modules" / "functionapp.bicep"]
    for path in (INFRA / "main.bicep", INFRA / "modules" / "functionapp.bicep"):
        assert parsed[path]["parameters"]["userAssignedIdentityName"]["default"] == "", path.name
    identity = functionapp["resources"]["userIdentity"]
    assert identity["config"]["condition"] == "useUserAssignedIdentity"
    text = (INFRA / "modules" / "functionapp.bicep").read_text()
    # Every identity-based connection of the host names the user-assigned identity when used.
    for needle in (
        "AzureWebJobsStorage__credential: 'managedidentity'",
        "AzureWebJobsStorage__clientId: identityClientId",
        "'ClientId=${identityClientId};Authorization=AAD'",
        "type: 'UserAssignedIdentity'",
        "userAssignedIdentityResourceId: userAssignedIdentityId",
        "keyVaultReferenceIdentity: useUserAssignedIdentity ? userAssignedIdentityId",
        f"'{IDENTITY_CLIENT_ID_PLACEHOLDER}', identityClientId",
    ):
        assert needle in text, needle


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_identity_connections_name_the_managed_identity(example: Path) -> None:
    topology = load_topology(example)
    parameters = bicep_parameters(topology)["parameters"]
    settings = parameters["replicationAppSettings"]["value"]
    user_assigned = parameters["userAssignedIdentitySettings"]["value"]
    for namespace in topology.namespaces:
        prefix = namespace.connection
        assert settings[f"{prefix}__fullyQualifiedNamespace"] == (
            namespace.fully_qualified_namespace
        )
        assert settings[f"{prefix}__credential"] == "managedidentity"
        assert f"{prefix}__clientId" not in settings, "system-assigned needs no client id"
        assert user_assigned[f"{prefix}__clientId"] == IDENTITY_CLIENT_ID_PLACEHOLDER
    assert set(user_assigned) == {f"{n.connection}__clientId" for n in topology.namespaces}


def test_key_vault_namespaces_get_no_identity_settings(tmp_path: Path) -> None:
    document = json.loads((ROOT / "examples" / "two-region-all-active.json").read_text())
    document["namespaces"][1]["keyVaultSecret"] = "neu-connection"
    path = tmp_path / "topology.json"
    path.write_text(json.dumps(document))
    topology = load_topology(path)
    settings = app_settings(topology, identity_client_id="00000000-0000-0000-0000-000000000001")
    assert settings["SB_NEU"].startswith("@Microsoft.KeyVault(")
    assert not [key for key in settings if key.startswith("SB_NEU__")]
    assert settings["SB_WEU__credential"] == "managedidentity"
    assert settings["SB_WEU__clientId"] == "00000000-0000-0000-0000-000000000001"
    parameters = bicep_parameters(topology)["parameters"]
    assert set(parameters["userAssignedIdentitySettings"]["value"]) == {"SB_WEU__clientId"}


def test_host_json_holds_only_settings_batch_functions_read() -> None:
    """All triggers are batch triggers (cardinality many), see infra/README.md "host.json"."""
    host = json.loads((ROOT / "host.json").read_text())
    service_bus = host["extensions"]["serviceBus"]
    # Documented as applying only to functions that receive a single message at a time.
    for single_message_only in ("maxAutoLockRenewalDuration", "maxConcurrentCalls",
                                "maxConcurrentSessions"):  # fmt: skip
        assert single_message_only not in service_bus
    # The batch loop waits this long on a held session before releasing it (infra/README.md).
    assert service_bus["sessionIdleTimeout"] == "00:00:01"
    assert service_bus["maxMessageBatchSize"] == 100
    assert service_bus["prefetchCount"] == 0
    assert set(service_bus["clientRetryOptions"]) == {
        "mode", "tryTimeout", "delay", "maxDelay", "maxRetries",
    }  # fmt: skip
    event_hubs = host["extensions"]["eventHubs"]
    assert event_hubs["maxEventBatchSize"] == 100
    assert event_hubs["batchCheckpointFrequency"] == 1
    # EventHubsRetryOptions spells them MaximumDelay / MaximumRetries, unlike Service Bus.
    assert set(event_hubs["clientRetryOptions"]) == {
        "mode", "tryTimeout", "delay", "maximumDelay", "maximumRetries",
    }  # fmt: skip


def test_local_settings_sample_holds_only_real_settings() -> None:
    sample = json.loads((ROOT / "local.settings.sample.json").read_text())
    assert set(sample) == {"IsEncrypted", "Values"}
    for name, value in sample["Values"].items():
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name), name
        assert not name.lower().endswith("_comment"), name
        assert isinstance(value, str), name


def _compose_services(text: str) -> dict[str, dict[str, list[str]]]:
    """Image and published ports per service of a compose file (no YAML library needed)."""
    services: dict[str, dict[str, list[str]]] = {}
    current = key = None
    for line in text.splitlines():
        if match := re.fullmatch(r"  ([A-Za-z0-9_-]+):", line):
            current = match.group(1)
            services[current] = {"image": [], "ports": []}
            key = None
        elif current and (match := re.fullmatch(r"    image: (\S+)", line)):
            services[current]["image"].append(match.group(1).strip("\"'"))
        elif current and re.fullmatch(r"    [a-z_]+:.*", line):
            key = "ports" if line.strip() == "ports:" else None
        elif current and key == "ports" and (match := re.fullmatch(r"      - (.+)", line)):
            services[current]["ports"].append(match.group(1).strip("\"'"))
    return services


def test_compose_publishes_on_loopback_only_and_pins_images() -> None:
    services = _compose_services((INFRA / "local" / "docker-compose.yml").read_text())
    assert set(services) == {"servicebus", "sqlserver", "eventhubs", "azurite"}
    published = [port for service in services.values() for port in service["ports"]]
    assert len(published) == 7
    for port in published:
        assert port.startswith("127.0.0.1:"), port
    for name, service in services.items():
        (image,) = service["image"]
        repository, _, tag = image.rpartition(":")
        assert repository.startswith("mcr.microsoft.com/"), image
        assert tag not in {"", "latest"}, f"{name}: {image} is not pinned"
        assert "/" not in tag, f"{name}: {image} has no tag"
    assert "azure-sql-edge" not in services["sqlserver"]["image"][0]
    package = json.loads((ROOT / "package.json").read_text())
    azurite = services["azurite"]["image"][0].rpartition(":")[2]
    assert azurite == package["devDependencies"]["azurite"], "the tests' Azurite and Docker's"


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
    if any(
        task.subscription_rule() is not None for task in topology.resolved_tasks()
    ):  # the examples that replicate a topic with a loop-prevention rule
        assert _emulator_rules(config), example.name
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
        "replicationAppSettings", "userAssignedIdentitySettings", "enableKeyVault",
        "monitoring",
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


def test_render_cli_writes_user_assigned_identity_settings(tmp_path: Path) -> None:
    from replication.cli import main

    output = tmp_path / "settings.json"
    example = str(ROOT / "examples" / "two-region-all-active.json")
    client_id = "00000000-0000-0000-0000-000000000002"
    arguments = ["render", "app-settings", "--topology", example, "--output", str(output)]
    assert main([*arguments, "--identity-client-id", client_id]) == 0
    settings = json.loads(output.read_text())
    assert settings["SB_WEU__credential"] == "managedidentity"
    assert settings["SB_WEU__clientId"] == client_id
    assert main(arguments) == 0
    assert "SB_WEU__clientId" not in json.loads(output.read_text())


def test_premium_namespaces_get_the_larger_message_size_in_the_emulator_config_only() -> None:
    """Our emulator takes the Premium size as an extension key; Microsoft's config has none."""
    topology = load_topology(Path(__file__).resolve().parents[1] / "host" / "topology.json")
    weu = emulator_config(topology)["UserConfig"]["Namespaces"][0]
    assert weu["MaxMessageSizeInKilobytes"] == 1024
    for document in official_configs(topology).values():
        for namespace in document["UserConfig"].get("Namespaces", []):
            assert "MaxMessageSizeInKilobytes" not in namespace


MESH = ROOT / "examples" / "three-region-mesh.json"
LANE_SUBSCRIPTIONS = {"replication-to-eus", "replication-to-sea"}
"""The lanes of the mesh's task in weu (each peer gets its own replication subscription)."""


def test_lane_subscriptions_are_rendered_with_their_rule_and_delivery_count() -> None:
    topology = load_topology(MESH)
    parameters = bicep_parameters(topology)["parameters"]
    weu = next(n for n in parameters["serviceBusNamespaces"]["value"] if n["name"] == "contoso-weu")
    subscriptions = {s["name"]: s for s in weu["subscriptions"]}
    assert set(subscriptions) == {"dashboard", *LANE_SUBSCRIPTIONS}
    for name in LANE_SUBSCRIPTIONS:
        assert subscriptions[name]["maxDeliveryCount"] == 85
        assert subscriptions[name]["lockDuration"] == "PT1M"
    assert subscriptions["dashboard"]["maxDeliveryCount"] == 10
    rules = {(r["subscription"], r["name"], r["sqlExpression"]) for r in weu["rules"]}
    assert rules == {(name, "$Default", "replication IS NULL") for name in LANE_SUBSCRIPTIONS}

    script = az_cli_script(topology)
    for name in LANE_SUBSCRIPTIONS:
        words = next(
            shlex.split(line)
            for line in script.splitlines()
            if "subscription create" in line and "contoso-weu" in line and f"--name {name}" in line
        )
        assert words[words.index("--max-delivery-count") + 1] == "85"
        assert words[words.index("--lock-duration") + 1] == "PT1M"

    (namespace,) = [
        n for n in emulator_config(topology)["UserConfig"]["Namespaces"] if n["Name"] == "weu"
    ]
    (topic,) = namespace["Topics"]
    emulated = {s["Name"]: s for s in topic["Subscriptions"]}
    for name in LANE_SUBSCRIPTIONS:
        assert emulated[name]["Properties"]["MaxDeliveryCount"] == 85
        assert emulated[name]["Properties"]["LockDuration"] == "PT1M"
        (rule,) = emulated[name]["Rules"]
        assert rule["Properties"]["SqlFilter"]["SqlExpression"] == "replication IS NULL"


def test_official_emulator_configs_cap_the_delivery_count_at_its_limit() -> None:
    configs = official_configs(load_topology(MESH))
    (namespace,) = configs["weu.json"]["UserConfig"]["Namespaces"]
    counts = {
        s["Name"]: s["Properties"]["MaxDeliveryCount"]
        for s in namespace["Topics"][0]["Subscriptions"]
    }
    assert counts == {"dashboard": 10, **dict.fromkeys(LANE_SUBSCRIPTIONS, 10)}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_servicebus_task_can_send_to_its_parking_queue(example: Path) -> None:
    topology = load_topology(example)
    parameters = bicep_parameters(topology)["parameters"]
    queues = {
        (ns["name"], q["name"])
        for ns in parameters["serviceBusNamespaces"]["value"]
        for q in ns["queues"]
    }
    senders = {
        (a["namespace"], a["entityType"], a["entity"])
        for a in parameters["roleAssignments"]["value"]
        if a["role"] == "sender"
    }
    script = az_cli_script(topology)
    for task in topology.tasks:
        if topology.namespace(task.source.namespace).kind.value != "servicebus":
            continue
        parking = task.dead_letter_target
        assert parking is not None, task.name
        host = topology.namespace(parking.namespace).fully_qualified_namespace.split(".")[0]
        assert (host, parking.entity) in queues, task.name
        assert (host, "queue", parking.entity) in senders, task.name
        assert f"--namespace-name {host} --name {parking.entity}" in script, task.name


def test_the_az_cli_dry_run_prints_each_command_on_a_line_of_its_own(tmp_path: Path) -> None:
    """``--dry-run`` prints the commands: those whose output the script reads (``selected``, the
    identity of an Event Hubs namespace that captures) on standard error, the rest on standard
    output. The script's text has printf's ``\\n`` as those two characters: a newline inside the
    quotes printed the same but broke the generated line in two."""
    script = az_cli_script(load_topology(FEATURE_TOPOLOGY))
    assert "printf '%q ' \"$@\" >&2; printf '\\n' >&2; echo '<principal id>'" in script
    path = tmp_path / "provision.sh"
    path.write_text(script, encoding="utf-8")
    environment = {**os.environ, "RESOURCE_GROUP": "rg", "PRINCIPAL_ID": "principal"}
    result = subprocess.run(
        ["bash", str(path), "--dry-run"], env=environment, capture_output=True, text=True,
        check=True, timeout=60,
    )  # fmt: skip
    assert result.stderr == (
        "az eventhubs namespace create --resource-group rg --name fabrikam-ingest --location "
        "westeurope --sku Standard --capacity 1 --disable-local-auth true --min-tls 1.2 "
        "--mi-system-assigned true --query identity.principalId --output tsv \n"
    )
    lines = result.stdout.splitlines()
    assert lines
    assert all(line.startswith("az ") for line in lines), lines


def test_provision_rules_asks_for_its_resource_group_before_rendering() -> None:
    """``infra/scripts/provision-rules.sh`` without ``RESOURCE_GROUP`` says so itself: the
    rendered script's own check would name the temporary file it was written to."""
    environ = {k: v for k, v in os.environ.items() if k != "RESOURCE_GROUP"}
    script = ROOT / "infra" / "scripts" / "provision-rules.sh"
    refused = subprocess.run(
        ["bash", str(script), "--dry-run"], env=environ, capture_output=True, text=True, timeout=60
    )
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == "error: set RESOURCE_GROUP to the resource group to provision into\n"
