"""Fixtures of the end-to-end tests. ``regions``: the local AMQP emulator serving two Service Bus
regions with the entities of the two-region all-active example (plus queues for the semantics
tests) and an Event Hubs namespace, started once per test process on free ports (each
pytest-xdist worker has its own, so tests in different processes never share one). ``azurite``:
Azurite's blob service, for Event Hubs checkpoints.

Every test here is marked ``emulator``; without python-qpid-proton (``requirements-dev.txt``)
the tests that need the emulator are skipped with that reason instead of failing to import.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from replication.drill import DrillSetupError
from replication.drill import azurite as azurite_process

NEEDS_PROTON = "the emulator needs python-qpid-proton (requirements-dev.txt)"

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
            {"Name": "types-in", "Properties": dict(QUEUE_PROPERTIES)},
            {"Name": "types-out", "Properties": dict(QUEUE_PROPERTIES)},
            {"Name": "ids-in", "Properties": dict(QUEUE_PROPERTIES)},
            {"Name": "ids-out", "Properties": {"RequiresDuplicateDetection": True}},
            {"Name": "poison-values", "Properties": dict(QUEUE_PROPERTIES)},
            *(
                {"Name": f"undecodable-{kind}", "Properties": {"LockDuration": "PT2S"}}
                for kind in ("char", "decimal64", "decimal128")
            ),
            {"Name": "locks", "Properties": {"LockDuration": "PT5S"}},
            {"Name": "lost-locks", "Properties": {"LockDuration": "PT2S"}},
            {"Name": "scheduled", "Properties": dict(QUEUE_PROPERTIES)},
            {"Name": "deferred", "Properties": dict(QUEUE_PROPERTIES)},
            # Redrive (test_redrive.py): two tasks' sources, a third that re-parks, their shared
            # parking queue and a duplicate-detecting target.
            {"Name": "redrive-in", "Properties": dict(QUEUE_PROPERTIES)},
            {"Name": "redrive-other", "Properties": dict(QUEUE_PROPERTIES)},
            {"Name": "redrive-valid", "Properties": dict(QUEUE_PROPERTIES)},
            {"Name": "redrive-parking", "Properties": {"MaxDeliveryCount": 10}},
            {"Name": "redrive-out", "Properties": {"RequiresDuplicateDetection": True}},
            # Telemetry (test_telemetry.py): a source, a target and a parking queue of its own.
            {"Name": "telemetry-in", "Properties": dict(QUEUE_PROPERTIES)},
            {"Name": "telemetry-out", "Properties": dict(QUEUE_PROPERTIES)},
            {"Name": "telemetry-parked", "Properties": dict(QUEUE_PROPERTIES)},
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
    emulator = pytest.importorskip("emulator", reason=NEEDS_PROTON)
    with emulator.run_emulator(CONFIG) as running:
        yield running


@pytest.fixture(scope="session")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Azurite's blob service (from npm, installed by ``./dev.sh test``) on a free port; yields
    its connection string (started as the failover drill starts it)."""
    try:
        with azurite_process(tmp_path_factory.mktemp("azurite")) as connection:
            yield connection
    except DrillSetupError as error:
        pytest.fail(str(error))
