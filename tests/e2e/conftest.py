"""Fixtures of the end-to-end tests. ``regions``: the local AMQP emulator serving two Service Bus
regions with the entities of the two-region all-active example (plus queues for the semantics
tests) and an Event Hubs namespace, started once per test process on free ports (each
pytest-xdist worker has its own, so tests in different processes never share one). ``azurite``:
Azurite's blob service, for Event Hubs checkpoints.

Every test here is marked ``emulator``; without python-qpid-proton (``requirements-dev.txt``)
the tests that need the emulator are skipped with that reason instead of failing to import.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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


# Azurite's documented development account (public, the same on every machine).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
AZURITE_BLOB = Path(__file__).resolve().parents[2] / "node_modules" / ".bin" / "azurite-blob"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Azurite's blob service (from npm, installed by ``./dev.sh test``) on a free port; yields
    its connection string."""
    if not AZURITE_BLOB.exists():
        pytest.fail(f"{AZURITE_BLOB} is missing: run `npm ci` (./dev.sh test does)")
    port = _free_port()
    process = subprocess.Popen(
        [
            str(AZURITE_BLOB),
            "--silent",
            "--skipApiVersionCheck",
            "--blobHost",
            "127.0.0.1",
            "--blobPort",
            str(port),
            "--location",
            str(tmp_path_factory.mktemp("azurite")),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            break
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            stderr = process.stderr.read().decode() if process.stderr else ""
            pytest.fail(f"Azurite did not start: {stderr}")
        time.sleep(0.2)
    try:
        yield (
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};"
            f"AccountKey={AZURITE_KEY};BlobEndpoint=http://127.0.0.1:{port}/{AZURITE_ACCOUNT};"
        )
    finally:
        process.terminate()
        process.wait(timeout=10)
