"""A bash script that provisions the topology's entities and rules with the az CLI
(``python -m replication render az-cli``), for users who do not deploy the Bicep files.

Every command is a create-or-update (ARM PUT), so the script is idempotent: run it again after
changing the topology. The replication rule is created under the name ``$Default``, which
replaces the TrueFilter rule Service Bus gives a new subscription (a TrueFilter would replicate
replicas too). ``--dry-run`` prints the commands instead of running them. Namespaces are expected
to exist (create them with the Bicep files or the portal); the script names the resource group
with ``$RESOURCE_GROUP``.
"""

from __future__ import annotations

import shlex
from typing import Any

from replication.topology import NamespaceKind, NamespaceSpec, Topology, materialize

from .bicep_params import eventhubs_parameter, servicebus_parameter

HEADER = """#!/usr/bin/env bash
# Generated from {source} by `python -m replication render az-cli`: do not edit, re-render.
# Creates or updates the entities and replication rules of the topology (idempotent).
# Usage: RESOURCE_GROUP=my-rg {script} [--dry-run]
set -euo pipefail
: "${{RESOURCE_GROUP:?set RESOURCE_GROUP to the resource group of the namespaces}}"
DRY_RUN=0
if [ "${{1:-}}" = "--dry-run" ]; then DRY_RUN=1; fi
run() {{
    if [ "$DRY_RUN" = 1 ]; then printf '%q ' "$@"; printf '\\n'; else "$@" >/dev/null; fi
}}
"""

_SETTING_FLAGS = {
    "maxDeliveryCount": "--max-delivery-count",
    "lockDuration": "--lock-duration",
    "defaultMessageTimeToLive": "--default-message-time-to-live",
    "deadLetteringOnMessageExpiration": "--enable-dead-lettering-on-message-expiration",
    "requiresSession": "--enable-session",
    "forwardTo": "--forward-to",
    "forwardDeadLetteredMessagesTo": "--forward-dead-lettered-messages-to",
    "requiresDuplicateDetection": "--enable-duplicate-detection",
    "duplicateDetectionHistoryTimeWindow": "--duplicate-detection-history-time-window",
}


def _flags(settings: dict[str, Any], skip: tuple[str, ...] = ()) -> list[str]:
    flags: list[str] = []
    for key, flag in _SETTING_FLAGS.items():
        if key in settings and key not in skip:
            value = settings[key]
            flags += [flag, str(value).lower() if isinstance(value, bool) else str(value)]
    return flags


def _command(*words: str) -> str:
    return "run " + " ".join(
        word if word == '"$RESOURCE_GROUP"' else shlex.quote(word) for word in words
    )


def _servicebus_commands(namespace: NamespaceSpec) -> list[str]:
    spec = servicebus_parameter(namespace)
    base = ("--resource-group", '"$RESOURCE_GROUP"', "--namespace-name", spec["name"])
    lines = [f"# Service Bus namespace {namespace.name} ({spec['name']}, {namespace.region})"]
    for queue in spec["queues"]:
        lines.append(
            _command("az", "servicebus", "queue", "create", *base, "--name", queue["name"],
                     *_flags(queue))
        )  # fmt: skip
    for topic in spec["topics"]:
        lines.append(
            _command("az", "servicebus", "topic", "create", *base, "--name", topic["name"],
                     *_flags(topic, skip=("requiresSession",)))
        )  # fmt: skip
    for subscription in spec["subscriptions"]:
        lines.append(
            _command("az", "servicebus", "topic", "subscription", "create", *base,
                     "--topic-name", subscription["topic"], "--name", subscription["name"],
                     *_flags(subscription))
        )  # fmt: skip
    for rule in spec["rules"]:
        words = ["az", "servicebus", "topic", "subscription", "rule", "create", *base,
                 "--topic-name", rule["topic"], "--subscription-name", rule["subscription"],
                 "--name", rule["name"]]  # fmt: skip
        if rule["filterType"] == "SqlFilter":
            words += ["--filter-sql-expression", rule["sqlExpression"]]
        else:
            correlation = rule["correlationFilter"]
            flags = {"correlationId": "--correlation-id", "messageId": "--message-id",
                     "to": "--to", "replyTo": "--reply-to", "subject": "--label",
                     "sessionId": "--session-id", "replyToSessionId": "--reply-to-session-id",
                     "contentType": "--content-type"}  # fmt: skip
            words += ["--filter-type", "CorrelationFilter"]
            for key, flag in flags.items():
                if key in correlation:
                    words += [flag, str(correlation[key])]
        if "actionSqlExpression" in rule:
            words += ["--action-sql-expression", rule["actionSqlExpression"]]
        lines.append(_command(*words))
    return lines


def _eventhubs_commands(namespace: NamespaceSpec) -> list[str]:
    spec = eventhubs_parameter(namespace)
    base = ("--resource-group", '"$RESOURCE_GROUP"', "--namespace-name", spec["name"])
    lines = [f"# Event Hubs namespace {namespace.name} ({spec['name']}, {namespace.region})"]
    for hub in spec["eventHubs"]:
        lines.append(
            _command("az", "eventhubs", "eventhub", "create", *base, "--name", hub["name"],
                     "--partition-count", str(hub["partitionCount"]),
                     "--retention-time-in-hours", str(24 * hub["messageRetentionInDays"]),
                     "--cleanup-policy", "Delete")
        )  # fmt: skip
    for group in spec["consumerGroups"]:
        lines.append(
            _command("az", "eventhubs", "eventhub", "consumer-group", "create", *base,
                     "--eventhub-name", group["eventHub"], "--name", group["name"])
        )  # fmt: skip
    return lines


def az_cli_script(topology: Topology, *, source: str = "topology.json") -> str:
    lines = [HEADER.format(source=source, script="provision.sh")]
    for namespace in materialize(topology).namespaces:
        if namespace.kind is NamespaceKind.SERVICEBUS:
            lines += _servicebus_commands(namespace)
        else:
            lines += _eventhubs_commands(namespace)
        lines.append("")
    return "\n".join(lines)
