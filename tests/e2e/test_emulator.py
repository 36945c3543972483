"""The emulator's Service Bus and Event Hubs semantics, through the public SDK APIs only."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue
from azure.servicebus.aio import ServiceBusClient as AsyncServiceBusClient
from azure.servicebus.exceptions import (
    MessageLockLostError,
    MessageSizeExceededError,
    ServiceBusAuthenticationError,
    ServiceBusConnectionError,
    ServiceBusError,
)

from tests.e2e.test_sdk_roundtrip import read_events

pytestmark = pytest.mark.emulator


def _drain(client: ServiceBusClient, queue: str, *, dead_letter: bool = False) -> list[Any]:
    sub_queue = ServiceBusSubQueue.DEAD_LETTER if dead_letter else None
    received = []
    with client.get_queue_receiver(queue, sub_queue=sub_queue, max_wait_time=2) as receiver:
        while batch := receiver.receive_messages(max_message_count=50, max_wait_time=2):
            for message in batch:
                receiver.complete_message(message)
            received += batch
    return received


@pytest.fixture
def client(regions: Any) -> Any:
    with ServiceBusClient.from_connection_string(regions.connection_string("weu")) as client:
        yield client


def test_abandon_until_max_delivery_count_moves_to_dead_letter_queue(client: Any) -> None:
    with client.get_queue_sender("poison") as sender:
        sender.send_messages(ServiceBusMessage(b"bad", message_id="poison-1"))
    counts = []
    with client.get_queue_receiver("poison", max_wait_time=3) as receiver:
        for _ in range(3):
            (message,) = receiver.receive_messages(max_message_count=1, max_wait_time=3)
            counts.append(message.delivery_count)
            receiver.abandon_message(message)
        assert receiver.receive_messages(max_message_count=1, max_wait_time=1) == []
    assert counts == [0, 1, 2]
    (dead,) = _drain(client, "poison", dead_letter=True)
    assert dead.message_id == "poison-1"
    assert dead.dead_letter_reason == "MaxDeliveryCountExceeded"


def test_dead_letter_with_reason_and_description(client: Any) -> None:
    with client.get_queue_sender("poison") as sender:
        sender.send_messages(ServiceBusMessage(b"x", message_id="explicit"))
    with client.get_queue_receiver("poison", max_wait_time=3) as receiver:
        (message,) = receiver.receive_messages(max_message_count=1, max_wait_time=3)
        receiver.dead_letter_message(message, reason="Invalid", error_description="no schema")
    (dead,) = _drain(client, "poison", dead_letter=True)
    assert (dead.dead_letter_reason, dead.dead_letter_error_description) == ("Invalid", "no schema")


def test_ttl_expiry_dead_letters_under_a_non_utc_time_zone(client: Any) -> None:
    """The SDK writes absolute-expiry-time off by the UTC offset outside UTC; the emulator
    must use the header TTL and its own enqueue time."""
    original = os.environ.get("TZ")
    os.environ["TZ"] = "America/New_York"
    time.tzset()
    try:
        with client.get_queue_sender("short-lived") as sender:
            sender.send_messages(
                ServiceBusMessage(b"x", message_id="ttl-1", time_to_live=timedelta(seconds=1))
            )
            sender.send_messages(ServiceBusMessage(b"y", message_id="ttl-2"))
        time.sleep(2.5)
        alive = _drain(client, "short-lived")
        dead = _drain(client, "short-lived", dead_letter=True)
    finally:
        if original is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = original
        time.tzset()
    assert [m.message_id for m in alive] == ["ttl-2"]
    assert [(m.message_id, m.dead_letter_reason) for m in dead] == [
        ("ttl-1", "TTLExpiredException")
    ]


def test_renew_lock_extends_the_lock(client: Any) -> None:
    with client.get_queue_sender("locks") as sender:
        sender.send_messages(ServiceBusMessage(b"x", message_id="lock-1"))
    with client.get_queue_receiver("locks", max_wait_time=3) as receiver:
        (message,) = receiver.receive_messages(max_message_count=1, max_wait_time=3)
        first = message.locked_until_utc
        time.sleep(1)
        renewed = receiver.renew_message_lock(message)
        assert renewed > first
        time.sleep(4.5)  # past the original 5 s lock, within the renewed one
        receiver.complete_message(message)


def test_lock_expiry_redelivers_with_a_higher_delivery_count(client: Any) -> None:
    with client.get_queue_sender("locks") as sender:
        sender.send_messages(ServiceBusMessage(b"x", message_id="lock-2"))
    with client.get_queue_receiver("locks", max_wait_time=3) as receiver:
        (message,) = receiver.receive_messages(max_message_count=1, max_wait_time=3)
        assert message.delivery_count == 0
    time.sleep(5.5)
    (again,) = _drain(client, "locks")
    assert (again.message_id, again.delivery_count) == ("lock-2", 1)


def test_settling_or_renewing_a_lost_lock_raises_message_lock_lost(client: Any) -> None:
    """A lock that expired fails every settlement with ``com.microsoft:message-lock-lost``, as
    Service Bus answers it: on the receive link (a rejected outcome) and on the management
    link (status 410 with that condition; a deferred message is always settled there), which
    the SDK raises as ``MessageLockLostError`` rather than a bare ``ServiceBusError``."""
    with client.get_queue_sender("lost-locks") as sender:
        sender.send_messages([ServiceBusMessage(b"x", message_id=f"lost-{n}") for n in range(3)])
    with client.get_queue_receiver("lost-locks", max_wait_time=3) as receiver:
        received: list[Any] = []
        while len(received) < 3:
            received += receiver.receive_messages(max_message_count=3, max_wait_time=3)
        completed, renewed, deferred = sorted(received, key=lambda m: m.message_id)
        receiver.defer_message(deferred)
        (held,) = receiver.receive_deferred_messages([deferred.sequence_number])
        time.sleep(2.6)  # past the 2 s locks
        with pytest.raises(MessageLockLostError):
            receiver.complete_message(completed)
        with pytest.raises(MessageLockLostError):
            receiver.renew_message_lock(renewed)
        with pytest.raises(MessageLockLostError):
            receiver.complete_message(held)
    back = _drain(client, "lost-locks")
    assert sorted((m.message_id, m.delivery_count) for m in back) == [
        ("lost-0", 1),
        ("lost-1", 1),
    ]


def test_duplicate_detection_drops_a_resent_message_id(client: Any) -> None:
    with client.get_queue_sender("deduplicated") as sender:
        for body in (b"1", b"2", b"3"):
            sender.send_messages(ServiceBusMessage(body, message_id="same"))
        sender.send_messages(ServiceBusMessage(b"4", message_id="other"))
    assert [str(m) for m in _drain(client, "deduplicated")] == ["1", "4"]


def test_receive_and_delete_and_peek(client: Any) -> None:
    with client.get_queue_sender("roundtrip-in") as sender:
        sender.send_messages([ServiceBusMessage(b"a"), ServiceBusMessage(b"b")])
    with client.get_queue_receiver("roundtrip-in", max_wait_time=3) as receiver:
        peeked = receiver.peek_messages(max_message_count=10)
        assert [str(m) for m in peeked] == ["a", "b"]
    with client.get_queue_receiver(
        "roundtrip-in", receive_mode="receiveanddelete", max_wait_time=3
    ) as receiver:
        taken = receiver.receive_messages(max_message_count=10, max_wait_time=3)
    assert [str(m) for m in taken] == ["a", "b"]
    assert _drain(client, "roundtrip-in") == []


def test_topic_rules_deliver_exactly_the_expected_copies(client: Any) -> None:
    with client.get_topic_sender("orders") as sender:
        sender.send_messages(ServiceBusMessage(b"original", message_id="rule-1"))
        sender.send_messages(
            ServiceBusMessage(
                b"replica", message_id="rule-2", application_properties={"replication": 1}
            )
        )
    with client.get_subscription_receiver("orders", "replication", max_wait_time=2) as receiver:
        replication = receiver.receive_messages(max_message_count=10, max_wait_time=2)
        for message in replication:
            receiver.complete_message(message)
    with client.get_subscription_receiver("orders", "billing", max_wait_time=2) as receiver:
        billing = receiver.receive_messages(max_message_count=10, max_wait_time=2)
        for message in billing:
            receiver.complete_message(message)
    assert [(m.message_id, m.application_properties) for m in replication] == [
        ("rule-1", {b"replication": 1})
    ]
    assert sorted(m.message_id for m in billing) == ["rule-1", "rule-2"]


def test_async_client_sends_and_receives(regions: Any) -> None:
    async def scenario() -> list[str]:
        async with AsyncServiceBusClient.from_connection_string(
            regions.connection_string("neu")
        ) as client:
            async with client.get_queue_sender("roundtrip-out") as sender:
                await sender.send_messages(
                    [ServiceBusMessage(b"async-1"), ServiceBusMessage(b"async-2")]
                )
            async with client.get_queue_receiver("roundtrip-out", max_wait_time=3) as receiver:
                received = await receiver.receive_messages(max_message_count=10, max_wait_time=3)
                for message in received:
                    await receiver.complete_message(message)
                return [str(m) for m in received]

    assert asyncio.run(scenario()) == ["async-1", "async-2"]


def test_unknown_entity_fails_promptly_and_the_server_keeps_serving(client: Any) -> None:
    expected = (ServiceBusError, ServiceBusConnectionError, ServiceBusAuthenticationError)
    with (
        pytest.raises(expected),
        client.get_queue_receiver("no-such-queue", max_wait_time=2) as receiver,
    ):
        receiver.receive_messages(max_message_count=1, max_wait_time=2)
    with client.get_queue_sender("roundtrip-in") as sender:
        sender.send_messages(ServiceBusMessage(b"still-here"))
    assert [str(m) for m in _drain(client, "roundtrip-in")] == ["still-here"]


def test_oversized_message_is_rejected_and_the_link_stays_usable(client: Any) -> None:
    with client.get_queue_sender("roundtrip-in") as sender:
        with pytest.raises(MessageSizeExceededError, match="message-size-exceeded"):
            sender.send_messages(ServiceBusMessage(b"x" * (300 * 1024)))
        sender.send_messages(ServiceBusMessage(b"small"))
    assert [str(m) for m in _drain(client, "roundtrip-in")] == ["small"]


def test_event_hub_start_positions(regions: Any) -> None:
    connection = regions.connection_string("ingest")
    with EventHubProducerClient.from_connection_string(
        connection, eventhub_name="devices"
    ) as producer:
        batch = producer.create_batch(partition_id="1")
        for index in range(3):
            batch.add(EventData(f"pos-{index}"))
        producer.send_batch(batch)
        properties = producer.get_partition_properties("1")
    last = properties["last_enqueued_sequence_number"]
    mine = lambda e: e.body_as_str().startswith("pos-")  # noqa: E731
    from_sequence = read_events(connection, mine, partition_id="1", starting_position=last - 1)
    assert [e.body_as_str() for e in from_sequence] == ["pos-2"]
    inclusive = read_events(
        connection, mine, partition_id="1", starting_position=last - 1,
        starting_position_inclusive=True,
    )  # fmt: skip
    assert [e.body_as_str() for e in inclusive] == ["pos-1", "pos-2"]
    since = datetime.now(UTC) - timedelta(minutes=5)
    by_time = read_events(connection, mine, partition_id="1", starting_position=since)
    assert [e.body_as_str() for e in by_time] == ["pos-0", "pos-1", "pos-2"]


def test_scheduled_messages_appear_at_their_time_and_cancelled_ones_never(client: Any) -> None:
    at = datetime.now(UTC) + timedelta(seconds=5)
    with client.get_queue_sender("scheduled") as sender:
        kept, cancelled = sender.schedule_messages(
            [ServiceBusMessage(b"kept"), ServiceBusMessage(b"cancelled")], at
        )
        sender.cancel_scheduled_messages(cancelled)
        sender.send_messages(ServiceBusMessage(b"now"))
    assert kept < cancelled
    with client.get_queue_receiver("scheduled", max_wait_time=1) as receiver:
        peeked = receiver.peek_messages(max_message_count=10)
        early = receiver.receive_messages(max_message_count=10, max_wait_time=1)
        for message in early:
            receiver.complete_message(message)
    assert [str(m) for m in peeked] == ["kept", "now"]
    assert [str(m) for m in early] == ["now"]
    time.sleep(max(0.0, (at - datetime.now(UTC)).total_seconds()) + 0.5)
    (late,) = _drain(client, "scheduled")
    assert (str(late), late.sequence_number) == ("kept", kept)
    assert late.scheduled_enqueue_time_utc == at.replace(microsecond=at.microsecond // 1000 * 1000)


def test_deferred_messages_are_received_by_sequence_number_and_settled(client: Any) -> None:
    with client.get_queue_sender("deferred") as sender:
        sender.send_messages([ServiceBusMessage(b"later-1"), ServiceBusMessage(b"later-2")])
    with client.get_queue_receiver("deferred", max_wait_time=3) as receiver:
        batch = receiver.receive_messages(max_message_count=2, max_wait_time=3)
        numbers = [message.sequence_number for message in batch]
        for message in batch:
            receiver.defer_message(message)
        assert receiver.receive_messages(max_message_count=1, max_wait_time=1) == []
        first, second = receiver.receive_deferred_messages(numbers)
        assert [str(first), str(second)] == ["later-1", "later-2"]
        receiver.complete_message(first)
        receiver.dead_letter_message(second, reason="Stale", error_description="too late")
        assert receiver.receive_deferred_messages(numbers) == []
    (dead,) = _drain(client, "deferred", dead_letter=True)
    assert (str(dead), dead.dead_letter_reason) == ("later-2", "Stale")


@pytest.mark.parametrize(
    "garbage",
    [
        b"GET / HTTP/1.1\r\n\r\n",  # not AMQP at all
        b"AMQP\x03\x01\x00\x00"
        + b"\x00\x00\x00\x10\x02\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff",
    ],
    ids=["not-amqp", "bad-frame-after-sasl-header"],
)
def test_malformed_bytes_close_that_connection_only(
    regions: Any, client: Any, garbage: bytes
) -> None:
    with socket.create_connection(("127.0.0.1", regions.port("weu")), timeout=10) as raw:
        raw.sendall(garbage)
        received = b""
        while chunk := raw.recv(4096):  # the server answers (or not), then closes
            received += chunk
    with client.get_queue_sender("roundtrip-in") as sender:
        sender.send_messages(ServiceBusMessage(b"after-garbage"))
    assert [str(m) for m in _drain(client, "roundtrip-in")] == ["after-garbage"]


def _every_property(index: int) -> ServiceBusMessage:
    return ServiceBusMessage(
        f"body-{index}".encode(),
        application_properties={"index": index, "name": f"n{index}", "ratio": 0.25, "ok": True},
        message_id=f"batch-{index}",
        correlation_id=f"corr-{index}",
        content_type="text/plain",
        subject="subject",
        to="to",
        reply_to="reply",
        reply_to_session_id="reply-session",
        session_id="session-a",
        time_to_live=timedelta(minutes=10),
    )


def _properties(message: Any) -> tuple[Any, ...]:
    return (
        str(message),
        message.message_id,
        message.correlation_id,
        message.content_type,
        message.subject,
        message.to,
        message.reply_to,
        message.reply_to_session_id,
        message.session_id,
        message.partition_key,
        message.time_to_live,
        {_text(k): _text(v) for k, v in message.application_properties.items()},
    )


def _text(value: Any) -> Any:
    """Received property keys and string values are bytes (SDK behaviour); compare as str."""
    return value.decode() if isinstance(value, bytes) else value


def test_async_batch_with_every_property_reads_back_unchanged(regions: Any) -> None:
    sent = [_every_property(i) for i in range(3)]
    expected = [_properties(m) for m in sent]

    async def scenario() -> list[tuple[Any, ...]]:
        async with AsyncServiceBusClient.from_connection_string(
            regions.connection_string("weu")
        ) as client:
            async with client.get_queue_sender("roundtrip-out") as sender:
                batch = await sender.create_message_batch()
                for message in sent:
                    batch.add_message(message)
                await sender.send_messages(batch)
            async with client.get_queue_receiver("roundtrip-out", max_wait_time=3) as receiver:
                received = await receiver.receive_messages(max_message_count=10, max_wait_time=3)
                for message in received:
                    await receiver.complete_message(message)
        return [_properties(m) for m in received]

    assert asyncio.run(scenario()) == expected


def test_event_hub_partition_keys_hash_to_one_partition_and_every_partition_reads(
    regions: Any,
) -> None:
    connection = regions.connection_string("ingest")
    with EventHubProducerClient.from_connection_string(
        connection, eventhub_name="devices"
    ) as producer:
        assert producer.get_eventhub_properties()["partition_ids"] == ["0", "1"]
        for key in ("device-a", "device-b", "device-c", "device-d"):
            batch = producer.create_batch(partition_key=key)
            for index in range(2):
                batch.add(EventData(f"hash-{key}-{index}"))
            producer.send_batch(batch)
    mine = lambda e: e.body_as_str().startswith("hash-")  # noqa: E731
    by_partition = {
        partition: read_events(connection, mine, partition_id=partition) for partition in ("0", "1")
    }
    seen: dict[str, set[str]] = {}
    for partition, events in by_partition.items():
        for event in events:
            received: Any = event.partition_key  # typed str, decoded by the SDK as bytes
            name = received.decode() if isinstance(received, bytes) else received
            seen.setdefault(name, set()).add(partition)
    assert set(seen) == {"device-a", "device-b", "device-c", "device-d"}
    assert all(len(partitions) == 1 for partitions in seen.values())
    assert sum(len(events) for events in by_partition.values()) == 8


def test_batches_of_one_keep_their_body(regions: Any, client: Any) -> None:
    """A one-message batch is still a batch transfer; its body must not come back wrapped."""
    with client.get_queue_sender("roundtrip-in") as sender:
        batch = sender.create_message_batch()
        batch.add_message(ServiceBusMessage(b"alone"))
        sender.send_messages(batch)
    assert [str(m) for m in _drain(client, "roundtrip-in")] == ["alone"]
    connection = regions.connection_string("ingest")
    with EventHubProducerClient.from_connection_string(
        connection, eventhub_name="devices"
    ) as producer:
        events = producer.create_batch(partition_id="0")
        events.add(EventData("single-event"))
        producer.send_batch(events)
    found = read_events(connection, lambda e: e.body_as_str() == "single-event", partition_id="0")
    assert [e.body_as_str() for e in found] == ["single-event"]


def _receive_in_background(connection: str, owner_level: int | None) -> tuple[Any, list[Any]]:
    consumer = EventHubConsumerClient.from_connection_string(
        connection, consumer_group="replication", eventhub_name="devices"
    )
    errors: list[Any] = []
    options: dict[str, Any] = {} if owner_level is None else {"owner_level": owner_level}
    threading.Thread(
        target=consumer.receive,
        kwargs={
            "on_event": lambda context, event: None,
            "on_error": lambda context, error: errors.append(error),
            "partition_id": "1",
            "max_wait_time": 1,
            **options,
        },
        daemon=True,
    ).start()
    return consumer, errors


def _wait_for(errors: list[Any], seconds: float = 30) -> list[Any]:
    deadline = time.monotonic() + seconds
    while not errors and time.monotonic() < deadline:
        time.sleep(0.1)
    return errors


def test_owner_levels_steal_and_refuse_partitions(regions: Any) -> None:
    connection = regions.connection_string("ingest")
    first, first_errors = _receive_in_background(connection, owner_level=1)
    time.sleep(2)
    assert first_errors == []
    second, second_errors = _receive_in_background(connection, owner_level=2)
    (stolen, *_) = _wait_for(first_errors)
    assert "amqp:link:stolen" in str(stolen)
    lower, lower_errors = _receive_in_background(connection, owner_level=1)
    plain, plain_errors = _receive_in_background(connection, owner_level=None)
    assert "amqp:link:stolen" in str(_wait_for(lower_errors)[0])
    assert "amqp:link:stolen" in str(_wait_for(plain_errors)[0])
    time.sleep(1)
    assert second_errors == []
    for consumer in (first, second, lower, plain):
        consumer.close()
