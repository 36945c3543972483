"""The Event Hubs failover clients over the wire: publisher, consumer and checkpoint
translation in both directions, against the emulator and Azurite.

The two Event Hubs namespaces of ``examples/active-passive-failover.json`` run in one in-process
emulator. The test plays the replicator: :func:`replicate` copies the primary's events that are
not copied yet to the secondary, stamped as replication stamps them
(``replication.properties.stamp``) and with the same partition key.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from azure.eventhub import EventData, EventHubConsumerClient

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")

import emulator
from replication.failover import EventHubFailoverConsumer, FailoverPublisher, FailoverStore
from replication.properties import stamp
from replication.render.emulator_config import emulator_config
from replication.topology import load_topology
from replication.transport.eventhubs import envelope_from_event, to_event_data
from tests.e2e.test_failover_clients import bind

pytestmark = pytest.mark.emulator

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "active-passive-failover.json"
HUB = "telemetry"
PAIR = ("primary-events", "secondary-events")


@pytest.fixture(scope="module")
def namespaces() -> Iterator[dict[str, str]]:
    topology = load_topology(EXAMPLE)
    with emulator.run_emulator(emulator_config(topology)) as running:
        yield {name: running.connection_string(name) for name in PAIR}


def read_all(connection: str) -> list[EventData]:
    """Every event of the hub, read from the beginning of each partition."""
    events: list[EventData] = []
    client = EventHubConsumerClient.from_connection_string(
        connection, eventhub_name=HUB, consumer_group="$Default"
    )
    idle = threading.Event()

    def on_batch(_context: object, batch: list[EventData]) -> None:
        events.extend(batch)
        if not batch:
            idle.set()

    worker = threading.Thread(
        target=client.receive_batch,
        kwargs={"on_event_batch": on_batch, "starting_position": "-1", "max_wait_time": 1},
        daemon=True,
    )
    worker.start()
    idle.wait(20)
    time.sleep(1.5)  # every partition's reader has had its idle wait
    client.close()
    worker.join(10)
    return events


def replicate(namespaces: dict[str, str], copied: set[str]) -> int:
    """Copy the primary's events not in ``copied`` (MessageIds) to the secondary."""
    fresh = [e for e in read_all(namespaces[PAIR[0]]) if str(e.message_id) not in copied]
    with FailoverPublisher.event_hub(
        app="replicator", entity=HUB, namespaces={PAIR[1]: namespaces[PAIR[1]]}
    ) as sender:
        for event in fresh:
            envelope = envelope_from_event(event, source=f"{PAIR[0]}/{HUB}")
            replica = to_event_data(
                stamp(envelope, source_namespace=PAIR[0], target_namespace=PAIR[1])
            )
            key = event.partition_key
            sender.send(replica, partition_key=key.decode() if isinstance(key, bytes) else key)
            copied.add(str(event.message_id))
    return len(fresh)


def publish(namespaces: dict[str, str], store: FailoverStore, app: str, ids: list[str]) -> str:
    with FailoverPublisher.event_hub(
        app=app, entity=HUB, namespaces=namespaces, store=store
    ) as publisher:
        namespace = ""
        for message_id in ids:
            event = EventData(message_id)
            event.message_id = message_id
            namespace = publisher.send(event, partition_key=message_id[-1])
        return namespace


class Running:
    """The consumer in a thread, collecting what the application was handed."""

    def __init__(self, consumer: EventHubFailoverConsumer) -> None:
        self.consumer = consumer
        self.handled: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=consumer.run, args=(self.handle, self.stop))
        self.thread.start()

    def handle(self, _partition: str, events: list[EventData]) -> None:
        self.handled += [str(event.message_id) for event in events]

    def wait_for(self, count: int, namespace: str | None = None, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while len(self.handled) < count or (namespace and self.consumer.namespace != namespace):
            assert time.monotonic() < deadline, (self.handled, self.consumer.last_error)
            time.sleep(0.1)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)


def test_failover_and_failback_hand_every_event_to_the_application_once(
    namespaces: dict[str, str], azurite: str
) -> None:
    app = f"eh-{uuid.uuid4().hex[:8]}"
    store = FailoverStore.from_connection_string(azurite, f"failover-{uuid.uuid4().hex[:8]}")
    copied: set[str] = set()
    consumer = EventHubFailoverConsumer.event_hub(
        app=app,
        entity=HUB,
        consumer_group="dashboard",
        namespaces=namespaces,
        store=store,
        checkpoint_connection_string=azurite,
        checkpoint_container=f"cp-{uuid.uuid4().hex[:8]}",
        poll_interval=timedelta(milliseconds=300),
        skew_allowance=timedelta(seconds=2),
        max_wait_time=0.5,
    )
    running = Running(consumer)
    try:
        first = [f"a-{i}" for i in range(10)]
        assert publish(namespaces, store, app, first) == PAIR[0]
        running.wait_for(10, PAIR[0])
        assert replicate(namespaces, copied) == 10
        time.sleep(3)  # positions advance past the allowance while the hub is idle
        bind(store, app, publish=PAIR[1], consume=PAIR[1], pair=list(PAIR))
        second = [f"b-{i}" for i in range(6)]
        assert publish(namespaces, store, app, second) == PAIR[1]
        running.wait_for(16, PAIR[1])
        # Failback: publishers first; the primary's new events reach the secondary through
        # replication and are handled there; then the consumer returns to the primary.
        bind(store, app, publish=PAIR[0], pair=list(PAIR))
        third = [f"c-{i}" for i in range(4)]
        assert publish(namespaces, store, app, third) == PAIR[0]
        assert replicate(namespaces, copied) == 4
        running.wait_for(20, PAIR[1])
        bind(store, app, consume=PAIR[0], pair=list(PAIR))
        fourth = [f"d-{i}" for i in range(3)]
        publish(namespaces, store, app, fourth)
        running.wait_for(23, PAIR[0])
        time.sleep(2)  # anything handled twice would arrive now
    finally:
        running.close()
        store.close()
    assert sorted(running.handled) == sorted(first + second + third + fourth)
    assert consumer.counters.switches == 2
    # The failback re-read the primary after its old checkpoints: the four events handled on
    # the secondary as replicas were skipped there.
    assert consumer.counters.skipped >= 4
    assert consumer.counters.unverified == 0
