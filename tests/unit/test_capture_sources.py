"""What a Service Bus namespace's ``capture`` section adds at load: the subscription
``replication-capture`` on each of its topics and one capture task per topic, never on the
heartbeat topic, and a declared capture subscription kept with its settings."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from replication.topology import (
    CAPTURE_SUBSCRIPTION,
    CaptureSpec,
    capture_everywhere,
    capture_sources,
    parse_topology,
)

DOCUMENT: dict[str, Any] = {
    "namespaces": [
        {
            "name": "weu",
            "region": "westeurope",
            "kind": "servicebus",
            "fullyQualifiedNamespace": "a.servicebus.windows.net",
            "connection": "SB_WEU",
            "topics": [{"name": "orders"}, {"name": "payments"}],
            "queues": [{"name": "jobs"}],
            "capture": {"storageAccount": "stcaptures"},
        },
        {
            "name": "neu",
            "region": "northeurope",
            "kind": "servicebus",
            "fullyQualifiedNamespace": "b.servicebus.windows.net",
            "connection": "SB_NEU",
            "topics": [{"name": "orders"}],
        },
    ],
    "heartbeats": {"enabled": True},
    "tasks": [
        {
            "name": "orders-weu-to-neu",
            "pattern": "all_active",
            "source": {"namespace": "weu", "entity": "orders", "subscription": "to-neu"},
            "targets": [{"namespace": "neu", "entity": "orders"}],
        }
    ],
}


def subscriptions(document: dict[str, Any]) -> dict[tuple[str, str], list[str]]:
    topology = parse_topology(document)
    return {
        (namespace.name, topic.name): [s.name for s in topic.subscriptions]
        for namespace in topology.namespaces
        for topic in namespace.topics
    }


def test_every_topic_of_a_captured_namespace_and_only_those_gets_a_capture() -> None:
    topology = parse_topology(DOCUMENT)
    captures = capture_sources(topology)
    assert [c.name for c in captures] == ["capture-weu-orders", "capture-weu-payments"]
    assert {(c.source.entity, c.source.subscription, c.region) for c in captures} == {
        ("orders", CAPTURE_SUBSCRIPTION, "weu"),
        ("payments", CAPTURE_SUBSCRIPTION, "weu"),
    }
    found = subscriptions(DOCUMENT)
    assert CAPTURE_SUBSCRIPTION in found["weu", "orders"]
    assert CAPTURE_SUBSCRIPTION in found["weu", "payments"]
    assert CAPTURE_SUBSCRIPTION not in found["weu", "replication-heartbeat"]  # never heartbeats
    assert CAPTURE_SUBSCRIPTION not in found["neu", "orders"]


def test_a_declared_capture_subscription_keeps_its_settings_and_is_not_doubled() -> None:
    document = copy.deepcopy(DOCUMENT)
    document["namespaces"][0]["topics"][0]["subscriptions"] = [
        {"name": CAPTURE_SUBSCRIPTION, "lockDuration": "PT5S", "maxDeliveryCount": 40}
    ]
    topology = parse_topology(document)
    (orders, _, _) = topology.namespace("weu").topics
    (capture,) = [s for s in orders.subscriptions if s.name == CAPTURE_SUBSCRIPTION]
    assert (capture.lock_duration, capture.max_delivery_count) == (timedelta(seconds=5), 40)
    assert len(capture_sources(topology)) == 2


def test_no_capture_section_no_capture() -> None:
    document = copy.deepcopy(DOCUMENT)
    del document["namespaces"][0]["capture"]
    assert capture_sources(parse_topology(document)) == []
    assert all(CAPTURE_SUBSCRIPTION not in names for names in subscriptions(document).values())


def test_capture_everywhere_captures_the_other_service_bus_namespaces_after_loading() -> None:
    """What the demo audits by: every Service Bus namespace captured, a namespace's own section
    kept, the heartbeat topic (already added at load) still never captured."""
    demo = CaptureSpec.model_validate({"storageAccount": "demo", "container": "local"})
    topology = capture_everywhere(parse_topology(DOCUMENT), demo, "demo.json")
    captures = {c.name: c for c in capture_sources(topology)}
    assert sorted(captures) == ["capture-neu-orders", "capture-weu-orders", "capture-weu-payments"]
    assert captures["capture-neu-orders"].spec == demo
    assert captures["capture-weu-orders"].spec.storage_account == "stcaptures"
    found = {
        (namespace.name, topic.name): [s.name for s in topic.subscriptions]
        for namespace in topology.namespaces
        for topic in namespace.topics
    }
    assert found["neu", "orders"].count(CAPTURE_SUBSCRIPTION) == 1
    assert found["weu", "orders"].count(CAPTURE_SUBSCRIPTION) == 1  # not doubled
    assert CAPTURE_SUBSCRIPTION not in found["weu", "replication-heartbeat"]
    assert CAPTURE_SUBSCRIPTION not in found["neu", "replication-heartbeat"]
