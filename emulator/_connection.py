"""One client connection: a python-qpid-proton engine driven from the emulator's own loop.

proton's Transport is fed and drained by hand (never by proton's reactor) so that every frame
can be rewritten on its way: what the client sends through
:class:`emulator._incoming.DeliveryIdRenumberer`, what proton writes through
:class:`emulator._frames.FramePadder`. Sockets never block the loop thread: what a peer cannot
take yet waits, and a peer that stops reading costs only its own connection.

The engine's events are dispatched to one ``on_*`` method each. This module serves what every
namespace has alike: SASL ANONYMOUS, sessions, the ``$cbs`` node (any token is accepted: it
is a local emulator), the request and reply links of ``$management`` nodes, the message size
limit. Everything that depends on the broker is the namespace's
:class:`emulator._handler.BrokerHandler`'s. A connection whose bytes or events fail is closed;
the others go on.
"""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Callable, Iterator
from typing import Protocol

from proton import (
    Collector,
    Connection,
    Delivery,
    Endpoint,
    Event,
    EventType,
    Link,
    Message,
    Transport,
)

from ._amqp import ErrorCondition
from ._frames import FramePadder
from ._handler import BrokerHandler, ManagementReply
from ._incoming import DeliveryIdRenumberer
from ._links import amqp_error, open_for_transfers, replenish_credit

logger = logging.getLogger(__name__)

OUTBOUND_LIMIT = 128 * 1024 * 1024
"""Bytes that may wait for a peer that does not read before its connection is dropped (its
locked messages come back when their locks expire, as after any lost connection)."""

MAX_FRAME_SIZE = 1024 * 1024
INCOMING_WINDOW_FRAMES = 5000
"""The AMQP session's incoming window, in frames. proton derives the window from the session's
byte capacity (capacity / max frame size), so the 10 MB it had gave 10 frames, which twenty
concurrent sends of the async SDK overran (Microsoft's ``session_pool_receive_async.py``
sample: the SDK's handler failed). The SDK's own sessions announce 65,536 frames
(``INCOMING_WINDOW`` in ``_pyamqp/constants.py``); 5,000 is far more than its concurrent
operations put in flight. The capacity only bounds what proton may buffer; every transfer is
read out as it arrives."""

CBS = "$cbs"
MANAGEMENT_SUFFIX = "$management"
CBS_ACCEPTED = 202


class Namespace(Protocol):
    """What a connection needs of the namespace it belongs to (``_server.NamespaceServer``)."""

    name: str
    handler: BrokerHandler
    unsaved_sends: bool
    """Set when a send is about to be acknowledged: saved before the acknowledgement leaves."""

    def persist(self, *, durable_only: bool = False) -> None: ...

    def forget(self, connection: AmqpConnection) -> None: ...

    def wake(self) -> None: ...

    def touched(self) -> None: ...

    def watch_writes(self, connection: AmqpConnection, on: bool) -> None: ...


def entity_path(address: str) -> str:
    """``amqps://host:port/queue`` or ``queue`` -> ``queue``."""
    if "://" in address:
        rest = address.split("://", 1)[1]
        address = rest.split("/", 1)[1] if "/" in rest else ""
    return address.strip("/")


def is_control(path: str) -> bool:
    """The ``$cbs`` node or a ``$management`` node, which the connection code serves."""
    return path == CBS or path.endswith(MANAGEMENT_SUFFIX)


class AmqpConnection:
    """One accepted socket, its proton engine, and the links of its sessions."""

    def __init__(self, namespace: Namespace, sock: socket.socket) -> None:
        self.namespace = namespace
        self.handler = namespace.handler
        self.socket = sock
        self.connection = Connection()
        self.collector = Collector()
        self.connection.collect(self.collector)
        self.transport = Transport(Transport.SERVER)
        self.transport.max_frame_size = MAX_FRAME_SIZE
        sasl = self.transport.sasl()
        sasl.allowed_mechs("ANONYMOUS")
        self.transport.bind(self.connection)
        self.padder = FramePadder()
        self.renumberer = DeliveryIdRenumberer()
        self.outbound = b""
        """Bytes written by the engine that the socket has not taken yet."""
        self.inbound = b""
        """Bytes read and renumbered that the engine has not taken yet."""
        self.closing = False
        self.closed = False
        self.writes_watched = False
        self.reply_links: dict[str, Link] = {}
        """Links the management replies go out on, by the node's path and by their address."""
        self._on: dict[EventType, Callable[[Event], None]] = {
            Event.CONNECTION_REMOTE_OPEN: self.on_connection_remote_open,
            Event.SESSION_REMOTE_OPEN: self.on_session_remote_open,
            Event.LINK_REMOTE_OPEN: self.on_link_remote_open,
            Event.LINK_FLOW: self.on_link_flow,
            Event.DELIVERY: self.on_delivery,
            Event.LINK_REMOTE_CLOSE: self.on_link_remote_close,
            Event.SESSION_REMOTE_CLOSE: self.on_session_remote_close,
            Event.CONNECTION_REMOTE_CLOSE: self.on_connection_remote_close,
        }

    # ------------------------------------------------------------ I/O
    def readable(self) -> None:
        # The engine takes at most capacity() bytes at a time; a large transfer arrives in
        # several reads, each processed before the next so the engine's buffer drains.
        capacity = self.transport.capacity()
        if capacity == 0:
            self.process()
            capacity = self.transport.capacity()
        if capacity < 0:  # the engine has stopped reading (closed or failed)
            self.close()
            return
        if capacity == 0:
            return
        try:
            data = self.socket.recv(capacity)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self.transport.close_tail()
            self.process()
            return
        # Renumbering can make a frame a few bytes longer than what was read: push what the
        # engine takes, process, push the rest.
        self.inbound += self.renumberer.feed(data)
        self.push_inbound()
        self.process()

    def push_inbound(self) -> None:
        """Hand the engine what was read and renumbered, as much as it takes (the loop calls
        this again on its next pass when the engine was full)."""
        while self.inbound:
            room = self.transport.capacity()
            if room <= 0:
                return
            self.transport.push(self.inbound[:room])
            self.inbound = self.inbound[room:]
            self.process()

    def flush(self) -> None:
        """Move what the engine wrote to the socket without ever blocking the loop thread: what
        the peer cannot take now waits in :attr:`outbound` and goes when the socket is writable
        (the loop watches it meanwhile). A peer that stops reading costs only its own
        connection, dropped once :data:`OUTBOUND_LIMIT` bytes wait for it."""
        while True:
            pending = self.transport.pending()
            if pending <= 0:
                break
            data = bytes(self.transport.peek(pending))
            self.transport.pop(len(data))
            self.outbound += self.padder.feed(data)
        # Done when the engine closed, or it stopped reading (the peer hung up or sent bytes it
        # rejected): close once everything it had to say, its error included, is written.
        if self.transport.closed or pending < 0 or self.transport.capacity() < 0:
            self.closing = True
        self.writable()

    def writable(self) -> None:
        """Send what waits in :attr:`outbound`, as much as the socket takes now."""
        while self.outbound and not self.closed:
            try:
                sent = self.socket.send(self.outbound)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self.close()
                return
            self.outbound = self.outbound[sent:]
        if self.closed:
            return
        if self.outbound and len(self.outbound) > OUTBOUND_LIMIT:
            logger.warning(
                "dropping a connection to namespace '%s' that has not read %d bytes",
                self.namespace.name,
                len(self.outbound),
            )
            self.close()
            return
        if not self.outbound and self.closing:
            self.close()
            return
        self.namespace.watch_writes(self, bool(self.outbound))

    def close(self) -> None:
        if not self.closed:
            # What the connection's receivers held ends with it (a session lock, a wait).
            for link in list(self.links()):
                self.handler.link_closed(link)
            self.closed = True
            self.namespace.forget(self)
            self.socket.close()

    # ------------------------------------------------------------ events
    def process(self) -> None:
        """Handle the engine's events, move every link forward, write what it says."""
        try:
            while (event := self.collector.peek()) is not None:
                on = self._on.get(event.type)
                if on is not None:
                    on(event)
                self.collector.pop()
        except Exception:
            logger.exception("closing a connection after an error")
            self.transport.close_tail()
            self.transport.close_head()
        self.pump_all()
        # Acknowledgements of sends are in the outgoing frames: save before they leave.
        self.namespace.persist(durable_only=True)
        self.flush()

    def on_connection_remote_open(self, event: Event) -> None:
        self.connection.container = "emulator"
        self.connection.open()

    def on_session_remote_open(self, event: Event) -> None:
        event.session.incoming_capacity = INCOMING_WINDOW_FRAMES * MAX_FRAME_SIZE
        event.session.open()

    def on_link_remote_open(self, event: Event) -> None:
        link = event.link
        link.source.copy(link.remote_source)
        link.target.copy(link.remote_target)
        link.snd_settle_mode = link.remote_snd_settle_mode
        link.rcv_settle_mode = link.remote_rcv_settle_mode
        link.max_message_size = self.handler.max_message_size
        address = (link.remote_source if link.is_sender else link.remote_target).address or ""
        path = entity_path(address)
        if not is_control(path):
            self.handler.open_link(link, path)
        elif link.is_sender:
            self.reply_links[path.lower()] = link
            self.reply_links[(link.remote_target.address or "").lower()] = link
            link.open()
        else:
            open_for_transfers(link)

    def on_link_flow(self, event: Event) -> None:
        link = event.link
        if link.is_sender and not link.state & Endpoint.LOCAL_CLOSED:
            self.handler.pump(link)

    def on_delivery(self, event: Event) -> None:
        delivery = event.delivery
        if delivery.link.is_receiver:
            self.incoming(delivery)
        elif delivery.updated or delivery.settled:
            self.handler.disposition(delivery)

    def on_link_remote_close(self, event: Event) -> None:
        self.handler.link_closed(event.link)
        event.link.close()

    def on_session_remote_close(self, event: Event) -> None:
        event.session.close()

    def on_connection_remote_close(self, event: Event) -> None:
        self.connection.close()

    def links(self) -> Iterator[Link]:
        link = self.connection.link_head(0)
        while link is not None:
            yield link
            link = link.next(0)

    def pump_all(self) -> None:
        """Give every link the emulator sends on, and has not closed, its chance to move."""
        for link in list(self.links()):
            if link.is_sender and not link.state & Endpoint.LOCAL_CLOSED:
                self.handler.pump(link)

    # ------------------------------------------------------------ incoming messages
    def incoming(self, delivery: Delivery) -> None:
        if not delivery.readable or delivery.partial:
            return
        link = delivery.link
        data = bytes(link.recv(delivery.pending))
        link.advance()
        path = entity_path(link.remote_target.address or "")
        if is_control(path):
            request = Message()
            request.decode(data)
            self.management(path, request)
            delivery.update(Delivery.ACCEPTED)
        elif len(data) > self.handler.max_message_size:
            limit = self.handler.max_message_size
            delivery.local.condition = amqp_error(
                ErrorCondition.MESSAGE_SIZE_EXCEEDED,
                f"The message of {len(data)} bytes exceeds the limit of {limit}.",
            )
            delivery.update(Delivery.REJECTED)
        else:
            refusal = self.handler.transfer(path, data)
            if refusal is None:
                delivery.update(Delivery.ACCEPTED)
                self.namespace.unsaved_sends = True
            else:
                delivery.local.condition = amqp_error(refusal.condition, refusal.description)
                delivery.update(Delivery.REJECTED)
        delivery.settle()
        replenish_credit(link)
        self.namespace.wake()

    # ------------------------------------------------------------ CBS and management
    def management(self, path: str, request: Message) -> None:
        """Answer a ``$cbs`` or ``$management`` request on the reply link of its node."""
        if path == CBS:
            status_key, reply = "status-code", ManagementReply(CBS_ACCEPTED)
        else:
            properties = {str(k): v for k, v in (request.properties or {}).items()}
            entity = path.rsplit("/" + MANAGEMENT_SUFFIX, 1)[0]
            status_key = self.handler.status_key
            reply = self.handler.management(entity, properties, request.body)
            if reply.stores_messages:
                self.namespace.unsaved_sends = True
        link = self.reply_links.get((request.reply_to or "").lower()) or self.reply_links.get(
            path.lower()
        )
        if link is None:
            logger.warning("no reply link for %s", path)
            return
        answer = Message()
        answer.correlation_id = request.id
        answer.properties = {**reply.properties, status_key: reply.status}
        if reply.body is not None:
            answer.body = reply.body
        link.delivery(str(uuid.uuid4()).encode())
        link.send(answer.encode())
        link.advance()


__all__ = ["AmqpConnection", "Namespace", "entity_path", "is_control"]
