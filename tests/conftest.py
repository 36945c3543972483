"""Shared fixtures. ``regions``: the local AMQP emulator serving two Service Bus regions with
the entities of the two-region all-active example (plus queues for the semantics tests) and an
Event Hubs namespace, started once per test session on free ports."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

emulator = pytest.importorskip("emulator", reason="the local emulator package is required")

QUEUE_PROPERTIES = {"MaxDeliveryCount": 3, "LockDuration": "PT30S"}


def _subscription(name: str, rules: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    subscription: dict[str, Any] = {"Name": name, "Properties": dict(QUEUE_PROPERTIES)}
    if rules is not None:
        subscription["Rules"] = rules
    return subscription


LOOP_PREVENTION_RULE = {
    "Name": "$Default",
    "Properties": {
        "FilterType": "Sql",
        "SqlFilter": {"SqlExpression": "replication IS NULL"},
        "Action": {"SqlExpression": "SET replication = 1"},
    },
}


def region(name: str) -> dict[str, Any]:
    return {
        "Name": name,
        "Queues": [
            {"Name": "roundtrip-in", "Properties": dict(QUEUE_PROPERTIES)},
            {"Name": "roundtrip-out", "Properties": dict(QUEUE_PROPERTIES)},
            {"Name": "poison", "Properties": {"MaxDeliveryCount": 3, "LockDuration": "PT5S"}},
            {"Name": "short-lived", "Properties": {"DeadLetteringOnMessageExpiration": True}},
            {"Name": "deduplicated", "Properties": {"RequiresDuplicateDetection": True}},
            {"Name": "locks", "Properties": {"LockDuration": "PT5S"}},
        ],
        "Topics": [
            {
                "Name": "orders",
                "Properties": {"RequiresDuplicateDetection": True},
                "Subscriptions": [
                    _subscription("billing"),
                    _subscription("replication", [LOOP_PREVENTION_RULE]),
                ],
            }
        ],
    }


CONFIG: dict[str, Any] = {
    "UserConfig": {
        "Namespaces": [region("weu"), region("neu")],
        "NamespaceConfig": [
            {
                "Type": "EventHub",
                "Name": "ingest",
                "Entities": [
                    {
                        "Name": "devices",
                        "PartitionCount": 2,
                        "ConsumerGroups": [{"Name": "replication"}],
                    }
                ],
            }
        ],
        "Logging": {"Type": "Console"},
    }
}


@pytest.fixture(scope="session")
def regions() -> Iterator[Any]:
    """The running emulator; ``regions.connection_string("weu")`` etc."""
    with emulator.run_emulator(CONFIG) as running:
        yield running
