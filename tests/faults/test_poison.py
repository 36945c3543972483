"""Poison messages: each is parked with its reason, and its batch-mates are replicated once.

Every case publishes good messages around the poison ones in the same batch and asserts the end
state message by message: the good ones arrive exactly once (the target has no duplicate
detection, so a re-send would show), the poison ones are in the parking queue with their
``DeadLetterReason``, nothing is in the source's dead-letter queue, and the task is not left
failing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from azure.eventhub import EventData, EventHubProducerClient
from azure.servicebus import ServiceBusMessage
from azure.servicebus.exceptions import MessageSizeExceededError
from proton import Message, Timeout, char, decimal64
from proton.utils import BlockingConnection

from replication.hosts.local import LocalHost
from replication.properties import (
    DEAD_LETTER_BODY_OMITTED,
    DEAD_LETTER_REASON,
    REPL_HOPS,
    REPL_PATH,
)

from .harness import (
    Cluster,
    eventually,
    hand_made_delivery_count,
    message_ids,
    originals,
    topology_document,
)


def _largest(fits: Callable[[int], bool]) -> int:
    """The largest body size for which ``fits`` holds (binary search up to 1 MB)."""
    low, high = 1, 1024 * 1024
    while low < high:
        size = (low + high + 1) // 2
        if fits(size):
            low = size
        else:
            high = size - 1
    return low


def _largest_body(cluster: Cluster, namespace: str) -> int:
    """The largest body a message can have on ``namespace``'s topic, by the SDK's own size
    check against the link's maximum message size."""
    with cluster.client(namespace) as client, client.get_topic_sender("orders") as sender:

        def fits(size: int) -> bool:
            try:
                sender.create_message_batch().add_message(
                    ServiceBusMessage(b"x" * size, message_id="edge")
                )
            except MessageSizeExceededError:
                return False
            return True

        return _largest(fits)


def _parked(cluster: Cluster, namespace: str) -> dict[str, Any]:
    return {str(m.message_id): m for m in cluster.peek(namespace, "replication-parked")}


def _replicate(cluster: Cluster, expected: int) -> None:
    with LocalHost(cluster.topology, cluster.environ) as host:
        assert host.wait_until_idle(idle_seconds=3, timeout=120, at_least=expected)
        assert not host.failing()


def test_messages_too_large_for_the_target_are_parked_alone(tmp_path: Path) -> None:
    """The source is Premium (1 MB), the target Standard (256 KB): a 300 KB message is parked
    in full in the source's parking queue; everything around it is replicated once."""
    document = topology_document(["weu", "neu"], [("weu", "neu")], premium=["weu"])
    with Cluster(document, tmp_path) as cluster:
        messages = [
            *originals("before", 20),
            ServiceBusMessage(b"x" * 300_000, message_id="huge"),
            *originals("after", 20),
        ]
        cluster.publish("weu", "orders", messages)
        _replicate(cluster, 41)
        copies = message_ids(cluster.peek("neu", "orders", "audit"))
        parked = _parked(cluster, "weu")
        assert cluster.peek("weu", "orders", "to-neu", dead_letter=True) == []
    assert copies == {f"{p}-{i}": 1 for p in ("before", "after") for i in range(20)}
    assert list(parked) == ["huge"]
    assert (
        parked["huge"].application_properties[DEAD_LETTER_REASON.encode()] == b"MessageSizeExceeded"
    )
    assert len(b"".join(parked["huge"].body)) == 300_000


def test_a_parked_copy_too_large_for_the_parking_queue_is_parked_without_its_body(
    tmp_path: Path,
) -> None:
    """Source and target are Standard. A message just under 256 KB fits its source, but its
    replica (plus the replication properties) does not fit the target, and its parked copy
    (plus the reason) does not fit the parking queue either: a notice is parked without its
    body, with the body's size and SHA-256, the original is dead-lettered in the source, and
    nothing else is held back."""
    document = topology_document(["weu", "neu"], [("weu", "neu")])
    with Cluster(document, tmp_path) as cluster:
        # The SDK's size estimate is a few bytes short of the broker's count: keep a margin
        # that the replica's replication properties (about 150 bytes) still exceed.
        size = _largest_body(cluster, "weu") - 64
        messages = [
            *originals("before", 10),
            ServiceBusMessage(b"y" * size, message_id="edge"),
            *originals("after", 10),
        ]
        cluster.publish("weu", "orders", messages)
        _replicate(cluster, 21)
        copies = message_ids(cluster.peek("neu", "orders", "audit"))
        parked = _parked(cluster, "weu")
        dead = cluster.peek("weu", "orders", "to-neu", dead_letter=True)
    assert copies == {f"{p}-{i}": 1 for p in ("before", "after") for i in range(10)}
    assert list(parked) == ["edge"]
    # Only a notice is parked: the whole original waits in the source's dead-letter queue.
    assert [(str(m.message_id), len(b"".join(m.body))) for m in dead] == [("edge", size)]
    properties = parked["edge"].application_properties
    assert properties[DEAD_LETTER_REASON.encode()] == b"MessageSizeExceeded"
    assert properties[DEAD_LETTER_BODY_OMITTED.encode()].startswith(f"{size} bytes".encode())
    assert b"".join(parked["edge"].body) == b""


def test_malformed_replication_properties_are_parked_and_odd_bodies_replicated(
    tmp_path: Path,
) -> None:
    document = topology_document(["weu", "neu"], [("weu", "neu")])
    poison: dict[str, dict[str | bytes, Any]] = {
        "hops-not-a-number": {REPL_HOPS: "many", REPL_PATH: "eus"},
        "hops-negative": {REPL_HOPS: -3, REPL_PATH: "eus"},
        "hops-boolean": {REPL_HOPS: True, REPL_PATH: "eus"},
    }
    poison_messages = [
        ServiceBusMessage(b"{}", message_id=name, application_properties=dict(properties))
        for name, properties in poison.items()
    ]
    odd = {
        "not-utf8": ServiceBusMessage(b"\xff\xfe\x00\x80 not text", message_id="not-utf8"),
        "empty": ServiceBusMessage(b"", message_id="empty"),
        "many-properties": ServiceBusMessage(
            b"{}",
            message_id="many-properties",
            application_properties={f"p{i}": "v" * 20 for i in range(1000)},
        ),
    }
    with Cluster(document, tmp_path) as cluster:
        messages: Sequence[ServiceBusMessage] = [
            *originals("good", 10),
            *poison_messages,
            *odd.values(),
        ]
        cluster.publish("weu", "orders", messages)
        _replicate(cluster, len(messages))
        replicas = {str(m.message_id): m for m in cluster.peek("neu", "orders", "audit")}
        parked = _parked(cluster, "weu")
        assert cluster.peek("weu", "orders", "to-neu", dead_letter=True) == []
    assert set(replicas) == {f"good-{i}" for i in range(10)} | set(odd)
    assert b"".join(replicas["not-utf8"].body) == b"\xff\xfe\x00\x80 not text"
    assert len(replicas["many-properties"].application_properties) >= 1000
    assert set(parked) == set(poison)
    for message in parked.values():
        reason = message.application_properties[DEAD_LETTER_REASON.encode()]
        assert reason == b"MalformedReplicationProperty"


EVENT_HUB_TOPOLOGY: dict[str, Any] = {
    "namespaces": [
        {
            "name": "ingest",
            "region": "westeurope",
            "kind": "eventhubs",
            "fullyQualifiedNamespace": "ingest.servicebus.windows.net",
            "connection": "EH_INGEST",
            "eventHubs": [{"name": "devices", "partitionCount": 2}],
        },
        {
            "name": "weu",
            "region": "westeurope",
            "kind": "servicebus",
            "fullyQualifiedNamespace": "weu.servicebus.windows.net",
            "connection": "SB_WEU",
            "queues": [{"name": "device-events"}, {"name": "replication-parked"}],
        },
    ],
    "tasks": [
        {
            "name": "devices-to-queue",
            "pattern": "stream_to_queue",
            "source": {"namespace": "ingest", "entity": "devices", "consumerGroup": "replication"},
            "targets": [{"namespace": "weu", "entity": "device-events"}],
            "deadLetterTarget": {"namespace": "weu", "entity": "replication-parked"},
            "retry": {"minBackoff": "PT0.2S", "maxBackoff": "PT1S"},
        }
    ],
}


def test_an_event_too_large_for_its_queue_is_parked_and_no_partition_is_blocked(
    tmp_path: Path,
) -> None:
    with Cluster(EVENT_HUB_TOPOLOGY, tmp_path) as cluster:
        connection = cluster.nodes["ingest"].connection_string
        with EventHubProducerClient.from_connection_string(
            connection, eventhub_name="devices"
        ) as producer:
            for partition in ("0", "1"):
                batch = producer.create_batch(partition_id=partition)
                for i in range(10):
                    batch.add(_event(f"p{partition}-before-{i}", b"{}"))
                producer.send_batch(batch)

            def fits(size: int) -> bool:
                try:
                    producer.create_batch(partition_id="0").add(_event("huge", b"z" * size))
                except ValueError:
                    return False
                return True

            # As large as the event hub takes: with the replication properties, its replica
            # is larger than the queue takes.
            big = producer.create_batch(partition_id="0")
            big.add(_event("huge", b"z" * _largest(fits)))
            producer.send_batch(big)
            for partition in ("0", "1"):
                batch = producer.create_batch(partition_id=partition)
                for i in range(10):
                    batch.add(_event(f"p{partition}-after-{i}", b"{}"))
                producer.send_batch(batch)
        _replicate(cluster, 41)
        delivered = message_ids(cluster.peek("weu", "device-events"))
        parked = _parked(cluster, "weu")
    expected = {f"p{p}-{when}-{i}" for p in "01" for when in ("before", "after") for i in range(10)}
    assert delivered == dict.fromkeys(expected, 1)
    assert list(parked) == ["huge"]
    reason = parked["huge"].application_properties[DEAD_LETTER_REASON.encode()]
    assert reason == b"MessageSizeExceeded"


def _event(message_id: str, body: bytes) -> EventData:
    event = EventData(body)
    event.message_id = message_id
    return event


def _proton_send(port: int, address: str, *messages: Message) -> None:
    connection = BlockingConnection(f"amqp://127.0.0.1:{port}", allowed_mechs="ANONYMOUS")
    try:
        sender = connection.create_sender(address)
        for message in messages:
            sender.send(message)
    finally:
        connection.close()


def _proton_drain(port: int, address: str) -> list[Message]:
    """Receive and accept everything at ``address`` with proton, which decodes every AMQP type
    (the Python Service Bus SDK cannot read the messages this is for)."""
    connection = BlockingConnection(f"amqp://127.0.0.1:{port}", allowed_mechs="ANONYMOUS")
    received: list[Message] = []
    try:
        receiver = connection.create_receiver(address, credit=10)
        while True:
            try:
                received.append(receiver.receive(timeout=2))
            except Timeout:
                return received
            receiver.accept()
    finally:
        connection.close()


def test_messages_the_sdk_cannot_decode_reach_the_dead_letter_queue_alone(tmp_path: Path) -> None:
    """A char and a decimal64 application property make the SDK's receive call fail for the
    whole transfer (see ``tests/e2e/test_poison_messages.py``). The loop reconnects and
    receives one message at a time for a while, so the good messages around them are
    replicated once and only the two undecodable ones reach the source's dead-letter queue,
    after ``maxDeliveryCount`` lock expiries.

    The subscription is deployed by hand with ``maxDeliveryCount`` 5, below the 11 the
    topology's validator asks for (one 4-second outage attempt plus 10 spare deliveries), so
    that the poison dies after 5 lock expiries of 5 s instead of 11: a good message is held
    back by one failed delivery (the receive it shared with a poison message) and then
    received alone, so 5 still leaves it 4 more than it needs, and a fault that cost the good
    messages deliveries would show sooner, not later."""
    document = topology_document(
        ["weu", "neu"], [("weu", "neu")], max_delivery_count=11, tolerance="PT4S"
    )
    with Cluster(document, tmp_path, edit_config=hand_made_delivery_count(5)) as cluster:
        port = cluster.nodes["weu"].port
        cluster.publish("weu", "orders", originals("before", 10))
        _proton_send(
            port,
            "orders",
            Message(id="char", body=b"c", inferred=True, properties={"p": char("x")}),
            Message(id="decimal64", body=b"d", inferred=True, properties={"p": decimal64(5)}),
        )
        cluster.publish("weu", "orders", originals("after", 10))
        with LocalHost(cluster.topology, cluster.environ) as host:
            eventually(
                lambda: cluster.count("neu", "orders", "audit") >= 20,
                timeout=180,
                what="the good messages at neu",
            )
            dead: list[Message] = []
            dead_letter_queue = "orders/Subscriptions/to-neu/$DeadLetterQueue"

            def both_dead() -> bool:
                dead.extend(_proton_drain(port, dead_letter_queue))
                return len(dead) >= 2

            eventually(both_dead, timeout=240, what="the poison in the DLQ")
            eventually(lambda: not host.status["weu-to-neu"].failing, timeout=30)
        copies = message_ids(cluster.peek("neu", "orders", "audit"))
    assert copies == dict.fromkeys([f"{p}-{i}" for p in ("before", "after") for i in range(10)], 1)
    assert sorted(str(message.id) for message in dead) == ["char", "decimal64"]


def test_value_and_sequence_bodies_are_dead_lettered_and_a_missing_message_id_is_stable(
    tmp_path: Path,
) -> None:
    """Bodies that are an AMQP value or sequence cannot be replicated byte-exactly: they are
    dead-lettered in the source with their reason, alone. A message without MessageId (the
    Python SDK always sets one; other AMQP clients need not) is replicated with the id of its
    source position, ``weu/orders/<sequence number>``."""
    document = topology_document(["weu", "neu"], [("weu", "neu")])
    with Cluster(document, tmp_path) as cluster:
        port = cluster.nodes["weu"].port
        cluster.publish("weu", "orders", originals("good", 5))
        _proton_send(
            port,
            "orders",
            Message(id="value", body="a string value"),
            Message(id="sequence", body=["one", "two"], inferred=True),
            Message(body=b"no id", inferred=True),
        )
        _replicate(cluster, 8)
        replicas = {str(m.message_id): m for m in cluster.peek("neu", "orders", "audit")}
        dead = cluster.peek("weu", "orders", "to-neu", dead_letter=True)
    without_id = [m for name, m in replicas.items() if not name.startswith("good-")]
    assert {f"good-{i}" for i in range(5)} <= set(replicas)
    (anonymous,) = without_id
    assert str(anonymous.message_id).startswith("weu/orders/")
    assert b"".join(anonymous.body) == b"no id"
    assert sorted(str(m.message_id) for m in dead) == ["sequence", "value"]
    assert {m.dead_letter_reason for m in dead} == {"UnsupportedBodyType"}
