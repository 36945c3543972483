"""The emulators' configuration for a topology (``python -m replication render emulator-config``).

The output is the official Service Bus emulator ``Config.json`` schema (``UserConfig.Namespaces``)
and the official Event Hubs emulator schema (``UserConfig.NamespaceConfig``) in one document,
with every namespace of the topology under its logical name: the project's own emulator serves
them all, each on its own port. ``--official`` writes one file per namespace in the exact
single-namespace form Microsoft's Docker emulators accept (namespace ``sbemulatorns`` /
``emulatorNs1``), as used by ``infra/local/docker-compose.yml``; Microsoft's Service Bus emulator
accepts ``MaxDeliveryCount`` 1-10 only, so there the delivery counts sized for the tasks' outage
tolerance (often more) are capped at 10 (:data:`OFFICIAL_MAX_DELIVERY_COUNT`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from replication.rules import RuleSpec
from replication.topology import (
    EventHubSpec,
    NamespaceKind,
    NamespaceSpec,
    QueueSpec,
    SubscriptionSpec,
    Topology,
    materialize,
)

from ._common import entity_settings, iso_duration, pascal_case

OFFICIAL_SERVICEBUS_NAMESPACE = "sbemulatorns"
OFFICIAL_EVENTHUBS_NAMESPACE = "emulatorNs1"


def _rule(rule: RuleSpec) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    if rule.filter.sql is not None:
        properties["FilterType"] = "Sql"
        properties["SqlFilter"] = {"SqlExpression": rule.filter.sql}
    else:
        correlation = rule.filter.correlation
        assert correlation is not None
        fields = correlation.model_dump(by_alias=True, exclude_none=True, exclude={"properties"})
        properties["FilterType"] = "Correlation"
        properties["CorrelationFilter"] = {
            **{key[0].upper() + key[1:]: value for key, value in fields.items()},
            "Properties": dict(correlation.properties),
        }
    if rule.action is not None:
        properties["Action"] = {"SqlExpression": rule.action}
    return {"Name": rule.name, "Properties": properties}


OFFICIAL_MAX_DELIVERY_COUNT = 10
"""The largest ``MaxDeliveryCount`` Microsoft's Service Bus emulator accepts."""


def _settings(entity: QueueSpec | SubscriptionSpec, *, official: bool) -> dict[str, Any]:
    settings = pascal_case(entity_settings(entity))
    if official:
        settings["MaxDeliveryCount"] = min(
            settings["MaxDeliveryCount"], OFFICIAL_MAX_DELIVERY_COUNT
        )
    return settings


PREMIUM_MAX_MESSAGE_KB = 1024
"""Premium namespaces take 1 MB messages by default (Standard: 256 KB)."""


def servicebus_namespace(
    namespace: NamespaceSpec, name: str | None = None, *, official: bool = False
) -> dict[str, Any]:
    """One entry of ``UserConfig.Namespaces``; ``official`` leaves out this project's emulator's
    extensions (the message size of a Premium namespace) and keeps to the official emulator's
    limits (delivery counts)."""
    queues = [
        {
            "Name": queue.name,
            "Properties": {
                **_settings(queue, official=official),
                "RequiresDuplicateDetection": queue.requires_duplicate_detection,
                "DuplicateDetectionHistoryTimeWindow": iso_duration(
                    queue.duplicate_detection_history_time_window
                ),
            },
        }
        for queue in namespace.queues
    ]
    topics = []
    for topic in namespace.topics:
        properties: dict[str, Any] = {
            "RequiresDuplicateDetection": topic.requires_duplicate_detection,
            "DuplicateDetectionHistoryTimeWindow": iso_duration(
                topic.duplicate_detection_history_time_window
            ),
        }
        if topic.default_message_time_to_live is not None:
            properties["DefaultMessageTimeToLive"] = iso_duration(
                topic.default_message_time_to_live
            )
        subscriptions = [
            {
                "Name": subscription.name,
                "Properties": _settings(subscription, official=official),
                **({"Rules": [_rule(r) for r in subscription.rules]} if subscription.rules else {}),
            }
            for subscription in topic.subscriptions
        ]
        topics.append(
            {"Name": topic.name, "Properties": properties, "Subscriptions": subscriptions}
        )
    entry: dict[str, Any] = {"Name": name or namespace.name, "Queues": queues, "Topics": topics}
    if namespace.sku == "Premium" and not official:
        entry["MaxMessageSizeInKilobytes"] = PREMIUM_MAX_MESSAGE_KB
    return entry


def _event_hub(hub: EventHubSpec) -> dict[str, Any]:
    return {
        "Name": hub.name,
        "PartitionCount": hub.partition_count,
        "ConsumerGroups": [{"Name": group} for group in hub.consumer_groups],
    }


def eventhubs_namespace(namespace: NamespaceSpec, name: str | None = None) -> dict[str, Any]:
    """One entry of ``UserConfig.NamespaceConfig``."""
    return {
        "Type": "EventHub",
        "Name": name or namespace.name,
        "Entities": [_event_hub(hub) for hub in namespace.event_hubs],
    }


def emulator_config(topology: Topology) -> dict[str, Any]:
    """All namespaces of the (materialized) topology in one document for our emulator."""
    return namespaces_config((n.name, n) for n in materialize(topology).namespaces)


def namespaces_config(named: Iterable[tuple[str, NamespaceSpec]]) -> dict[str, Any]:
    """One document for our emulator serving each (materialized) namespace under its name
    (``python -m replication demo`` serves several topologies' namespaces side by side)."""
    named = list(named)
    servicebus = [(name, n) for name, n in named if n.kind is NamespaceKind.SERVICEBUS]
    eventhubs = [(name, n) for name, n in named if n.kind is NamespaceKind.EVENTHUBS]
    user_config: dict[str, Any] = {"Logging": {"Type": "Console"}}
    if servicebus:
        user_config["Namespaces"] = [servicebus_namespace(n, name) for name, n in servicebus]
    if eventhubs:
        user_config["NamespaceConfig"] = [eventhubs_namespace(n, name) for name, n in eventhubs]
    return {"UserConfig": user_config}


def official_configs(topology: Topology) -> dict[str, dict[str, Any]]:
    """``<namespace>.json`` -> the single-namespace document Microsoft's emulator accepts."""
    configs = {}
    for namespace in materialize(topology).namespaces:
        if namespace.kind is NamespaceKind.SERVICEBUS:
            entry = {
                "Namespaces": [
                    servicebus_namespace(namespace, OFFICIAL_SERVICEBUS_NAMESPACE, official=True)
                ]
            }
        else:
            entry = {
                "NamespaceConfig": [eventhubs_namespace(namespace, OFFICIAL_EVENTHUBS_NAMESPACE)]
            }
        configs[f"{namespace.name}.json"] = {"UserConfig": {**entry, "Logging": {"Type": "File"}}}
    return configs
