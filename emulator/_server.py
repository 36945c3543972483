"""The AMQP 1.0 server: one listening socket per namespace, a proton engine per connection.

proton's Transport is driven from our own ``selectors`` loop so that every frame it writes can
be rewritten (:mod:`emulator._frames`). The server accepts any CBS token (it is a local
emulator), offers SASL ANONYMOUS only, and listens on 127.0.0.1 unless told otherwise. A
connection that sends garbage is closed; the others go on.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import threading
import time
import uuid
from typing import Any

from proton import (
    Collector,
    Condition,
    Connection,
    Delivery,
    Endpoint,
    Event,
    Link,
    Message,
    Transport,
    symbol,
)

from ._amqp import Constructor, Section
from ._codec import message_sections as _sections
from ._codec import text
from ._eventhubs import EventHubsBroker
from ._frames import FramePadder
from ._incoming import DeliveryIdRenumberer
from ._management import OPERATIONS, SENDING_OPERATIONS, ManagementError
from ._message import BrokerMessage
from ._persistence import Persistence
from ._servicebus import Broker, Receivable, Settlement, Stored
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

_PARTITION_KEY = symbol("x-opt-partition-key")

BATCH_CREDIT = 300

OUTBOUND_LIMIT = 128 * 1024 * 1024
"""Bytes that may wait for a peer that does not read before its connection is dropped (its
locked messages come back when their locks expire, as after any lost connection)."""

ACCEPT_PAUSE_SECONDS = 0.5
"""How long a namespace stops accepting after an accept failed (out of file descriptors)."""

MAX_FRAME_SIZE = 1024 * 1024
INCOMING_WINDOW_FRAMES = 5000
"""The AMQP session's incoming window, in frames. proton derives the window from the session's
byte capacity (capacity / max frame size), so the 10 MB it had gave 10 frames, which twenty
concurrent sends of the async SDK overran (Microsoft's ``session_pool_receive_async.py``
sample: the SDK's handler failed). The SDK's own sessions announce 65,536 frames
(``INCOMING_WINDOW`` in ``_pyamqp/constants.py``); 5,000 is far more than its concurrent
operations put in flight. The capacity only bounds what proton may buffer; every transfer is
read out as it arrives."""


def _binary(data: bytes, start: int) -> bytes:
    value = start + 3
    if data[value] == Constructor.VBIN8:
        return data[value + 2 : value + 2 + data[value + 1]]
    size = int.from_bytes(data[value + 1 : value + 5], "big")
    return data[value + 5 : value + 5 + size]


def split_batch(data: bytes) -> list[bytes]:
    """The encoded messages of a batch transfer, or ``[data]`` for a single message.

    A batch (transfer message format ``BATCH_MESSAGE_FORMAT``, which proton does not expose) is a
    message whose data sections each hold one complete encoded message, a batch of one included.
    A payload is never mistaken for one: it would have to parse, to its last byte, as AMQP
    message sections.
    """
    try:
        sections = _sections(data)
        bodies = [_binary(data, start) for code, start, _ in sections if code == Section.DATA]
        if bodies and all(_sections(body) for body in bodies):
            return bodies
    except (ValueError, IndexError):
        pass
    return [data]


class _Session:
    """Per-connection state: the links by address for replies."""

    def __init__(self, server: NamespaceServer, sock: socket.socket) -> None:
        self.server = server
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
        self.outbound = b""
        """Bytes written by the engine that the socket has not taken yet."""
        self.closing = False
        self.writes_watched = False
        self.renumberer = DeliveryIdRenumberer()
        self.inbound = b""
        self.reply_links: dict[str, Link] = {}
        self.closed = False
        # Next-available session receivers waiting for a session: (link, entity, deadline).
        self.waiting_for_session: list[tuple[Link, Receivable, float]] = []

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
                self.server.name,
                len(self.outbound),
            )
            self.close()
            return
        if not self.outbound and self.closing:
            self.close()
            return
        if self.server.loop is not None:
            self.server.loop.watch_writes(self, bool(self.outbound))

    def close(self) -> None:
        if not self.closed:
            self.release_sessions()
            self.closed = True
            self.server.forget(self)
            self.socket.close()

    # ------------------------------------------------------------ events
    def process(self) -> None:
        try:
            while (event := self.collector.peek()) is not None:
                self.handle(event)
                self.collector.pop()
        except Exception:
            logger.exception("closing a connection after an error")
            self.transport.close_tail()
            self.transport.close_head()
        self.pump_all()
        # Acknowledgements of sends are in the outgoing frames: save before they leave.
        self.server.persist(durable_only=True)
        self.flush()

    def handle(self, event: Event) -> None:
        kind = event.type
        if kind == Event.CONNECTION_REMOTE_OPEN:
            self.connection.container = "emulator"
            self.connection.open()
        elif kind == Event.SESSION_REMOTE_OPEN:
            event.session.incoming_capacity = INCOMING_WINDOW_FRAMES * MAX_FRAME_SIZE
            event.session.open()
        elif kind == Event.LINK_REMOTE_OPEN:
            self.open_link(event.link)
        elif kind == Event.LINK_FLOW:
            if event.link.is_sender:
                self.pump(event.link)
        elif kind == Event.DELIVERY:
            if event.delivery.link.is_receiver:
                self.incoming(event.delivery)
            else:
                self.disposition(event.delivery)
        elif kind == Event.LINK_REMOTE_CLOSE:
            # Locks outlive the link, as in Service Bus: they expire and count as a delivery.
            # A session lock does not: closing the session receiver ends it.
            self.release_session(event.link)
            event.link.close()
        elif kind == Event.SESSION_REMOTE_CLOSE:
            event.session.close()
        elif kind == Event.CONNECTION_REMOTE_CLOSE:
            self.connection.close()

    def _links(self) -> Any:
        link = self.connection.link_head(0)
        while link is not None:
            yield link
            link = link.next(0)

    # ------------------------------------------------------------ links
    def open_link(self, link: Link) -> None:
        link.source.copy(link.remote_source)
        link.target.copy(link.remote_target)
        link.snd_settle_mode = link.remote_snd_settle_mode
        link.rcv_settle_mode = link.remote_rcv_settle_mode
        address = (link.remote_source if link.is_sender else link.remote_target).address or ""
        path = self.server.entity_path(address)
        link.max_message_size = self.server.max_message_size
        if isinstance(self.server.broker, EventHubsBroker) and not _is_control(path):
            self.open_event_hub_link(link, path)
            return
        if link.is_sender:
            if _is_control(path):
                self.reply_links[path.lower()] = link
                self.reply_links[(link.remote_target.address or "").lower()] = link
                link.open()
                return
            entity = self.server.broker.receivable(path)
            if entity is None:
                self.refuse(link, f"The messaging entity '{path}' could not be found.")
                return
            self.open_receiver_link(link, entity)
            return
        if not (_is_control(path) or self.server.broker.is_sendable(path)):
            self.refuse(link, f"The messaging entity '{path}' could not be found.")
            return
        link.open()
        link.flow(BATCH_CREDIT)

    def open_receiver_link(self, link: Link, entity: Receivable) -> None:
        """A receiver's attach: a plain one, or a session receiver's (source filter
        ``com.microsoft:session-filter``), which gets its session here or waits for one."""
        requested, session_id = _session_filter(link.remote_source.filter)
        if entity.sessions is None:
            if requested:
                self.refuse(
                    link,
                    "It is not possible for an entity that does not require sessions to create "
                    f"a sessionful message receiver ('{entity.path}').",
                    condition="amqp:not-allowed",
                )
                return
            link.open()
            return
        if not requested:
            # Service Bus's InvalidOperationException, which arrives as amqp:not-allowed.
            self.refuse(
                link,
                "It is not possible for an entity that requires sessions to create a "
                f"non-sessionful message receiver ('{entity.path}').",
                condition="amqp:not-allowed",
            )
            return
        now = self.server.broker.clock()
        session = entity.lock_session(session_id, _holder(link), now)
        if session is not None:
            self.accept_session(link, entity, session)
        elif session_id is not None:
            self.refuse(
                link,
                f"The requested session '{session_id}' cannot be accepted. "
                "It may be locked by another receiver.",
                condition=SESSION_CANNOT_BE_LOCKED,
            )
        else:
            # Service Bus holds a next-available attach until a session has messages or the
            # receiver's own timeout (com.microsoft:timeout, ms) passes.
            properties = link.remote_properties or {}
            wait_ms = properties.get(symbol(OPERATION_TIMEOUT))
            wait = DEFAULT_ACCEPT_TIMEOUT if wait_ms is None else int(wait_ms) / 1000
            self.waiting_for_session.append((link, entity, now + wait))

    def accept_session(
        self, link: Link, entity: Receivable, session: MessageSession[Stored]
    ) -> None:
        """Answer a session receiver's attach: the session id in the source filter and the
        lock's end in ``com.microsoft:locked-until-utc``, which the SDK reads in
        ``PyamqpTransport.on_attach`` (``_transport/_pyamqp_transport.py``)."""
        link.emulator_message_session = session
        link.emulator_entity = entity
        source_filter = link.source.filter
        source_filter.clear()
        source_filter.put_map()
        source_filter.enter()
        source_filter.put_symbol(symbol(SESSION_FILTER))
        source_filter.put_string(session.session_id)
        source_filter.exit()
        link.properties = {symbol(LOCKED_UNTIL_UTC): dotnet_ticks(session.locked_until)}
        link.open()

    def serve_waiting_receivers(self) -> None:
        """Give next-available receivers a session that has become free, or refuse them with
        ``com.microsoft:timeout`` once their wait is over (the SDK's OperationTimeoutError)."""
        if not self.waiting_for_session:
            return
        now = self.server.broker.clock()
        still_waiting = []
        for link, entity, deadline in self.waiting_for_session:
            if link.state & Endpoint.REMOTE_CLOSED:
                link.close()
                continue
            session = entity.lock_session(None, _holder(link), now)
            if session is not None:
                self.accept_session(link, entity, session)
            elif now >= deadline:
                self.refuse(
                    link,
                    "The operation did not complete within the allotted timeout: "
                    f"no session of '{entity.path}' is available.",
                    condition=OPERATION_TIMEOUT,
                )
            else:
                still_waiting.append((link, entity, deadline))
        self.waiting_for_session = still_waiting

    def release_session(self, link: Link) -> None:
        """End the session lock ``link`` holds, if any (its receiver closed)."""
        session: MessageSession[Stored] | None = getattr(link, "emulator_message_session", None)
        entity: Receivable | None = getattr(link, "emulator_entity", None)
        if session is not None and entity is not None and session.holder is _holder(link):
            entity.unlock_session(session, self.server.broker.clock())

    def release_sessions(self) -> None:
        """The connection is gone: its receivers' session locks end with it."""
        self.waiting_for_session = []
        for link in list(self._links()):
            self.release_session(link)

    def open_event_hub_link(self, link: Link, path: str) -> None:
        broker = self.server.broker
        hub, group, partition = broker.resolve(path)
        if hub is None:
            self.refuse(link, f"The messaging entity '{path}' could not be found.")
            return
        if partition is not None and not (
            partition.isdigit() and int(partition) < len(hub.partitions)
        ):
            self.refuse(link, f"The partition '{partition}' of '{hub.name}' could not be found.")
            return
        if link.is_sender:
            if group not in hub.consumer_groups or partition is None:
                self.refuse(link, f"The consumer group '{group}' could not be found.")
                return
            accepted, evicted = broker.owners.claim(
                (hub.name, group, partition), _owner_level(link), link, _is_open
            )
            if not accepted:
                self.refuse(
                    link,
                    f"A receiver with a higher owner level holds partition {partition} of "
                    f"'{hub.name}' for consumer group '{group}'.",
                    condition="amqp:link:stolen",
                )
                return
            for other in evicted:
                other.condition = _error(
                    "amqp:link:stolen",
                    f"A receiver with a higher or equal owner level took partition {partition}.",
                )
                other.close()
            link.emulator_partition = hub.partitions[int(partition)]
            link.emulator_index = link.emulator_partition.start_index(
                _selector(link.remote_source.filter)
            )
            link.open()
            return
        link.open()
        link.flow(BATCH_CREDIT)

    def refuse(self, link: Link, description: str, condition: str = "amqp:not-found") -> None:
        link.open()
        link.condition = _error(condition, description)
        link.close()

    # ------------------------------------------------------------ incoming messages
    def incoming(self, delivery: Delivery) -> None:
        if not delivery.readable or delivery.partial:
            return
        link = delivery.link
        data = bytes(link.recv(delivery.pending))
        link.advance()
        address = self.server.entity_path(link.remote_target.address or "")
        if address == "$cbs" or address.endswith("$management"):
            request = Message()
            request.decode(data)
            self.management(address, request)
            delivery.update(Delivery.ACCEPTED)
        elif len(data) > self.server.max_message_size:
            limit = self.server.max_message_size
            delivery.local.condition = _error(
                "amqp:link:message-size-exceeded",
                f"The message of {len(data)} bytes exceeds the limit of {limit}.",
            )
            delivery.update(Delivery.REJECTED)
        elif isinstance(self.server.broker, EventHubsBroker):
            self.publish_events(address, data)
            delivery.update(Delivery.ACCEPTED)
            self.server.unsaved_sends = True
        else:
            self.publish_messages(address, data, delivery)
        delivery.settle()
        if link.credit < BATCH_CREDIT // 2:
            link.flow(BATCH_CREDIT - link.credit)
        self.server.wake()

    def publish_messages(self, address: str, data: bytes, delivery: Delivery) -> None:
        """Send a message or batch to a queue or topic; a batch is refused whole when one of
        its messages is (e.g. no SessionId for a session queue: amqp:not-allowed, which the
        SDK raises as ServiceBusError, as for Service Bus's InvalidOperationException)."""
        broker = self.server.broker
        now = broker.clock()
        messages = []
        for encoded in split_batch(data):
            message = BrokerMessage()
            message.decode(encoded)
            refusal = broker.refusal(address, message)
            if refusal is not None:
                delivery.local.condition = _error("amqp:not-allowed", refusal)
                delivery.update(Delivery.REJECTED)
                return
            messages.append(message)
        for message in messages:
            broker.send(address, message, now=now)
        delivery.update(Delivery.ACCEPTED)
        self.server.unsaved_sends = True

    def publish_events(self, address: str, data: bytes) -> None:
        broker = self.server.broker
        hub, _, partition = broker.resolve(address)
        outer = Message()
        annotation_sections = [
            data[a:b] for code, a, b in _sections(data) if code == Section.MESSAGE_ANNOTATIONS
        ]
        if annotation_sections:
            outer.decode(annotation_sections[0])
        outer_key = (outer.annotations or {}).get(_PARTITION_KEY)
        now = broker.clock()
        for encoded in split_batch(data):
            message = BrokerMessage()
            message.decode(encoded)
            key = (message.annotations or {}).get(_PARTITION_KEY, outer_key)
            hub.publish(message, partition_id=partition,
                        partition_key=None if key is None else text(key), now=now)  # fmt: skip

    # ------------------------------------------------------------ delivering
    def pump_all(self) -> None:
        self.serve_waiting_receivers()
        for link in list(self._links()):
            if not (link.is_sender and link.state & Endpoint.LOCAL_ACTIVE):
                continue
            session = getattr(link, "emulator_message_session", None)
            if session is not None and session.holder is not _holder(link):
                # The session lock expired: Service Bus detaches its receiver.
                link.condition = _error(
                    SESSION_LOCK_LOST,
                    f"The session lock has expired on the MessageSession '{session.session_id}'."
                    " Accept a new MessageSession.",
                )
                link.close()
            elif link.credit > 0:
                self.pump(link)

    def pump(self, link: Link) -> None:
        partition = getattr(link, "emulator_partition", None)
        if partition is not None:
            index = link.emulator_index
            while link.credit > 0 and index < len(partition.events):
                delivery = link.delivery(str(index).encode())
                # The receiver runtime metric goes with every event: proton's Python binding
                # does not expose the link capability a client asks for it with, and the SDKs
                # read it only when told to track it.
                link.send(partition.events[index].outgoing_bytes(last=partition.events[-1]))
                link.advance()
                if link.remote_snd_settle_mode == Link.SND_SETTLED:
                    delivery.settle()
                index += 1
            link.emulator_index = index
            return
        if not isinstance(self.server.broker, Broker):
            return
        address = link.remote_source.address or ""
        path = self.server.entity_path(address)
        entity = self.server.broker.receivable(path)
        if entity is None:
            return
        lock = link.remote_snd_settle_mode != Link.SND_SETTLED
        now = self.server.broker.clock()
        session: MessageSession[Stored] | None = getattr(link, "emulator_message_session", None)
        while link.credit > 0:
            stored = entity.take(now, lock=lock, session=session)
            if stored is None:
                break
            token = stored.lock_token or uuid.uuid4()
            delivery = link.delivery(token.bytes_le)
            # proton reads tags back as UTF-8 text, so the token travels as an attribute.
            delivery.emulator_token = token
            link.send(stored.outgoing_bytes())
            link.advance()
            if not lock:
                delivery.settle()

    def disposition(self, delivery: Delivery) -> None:
        """Apply a receiver's outcome. An outcome the client settled itself (pre-settled: the
        SDK releases so the messages that reach an idle receiver, see
        ``enhanced_message_received`` in its ``_transport/_pyamqp_transport.py``) is applied
        too, at once; it only gets no disposition back."""
        if not delivery.updated and not delivery.settled:
            return
        link = delivery.link
        if isinstance(self.server.broker, EventHubsBroker):
            _finish(delivery, delivery.remote_state)
            return
        entity = self.server.broker.receivable(
            self.server.entity_path(link.remote_source.address or "")
        )
        state = delivery.remote_state
        token = getattr(delivery, "emulator_token", None)
        if token is None:
            delivery.settle()
            return
        session: MessageSession[Stored] | None = getattr(link, "emulator_message_session", None)
        if session is not None and (
            session.holder is not _holder(link) or token not in session.locked_tokens
        ):
            # The session lock ended before this settlement (the SDK's SessionLockLostError).
            delivery.local.condition = _error(
                SESSION_LOCK_LOST,
                f"The session lock has expired on the MessageSession '{session.session_id}'.",
            )
            _finish(delivery, Delivery.REJECTED)
            return
        now = self.server.broker.clock()
        if entity is not None:
            if state == Delivery.ACCEPTED:
                entity.settle(token, Settlement.COMPLETE, now)
            elif state == Delivery.RELEASED:
                entity.settle(token, Settlement.RELEASE, now)
            elif state == Delivery.MODIFIED:
                remote = delivery.remote
                outcome = Settlement.DEFER if remote.undeliverable else Settlement.ABANDON
                entity.settle(token, outcome, now)
                delivery.local.failed = remote.failed
                delivery.local.undeliverable = remote.undeliverable
            elif state == Delivery.REJECTED:
                condition = delivery.remote.condition
                info = dict(condition.info or {}) if condition is not None else {}
                entity.settle(
                    token,
                    Settlement.DEAD_LETTER,
                    now,
                    reason=text(info.get(symbol("DeadLetterReason"), info.get("DeadLetterReason"))),
                    description=text(
                        info.get(
                            symbol("DeadLetterErrorDescription"),
                            info.get("DeadLetterErrorDescription"),
                        )
                    ),
                )
        _finish(delivery, state)

    # ------------------------------------------------------------ CBS and management
    def management(self, address: str, request: Message) -> None:
        properties = {str(k): v for k, v in (request.properties or {}).items()}
        operation = str(properties.get("operation", ""))
        reply = Message()
        reply.correlation_id = request.id
        status_key = "status-code" if address == "$cbs" else "statusCode"
        status, body = 200, None
        if address == "$cbs":
            status = 202
        elif isinstance(self.server.broker, EventHubsBroker):
            status_key = "status-code"
            status, body = self.read_event_hub(properties)
        elif operation in OPERATIONS:
            entity = address.rsplit("/$management", 1)[0]
            try:
                status, body = OPERATIONS[operation](self.server.broker, entity, request.body)
            except ManagementError as error:
                status, body = error.status, None
                reply.properties = {
                    "errorCondition": symbol(error.condition),
                    "statusDescription": error.description,
                }
            if operation in SENDING_OPERATIONS:
                self.server.unsaved_sends = True
        else:
            status, body = 400, None
            reply.properties = {"statusDescription": f"operation {operation} not supported"}
        reply.properties = {**(reply.properties or {}), status_key: status}
        if body is not None:
            reply.body = body
        link = self.reply_links.get((request.reply_to or "").lower()) or self.reply_links.get(
            address.lower()
        )
        if link is None:
            logger.warning("no reply link for %s", address)
            return
        link.delivery(str(uuid.uuid4()).encode())
        link.send(reply.encode())
        link.advance()

    def read_event_hub(self, properties: dict[str, Any]) -> tuple[int, Any]:
        hub = self.server.broker.hubs.get(str(properties.get("name", "")).lower())
        if hub is None:
            return 404, None
        if str(properties.get("type")) == "com.microsoft:partition":
            partition = str(properties.get("partition", ""))
            if not partition.isdigit() or int(partition) >= len(hub.partitions):
                return 404, None
            return 200, hub.partitions[int(partition)].properties(hub.name)
        return 200, hub.properties()


def _finish(delivery: Delivery, state: Any) -> None:
    """Settle ``delivery`` with ``state``; a delivery the client already settled gets no
    disposition back, only our side of the settlement."""
    if not delivery.settled:
        delivery.update(state)
    delivery.settle()


def _error(condition: str, description: str) -> Condition:
    """An AMQP error as Service Bus writes it, info map included: the SDK reads the info field
    positionally, and proton leaves an empty one out."""
    return Condition(
        condition, description, {symbol("com.microsoft:tracking-id"): str(uuid.uuid4())}
    )


_EPOCH = symbol("com.microsoft:epoch")


def _owner_level(link: Link) -> int | None:
    """The ``com.microsoft:epoch`` attach property the SDKs send for ``owner_level``."""
    properties = link.remote_properties or {}
    level = properties.get(_EPOCH, properties.get("com.microsoft:epoch"))
    return None if level is None else int(level)


def _is_open(link: Link) -> bool:
    return not link.state & Endpoint.LOCAL_CLOSED and not link.state & Endpoint.REMOTE_CLOSED


def _is_control(path: str) -> bool:
    return path == "$cbs" or path.endswith("$management")


def _holder(link: Link) -> object:
    """The identity of a receiver link as a session's holder: proton hands out a new wrapper
    object per event, so the link's own identity cannot serve; attributes do persist."""
    holder = getattr(link, "emulator_holder", None)
    if holder is None:
        holder = link.emulator_holder = object()
    return holder


def _session_filter(filter_data: Any) -> tuple[bool, str | None]:
    """Whether a source filter asks for a session (``com.microsoft:session-filter``), and
    which one (None: the next available)."""
    try:
        filter_data.rewind()
        if not filter_data.next():
            return False, None
        value = filter_data.get_object()
    except Exception:
        return False, None
    for key, item in (value or {}).items():
        if str(key) == SESSION_FILTER:
            described = getattr(item, "value", item)
            return True, None if described is None else text(described)
    return False, None


def _selector(filter_data: Any) -> str | None:
    """The ``apache.org:selector-filter:string`` expression of a source filter, if any."""
    try:
        filter_data.rewind()
        if not filter_data.next():
            return None
        value = filter_data.get_object()
    except Exception:
        return None
    for item in (value or {}).values():
        described = getattr(item, "value", item)
        if isinstance(described, str) and "amqp.annotation" in described:
            return described
    return None


class NamespaceServer:
    """One namespace on one port."""

    def __init__(self, name: str, broker: Any, host: str, port: int) -> None:
        self.name = name
        self.broker = broker
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((host, port))
        self.listener.listen(64)
        self.listener.setblocking(False)
        self.port: int = self.listener.getsockname()[1]
        self.sessions: dict[socket.socket, _Session] = {}
        self.loop: EmulatorLoop | None = None
        self.persistence: Persistence | None = None
        self.unsaved_sends = False
        self.max_message_size: int = broker.max_message_size
        self.accept_paused_until: float | None = None
        """Set while accepting is paused after a failure (see :meth:`accept`)."""

    def persist(self, *, durable_only: bool = False) -> None:
        """Save the namespace if it has a data directory: always after sends that are about
        to be acknowledged; other changes at most once a second (``durable_only=False``)."""
        if self.persistence is None:
            return
        if self.unsaved_sends:
            self.persistence.save_now()
            self.unsaved_sends = False
        elif not durable_only:
            self.persistence.tick()

    def entity_path(self, address: str) -> str:
        """``amqps://host:port/queue`` or ``queue`` -> ``queue``."""
        if "://" in address:
            address = (
                address.split("://", 1)[1].split("/", 1)[1]
                if "/" in address.split("://", 1)[1]
                else ""
            )
        return address.strip("/")

    def accept(self, selector: selectors.BaseSelector) -> None:
        try:
            sock, _ = self.listener.accept()
        except BlockingIOError:
            return
        except OSError as error:
            # Out of file descriptors (EMFILE/ENFILE) or another transient failure: the
            # connection waits in the listen backlog. Stop watching the listener for a moment
            # (it would be readable, and fail, on every pass) and keep serving the others.
            logger.warning("namespace '%s' cannot accept a connection now: %s", self.name, error)
            selector.unregister(self.listener)
            self.accept_paused_until = time.monotonic() + ACCEPT_PAUSE_SECONDS
            return
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        session = _Session(self, sock)
        self.sessions[sock] = session
        selector.register(sock, selectors.EVENT_READ, session)
        session.process()

    def forget(self, session: _Session) -> None:
        self.sessions.pop(session.socket, None)
        if self.loop is not None:
            self.loop.unregister(session.socket)

    def wake(self) -> None:
        if self.loop is not None:
            self.loop.pending_pump = True

    def connection_string(self, advertised_host: str = "localhost") -> str:
        return (
            f"Endpoint=sb://{advertised_host}:{self.port};SharedAccessKeyName="
            "RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;"
        )


class EmulatorLoop:
    """The single thread that serves every namespace."""

    def __init__(self, servers: list[NamespaceServer]) -> None:
        self.servers = servers
        self.selector = selectors.DefaultSelector()
        self.stopping = threading.Event()
        self.pending_pump = False
        for server in servers:
            server.loop = self
            self.selector.register(server.listener, selectors.EVENT_READ, server)

    def watch_writes(self, session: _Session, on: bool) -> None:
        """Watch ``session``'s socket for writability while it has bytes waiting."""
        if session.writes_watched == on or session.closed:
            return
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if on else 0)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.modify(session.socket, events, session)
            session.writes_watched = on

    def unregister(self, sock: socket.socket) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(sock)

    def run(self) -> None:
        last_sweep = 0.0
        while not self.stopping.is_set():
            for key, events in self.selector.select(timeout=0.05):
                target = key.data
                if isinstance(target, NamespaceServer):
                    target.accept(self.selector)
                    continue
                try:
                    if events & selectors.EVENT_WRITE:
                        target.writable()
                    if not events & selectors.EVENT_READ or target.closed:
                        continue
                    if target.server.persistence is not None:
                        target.server.persistence.touch()
                    target.readable()
                except Exception:
                    # One peer's bad bytes cost that peer its connection, nobody else theirs.
                    logger.exception("dropping a connection after an engine error")
                    target.close()
            now = time.monotonic()
            for server in self.servers:
                if server.accept_paused_until is not None and now >= server.accept_paused_until:
                    server.accept_paused_until = None
                    self.selector.register(server.listener, selectors.EVENT_READ, server)
            if self.pending_pump or now - last_sweep > 0.1:
                self.pending_pump = False
                last_sweep = now
                for server in self.servers:
                    server.broker.sweep()
                    server.persist()
                    for session in list(server.sessions.values()):
                        session.push_inbound()
                        session.transport.tick(now)
                        session.pump_all()
                        session.flush()
        for server in self.servers:
            for session in list(server.sessions.values()):
                session.close()
            server.listener.close()
            if server.persistence is not None:
                server.persistence.save_now()
        self.selector.close()
