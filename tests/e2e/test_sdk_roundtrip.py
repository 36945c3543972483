"""SDK message -> broker -> Envelope -> replica -> broker, field by field, over the wire.

Real azure-servicebus / azure-eventhub clients talk AMQP to the local emulator; the SDKs hand
back application-property keys and string values as bytes, which the converters decode.
"""

from __future__ import annotations

import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusReceivedMessage

from replication.envelope import MESSAGE_FIELDS
from replication.transport.eventhubs import envelope_from_event, to_event_data
from replication.transport.servicebus import envelope_from_received, to_servicebus_message

pytestmark = pytest.mark.emulator


def _receive_one(client: ServiceBusClient, queue: str) -> ServiceBusReceivedMessage:
    with client.get_queue_receiver(queue, max_wait_time=5) as receiver:
        for _ in range(10):
            messages = receiver.receive_messages(max_message_count=1, max_wait_time=5)
            if messages:
                receiver.complete_message(messages[0])
                return messages[0]
    raise AssertionError(f"nothing arrived on {queue}")


def test_servicebus_message_survives_receive_and_replication(regions: Any) -> None:
    scheduled = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=1)
    original = ServiceBusMessage(
        b"\x00payload\xff",
        application_properties={"tenant": "contoso", "count": 7, "ratio": 0.5, "flag": True},
        message_id="msg-1",
        correlation_id="corr-1",
        content_type="application/octet-stream",
        subject="order",
        to="orders",
        reply_to="replies",
        reply_to_session_id="reply-session",
        partition_key=None,
        time_to_live=timedelta(minutes=5),
        scheduled_enqueue_time_utc=scheduled,
    )
    with ServiceBusClient.from_connection_string(regions.connection_string("weu")) as client:
        with client.get_queue_sender("roundtrip-in") as sender:
            sender.send_messages(original)
        envelope = envelope_from_received(_receive_one(client, "roundtrip-in"))
        assert envelope.body == b"\x00payload\xff"
        assert dict(envelope.application_properties) == {
            "tenant": "contoso",
            "count": 7,
            "ratio": 0.5,
            "flag": True,
        }
        assert all(isinstance(k, str) for k in envelope.application_properties)
        assert envelope.message_id == "msg-1"
        assert envelope.correlation_id == "corr-1"
        assert envelope.content_type == "application/octet-stream"
        assert envelope.subject == "order"
        assert envelope.to == "orders"
        assert envelope.reply_to == "replies"
        assert envelope.reply_to_session_id == "reply-session"
        assert envelope.time_to_live == timedelta(minutes=5)
        assert envelope.enqueued_time_utc is not None
        assert envelope.sequence_number is not None
        assert envelope.delivery_count is not None
        with client.get_queue_sender("roundtrip-out") as sender:
            sender.send_messages(to_servicebus_message(envelope))
        replica = envelope_from_received(_receive_one(client, "roundtrip-out"))
    for field in ("body", *MESSAGE_FIELDS, "application_properties"):
        assert getattr(replica, field) == getattr(envelope, field), field


def test_event_survives_receive_and_replication(regions: Any) -> None:
    connection = regions.connection_string("ingest")
    marker = uuid.uuid4().hex
    event = EventData(b"21.5")
    event.properties = {"unit": "C", "marker": marker}
    event.message_id = "evt-1"
    event.content_type = "text/plain"
    with EventHubProducerClient.from_connection_string(connection, eventhub_name="devices") as p:
        batch = p.create_batch(partition_key="device-7")
        batch.add(event)
        p.send_batch(batch)
    (received,) = read_events(connection, lambda e: e.properties.get(b"marker") == marker.encode())
    envelope = envelope_from_event(received)
    assert envelope.body == b"21.5"
    assert dict(envelope.application_properties) == {"unit": "C", "marker": marker}
    assert envelope.message_id == "evt-1"
    assert envelope.content_type == "text/plain"
    assert envelope.partition_key == "device-7"
    assert isinstance(envelope.offset, str)
    assert envelope.sequence_number is not None
    assert envelope.enqueued_time_utc is not None
    replica = to_event_data(envelope)
    assert replica.properties == {"unit": "C", "marker": marker}
    assert replica.message_id == "evt-1"
    servicebus = to_servicebus_message(envelope)
    assert (servicebus.message_id, servicebus.session_id) == ("evt-1", "device-7")


def read_events(connection: str, wanted: Any, **receive_options: Any) -> list[EventData]:
    """Events matching ``wanted``, read from every partition for a few seconds."""
    found: list[EventData] = []
    consumer = EventHubConsumerClient.from_connection_string(
        connection, consumer_group="$Default", eventhub_name="devices"
    )

    def on_event(context: Any, event: EventData | None) -> None:
        if event is not None and wanted(event):
            found.append(event)

    options = {"starting_position": "-1", **receive_options}
    worker = threading.Thread(
        target=consumer.receive,
        kwargs={"on_event": on_event, "max_wait_time": 1, **options},
        daemon=True,
    )
    worker.start()
    deadline = time.monotonic() + 15
    while not found and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)
    consumer.close()
    worker.join(timeout=10)
    return found


def test_a_message_without_message_id_keeps_one_replica_across_redeliveries(regions: Any) -> None:
    """Its replica's MessageId is its source position, the same on every delivery, so the
    target's duplicate detection drops the copy a redelivery sends again. (Without one, the SDK
    gives every ``ServiceBusMessage`` built without a MessageId a new random UUID: its
    constructor runs the ``scheduled_enqueue_time_utc`` setter, which does that. So the source
    message is sent with proton, which sends none.)"""
    proton = pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")
    blocking = pytest.importorskip("proton.utils")
    connection = blocking.BlockingConnection(
        f"amqp://127.0.0.1:{regions.port('weu')}", allowed_mechs="ANONYMOUS"
    )
    try:
        connection.create_sender("ids-in").send(proton.Message(body=b"no id", inferred=True))
    finally:
        connection.close()
    with ServiceBusClient.from_connection_string(regions.connection_string("weu")) as client:
        replicas = []
        with client.get_queue_receiver("ids-in", max_wait_time=5) as receiver:
            for attempt in range(2):
                (received,) = receiver.receive_messages(max_message_count=1, max_wait_time=5)
                assert received.message_id is None
                assert received.delivery_count == attempt
                envelope = envelope_from_received(received, source="weu/ids-in")
                replicas.append(to_servicebus_message(envelope))
                with client.get_queue_sender("ids-out") as sender:
                    sender.send_messages(replicas[-1])
                if attempt == 0:
                    receiver.abandon_message(received)  # the batch failed: redelivered
                else:
                    receiver.complete_message(received)
        expected = f"weu/ids-in/{envelope.sequence_number}"
        assert [replica.message_id for replica in replicas] == [expected, expected]
        assert to_event_data(envelope).message_id == expected
        with client.get_queue_receiver("ids-out", max_wait_time=3) as receiver:
            kept = receiver.receive_messages(max_message_count=10, max_wait_time=3)
            for message in kept:
                receiver.complete_message(message)
    assert [message.message_id for message in kept] == [expected]
