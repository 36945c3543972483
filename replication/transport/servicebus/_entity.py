"""One Service Bus entity read message by message, as ``redrive`` reads a parking queue or a
dead-letter queue: a scan by peeking, then receiving in peek-lock mode and settling one by one.

The decisions (which messages are the task's, what to do with each) are
:mod:`replication.operations`'; this is the SDK side:

- :meth:`EntityReader.peek`: every message from sequence number 1 on, as :class:`Peeked`
  (what a survey needs; nothing locked, no delivery counted);
- :meth:`EntityReader.receiving`: a PEEK_LOCK receiver whose locks the SDK's
  ``AutoLockRenewer`` renews for up to :data:`LOCK_RENEWAL_SECONDS`; it hands out
  :class:`Locked` messages and completes or abandons them.

Every SDK error becomes the library's (:func:`~replication.transport.errors.translate`: a
:class:`~replication.exceptions.ForwardError`), except for abandoning, which is best effort: a
lock that is already gone released the message anyway.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Iterator
from datetime import datetime

from azure.servicebus import AutoLockRenewer, ServiceBusClient, ServiceBusReceivedMessage
from azure.servicebus import ServiceBusReceiver as _SdkReceiver

from replication.envelope import Envelope
from replication.settings import Settings
from replication.topology import EntityRef, NamespaceSpec
from replication.transport._properties import decode_properties
from replication.transport.connections import servicebus_client
from replication.transport.errors import translated
from replication.values import as_text

from ._conversion import envelope_from_received
from ._receivers import peek_pages, source_receiver

logger = logging.getLogger(__name__)

SCAN_PAGE = 250
"""Messages per peek while scanning."""

LOCK_RENEWAL_SECONDS = 3600.0
"""How long held and in-flight locks are renewed; a run that takes longer loses them."""


@dataclasses.dataclass(frozen=True, slots=True)
class Peeked:
    """A message seen by peeking: its place, its ids, its application properties (decoded as
    the converters decode them) and the facts a survey reports."""

    sequence_number: int | None
    message_id: str
    properties: dict[str, object]
    dead_letter_reason: str | None
    enqueued_time_utc: datetime | None


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Locked:
    """A message received in peek-lock mode, held until it is completed or abandoned through
    the receiver that took it."""

    sequence_number: int
    message_id: str
    message: ServiceBusReceivedMessage

    def properties(self) -> dict[str, object]:
        """The application properties, decoded as the converters decode them.

        Raises:
            MessageRejectedError: they cannot be decoded.
        """
        return decode_properties(self.message.application_properties)

    def envelope(self, *, source: str) -> Envelope:
        """The message as an envelope of the entity ``source``.

        Raises:
            MessageRejectedError: it cannot be converted faithfully (an AMQP value body, ...).
        """
        return envelope_from_received(self.message, source=source)


class EntityReader:
    """Reads one queue, subscription or dead-letter queue; :meth:`close` when done."""

    def __init__(
        self,
        namespace: NamespaceSpec,
        entity: EntityRef,
        settings: Settings,
        *,
        wait_seconds: float = 5.0,
    ) -> None:
        self._namespace = namespace
        self._entity = entity
        self._settings = settings
        self._wait = wait_seconds
        self._client: ServiceBusClient | None = None

    @property
    def label(self) -> str:
        return self._entity.describe()

    def _servicebus(self) -> ServiceBusClient:
        if self._client is None:
            self._client = servicebus_client(self._namespace, self._settings)
        return self._client

    def peek(self) -> Iterator[Peeked]:
        """Every message of the entity, in sequence order, by peeking.

        Raises:
            ForwardError: the entity cannot be read.
            MessageRejectedError: a message's application properties cannot be decoded.
        """
        with translated(self.label):
            receiver = source_receiver(self._servicebus(), self._entity, wait=self._wait)
            with receiver:
                for page in peek_pages(receiver, start=1, page_size=SCAN_PAGE):
                    for message in page:
                        yield Peeked(
                            message.sequence_number,
                            str(message.message_id),
                            decode_properties(message.application_properties),
                            as_text(message.dead_letter_reason, errors="replace"),
                            message.enqueued_time_utc,
                        )

    @contextlib.contextmanager
    def receiving(self) -> Iterator[LockingReceiver]:
        """A PEEK_LOCK receiver of the entity whose locks are renewed while it is open."""
        renewer = AutoLockRenewer(max_lock_renewal_duration=LOCK_RENEWAL_SECONDS)
        try:
            with translated(self.label):
                receiver = source_receiver(
                    self._servicebus(), self._entity, wait=self._wait, auto_lock_renewer=renewer
                )
                with receiver:
                    yield LockingReceiver(receiver, self.label, self._wait)
        finally:
            renewer.close()

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


class LockingReceiver:
    """The receiver :meth:`EntityReader.receiving` opened."""

    def __init__(self, receiver: _SdkReceiver, label: str, wait: float) -> None:
        self._receiver = receiver
        self._label = label
        self._wait = wait

    def receive(self, count: int) -> list[Locked]:
        """Up to ``count`` messages, locked (fewer, or none, after the wait).

        Raises:
            ForwardError: the receive failed.
        """
        with translated(self._label):
            messages = self._receiver.receive_messages(
                max_message_count=count, max_wait_time=self._wait
            )
        return [
            Locked(message.sequence_number or 0, str(message.message_id), message)
            for message in messages
        ]

    def complete(self, locked: Locked) -> None:
        """Settle ``locked`` for good.

        Raises:
            ForwardError: the broker refused (its lock was lost, the connection dropped).
        """
        with translated(self._label):
            self._receiver.complete_message(locked.message)

    def abandon(self, locked: Locked) -> None:
        """Give ``locked`` back, best effort: a lock already gone released it anyway."""
        try:
            self._receiver.abandon_message(locked.message)
        except Exception as error:
            logger.debug("abandon of message %s failed: %s", locked.sequence_number, error)


__all__ = [
    "LOCK_RENEWAL_SECONDS",
    "SCAN_PAGE",
    "EntityReader",
    "Locked",
    "LockingReceiver",
    "Peeked",
]
