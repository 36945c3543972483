"""The AMQP 1.0 server: one listening socket per namespace, one thread for them all.

Each namespace listens on its own port (127.0.0.1 unless told otherwise) and has one
:class:`emulator._handler.BrokerHandler` for its broker; each accepted socket becomes an
:class:`emulator._connection.AmqpConnection`. :class:`EmulatorLoop` serves every socket of
every namespace from one ``selectors`` loop and, about ten times a second (at once after a
send), lets the brokers expire what has expired and every link move.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import threading
import time

from ._connection import AmqpConnection
from ._handler import BrokerHandler
from ._persistence import Persistence

logger = logging.getLogger(__name__)

ACCEPT_PAUSE_SECONDS = 0.5
"""How long a namespace stops accepting after an accept failed (out of file descriptors)."""

SWEEP_SECONDS = 0.1
"""How often the loop sweeps when nothing asks for it sooner."""


class NamespaceServer:
    """One namespace on one port."""

    def __init__(self, name: str, handler: BrokerHandler, host: str, port: int) -> None:
        self.name = name
        self.handler = handler
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((host, port))
        self.listener.listen(64)
        self.listener.setblocking(False)
        self.port: int = self.listener.getsockname()[1]
        self.connections: dict[socket.socket, AmqpConnection] = {}
        self.loop: EmulatorLoop | None = None
        self.persistence: Persistence | None = None
        self.unsaved_sends = False
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
        connection = AmqpConnection(self, sock)
        self.connections[sock] = connection
        selector.register(sock, selectors.EVENT_READ, connection)
        connection.process()

    def forget(self, connection: AmqpConnection) -> None:
        self.connections.pop(connection.socket, None)
        if self.loop is not None:
            self.loop.unregister(connection.socket)

    def touched(self) -> None:
        """Bytes arrived: whatever they change is saved within a second."""
        if self.persistence is not None:
            self.persistence.touch()

    def watch_writes(self, connection: AmqpConnection, on: bool) -> None:
        if self.loop is not None:
            self.loop.watch_writes(connection, on)

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

    def watch_writes(self, connection: AmqpConnection, on: bool) -> None:
        """Watch ``connection``'s socket for writability while it has bytes waiting."""
        if connection.writes_watched == on or connection.closed:
            return
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if on else 0)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.modify(connection.socket, events, connection)
            connection.writes_watched = on

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
                    target.namespace.touched()
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
            if self.pending_pump or now - last_sweep > SWEEP_SECONDS:
                self.pending_pump = False
                last_sweep = now
                for server in self.servers:
                    server.handler.sweep()
                    server.persist()
                    for connection in list(server.connections.values()):
                        connection.push_inbound()
                        connection.transport.tick(now)
                        connection.pump_all()
                        connection.flush()
        for server in self.servers:
            for connection in list(server.connections.values()):
                connection.close()
            server.listener.close()
            if server.persistence is not None:
                server.persistence.save_now()
        self.selector.close()
