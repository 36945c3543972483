"""Re-read messages of a Service Bus source by sequence number, without locking them.

The Functions host cannot always say which message of a batch a string field belongs to (see
:mod:`replication.hosts.functions`). The broker can: a peek returns complete messages,
locked ones included, from a sequence number on, without taking a lock or counting a delivery.
The batch's messages are locked by the trigger while the function runs, so they are still in
the entity and peekable.

One receiver link per source entity is opened on first use and reused. A peek returns the
messages from a sequence number on, so a batch of consecutive messages costs one round trip; a
batch spread over the entity costs one per gap, never more than two per message. A message
that is not found (it was settled by another receiver after its lock expired) is left out: the
caller fails the batch, which the host redelivers.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from azure.servicebus import ServiceBusClient, ServiceBusReceiver

from replication.envelope import Envelope
from replication.transport.errors import translate

from ._conversion import envelope_from_received
from ._receivers import entity_receiver

MAX_PEEK = 250
"""Messages asked for per peek; bounded because a peek reads foreign messages in gaps too."""


class ServiceBusPeeker:
    """Peeks messages of one queue, subscription or dead-letter queue by sequence number."""

    def __init__(
        self,
        client: ServiceBusClient,
        entity: str,
        *,
        subscription: str | None = None,
        dead_letter_queue: bool = False,
        label: str,
    ) -> None:
        self._client = client
        self._entity = entity
        self._subscription = subscription
        self._dead_letter = dead_letter_queue
        self._label = label
        self._receiver: ServiceBusReceiver | None = None
        self._lock = threading.Lock()

    def _open(self) -> ServiceBusReceiver:
        if self._receiver is None:
            self._receiver = entity_receiver(
                self._client, self._entity, self._subscription, dead_letter=self._dead_letter
            )
        return self._receiver

    def peek(self, sequence_numbers: Sequence[int]) -> Mapping[int, Envelope]:
        """The envelopes of the messages with these sequence numbers that are still there."""
        wanted = sorted(set(sequence_numbers))
        wanted_set = set(wanted)
        found: dict[int, Envelope] = {}
        with self._lock:
            try:
                receiver = self._open()
                index = 0
                while index < len(wanted):
                    start = wanted[index]
                    remaining = len(wanted) - index
                    span = wanted[-1] - start + 1
                    count = max(1, min(span, 2 * remaining, MAX_PEEK))
                    for message in receiver.peek_messages(
                        max_message_count=count, sequence_number=start
                    ):
                        number = message.sequence_number
                        if number is not None and number in wanted_set and number not in found:
                            found[number] = envelope_from_received(message)
                    # Continue after the messages found; a missing start is given up on.
                    index += 1
                    while index < len(wanted) and wanted[index] in found:
                        index += 1
            except Exception as error:
                raise translate(error, target=self._label) from error
        return found

    def close(self) -> None:
        with self._lock:
            if self._receiver is not None:
                self._receiver.close()
                self._receiver = None


__all__ = ["MAX_PEEK", "ServiceBusPeeker"]
