"""Local consumers: receive what a queue, a subscription or a dead-letter queue holds.

The demo counts what the brokers hold, not what the replicator meant to do: it reads every
entity an application would read (and the parking and dead-letter queues) and counts the
messages it finds there. :class:`EntityConsumer` is that application, with the SDK:

- one PEEK_LOCK receiver, no prefetch, opened on the first take and kept open, so that polling
  an entity again costs no new connection;
- a session-enabled queue or subscription is read session by session
  (``NEXT_AVAILABLE_SESSION``, a few side by side), each session's messages in their order,
  until no session with messages is left;
- it may fail on purpose: the messages its ``fails`` predicate picks are abandoned, so the broker
  delivers them again until ``maxDeliveryCount`` moves them to the dead-letter queue, as it does
  with a consumer whose processing keeps failing.

A message the SDK delivers but the converter cannot read faithfully is still completed and
counted, as an envelope with its MessageId and nothing else (logged at WARNING): a consumer that
counts must not stop at one odd message. Neither does a completion that fails with a lost lock
(``MessageLockLostError``): when the broker does not confirm a settlement on the receive link in
time, or the link goes, the SDK settles again over the management link
(``_settle_message`` in ``azure/servicebus/_servicebus_receiver.py``), and a lock that is gone
there means either that the first settlement was applied or that the lock expired and the
message will come back. The message is counted once either way: counted now, and its sequence
number kept, so that if it comes back it is completed without being counted again (abandoning a
message whose lock is gone needs nothing: it comes back, or was given back already). Other errors
of the SDK propagate (these consumers serve local runs and tests, not replication, which has its
own receive loops in :mod:`replication.transport.servicebus` (``_loops``)).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import time
from collections.abc import Callable
from types import TracebackType

from azure.servicebus import (
    NEXT_AVAILABLE_SESSION,
    ServiceBusClient,
    ServiceBusReceivedMessage,
    ServiceBusReceiver,
)
from azure.servicebus.exceptions import MessageLockLostError, OperationTimeoutError

from replication.envelope import Envelope
from replication.exceptions import MessageRejectedError
from replication.settings import Settings
from replication.topology import EntityRef, NamespaceSpec

from .connections import servicebus_client
from .servicebus import envelope_from_received, source_receiver

logger = logging.getLogger(__name__)

RECEIVE_BATCH = 100
SESSION_READERS = 4
"""Sessions of one entity read side by side: opening and releasing a session receiver is mostly
waiting (about 1.5 s together against the emulator), so one at a time is slow."""


class EntityConsumer:
    """Receives and completes the messages of one queue, subscription or dead-letter queue.

    ``ref`` names the entity like a task's source: ``subscription`` for a topic's subscription,
    ``dead_letter_queue`` for the entity's dead-letter queue. ``sessions`` reads a
    session-enabled entity session by session, :data:`SESSION_READERS` sessions at a time.
    ``fails`` picks the messages this consumer cannot process: they are abandoned, never
    returned.
    """

    def __init__(
        self,
        namespace: NamespaceSpec,
        ref: EntityRef,
        *,
        settings: Settings,
        sessions: bool = False,
        fails: Callable[[Envelope], bool] | None = None,
    ) -> None:
        self.ref = ref
        self._namespace = namespace
        self._settings = settings
        self._fails = fails
        self._clients: list[ServiceBusClient] = []
        self._sessions = sessions
        self._receiver: ServiceBusReceiver | None = None
        self._unsure: set[int] = set()
        """Sequence numbers of messages counted although completing them lost the lock."""

    def take(self, wait: float = 1.0) -> list[Envelope]:
        """Every message that arrives until a receive waits ``wait`` seconds for nothing, in
        the order received (for a session-enabled entity: each session's in its order)."""
        if self._sessions:
            return self._take_sessions(wait)
        if self._receiver is None:
            self._clients = self._clients or [servicebus_client(self._namespace, self._settings)]
            receiver = source_receiver(self._clients[0], self.ref, wait=wait)
            receiver.__enter__()
            self._receiver = receiver
        return self._take_from(self._receiver, wait)

    def _take_sessions(self, wait: float) -> list[Envelope]:
        """Sessions side by side, one client and thread each (the SDK's clients are not
        thread-safe); every session's messages stay together and in order, and sessions are
        returned in the order they were taken."""
        while len(self._clients) < SESSION_READERS:
            self._clients.append(servicebus_client(self._namespace, self._settings))
        with concurrent.futures.ThreadPoolExecutor(SESSION_READERS) as pool:
            turns = [pool.submit(self._session_turns, c, wait) for c in self._clients]
            taken = sorted(
                (turn for future in turns for turn in future.result()), key=lambda t: t[0]
            )
        return [envelope for _, envelopes in taken for envelope in envelopes]

    def _session_turns(
        self, client: ServiceBusClient, wait: float
    ) -> list[tuple[float, list[Envelope]]]:
        """(when, messages) of each session this client held, until no session is free."""
        turns: list[tuple[float, list[Envelope]]] = []
        while True:
            receiver = source_receiver(
                client, self.ref, wait=wait, session_id=NEXT_AVAILABLE_SESSION
            )
            try:
                receiver.__enter__()
            except OperationTimeoutError:  # no session has messages that nobody holds
                receiver.close()
                return turns
            accepted = time.monotonic()
            with receiver:
                try:
                    from_session = self._take_from(receiver, wait)
                except OperationTimeoutError:  # attached, then no session came
                    return turns
            if not from_session:
                return turns
            turns.append((accepted, from_session))

    def _take_from(self, receiver: ServiceBusReceiver, wait: float) -> list[Envelope]:
        taken: list[Envelope] = []
        while batch := receiver.receive_messages(
            max_message_count=RECEIVE_BATCH, max_wait_time=wait
        ):
            for message in batch:
                envelope = _readable(message, self.ref)
                if self._fails is not None and self._fails(envelope):
                    # A lost lock: it comes back all the same, which is what abandoning is for.
                    with contextlib.suppress(MessageLockLostError):
                        receiver.abandon_message(message)
                    continue
                if self._complete(receiver, message):
                    taken.append(envelope)
        return taken

    def _complete(self, receiver: ServiceBusReceiver, message: ServiceBusReceivedMessage) -> bool:
        """Complete ``message``; whether to count it: not when it was counted before, when
        completing it lost the lock (see the module docstring)."""
        number = message.sequence_number
        counted = number in self._unsure
        try:
            receiver.complete_message(message)
        except MessageLockLostError:
            logger.warning(
                "%s: completing message %s (sequence number %s) lost its lock: it was completed "
                "already or it will come back; counted once either way",
                self.ref.describe(),
                message.message_id,
                number,
            )
            if number is not None:
                self._unsure.add(number)
            return not counted
        if number is not None:
            self._unsure.discard(number)
        return not counted

    def close(self) -> None:
        if self._receiver is not None:
            self._receiver.close()
            self._receiver = None
        for client in self._clients:
            client.close()
        self._clients = []

    def __enter__(self) -> EntityConsumer:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


def _readable(message: ServiceBusReceivedMessage, ref: EntityRef) -> Envelope:
    try:
        return envelope_from_received(message)
    except MessageRejectedError as error:
        logger.warning(
            "%s: message %s counted unread: %s", ref.describe(), message.message_id, error
        )
        return Envelope(body=b"", message_id=str(message.message_id))


def drain_servicebus(
    namespace: NamespaceSpec,
    entity: str,
    subscription: str | None = None,
    *,
    settings: Settings,
    idle_seconds: float = 2.0,
    dead_letter_queue: bool = False,
    sessions: bool = False,
) -> list[Envelope]:
    """Receive and complete everything in a queue, subscription or dead-letter queue until it
    stays empty for ``idle_seconds`` (one :meth:`EntityConsumer.take`)."""
    ref = EntityRef(
        namespace=namespace.name,
        entity=entity,
        subscription=subscription,
        dead_letter_queue=dead_letter_queue,
    )
    with EntityConsumer(namespace, ref, settings=settings, sessions=sessions) as consumer:
        return consumer.take(idle_seconds)


__all__ = ["EntityConsumer", "drain_servicebus"]
