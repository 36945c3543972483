"""AMQP value, sequence and multi-section data bodies go through the emulator unchanged.

Microsoft's annotated-message samples send ``AmqpAnnotatedMessage(value_body=...)`` and
``sequence_body=...``. The broker never reads a body (:mod:`emulator._message`); before, a map
with a binary key made proton's decoder raise and the emulator dropped the connection, and
several data or sequence sections collapsed into the last one.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from azure.eventhub.amqp import AmqpAnnotatedMessage as EventAnnotatedMessage
from azure.servicebus import ServiceBusClient
from azure.servicebus.amqp import AmqpAnnotatedMessage, AmqpMessageBodyType

from emulator import run_emulator

pytestmark = pytest.mark.emulator  # serves the emulator (tests/conftest.py)

_ACTION_RULE = {
    "Name": "$Default",
    "Properties": {
        "FilterType": "Sql",
        "SqlFilter": {"SqlExpression": "1=1"},
        "Action": {"SqlExpression": "SET stamped = 1"},
    },
}
CONFIG = {
    "UserConfig": {
        "Namespaces": [
            {
                "Name": "bodies",
                "Queues": [{"Name": "q"}],
                "Topics": [
                    {"Name": "t", "Subscriptions": [{"Name": "s", "Rules": [_ACTION_RULE]}]}
                ],
            }
        ],
        "NamespaceConfig": [
            {
                "Type": "EventHub",
                "Name": "events",
                "Entities": [{"Name": "hub", "PartitionCount": 1, "ConsumerGroups": []}],
            }
        ],
    }
}

# (what is sent, the body type and body the SDK gives back; it reads strings as bytes)
BODIES: dict[str, tuple[dict[str, Any], AmqpMessageBodyType, Any]] = {
    "value: int": ({"value_body": 42}, AmqpMessageBodyType.VALUE, 42),
    "value: string": ({"value_body": "text"}, AmqpMessageBodyType.VALUE, b"text"),
    "value: map with a binary key": (
        {"value_body": {b"\x00binary": "v", "k": [1, 2]}},
        AmqpMessageBodyType.VALUE,
        {b"\x00binary": b"v", b"k": [1, 2]},
    ),
    "value: list": ({"value_body": [1, "a", b"b"]}, AmqpMessageBodyType.VALUE, [1, b"a", b"b"]),
    "two sequence sections": (
        {"sequence_body": [[1, 2], ["a"]]},
        AmqpMessageBodyType.SEQUENCE,
        [[1, 2], [b"a"]],
    ),
    "two data sections": (
        {"data_body": [b"one", b"two"]},
        AmqpMessageBodyType.DATA,
        [b"one", b"two"],
    ),
}


@pytest.fixture(scope="module")
def running() -> Any:
    with run_emulator(CONFIG) as emulator:
        yield emulator


def _received_body(message: Any) -> Any:
    body = message.body
    return body if message.body_type is AmqpMessageBodyType.VALUE else list(body)


@pytest.mark.parametrize("case", BODIES)
@pytest.mark.parametrize("entity", ["queue", "topic with a rule action"])
def test_a_body_comes_back_as_it_was_sent(running: Any, case: str, entity: str) -> None:
    sent, body_type, body = BODIES[case]
    with ServiceBusClient.from_connection_string(running.connection_string("bodies")) as client:
        sender = client.get_queue_sender("q") if entity == "queue" else client.get_topic_sender("t")
        with sender:
            sender.send_messages(AmqpAnnotatedMessage(**sent))
        receiver = (
            client.get_queue_receiver("q", max_wait_time=3)
            if entity == "queue"
            else client.get_subscription_receiver("t", "s", max_wait_time=3)
        )
        with receiver:
            (message,) = receiver.receive_messages(max_message_count=1, max_wait_time=3)
            receiver.complete_message(message)
    assert message.body_type is body_type
    assert _received_body(message) == body
    if entity != "queue":
        assert (message.application_properties or {})[b"stamped"] == 1


def test_an_event_with_a_value_body_comes_back_as_it_was_sent(running: Any) -> None:
    connection = running.connection_string("events")
    with EventHubProducerClient.from_connection_string(connection, eventhub_name="hub") as producer:
        producer.send_batch([EventAnnotatedMessage(value_body={b"\x00binary": "v"})])
    found: list[Any] = []

    def on_event(_context: Any, event: EventData | None) -> None:
        if event is not None:
            found.append(event)

    consumer = EventHubConsumerClient.from_connection_string(
        connection, consumer_group="$Default", eventhub_name="hub"
    )
    worker = threading.Thread(
        target=consumer.receive,
        kwargs={"on_event": on_event, "starting_position": "-1", "max_wait_time": 1},
        daemon=True,
    )
    worker.start()
    deadline = time.monotonic() + 20
    while not found and time.monotonic() < deadline:
        time.sleep(0.1)
    consumer.close()
    worker.join(timeout=10)
    assert [(e.body_type.value, e.body) for e in found] == [("value", {b"\x00binary": b"v"})]
