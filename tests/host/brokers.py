"""The broker side of the host tier, with the unmodified SDKs against the local emulator.

Publishing, receiving a locked batch the way the Service Bus extension does (PEEK_LOCK, settled
after the invocation: completed on success, abandoned on failure, as ``autoCompleteMessages``
does) and delivering it to a function through the worker (``deliver_locked_batch``,
``invoke_batch``), reading an event hub partition the way the Event Hubs extension does, and
draining the replicas a test compares with what it published.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusReceivedMessage

from tests.host.host import WorkerSession
from tests.host.host_conversion import (
    ServiceBusView,
    rpc_bodies,
    rpc_metadata,
    servicebus_binding_data,
)


def send(connection: str, entity: str, messages: Sequence[ServiceBusMessage]) -> None:
    with (
        ServiceBusClient.from_connection_string(connection) as client,
        client.get_queue_sender(entity) as sender,
    ):
        for message in messages:
            sender.send_messages(message)


@contextlib.contextmanager
def locked_batch(
    connection: str, entity: str, count: int, *, subscription: str | None = None
) -> Iterator[tuple[Any, list[ServiceBusReceivedMessage]]]:
    """``count`` messages received in PEEK_LOCK mode, kept locked while the block runs."""
    with ServiceBusClient.from_connection_string(connection) as client:
        receiver = (
            client.get_subscription_receiver(entity, subscription, max_wait_time=2)
            if subscription
            else client.get_queue_receiver(entity, max_wait_time=2)
        )
        with receiver:
            messages: list[ServiceBusReceivedMessage] = []
            deadline = time.monotonic() + 30
            while len(messages) < count and time.monotonic() < deadline:
                messages += receiver.receive_messages(
                    max_message_count=count - len(messages), max_wait_time=2
                )
            assert len(messages) == count, f"received {len(messages)} of {count} from {entity}"
            yield receiver, messages


def settle(receiver: Any, messages: Sequence[ServiceBusReceivedMessage], *, ok: bool) -> None:
    """What the extension does after the invocation with ``autoCompleteMessages``."""
    for message in messages:
        if ok:
            receiver.complete_message(message)
        else:
            receiver.abandon_message(message)


def deliver_locked_batch(
    worker: WorkerSession,
    function: str,
    connection: str,
    entity: str,
    count: int,
    *,
    subscription: str | None = None,
) -> tuple[Any, list[ServiceBusReceivedMessage]]:
    """``count`` messages of ``entity`` received locked, delivered to ``function`` as one batch
    in the invocation the host would send, and settled as the extension settles them; the
    worker's response and the messages as received."""
    with locked_batch(connection, entity, count, subscription=subscription) as (
        receiver,
        received,
    ):
        views = [ServiceBusView.of(message) for message in received]
        binding_data = servicebus_binding_data(views, fully_qualified_namespace="localhost")
        response = invoke_batch(worker, function, [view.body for view in views], binding_data)
        settle(receiver, received, ok=worker.succeeded(response))
    return response, received


def invoke_batch(
    worker: WorkerSession,
    function: str,
    bodies: Sequence[bytes],
    binding_data: Mapping[str, Any],
    *,
    retry_count: int | None = None,
) -> Any:
    """``function`` invoked with a batch as the host sends it: ``bodies`` as its ``messages``
    and ``binding_data`` as trigger metadata, both converted as the host converts them for this
    worker; the worker's response."""
    return worker.invoke(
        function,
        {"messages": rpc_bodies(worker.functions[function].trigger, bodies, worker.capabilities)},
        rpc_metadata(binding_data, worker.capabilities),
        retry_count=retry_count,
    )


def drain(
    connection: str,
    entity: str,
    count: int,
    *,
    subscription: str | None = None,
    quiet_seconds: float = 2.0,
) -> list[ServiceBusReceivedMessage]:
    """Receive and complete until ``count`` messages arrived and nothing more comes."""
    received: list[ServiceBusReceivedMessage] = []
    with ServiceBusClient.from_connection_string(connection) as client:
        receiver = (
            client.get_subscription_receiver(entity, subscription, max_wait_time=quiet_seconds)
            if subscription
            else client.get_queue_receiver(entity, max_wait_time=quiet_seconds)
        )
        with receiver:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                batch = receiver.receive_messages(max_message_count=100)
                for message in batch:
                    receiver.complete_message(message)
                received += batch
                if not batch and len(received) >= count:
                    break
    return received


def publish_events(
    connection: str, event_hub: str, partition_id: str, events: Sequence[EventData]
) -> int:
    """Send ``events`` to one partition; returns the partition's last sequence number before."""
    with EventHubProducerClient.from_connection_string(
        connection, eventhub_name=event_hub
    ) as producer:
        before = producer.get_partition_properties(partition_id)["last_enqueued_sequence_number"]
        for event in events:
            # One event per send keeps each event's own partition key.
            batch = producer.create_batch(partition_id=partition_id)
            batch.add(event)
            producer.send_batch(batch)
    return int(before)


def read_events(
    connection: str, event_hub: str, consumer_group: str, partition_id: str, after: int, count: int
) -> list[EventData]:
    """The ``count`` events after sequence number ``after`` of one partition."""
    received: list[EventData] = []
    with EventHubConsumerClient.from_connection_string(
        connection, consumer_group=consumer_group, eventhub_name=event_hub
    ) as consumer:

        def on_event_batch(_context: Any, events: list[EventData]) -> None:
            received.extend(events)
            if len(received) >= count:
                consumer.close()

        consumer.receive_batch(
            on_event_batch=on_event_batch,
            partition_id=partition_id,
            starting_position=after,
            starting_position_inclusive=False,
            max_batch_size=count,
            max_wait_time=2,
        )
    assert len(received) >= count, f"read {len(received)} of {count} events"
    return received[:count]


__all__ = ["drain", "locked_batch", "publish_events", "read_events", "send", "settle"]
