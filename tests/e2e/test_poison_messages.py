"""Poison messages, written by python-qpid-proton, received with the real azure-servicebus SDK.

Two kinds: messages the SDK cannot decode at all (its receive call fails before any
per-message code runs; these tests pin down exactly how, for the receive loop to survive), and
messages it decodes but no replica could carry faithfully, which the local host's receive loop
dead-letters with the converter's reason while the rest of the batch goes on.
"""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import pytest

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")

from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue
from azure.servicebus.exceptions import ServiceBusError
from proton import Message, char, decimal64
from proton.utils import BlockingConnection

from replication.exceptions import MalformedReplicationPropertyError
from replication.hosts.local import LocalHost
from replication.loops import check_forward
from replication.topology import Topology, parse_topology
from replication.transport.servicebus import envelope_from_received

pytestmark = pytest.mark.emulator


def _proton_send(port: int, queue: str, *messages: Message) -> None:
    connection = BlockingConnection(f"amqp://127.0.0.1:{port}", allowed_mechs="ANONYMOUS")
    try:
        sender = connection.create_sender(queue)
        for message in messages:
            sender.send(message)
    finally:
        connection.close()


@pytest.mark.parametrize("kind", ["char", "decimal64"])
def test_char_and_decimal64_properties_make_receive_messages_raise(regions: Any, kind: str) -> None:
    """The SDK's decoder has no entry for char, decimal32 and decimal64: ServiceBusError."""
    value = char("x") if kind == "char" else decimal64(5)
    queue = f"undecodable-{kind}"
    message = Message(body=b"x", inferred=True, properties={"p": value})
    _proton_send(regions.port("weu"), queue, message)
    with (
        ServiceBusClient.from_connection_string(regions.connection_string("weu")) as client,
        client.get_queue_receiver(queue, max_wait_time=2) as receiver,
        pytest.raises(ServiceBusError, match="Handler failed: 'NoneType' object is not"),
    ):
        receiver.receive_messages(max_message_count=10, max_wait_time=5)


def test_a_decimal128_property_silently_stops_the_receiver(regions: Any) -> None:
    """The SDK cannot decode even the decimal128 it encoded: its ValueError reads as the
    receive client's own timeout, so the receiver shuts down without an error and returns
    nothing, at once, on every later call."""
    queue = "undecodable-decimal128"
    with ServiceBusClient.from_connection_string(regions.connection_string("weu")) as client:
        with client.get_queue_sender(queue) as sender:
            decimal: dict[str | bytes, Any] = {"p": Decimal(5)}
            sender.send_messages(ServiceBusMessage(b"x", application_properties=decimal))
            sender.send_messages(ServiceBusMessage(b"good"))
        with client.get_queue_receiver(queue, max_wait_time=2) as receiver:
            assert receiver.receive_messages(max_message_count=10, max_wait_time=5) == []
            started = time.monotonic()
            for _ in range(3):
                assert receiver.receive_messages(max_message_count=10, max_wait_time=5) == []
            assert time.monotonic() - started < 1.0
        with (
            client.get_queue_receiver(queue) as receiver,
            pytest.raises(ServiceBusError, match="Invalid AMQP decimal128 encoding"),
        ):
            receiver.peek_messages(max_message_count=10)


def _queue_task(source_queue: str, target_queue: str, regions: Any) -> Topology:
    """weu/SOURCE -> neu/TARGET, one all-active task over queues of the ``regions`` emulator."""
    namespaces = [
        {
            "name": name,
            "region": name,
            "kind": "servicebus",
            "fullyQualifiedNamespace": f"{name}.servicebus.windows.net",
            "connection": f"SB_{name.upper()}",
            "queues": [{"name": queue} for queue in dict.fromkeys([source_queue, target_queue])],
        }
        for name in ("weu", "neu")
    ]
    return parse_topology(
        {
            "namespaces": namespaces,
            "tasks": [
                {
                    "name": "poison",
                    "pattern": "all_active",
                    "source": {"namespace": "weu", "entity": source_queue},
                    "targets": [{"namespace": "neu", "entity": target_queue}],
                }
            ],
        }
    )


def test_decodable_poison_is_dead_lettered_with_a_reason_and_the_batch_goes_on(
    regions: Any,
) -> None:
    """Through the local host's receive loop: the three messages no replica could carry are
    dead-lettered in the source with the converter's reason; the good one is replicated."""
    poison = {
        "binary-id": Message(body=b"1", inferred=True, id=b"\xff\x00"),
        "map": Message(body=b"2", inferred=True, id="map", properties={"p": {"a": 1}}),
        "list": Message(body=b"3", inferred=True, id="list", properties={"p": [1, 2]}),
        "good": Message(body=b"4", inferred=True, id="good", properties={"p": 1}),
    }
    _proton_send(regions.port("weu"), "poison-values", *poison.values())
    environ = {
        "SB_WEU": regions.connection_string("weu"),
        "SB_NEU": regions.connection_string("neu"),
    }
    with LocalHost(_queue_task("poison-values", "poison-values", regions), environ) as host:
        assert host.wait_until_idle(idle_seconds=2, timeout=60, at_least=4)
        assert not host.failing()
    with ServiceBusClient.from_connection_string(regions.connection_string("weu")) as client:
        dead = ServiceBusSubQueue.DEAD_LETTER
        with client.get_queue_receiver("poison-values", sub_queue=dead) as receiver:
            parked = receiver.receive_messages(max_message_count=10, max_wait_time=5)
            for message in parked:
                receiver.complete_message(message)
    with (
        ServiceBusClient.from_connection_string(regions.connection_string("neu")) as client,
        client.get_queue_receiver("poison-values", max_wait_time=2) as receiver,
    ):
        replicas = receiver.receive_messages(max_message_count=10, max_wait_time=5)
        for message in replicas:
            receiver.complete_message(message)
    assert [b"".join(m.body) for m in replicas] == [b"4"]
    reasons = sorted((m.dead_letter_reason, m.body_type.value) for m in parked)
    assert [reason for reason, _ in reasons] == [
        "UndecodableMessageField",
        "UnsupportedApplicationProperty",
        "UnsupportedApplicationProperty",
    ]
    descriptions = " ".join(m.dead_letter_error_description or "" for m in parked)
    assert "MessageId" in descriptions
    assert "'p' is a dict" in descriptions


def test_binary_replication_properties_are_malformed_not_errors(regions: Any) -> None:
    message = Message(
        body=b"x", inferred=True, id="m", properties={"repl-path": b"\xff\xfe", "repl-hops": 1}
    )
    _proton_send(regions.port("weu"), "poison-values", message)
    with (
        ServiceBusClient.from_connection_string(regions.connection_string("weu")) as client,
        client.get_queue_receiver("poison-values", max_wait_time=2) as receiver,
    ):
        (received,) = receiver.receive_messages(max_message_count=1, max_wait_time=5)
        receiver.complete_message(received)
    envelope = envelope_from_received(received)
    assert envelope.application_properties["repl-path"] == b"\xff\xfe"  # kept as binary
    with pytest.raises(MalformedReplicationPropertyError, match="repl-path must be text"):
        check_forward(envelope, "neu", max_hops=3)
