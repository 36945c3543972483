"""Service Bus over AMQP: what links, transfers, settlements and management requests mean for a
Service Bus namespace (:class:`emulator._servicebus.Broker` holds the state).

- A link the peer sends on (a ``ServiceBusSender``) targets a queue or topic; a message or
  batch is stored whole or refused whole (``amqp:not-allowed``, e.g. no SessionId for a
  session queue: the SDK raises ``ServiceBusError``, as for Service Bus's
  InvalidOperationException).
- A link the emulator sends on (a receiver) reads a queue, subscription or dead-letter queue,
  in peek-lock (the delivery tag is the lock token; the outcome comes back as a disposition)
  or receive-and-delete (pre-settled). A session receiver (source filter
  ``com.microsoft:session-filter``) locks one session at its attach; a next-available one
  waits for a free session until its own timeout, then is refused with
  ``com.microsoft:timeout`` (see :func:`emulator._links.refuse` for how).
- ``<entity>/$management`` requests are the operations of :mod:`emulator._management`.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from typing import Any

from proton import Delivery, Link, symbol

from ._amqp import ErrorCondition
from ._codec import split_batch, text
from ._handler import ManagementReply, Refusal
from ._links import (
    amqp_error,
    finish,
    keep_state,
    open_for_transfers,
    refuse,
    remote_filter,
    state_of,
)
from ._management import (
    LOCK_LOST_DESCRIPTION,
    MESSAGE_LOCK_LOST,
    OPERATIONS,
    SENDING_OPERATIONS,
    ManagementError,
)
from ._message import BrokerMessage
from ._persistence import restore_servicebus, servicebus_state
from ._servicebus import (
    DEAD_LETTER_DESCRIPTION,
    DEAD_LETTER_REASON,
    Broker,
    Receivable,
    Settlement,
    Stored,
)
from ._sessions import (
    DEFAULT_ACCEPT_TIMEOUT,
    LOCKED_UNTIL_UTC,
    OPERATION_TIMEOUT,
    SESSION_CANNOT_BE_LOCKED,
    SESSION_FILTER,
    SESSION_LOCK_LOST,
    MessageSession,
    dotnet_ticks,
)

logger = logging.getLogger(__name__)

_OPERATION_TIMEOUT = symbol(OPERATION_TIMEOUT)
_DEAD_LETTER_REASON = symbol(DEAD_LETTER_REASON)
_DEAD_LETTER_DESCRIPTION = symbol(DEAD_LETTER_DESCRIPTION)


@dataclasses.dataclass(eq=False)
class ReceiverLink:
    """A receiver's link: what it reads and how. The object itself is the session holder's
    identity (a session's ``holder`` is the ``ReceiverLink`` that locked it)."""

    entity: Receivable
    peek_lock: bool
    """Deliveries are locked and settled by the receiver; else removed as they are sent."""
    session: MessageSession[Stored] | None = None
    waiting_until: float | None = None
    """Set while a next-available receiver waits for a session: when it gives up."""


class ServiceBusHandler:
    """The :class:`emulator._handler.BrokerHandler` of a Service Bus namespace."""

    status_key = "statusCode"

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.max_message_size: int = broker.max_message_size

    # ------------------------------------------------------------ links
    def open_link(self, link: Link, path: str) -> None:
        if not link.is_sender:
            if self.broker.is_sendable(path):
                open_for_transfers(link)
            else:
                refuse(link, ErrorCondition.NOT_FOUND, _not_found(path))
            return
        entity = self.broker.receivable(path)
        if entity is None:
            refuse(link, ErrorCondition.NOT_FOUND, _not_found(path))
            return
        requested, session_id = _session_filter(link)
        if entity.sessions is None and requested:
            refuse(
                link,
                ErrorCondition.NOT_ALLOWED,
                "It is not possible for an entity that does not require sessions to create "
                f"a sessionful message receiver ('{entity.path}').",
            )
        elif entity.sessions is not None and not requested:
            # Service Bus's InvalidOperationException, which arrives as amqp:not-allowed.
            refuse(
                link,
                ErrorCondition.NOT_ALLOWED,
                "It is not possible for an entity that requires sessions to create a "
                f"non-sessionful message receiver ('{entity.path}').",
            )
        elif not requested:
            keep_state(link, ReceiverLink(entity, _peek_lock(link)))
            link.open()
        else:
            self._open_session_receiver(link, entity, session_id)

    def _open_session_receiver(
        self, link: Link, entity: Receivable, session_id: str | None
    ) -> None:
        """A session receiver's attach: it gets its session now, is refused, or (next
        available) waits for one until :meth:`pump` answers it."""
        receiver = ReceiverLink(entity, _peek_lock(link))
        now = self.broker.clock()
        session = entity.lock_session(session_id, receiver, now)
        if session is not None:
            self._accept_session(link, receiver, session)
        elif session_id is not None:
            refuse(
                link,
                SESSION_CANNOT_BE_LOCKED,
                f"The requested session '{session_id}' cannot be accepted. "
                "It may be locked by another receiver.",
            )
        else:
            # Service Bus holds a next-available attach until a session has messages or the
            # receiver's own timeout (com.microsoft:timeout, ms) passes.
            wait_ms = (link.remote_properties or {}).get(_OPERATION_TIMEOUT)
            wait = DEFAULT_ACCEPT_TIMEOUT if wait_ms is None else int(wait_ms) / 1000
            receiver.waiting_until = now + wait
            keep_state(link, receiver)

    def _accept_session(
        self, link: Link, receiver: ReceiverLink, session: MessageSession[Stored]
    ) -> None:
        """Answer a session receiver's attach: the session id in the source filter and the
        lock's end in ``com.microsoft:locked-until-utc``, which the SDK reads in
        ``PyamqpTransport.on_attach`` (``_transport/_pyamqp_transport.py``)."""
        receiver.session = session
        receiver.waiting_until = None
        keep_state(link, receiver)
        source_filter = link.source.filter
        source_filter.clear()
        source_filter.put_map()
        source_filter.enter()
        source_filter.put_symbol(symbol(SESSION_FILTER))
        source_filter.put_string(session.session_id)
        source_filter.exit()
        link.properties = {symbol(LOCKED_UNTIL_UTC): dotnet_ticks(session.locked_until)}
        link.open()

    def link_closed(self, link: Link) -> None:
        """Locks outlive the link, as in Service Bus: they expire and count as a delivery. A
        session lock does not: closing the session receiver ends it."""
        receiver = state_of(link, ReceiverLink)
        if receiver is None:
            return
        receiver.waiting_until = None
        session = receiver.session
        if session is not None and session.holder is receiver:
            receiver.entity.unlock_session(session, self.broker.clock())

    # ------------------------------------------------------------ incoming messages
    def transfer(self, path: str, data: bytes) -> Refusal | None:
        """Send a message or batch to a queue or topic; a batch is refused whole when one of
        its messages is."""
        broker = self.broker
        messages = []
        for encoded in split_batch(data):
            message = BrokerMessage()
            message.decode(encoded)
            refusal = broker.refusal(path, message)
            if refusal is not None:
                return Refusal(ErrorCondition.NOT_ALLOWED, refusal)
            messages.append(message)
        now = broker.clock()
        for message in messages:
            broker.send(path, message, now=now)
        return None

    # ------------------------------------------------------------ delivering
    def pump(self, link: Link) -> None:
        receiver = state_of(link, ReceiverLink)
        if receiver is None:
            return
        if receiver.waiting_until is not None:
            self._serve_waiting(link, receiver)
            return
        session = receiver.session
        if session is not None and session.holder is not receiver:
            # The session lock expired: Service Bus detaches its receiver.
            link.condition = amqp_error(
                SESSION_LOCK_LOST,
                f"The session lock has expired on the MessageSession '{session.session_id}'."
                " Accept a new MessageSession.",
            )
            link.close()
            return
        if link.credit <= 0:
            return
        entity, peek_lock = receiver.entity, receiver.peek_lock
        now = self.broker.clock()
        while link.credit > 0:
            stored = entity.take(now, lock=peek_lock, session=session)
            if stored is None:
                break
            token = stored.lock_token or uuid.uuid4()
            delivery = link.delivery(token.bytes_le)
            # proton reads tags back as UTF-8 text, so the token travels as an attribute.
            delivery.emulator_token = token
            link.send(stored.outgoing_bytes())
            link.advance()
            if not peek_lock:
                delivery.settle()

    def _serve_waiting(self, link: Link, receiver: ReceiverLink) -> None:
        """Give a next-available receiver a session that has become free, or refuse it with
        ``com.microsoft:timeout`` once its wait is over (the SDK's OperationTimeoutError)."""
        assert receiver.waiting_until is not None
        now = self.broker.clock()
        session = receiver.entity.lock_session(None, receiver, now)
        if session is not None:
            self._accept_session(link, receiver, session)
        elif now >= receiver.waiting_until:
            receiver.waiting_until = None
            refuse(
                link,
                OPERATION_TIMEOUT,
                "The operation did not complete within the allotted timeout: "
                f"no session of '{receiver.entity.path}' is available.",
            )

    # ------------------------------------------------------------ settlement
    def disposition(self, delivery: Delivery) -> None:
        """Apply a receiver's outcome. An outcome the client settled itself (pre-settled: the
        SDK releases so the messages that reach an idle receiver, see
        ``enhanced_message_received`` in its ``_transport/_pyamqp_transport.py``) is applied
        too, at once; it only gets no disposition back."""
        token: uuid.UUID | None = getattr(delivery, "emulator_token", None)
        receiver = state_of(delivery.link, ReceiverLink)
        if token is None or receiver is None:
            delivery.settle()
            return
        session = receiver.session
        if session is not None and (
            session.holder is not receiver or token not in session.locked_tokens
        ):
            # The session lock ended before this settlement (the SDK's SessionLockLostError).
            delivery.local.condition = amqp_error(
                SESSION_LOCK_LOST,
                f"The session lock has expired on the MessageSession '{session.session_id}'.",
            )
            finish(delivery, Delivery.REJECTED)
            return
        state = delivery.remote_state
        entity, now = receiver.entity, self.broker.clock()
        applied = True
        if state == Delivery.ACCEPTED:
            applied = entity.settle(token, Settlement.COMPLETE, now)
        elif state == Delivery.RELEASED:
            entity.settle(token, Settlement.RELEASE, now)  # a gone lock has nothing to release
        elif state == Delivery.MODIFIED:
            remote = delivery.remote
            outcome = Settlement.DEFER if remote.undeliverable else Settlement.ABANDON
            applied = entity.settle(token, outcome, now)
            delivery.local.failed = remote.failed
            delivery.local.undeliverable = remote.undeliverable
        elif state == Delivery.REJECTED:
            condition = delivery.remote.condition
            info = dict(condition.info or {}) if condition is not None else {}
            applied = entity.settle(
                token,
                Settlement.DEAD_LETTER,
                now,
                reason=text(info.get(_DEAD_LETTER_REASON, info.get(DEAD_LETTER_REASON))),
                description=text(
                    info.get(_DEAD_LETTER_DESCRIPTION, info.get(DEAD_LETTER_DESCRIPTION))
                ),
            )
        if not applied:
            # The lock expired (the message went back) or the message was settled already:
            # Service Bus rejects the settlement with message-lock-lost, which the SDK raises
            # as MessageLockLostError (``check_disposition_outcome``, _pyamqp/receiver.py).
            delivery.local.condition = amqp_error(MESSAGE_LOCK_LOST, LOCK_LOST_DESCRIPTION)
            finish(delivery, Delivery.REJECTED)
            return
        finish(delivery, state)

    # ------------------------------------------------------------ management
    def management(self, entity: str, properties: dict[str, Any], body: Any) -> ManagementReply:
        operation = str(properties.get("operation", ""))
        run = OPERATIONS.get(operation)
        if run is None:
            return ManagementReply(
                400, properties={"statusDescription": f"operation {operation} not supported"}
            )
        stores = operation in SENDING_OPERATIONS
        try:
            status, reply = run(self.broker, entity, body)
        except ManagementError as error:
            return ManagementReply(
                error.status,
                properties={
                    "errorCondition": symbol(error.condition),
                    "statusDescription": error.description,
                },
                stores_messages=stores,
            )
        return ManagementReply(status, reply, stores_messages=stores)

    # ------------------------------------------------------------ time and snapshots
    def sweep(self) -> None:
        self.broker.sweep()

    def snapshot(self) -> dict[str, Any]:
        return servicebus_state(self.broker)

    def restore(self, state: dict[str, Any], source: str) -> None:
        restore_servicebus(self.broker, state, source)


def _not_found(path: str) -> str:
    return f"The messaging entity '{path}' could not be found."


def _peek_lock(link: Link) -> bool:
    """A receiver that does not settle before sending (receive-and-delete does) reads in
    peek-lock."""
    return bool(link.remote_snd_settle_mode != Link.SND_SETTLED)


def _session_filter(link: Link) -> tuple[bool, str | None]:
    """Whether the receiver's source filter asks for a session
    (``com.microsoft:session-filter``), and which one (None: the next available)."""
    for key, item in remote_filter(link).items():
        if str(key) == SESSION_FILTER:
            described = getattr(item, "value", item)
            return True, None if described is None else text(described)
    return False, None


__all__ = ["ReceiverLink", "ServiceBusHandler"]
