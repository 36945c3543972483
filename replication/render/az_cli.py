"""A bash script that provisions the topology with the az CLI (``python -m replication render
az-cli``), for users who do not deploy the Bicep files.

It creates what ``infra/main.bicep`` creates from the topology, with the same request bodies
(``tests/infra/test_provisioning_paths.py`` runs the script through the real az CLI and compares
every request with the evaluated Bicep deployment): the namespaces of this tenant (local auth
disabled, TLS 1.2), their queues, topics, subscriptions, rules, event hubs and consumer groups;
with ``PRINCIPAL_ID`` set, the Function app identity's least-privilege roles (those of a Service
Bus capture included: on each ``replication-capture`` subscription and capture container); with
``LOG_ANALYTICS_WORKSPACE_ID`` set, the namespaces' diagnostic settings. The Function app, its
storage, Key Vault and alerts are the Bicep files' alone.

Every command is a create-or-update (ARM PUT), so the script is idempotent: run it again after
changing the topology. The replication rule is created under the name ``$Default``, which
replaces the TrueFilter rule Service Bus gives a new subscription (a TrueFilter would replicate
replicas too). ``--dry-run`` prints the commands instead of running them.

A namespace of another tenant (``keyVaultSecret``) is referenced, never created: the script
lists, as comments, the commands its owner runs in that tenant (see ``_common.provisioned``).
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from typing import Any

from replication.topology import NamespaceKind, NamespaceSpec, Topology, materialize

from ._common import provisioned, resource_name
from .access import RoleAssignment, role_assignments
from .bicep_params import eventhubs_parameter, servicebus_parameter, uncaptured_entities

HEADER = """#!/usr/bin/env bash
# Generated from {source} by `python -m replication render az-cli`: do not edit, re-render.
# Creates or updates the topology's namespaces, entities and replication rules (idempotent).
# Usage: RESOURCE_GROUP=my-rg [PRINCIPAL_ID=<object id>] [LOG_ANALYTICS_WORKSPACE_ID=<id>] \\
#        {script} [--dry-run]
#   PRINCIPAL_ID: the Function app's managed identity: grants its least-privilege roles
#   LOG_ANALYTICS_WORKSPACE_ID: resource id of a workspace: the namespaces' diagnostic settings
set -euo pipefail
: "${{RESOURCE_GROUP:?set RESOURCE_GROUP to the resource group of the namespaces}}"
DRY_RUN=0
if [ "${{1:-}}" = "--dry-run" ]; then DRY_RUN=1; fi
run() {{
    if [ "$DRY_RUN" = 1 ]; then printf '%q ' "$@"; printf '\\n'; else "$@" >/dev/null; fi
}}
with_principal() {{ if [ -n "${{PRINCIPAL_ID:-}}" ]; then run "$@"; fi; }}
# Run a command and print what its --query selects (dry run: a stand-in), e.g. the principal of
# the identity a namespace create gives the namespace.
selected() {{
    if [ "$DRY_RUN" = 1 ]; then printf '%q ' "$@" >&2; printf '\\n' >&2; echo '<principal id>'
    else "$@"; fi
}}
with_workspace() {{ if [ -n "${{LOG_ANALYTICS_WORKSPACE_ID:-}}" ]; then run "$@"; fi; }}
if [ -n "${{PRINCIPAL_ID:-}}" ] && [ -z "${{SUBSCRIPTION_ID:-}}" ]; then
    if [ "$DRY_RUN" = 1 ]; then SUBSCRIPTION_ID='<subscription id>'
    else SUBSCRIPTION_ID=$(az account show --query id --output tsv); fi
fi
"""


@dataclasses.dataclass(frozen=True)
class _Shell:
    """A word written as shell text (a variable expansion), not quoted as a literal."""

    text: str


_RESOURCE_GROUP = _Shell('"$RESOURCE_GROUP"')
_WORKSPACE = _Shell('"${LOG_ANALYTICS_WORKSPACE_ID:-}"')
_PRINCIPAL = _Shell('"${PRINCIPAL_ID:-}"')
_BASE = ("--resource-group", _RESOURCE_GROUP)

_SETTING_FLAGS = {
    "maxDeliveryCount": "--max-delivery-count",
    "lockDuration": "--lock-duration",
    "defaultMessageTimeToLive": "--default-message-time-to-live",
    "deadLetteringOnMessageExpiration": "--enable-dead-lettering-on-message-expiration",
    "deadLetteringOnFilterEvaluationExceptions": "--dead-letter-on-filter-exceptions",
    "requiresSession": "--enable-session",
    "forwardTo": "--forward-to",
    "forwardDeadLetteredMessagesTo": "--forward-dead-lettered-messages-to",
    "requiresDuplicateDetection": "--enable-duplicate-detection",
    "duplicateDetectionHistoryTimeWindow": "--duplicate-detection-history-time-window",
}
"""ARM property of a queue, topic or subscription -> the az CLI flag that sets it."""

_CORRELATION_FLAGS = {
    "correlationId": "--correlation-id",
    "messageId": "--message-id",
    "to": "--to",
    "replyTo": "--reply-to",
    "label": "--label",
    "sessionId": "--session-id",
    "replyToSessionId": "--reply-to-session-id",
    "contentType": "--content-type",
}
"""ARM ``CorrelationFilter`` field -> flag (``properties``: ``--correlation-filter-property``)."""

SQL_COMPATIBILITY_LEVEL = "20"
"""What Bicep sets on the rule action (ARM: "currently hard-coded to 20")."""


def _value(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _flags(settings: dict[str, Any]) -> list[str]:
    flags: list[str] = []
    for key, flag in _SETTING_FLAGS.items():
        if key in settings:
            flags += [flag, _value(settings[key])]
    return flags


def _command(runner: str, *words: str | _Shell) -> str:
    return " ".join([runner, *(w.text if isinstance(w, _Shell) else shlex.quote(w) for w in words)])


def _correlation_flags(correlation: dict[str, Any]) -> list[str]:
    words = ["--filter-type", "CorrelationFilter"]
    for key, flag in _CORRELATION_FLAGS.items():
        if key in correlation:
            words += [flag, str(correlation[key])]
    properties = correlation.get("properties", {})
    if properties:
        # The CLI reads each word as key=value, splitting at the first "=" (validate_tag).
        bad = [key for key in properties if "=" in key or not key]
        if bad:
            raise ValueError(
                f"correlation filter property names {bad} cannot be passed to the az CLI "
                "(--correlation-filter-property takes key=value words)"
            )
        words += ["--correlation-filter-property", *(f"{k}={v}" for k, v in properties.items())]
    return words


def _servicebus_commands(spec: dict[str, Any], runner: str = "run") -> list[str]:
    """The entity commands of a rendered ``servicebus_parameter``."""
    ns = ("--namespace-name", spec["name"])
    lines = []
    for queue in spec["queues"]:
        lines.append(_command(runner, "az", "servicebus", "queue", "create", *_BASE, *ns,
                              "--name", queue["name"], *_flags(queue)))  # fmt: skip
    for topic in spec["topics"]:
        lines.append(_command(runner, "az", "servicebus", "topic", "create", *_BASE, *ns,
                              "--name", topic["name"], *_flags(topic)))  # fmt: skip
    for subscription in spec["subscriptions"]:
        lines.append(
            _command(runner, "az", "servicebus", "topic", "subscription", "create", *_BASE, *ns,
                     "--topic-name", subscription["topic"], "--name", subscription["name"],
                     *_flags(subscription))
        )  # fmt: skip
    for rule in spec["rules"]:
        words = ["az", "servicebus", "topic", "subscription", "rule", "create", *_BASE, *ns,
                 "--topic-name", rule["topic"], "--subscription-name", rule["subscription"],
                 "--name", rule["name"]]  # fmt: skip
        if rule["filterType"] == "SqlFilter":
            words += [
                "--filter-type",
                "SqlFilter",
                "--filter-sql-expression",
                rule["sqlExpression"],
            ]
        else:
            words += _correlation_flags(rule["correlationFilter"])
        if "actionSqlExpression" in rule:
            words += ["--action-sql-expression", rule["actionSqlExpression"],
                      "--action-compatibility-level", SQL_COMPATIBILITY_LEVEL]  # fmt: skip
        lines.append(_command(runner, *words))
    return lines


def _eventhubs_commands(spec: dict[str, Any], runner: str = "run") -> list[str]:
    """The entity commands of a rendered ``eventhubs_parameter``."""
    ns = ("--namespace-name", spec["name"])
    lines = []
    capture = spec.get("capture")
    for hub in spec["eventHubs"]:
        if capture is not None and hub["captured"]:
            lines.append(_captured_event_hub_command(runner, spec["name"], hub, capture))
            continue
        lines.append(
            _command(runner, "az", "eventhubs", "eventhub", "create", *_BASE, *ns,
                     "--name", hub["name"], "--partition-count", str(hub["partitionCount"]),
                     "--retention-time-in-hours", str(24 * hub["messageRetentionInDays"]),
                     "--cleanup-policy", "Delete")
        )  # fmt: skip
    for group in spec["consumerGroups"]:
        lines.append(
            _command(runner, "az", "eventhubs", "eventhub", "consumer-group", "create", *_BASE,
                     *ns, "--eventhub-name", group["eventHub"], "--name", group["name"])
        )  # fmt: skip
    return lines


_SUBSCRIPTION = "${SUBSCRIPTION_ID:-$(az account show --query id --output tsv)}"
EVENT_HUBS_API_VERSION = "2024-01-01"


def _captured_event_hub_command(
    runner: str, namespace: str, hub: dict[str, Any], capture: dict[str, Any]
) -> str:
    """An event hub with Capture, as ``az rest`` PUTs it: the body
    ``infra/modules/eventhubs.bicep`` declares.

    Not ``az eventhubs eventhub create --enable-capture ... --mi-system-assigned true``: the
    Azure CLI (2.91, ``eventhubs/operations/event_hub_entity.py``, ``cli_eventhub_create`` and
    ``cli_eventhub_update``) adds the capture destination's ``identity`` only together with
    ``--mi-user-assigned``, so a system-assigned identity never reaches the request and Capture
    would not write as the namespace's identity.
    """
    account = f"Microsoft.Storage/storageAccounts/{capture['storageAccount']}"
    body = {
        "properties": {
            "partitionCount": hub["partitionCount"],
            "retentionDescription": {
                "cleanupPolicy": "Delete",
                "retentionTimeInHours": 24 * hub["messageRetentionInDays"],
            },
            "captureDescription": {
                "enabled": True,
                "encoding": "Avro",
                "intervalInSeconds": capture["intervalInSeconds"],
                "sizeLimitInBytes": capture["sizeLimitInBytes"],
                "skipEmptyArchives": False,
                "destination": {
                    "name": "EventHubArchive.AzureBlockBlob",
                    "identity": {"type": "SystemAssigned"},
                    "properties": {
                        "storageAccountResourceId": "/subscriptions/__SUBSCRIPTION__"
                        f"/resourceGroups/__RESOURCE_GROUP__/providers/{account}",
                        "blobContainer": capture["container"],
                        "archiveNameFormat": capture["archiveNameFormat"],
                    },
                },
            },
        }
    }
    text = shlex.quote(json.dumps(body, separators=(",", ":")))
    # The subscription and resource group are the shell's: spliced in as its expansions.
    text = text.replace("__SUBSCRIPTION__", f"'\"{_SUBSCRIPTION}\"'").replace(
        "__RESOURCE_GROUP__", "'\"$RESOURCE_GROUP\"'"
    )
    url = _Shell(
        f'"https://management.azure.com/subscriptions/{_SUBSCRIPTION}/resourceGroups/'
        f'$RESOURCE_GROUP/providers/Microsoft.EventHub/namespaces/"'
        + shlex.quote(f"{namespace}/eventhubs/{hub['name']}?api-version={EVENT_HUBS_API_VERSION}")
    )
    return _command(runner, "az", "rest", "--method", "put", "--url", url, "--body", _Shell(text))


def _diagnostics_command(resource_type: str, name: str) -> str:
    """The namespace's diagnostic setting, as ``infra/modules/servicebus.bicep`` declares it."""
    return _command(
        "with_workspace", "az", "monitor", "diagnostic-settings", "create", *_BASE,
        "--name", "to-log-analytics", "--resource", name, "--resource-type", resource_type,
        "--workspace", _WORKSPACE,
        "--logs", '[{"categoryGroup":"allLogs","enabled":true}]',
        "--metrics", '[{"category":"AllMetrics","enabled":true}]',
    )  # fmt: skip


def _namespace_commands(namespace: NamespaceSpec, uncaptured: frozenset[str]) -> list[str]:
    if namespace.kind is NamespaceKind.SERVICEBUS:
        spec = servicebus_parameter(namespace)
        lines = [f"# Service Bus namespace {namespace.name} ({spec['name']}, {spec['location']})"]
        lines.append(
            _command("run", "az", "servicebus", "namespace", "create", *_BASE,
                     "--name", spec["name"], "--location", spec["location"], "--sku", spec["sku"],
                     "--disable-local-auth", "true", "--min-tls", "1.2")
        )  # fmt: skip
        lines += _servicebus_commands(spec)
        lines.append(_diagnostics_command("Microsoft.ServiceBus/namespaces", spec["name"]))
        return lines
    spec = eventhubs_parameter(namespace, uncaptured=uncaptured)
    lines = [f"# Event Hubs namespace {namespace.name} ({spec['name']}, {spec['location']})"]
    create = ("az", "eventhubs", "namespace", "create", *_BASE, "--name", spec["name"],
              "--location", spec["location"], "--sku", spec["sku"], "--capacity", "1",
              "--disable-local-auth", "true", "--min-tls", "1.2")  # fmt: skip
    capture = spec["capture"]
    if capture is None:
        lines.append(_command("run", *create))
    else:
        # Capture writes as the namespace's own identity: created with it, then given its role
        # on the capture container before the event hubs enable Capture.
        selected = _command("selected", *create, "--mi-system-assigned", "true",
                            "--query", "identity.principalId", "--output", "tsv")  # fmt: skip
        lines.append(f"CAPTURE_PRINCIPAL=$({selected})")
        lines.append(_capture_role_command(capture))
    lines += _eventhubs_commands(spec)
    lines.append(_diagnostics_command("Microsoft.EventHub/namespaces", spec["name"]))
    return lines


def _capture_role_command(capture: dict[str, Any]) -> str:
    """Storage Blob Data Contributor on the capture container for the namespace's identity
    (``infra/modules/eventhubs.bicep``, ``captureRole``). Run whether or not ``PRINCIPAL_ID``
    is set, so the subscription falls back to the logged-in one."""
    path = _SCOPES["container"].format(
        namespace=capture["storageAccount"], entity=capture["container"]
    )
    return _role_assignment_command(
        "run", _Shell('"$CAPTURE_PRINCIPAL"'), capture["roleDefinitionId"], path, _SUBSCRIPTION
    )


def _role_assignment_command(
    runner: str, principal: _Shell, role_definition_id: str, path: str, subscription: str
) -> str:
    """``az role assignment create`` of a role for a service principal, scoped at ``path``
    (below the resource group's ``providers/``) in the shell's ``subscription`` expansion."""
    scope = _Shell(
        f'"/subscriptions/{subscription}/resourceGroups/$RESOURCE_GROUP/providers/"'
        + shlex.quote(path)
    )
    return _command(
        runner, "az", "role", "assignment", "create", "--assignee-object-id", principal,
        "--assignee-principal-type", "ServicePrincipal", "--role", role_definition_id,
        "--scope", scope,
    )  # fmt: skip


def _foreign_namespace_comments(namespace: NamespaceSpec) -> list[str]:
    """What the owner of a namespace in another tenant creates there, as comments."""
    kind = "Service Bus" if namespace.kind is NamespaceKind.SERVICEBUS else "Event Hubs"
    name = resource_name(namespace)
    lines = [
        f"# {kind} namespace {namespace.name} ({name}, {namespace.region}): in another tenant "
        f"(keyVaultSecret {namespace.key_vault_secret}),",
        "# referenced only: nothing is created there from here. Its owner creates these "
        "entities in that tenant:",
    ]
    if namespace.kind is NamespaceKind.SERVICEBUS:
        commands = _servicebus_commands(servicebus_parameter(namespace), runner="#  ")
    else:
        commands = _eventhubs_commands(eventhubs_parameter(namespace), runner="#  ")
    return lines + [line.replace(_RESOURCE_GROUP.text, "<resource group>") for line in commands]


_SCOPES = {
    "queue": "Microsoft.ServiceBus/namespaces/{namespace}/queues/{entity}",
    "topic": "Microsoft.ServiceBus/namespaces/{namespace}/topics/{entity}",
    "subscription": "Microsoft.ServiceBus/namespaces/{namespace}/topics/{entity}"
    "/subscriptions/{subscription}",
    "eventhub": "Microsoft.EventHub/namespaces/{namespace}/eventhubs/{entity}",
    "container": "Microsoft.Storage/storageAccounts/{namespace}/blobServices/default"
    "/containers/{entity}",
}
"""Each role scope (``RoleAssignment.entity_type``) as a resource id below ``providers/``."""


def _role_command(assignment: RoleAssignment) -> str:
    """One of the Function app identity's roles; skipped without ``PRINCIPAL_ID`` (the header
    sets ``SUBSCRIPTION_ID`` only with it, so the scope must not fall back to ``az account``:
    the arguments of a skipped command are expanded all the same)."""
    path = _SCOPES[assignment.entity_type].format(**dataclasses.asdict(assignment))
    return _role_assignment_command(
        "with_principal", _PRINCIPAL, assignment.role_definition_id, path, "${SUBSCRIPTION_ID:-}"
    )


def az_cli_script(topology: Topology, *, source: str = "topology.json") -> str:
    materialized = materialize(topology)
    owned = provisioned(materialized)
    lines = [HEADER.format(source=source, script="provision.sh")]
    for namespace in materialized.namespaces:
        if namespace in owned:
            lines += _namespace_commands(namespace, uncaptured_entities(topology))
        else:
            lines += _foreign_namespace_comments(namespace)
        lines.append("")
    lines.append(
        "# Data Receiver / Data Sender roles of the Function app's identity (PRINCIPAL_ID), and\n"
        "# Storage Blob Data Contributor on the containers its Service Bus captures write to"
    )
    lines += [_role_command(assignment) for assignment in role_assignments(materialized)]
    lines.append("")
    return "\n".join(lines)
