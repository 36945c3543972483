"""Receive loops that play the Functions host's part for local runs (``python -m replication run``).

In Azure the Functions host reads the source entities and calls the task's function with a
batch. Locally, where the Functions Core Tools may not be available, these loops do the same
with the SDKs, with the host's semantics:

- Service Bus (PEEK_LOCK): a batch is completed when the runner returns; when it raises, every
  message of the batch is abandoned, so the broker redelivers it and ``maxDeliveryCount``
  eventually dead-letters it. A message whose body cannot be converted is dead-lettered at once
  with the converter's reason (that is what the host does with messages it cannot bind).
- Event Hubs: batches per partition; the in-memory position advances only after the runner
  returned, and a failing batch is retried with exponential backoff (5 s to 5 min), like the
  retry policy of the Functions trigger. Positions are checkpointed in blob storage when the
  ``AzureWebJobsStorage`` setting names an account (Azurite locally; see
  :mod:`replication.transport.checkpoints`); without it a restarted run starts from the
  beginning of every partition. An event the converter rejects (see below) is logged and
  skipped: Event Hubs has no dead-letter queue.

Messages the SDK cannot decode (azure-servicebus 7.15.0, measured against the emulator in
``tests/e2e/test_poison_messages.py``; azure-eventhub 5.15.1 has the same decoder tables, not
measured) never reach the converters, because the SDK decodes every transfer inside
``receive_messages``, before any per-message handling:

- an application property (or any other section value) of type **char, decimal32 or
  decimal64**: the SDK's decoder has no entry for these constructors (0x73, 0x74, 0x84), the
  ``TypeError`` shuts the handler down and ``receive_messages`` raises ``ServiceBusError``
  ("Handler failed: 'NoneType' object is not callable."); ``peek_messages`` raises the same.
- **decimal128** (0x94), even one the SDK encoded itself: its decoder reads the exponent wrongly
  and raises ``ValueError`` ("Invalid AMQP decimal128 encoding"), which the receive client takes
  for its own timeout signal: the handler shuts down *without an error* and every later
  ``receive_messages`` on that receiver returns ``[]`` at once, forever. ``peek_messages``
  raises ``ServiceBusError`` ("Handler failed: Invalid AMQP decimal128 encoding ...").

Either way the message stays locked, is redelivered when its lock expires, fails the same way,
and reaches the dead-letter queue through ``MaxDeliveryCount`` (where reading it fails again).
Messages received together with it on the same link share its fate. Everything else the SDK
decodes: maps and lists as application properties, non-UTF-8 binary in MessageId or in a
property become :class:`~replication.exceptions.MessageRejectedError` in the converters and are
dead-lettered with its reason.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from azure.eventhub import CheckpointStore, EventData, EventHubConsumerClient, PartitionContext
from azure.servicebus import (
    ServiceBusClient,
    ServiceBusReceivedMessage,
    ServiceBusReceiver,
    ServiceBusSubQueue,
)

from replication.envelope import Envelope
from replication.exceptions import MessageRejectedError, ReplicationError
from replication.topology import EntityRef, NamespaceSpec

from .connections import event_hub_client, servicebus_client
from .eventhubs import envelope_from_event
from .servicebus import envelope_from_received

logger = logging.getLogger(__name__)

BatchHandler = Callable[[Sequence[Envelope]], object]

RETRY_MIN_SECONDS = 5.0
RETRY_MAX_SECONDS = 300.0


class ReceiveStats:
    """Counters a local run prints and tests read; updated under a lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.batches = 0
        self.messages = 0
        self.failures = 0
        self.last_activity = time.monotonic()

    def record(self, messages: int, *, failed: bool = False) -> None:
        with self._lock:
            self.batches += 1
            self.messages += messages
            self.failures += int(failed)
            self.last_activity = time.monotonic()


def run_servicebus_source(
    namespace: NamespaceSpec,
    source: EntityRef,
    handler: BatchHandler,
    stop: threading.Event,
    stats: ReceiveStats,
    *,
    environ: Mapping[str, str] | None = None,
    max_batch_size: int = 100,
) -> None:
    """Receive batches from a queue, subscription or their DLQ until ``stop`` is set."""
    sub_queue = ServiceBusSubQueue.DEAD_LETTER if source.dead_letter_queue else None
    with servicebus_client(namespace, environ) as client:
        receiver = _receiver(client, source.entity, source.subscription, sub_queue, wait=1)
        with receiver:
            while not stop.is_set():
                messages = receiver.receive_messages(
                    max_message_count=max_batch_size, max_wait_time=1
                )
                if messages:
                    _handle_servicebus_batch(
                        receiver, messages, handler, stats, source=source.entity_path
                    )


def _receiver(
    client: ServiceBusClient,
    entity: str,
    subscription: str | None,
    sub_queue: ServiceBusSubQueue | None = None,
    *,
    wait: float,
) -> ServiceBusReceiver:
    """A PEEK_LOCK receiver of a queue, or of a topic's subscription when one is named."""
    if subscription is not None:
        return client.get_subscription_receiver(
            entity, subscription, sub_queue=sub_queue, max_wait_time=wait
        )
    return client.get_queue_receiver(entity, sub_queue=sub_queue, max_wait_time=wait)


def _handle_servicebus_batch(
    receiver: object,
    messages: list[ServiceBusReceivedMessage],
    handler: BatchHandler,
    stats: ReceiveStats,
    *,
    source: str | None = None,
) -> None:
    envelopes: list[Envelope] = []
    accepted: list[ServiceBusReceivedMessage] = []
    for message in messages:
        try:
            envelopes.append(envelope_from_received(message, source=source))
            accepted.append(message)
        except MessageRejectedError as error:
            logger.warning("dead-lettering message %s: %s", message.message_id, error)
            receiver.dead_letter_message(  # type: ignore[attr-defined]
                message, reason=error.reason, error_description=str(error)[:1024]
            )
    try:
        handler(envelopes)
    except ReplicationError as error:
        logger.warning("batch of %d failed, abandoning for redelivery: %s", len(accepted), error)
        for message in accepted:
            receiver.abandon_message(message)  # type: ignore[attr-defined]
        stats.record(len(accepted), failed=True)
        return
    for message in accepted:
        receiver.complete_message(message)  # type: ignore[attr-defined]
    stats.record(len(accepted))


def run_event_hub_source(
    namespace: NamespaceSpec,
    source: EntityRef,
    handler: BatchHandler,
    stop: threading.Event,
    stats: ReceiveStats,
    *,
    environ: Mapping[str, str] | None = None,
    max_batch_size: int = 100,
    checkpoints: CheckpointStore | None = None,
) -> None:
    """Receive batches from every partition of an event hub until ``stop`` is set.

    With ``checkpoints``, each partition's position is saved after every batch the handler
    accepted and a restart resumes there; without, every start reads from the beginning.
    """
    consumer = event_hub_client(
        EventHubConsumerClient,
        namespace,
        source.entity,
        environ,
        consumer_group=source.consumer_group or "$Default",
        checkpoint_store=checkpoints,
        # Claim every partition at once: one local host owns them all, and the balanced
        # strategy would take one partition per 30 s cycle.
        load_balancing_strategy="greedy",
        load_balancing_interval=5,
    )

    def on_batch(context: PartitionContext, events: list[EventData]) -> None:
        if not events:
            return
        envelopes = []
        for event in events:
            try:
                envelopes.append(
                    envelope_from_event(event, context.partition_id, source=source.entity_path)
                )
            except MessageRejectedError as error:
                logger.error(
                    "partition %s: skipping event %s (%s): %s",
                    context.partition_id,
                    event.sequence_number,
                    error.reason,
                    error,
                )
        delay = RETRY_MIN_SECONDS
        while not stop.is_set():
            try:
                handler(envelopes)
                if checkpoints is not None:
                    context.update_checkpoint(events[-1])
                stats.record(len(envelopes))
                return
            except ReplicationError as error:
                stats.record(0, failed=True)
                logger.warning(
                    "partition %s: batch failed, retry in %.0f s: %s",
                    context.partition_id,
                    delay,
                    error,
                )
                stop.wait(delay)
                delay = min(delay * 2, RETRY_MAX_SECONDS)

    worker = threading.Thread(
        target=consumer.receive_batch,
        kwargs={
            "on_event_batch": on_batch,
            "max_batch_size": max_batch_size,
            "max_wait_time": 1,
            "starting_position": "-1",
        },
        daemon=True,
    )
    worker.start()
    stop.wait()
    consumer.close()
    worker.join(timeout=10)


def drain_servicebus(
    namespace: NamespaceSpec,
    entity: str,
    subscription: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    idle_seconds: float = 2.0,
) -> list[Envelope]:
    """Receive and complete everything in a queue or subscription until it stays empty for
    ``idle_seconds`` (for local consumers such as the demo's capture, not for replication)."""
    drained: list[Envelope] = []
    with (
        servicebus_client(namespace, environ) as client,
        _receiver(client, entity, subscription, wait=idle_seconds) as receiver,
    ):
        while batch := receiver.receive_messages(max_message_count=100, max_wait_time=idle_seconds):
            for message in batch:
                drained.append(envelope_from_received(message))
                receiver.complete_message(message)
    return drained


__all__ = ["ReceiveStats", "drain_servicebus", "run_event_hub_source", "run_servicebus_source"]
