"""``infra/main.parameters.json`` from the topology (``python -m replication render bicep-params``).

Why a rendered parameters file rather than ``loadJsonContent`` of the topology: the
subscriptions, loop-prevention rules, consumer groups and role assignments are *derived* from
the tasks by this library (``materialize(topology)``); rendering them keeps one implementation
of those rules, and Bicep stays simple loops over flat arrays (Bicep cannot nest resource loops).

``userAssignedIdentitySettings`` holds the ``<connection>__clientId`` settings a user-assigned
identity adds, with the client id as a placeholder: the template applies them, with the real
client id, only when its ``userAssignedIdentityName`` parameter is set. The identity choice thus
stays one template parameter, while which settings it implies is decided here, once.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from replication.rules import CorrelationFilterSpec
from replication.topology import (
    CAPTURE_NAME_FORMAT,
    STORAGE_BLOB_DATA_CONTRIBUTOR,
    NamespaceKind,
    NamespaceSpec,
    SubscriptionSpec,
    Topology,
    materialize,
)

from ._common import entity_settings, iso_duration, provisioned, resource_name
from .access import role_assignments
from .app_settings import (
    IDENTITY_CLIENT_ID_PLACEHOLDER,
    app_settings,
    user_assigned_identity_settings,
)

SCHEMA = "https://schema.management.azure.com/schemas/2019-04-01/deploymentParameters.json#"


def arm_correlation_filter(correlation: CorrelationFilterSpec) -> dict[str, Any]:
    """ARM's ``CorrelationFilter`` for the topology's: ``subject`` is ARM's ``label`` (the SDKs
    renamed the message property, ARM kept the old name in every API version; Bicep would only
    warn about ``subject`` and drop the condition), and custom ``properties`` only when given."""
    fields = correlation.model_dump(
        by_alias=True, exclude_none=True, exclude={"subject", "properties"}
    )
    if correlation.subject is not None:
        fields["label"] = correlation.subject
    if correlation.properties:
        fields["properties"] = dict(correlation.properties)
    return fields


def _rules(topic: str, subscription: SubscriptionSpec) -> list[dict[str, Any]]:
    rules = []
    for rule in subscription.rules:
        entry: dict[str, Any] = {
            "topic": topic,
            "subscription": subscription.name,
            "name": rule.name,
        }
        if rule.filter.sql is not None:
            entry["filterType"] = "SqlFilter"
            entry["sqlExpression"] = rule.filter.sql
        else:
            correlation = rule.filter.correlation
            assert correlation is not None
            entry["filterType"] = "CorrelationFilter"
            entry["correlationFilter"] = arm_correlation_filter(correlation)
        if rule.action is not None:
            entry["actionSqlExpression"] = rule.action
        rules.append(entry)
    return rules


def servicebus_parameter(namespace: NamespaceSpec) -> dict[str, Any]:
    topics, subscriptions, rules = [], [], []
    for topic in namespace.topics:
        entry: dict[str, Any] = {
            "name": topic.name,
            "requiresDuplicateDetection": topic.requires_duplicate_detection,
            "duplicateDetectionHistoryTimeWindow": iso_duration(
                topic.duplicate_detection_history_time_window
            ),
        }
        if topic.default_message_time_to_live is not None:
            entry["defaultMessageTimeToLive"] = iso_duration(topic.default_message_time_to_live)
        topics.append(entry)
        for subscription in topic.subscriptions:
            subscriptions.append(
                {
                    "topic": topic.name,
                    "name": subscription.name,
                    "deadLetteringOnFilterEvaluationExceptions": (
                        subscription.dead_lettering_on_filter_evaluation_exceptions
                    ),
                    **entity_settings(subscription),
                }
            )
            rules += _rules(topic.name, subscription)
    queues = [
        {
            "name": queue.name,
            "requiresDuplicateDetection": queue.requires_duplicate_detection,
            "duplicateDetectionHistoryTimeWindow": iso_duration(
                queue.duplicate_detection_history_time_window
            ),
            **entity_settings(queue),
        }
        for queue in namespace.queues
    ]
    return {
        "name": resource_name(namespace),
        "location": namespace.region,
        "sku": namespace.sku,
        "queues": queues,
        "topics": topics,
        "subscriptions": subscriptions,
        "rules": rules,
    }


def eventhubs_parameter(
    namespace: NamespaceSpec, *, uncaptured: Collection[str] = ()
) -> dict[str, Any]:
    """The namespace for ``infra/modules/eventhubs.bicep``; with a ``capture`` section every
    event hub but those named in ``uncaptured`` (the heartbeat hub: heartbeats are no
    messages of the audit) is ``captured``."""
    hubs = [
        {
            "name": hub.name,
            "partitionCount": hub.partition_count,
            "messageRetentionInDays": hub.message_retention_in_days,
            "captured": namespace.capture is not None and hub.name not in uncaptured,
        }
        for hub in namespace.event_hubs
    ]
    groups = [
        {"eventHub": hub.name, "name": group}
        for hub in namespace.event_hubs
        for group in hub.consumer_groups
    ]
    sku = "Standard" if namespace.sku == "Premium" else namespace.sku
    return {
        "name": resource_name(namespace),
        "location": namespace.region,
        "sku": sku,
        "eventHubs": hubs,
        "consumerGroups": groups,
        "capture": capture_parameter(namespace),
    }


def uncaptured_entities(topology: Topology) -> frozenset[str]:
    """Entities a namespace's capture leaves out: the heartbeat entity, whose messages the
    duplicate audit must not count."""
    return frozenset({topology.heartbeats.entity})


def capture_parameter(namespace: NamespaceSpec) -> dict[str, Any] | None:
    """The namespace's Event Hubs Capture (``CaptureSpec``) as ``infra/modules/eventhubs.bicep``
    and the az CLI script apply it to every event hub; None without one."""
    capture = namespace.capture
    if capture is None:
        return None
    return {
        "storageAccount": capture.storage_account,
        "container": capture.container,
        "intervalInSeconds": int(capture.interval.total_seconds()),
        "sizeLimitInBytes": capture.size_limit_bytes,
        "archiveNameFormat": CAPTURE_NAME_FORMAT,
        "roleDefinitionId": STORAGE_BLOB_DATA_CONTRIBUTOR,
    }


def monitoring_parameter(topology: Topology) -> dict[str, Any]:
    """The topology's ``monitoring`` section for ``infra/modules/monitoring.bicep``: durations
    in whole seconds (``replication.lag`` and ``replication.heartbeat.age`` are in seconds) and
    the window as ISO-8601 (an alert rule's ``windowSize``)."""
    monitoring = topology.monitoring
    return {
        "lagThresholdSeconds": int(monitoring.lag_threshold.total_seconds()),
        "heartbeatMaxAgeSeconds": int(monitoring.heartbeat_max_age.total_seconds()),
        "parkedThreshold": monitoring.parked_threshold,
        "failureWindow": iso_duration(monitoring.failure_window),
        "alertsEnabled": monitoring.alerts_enabled,
        "actionGroupEmails": list(monitoring.action_group_emails),
    }


def bicep_parameters(topology: Topology, *, topology_path: str = "topology.json") -> dict[str, Any]:
    """The deployment parameters document for ``infra/main.bicep``."""
    materialized = materialize(topology)
    # Namespaces of another tenant (keyVaultSecret) are only referenced: see _common.provisioned.
    owned = provisioned(materialized)
    servicebus = [n for n in owned if n.kind is NamespaceKind.SERVICEBUS]
    eventhubs = [n for n in owned if n.kind is NamespaceKind.EVENTHUBS]
    key_vault_secrets = sorted(
        {n.key_vault_secret for n in materialized.namespaces if n.key_vault_secret}
    )
    uncaptured = uncaptured_entities(topology)
    return {
        "$schema": SCHEMA,
        "contentVersion": "1.0.0.0",
        "parameters": {
            "serviceBusNamespaces": {"value": [servicebus_parameter(n) for n in servicebus]},
            "eventHubNamespaces": {
                "value": [eventhubs_parameter(n, uncaptured=uncaptured) for n in eventhubs]
            },
            "roleAssignments": {
                "value": [a.as_parameter() for a in role_assignments(materialized)]
            },
            "replicationAppSettings": {
                "value": app_settings(materialized, topology_path=topology_path)
            },
            "userAssignedIdentitySettings": {
                "value": user_assigned_identity_settings(
                    materialized, IDENTITY_CLIENT_ID_PLACEHOLDER
                )
            },
            "enableKeyVault": {"value": bool(key_vault_secrets)},
            "monitoring": {"value": monitoring_parameter(topology)},
        },
    }
