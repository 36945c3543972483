"""Event Hubs' receiver runtime metric, read by the unmodified SDK.

``EventHubConsumerClient.receive(..., track_last_enqueued_event_properties=True)`` makes
``PartitionContext.last_enqueued_event_properties`` report the partition's newest event
(sequence number, offset, enqueued time) and when that was read, from delivery annotations the
service adds to every event (azure-eventhub ``_utils.get_last_enqueued_event_properties``).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient

from emulator import run_emulator

pytestmark = pytest.mark.emulator  # serves the emulator (tests/conftest.py)

CONFIG = {
    "UserConfig": {
        "NamespaceConfig": [
            {
                "Type": "EventHub",
                "Name": "metric",
                "Entities": [{"Name": "hub", "PartitionCount": 1, "ConsumerGroups": []}],
            }
        ]
    }
}


def _send(connection: str, bodies: list[str]) -> None:
    with EventHubProducerClient.from_connection_string(connection, eventhub_name="hub") as producer:
        batch = producer.create_batch(partition_id="0")
        for body in bodies:
            batch.add(EventData(body))
        producer.send_batch(batch)


def test_last_enqueued_event_properties_follow_the_partition() -> None:
    seen: list[tuple[int | None, dict[str, Any] | None]] = []
    with run_emulator(CONFIG) as running:
        connection = running.connection_string("metric")
        _send(connection, [f"first-{i}" for i in range(3)])
        consumer = EventHubConsumerClient.from_connection_string(
            connection, consumer_group="$Default", eventhub_name="hub"
        )

        def on_event(context: Any, event: EventData | None) -> None:
            if event is not None:
                seen.append((event.sequence_number, context.last_enqueued_event_properties))

        worker = threading.Thread(
            target=consumer.receive,
            kwargs={
                "on_event": on_event,
                "starting_position": "-1",
                "track_last_enqueued_event_properties": True,
                "max_wait_time": 1,
            },
            daemon=True,
        )
        worker.start()
        deadline = time.monotonic() + 20
        while len(seen) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        _send(connection, [f"second-{i}" for i in range(2)])
        while len(seen) < 5 and time.monotonic() < deadline:
            time.sleep(0.1)
        consumer.close()
        worker.join(timeout=10)
    assert [number for number, _ in seen] == [0, 1, 2, 3, 4]
    first, last = seen[0][1], seen[-1][1]
    assert first is not None
    assert last is not None
    assert first["sequence_number"] == 2  # the newest event when the first was delivered
    assert last["sequence_number"] == 4
    assert isinstance(last["offset"], str)
    assert int(last["offset"]) > int(first["offset"])
    assert last["enqueued_time"] >= first["enqueued_time"]
    assert last["retrieval_time"] >= last["enqueued_time"]
