"""An Event Hubs source whose namespace accepts connections and answers nothing (SIGSTOP).

The sync ``EventHubConsumerClient`` of azure-eventhub 5.15.1 reports no error then, and until
its first claim has read the partition ids its ``EventProcessor.start`` loops without waiting
(see :mod:`replication.transport.eventhubs._receiving`). These tests run the real SDK against
the emulator frozen mid-way: the receive fails once its silence deadline passes and the SDK's
loop stops with it; an idle partition, which calls back once per wait, never counts as silent;
and the local host names a silent source in its log, then replicates every event once the
namespace answers again.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient

from replication.exceptions import CallTimeoutError
from replication.transport.eventhubs._receiving import receive_until_stopped

from .harness import (
    Cluster,
    Node,
    event_hubs_document,
    eventually,
    read_partition,
    replicator_process,
)

SILENCE = 3.0
"""The silence deadline these tests give a receive (the local host's default is 30 s)."""


@pytest.fixture
def east(tmp_path: Path) -> Iterator[Node]:
    """The ``east`` Event Hubs namespace alone, on an emulator process of its own."""
    cluster = Cluster(event_hubs_document(partitions=2, consumer_group="$Default"), tmp_path)
    node = cluster.nodes["east"]
    node.start()
    try:
        yield node
    finally:
        node.stop()


def _consumer(node: Node) -> EventHubConsumerClient:
    return EventHubConsumerClient.from_connection_string(
        node.connection_string, consumer_group="$Default", eventhub_name="telemetry"
    )


def _receive(node: Node, stop: threading.Event, batches: list[int]) -> None:
    consumer = _consumer(node)
    receive_until_stopped(
        consumer,
        consumer.receive_batch,
        {
            "on_event_batch": lambda _context, events: batches.append(len(events)),
            "partition_id": "0",
            "max_wait_time": 1,
            "starting_position": "-1",
        },
        stop,
        what="telemetry partition 0",
        silence_seconds=SILENCE,
    )


def test_a_receive_that_hears_nothing_fails_at_its_deadline_and_the_sdk_stops_spinning(
    east: Node,
) -> None:
    east.pause()
    try:
        started = time.monotonic()
        batches: list[int] = []
        with pytest.raises(CallTimeoutError, match="no answer from the event hub for 3 s"):
            _receive(east, threading.Event(), batches)
        elapsed = time.monotonic() - started
        # The deadline, one poll, and the SDK's receive thread ending after the close.
        assert SILENCE <= elapsed < SILENCE + 15, elapsed
        assert batches == []
        # The SDK's loop ended with the close: this process is idle again (it spun one core
        # for as long as the receive waited).
        cpu = time.process_time()
        time.sleep(2)
        assert time.process_time() - cpu < 0.5
    finally:
        east.resume()


def test_an_idle_partition_calls_back_once_per_wait_and_is_never_silent(east: Node) -> None:
    stop, batches = threading.Event(), list[int]()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            _receive(east, stop, batches)
        except BaseException as error:
            errors.append(error)

    receiving = threading.Thread(target=run, daemon=True)
    receiving.start()
    time.sleep(3 * SILENCE)
    stop.set()
    receiving.join(timeout=30)
    assert not receiving.is_alive()
    assert errors == []
    assert len(batches) >= 3, batches
    assert set(batches) == {0}, batches


def test_the_local_host_names_a_silent_source_and_replicates_once_it_answers(
    tmp_path: Path,
) -> None:
    document = event_hubs_document(partitions=2, consumer_group="replication")
    log = tmp_path / "replicator.log"
    with Cluster(document, tmp_path) as cluster:
        east = cluster.nodes["east"]
        east.pause()
        try:
            with replicator_process(cluster, log):
                eventually(
                    lambda: "partition ids of" in log.read_text(errors="replace"),
                    timeout=90,
                    what="the local host names the silent source",
                )
                east.resume()
                _publish(east.connection_string, [f"e-{i}" for i in range(20)])
                arrived: Counter[str] = Counter()

                def all_arrived() -> bool:
                    arrived.clear()
                    for partition in ("0", "1"):
                        for event in read_partition(
                            cluster.nodes["west"].connection_string, "telemetry", partition, idle=1
                        ):
                            arrived[str(event.message_id)] += 1
                    return len(arrived) == 20

                eventually(all_arrived, timeout=120, what="every event replicated")
        finally:
            east.resume()
    assert arrived == Counter(f"e-{i}" for i in range(20))
    text = log.read_text(errors="replace")
    assert "no answer from east within 10 s" in text, text[-3000:]


def _publish(connection: str, ids: list[str]) -> None:
    with EventHubProducerClient.from_connection_string(
        connection, eventhub_name="telemetry"
    ) as producer:
        batch = producer.create_batch()
        for message_id in ids:
            event: Any = EventData(b"x")
            event.message_id = message_id
            batch.add(event)
        producer.send_batch(batch)
