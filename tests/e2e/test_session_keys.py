"""A Service Bus session becomes an Event Hubs partition key, over the wire with the real SDK.

Event Hubs keeps order per partition key only. A replica of a message that has a SessionId
but no PartitionKey is sent with the SessionId as its partition key (the official .NET
replication library keys by ``PartitionKey ?? SessionId``), so every message of a session lands
on one partition, in order; a message with both keeps its PartitionKey.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient

from replication.envelope import Envelope
from replication.transport.senders import EventHubTargetSender

pytestmark = pytest.mark.emulator

CONFIG = {
    "UserConfig": {
        "NamespaceConfig": [
            {
                "Type": "EventHub",
                "Name": "sessions-hub",
                "Entities": [
                    {"Name": "ledger", "PartitionCount": 4, "ConsumerGroups": []},
                ],
            }
        ]
    }
}


@pytest.fixture(scope="module")
def connection() -> Iterator[str]:
    pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")
    from emulator import run_emulator

    with run_emulator(CONFIG) as running:
        yield running.connection_string("sessions-hub")


def _read_all(connection: str, expected: int) -> list[tuple[str, EventData]]:
    """(partition id, event) for every event of the hub, in each partition's order."""
    found: list[tuple[str, EventData]] = []
    consumer = EventHubConsumerClient.from_connection_string(
        connection, consumer_group="$Default", eventhub_name="ledger"
    )

    def on_event(context: Any, event: EventData | None) -> None:
        if event is not None:
            found.append((context.partition_id, event))

    worker = threading.Thread(
        target=consumer.receive,
        kwargs={"on_event": on_event, "max_wait_time": 1, "starting_position": "-1"},
        daemon=True,
    )
    worker.start()
    deadline = time.monotonic() + 30
    while len(found) < expected and time.monotonic() < deadline:
        time.sleep(0.2)
    consumer.close()
    worker.join(timeout=10)
    return found


def test_sessions_become_partition_keys_and_keep_their_order(connection: str) -> None:
    envelopes = [
        Envelope(body=f"{session}:{n}".encode(), message_id=f"{session}-{n}", session_id=session)
        for n in range(25)
        for session in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta")
    ]
    keyed = Envelope(body=b"keyed", message_id="keyed", session_id="alpha", partition_key="pk")
    producer = EventHubProducerClient.from_connection_string(connection, eventhub_name="ledger")
    sender = EventHubTargetSender(producer, label="sessions-hub/ledger")
    try:
        sender.send([*envelopes, keyed])
    finally:
        sender.close()
    events = _read_all(connection, len(envelopes) + 1)
    assert len(events) == len(envelopes) + 1
    partitions: dict[str, set[str]] = defaultdict(set)
    bodies: dict[str, list[int]] = defaultdict(list)
    for partition, event in events:
        if event.message_id == "keyed":
            assert event.partition_key == b"pk"
            continue
        session, n = event.body_as_str().split(":")
        key = event.partition_key
        assert (key.decode() if isinstance(key, bytes) else key) == session
        partitions[session].add(partition)
        bodies[session].append(int(n))
    assert all(len(found) == 1 for found in partitions.values()), partitions
    assert len({p for found in partitions.values() for p in found}) > 1, "keys spread out"
    assert all(numbers == list(range(25)) for numbers in bodies.values())
