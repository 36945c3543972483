"""The demo's counting consumer against the emulator with the real SDK: a completion that lost
its lock does not stop it, and the message is counted once (``replication.transport.consumers``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage

from replication.settings import Settings
from replication.topology import EntityRef, Topology, load_topology
from replication.transport.consumers import EntityConsumer

emulator = pytest.importorskip("emulator", reason="the emulator needs python-qpid-proton")

pytestmark = pytest.mark.emulator

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "two-region-all-active.json"
QUEUE = "lost-locks"


@pytest.fixture
def topology() -> Topology:
    return load_topology(EXAMPLE)


@pytest.fixture
def settings(topology: Topology) -> Iterator[dict[str, str]]:
    namespaces: list[dict[str, Any]] = [{"Name": n.name} for n in topology.namespaces]
    namespaces[0]["Queues"] = [{"Name": QUEUE, "Properties": {"LockDuration": "PT2S"}}]
    with emulator.run_emulator({"UserConfig": {"Namespaces": namespaces}}) as running:
        yield running.app_settings(topology)


def test_a_completion_that_lost_its_lock_counts_the_message_once(
    topology: Topology, settings: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """The consumer completes a message whose lock expired while it held it (what a loaded
    machine does to a batch): the broker refuses with message-lock-lost and the message comes
    back. The first completion counts it, the second (its redelivery) does not, and neither
    raises."""
    namespace = topology.namespaces[0]
    consumer = EntityConsumer(
        namespace,
        EntityRef(namespace=namespace.name, entity=QUEUE),
        settings=Settings.from_environ(settings, connections=topology.connections),
    )
    with ServiceBusClient.from_connection_string(settings[namespace.connection]) as client:
        with client.get_queue_sender(QUEUE) as sender:
            sender.send_messages(ServiceBusMessage(b"x", message_id="held-too-long"))
        with client.get_queue_receiver(QUEUE, max_wait_time=3) as receiver:
            (held,) = receiver.receive_messages(max_message_count=1, max_wait_time=3)
            time.sleep(2.6)  # past the 2 s lock: the message is back in the queue
            assert consumer._complete(receiver, held) is True
            (again,) = receiver.receive_messages(max_message_count=1, max_wait_time=3)
            assert (again.message_id, again.delivery_count) == ("held-too-long", 1)
            assert consumer._complete(receiver, again) is False
            assert receiver.receive_messages(max_message_count=1, max_wait_time=1) == []
    consumer.close()
    assert "lost its lock" in caplog.text
