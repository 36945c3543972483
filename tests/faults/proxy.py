"""A TCP proxy the fault tests put in front of a service to cut it off without touching it.

:class:`TcpProxy` forwards ``127.0.0.1:<port>`` to a target port, byte for byte, until told
otherwise:

- :meth:`TcpProxy.blackhole`: connections stay open and new ones are accepted, but nothing
  is forwarded either way (a route that drops packets, a load balancer in front of a dead
  backend: the client sees silence, as with SIGSTOP, while the service itself runs on);
- :meth:`TcpProxy.refuse`: every connection is closed and new ones are refused (the port is
  not listened on: what a client sees of a host that is down);
- :meth:`TcpProxy.forward`: back to normal (listening again on the same port; connections cut
  by ``refuse`` stay cut, as they would).

Threads only, no dependency; every socket wait is bounded so :meth:`TcpProxy.close` returns.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from collections.abc import Iterator

POLL = 0.1
"""Seconds a pump waits for data before it looks at the mode again."""


class TcpProxy:
    """Forwards a local port to ``target_port`` on 127.0.0.1 (see the module docstring)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._listener = self._listen(0)
        self.port = int(self._listener.getsockname()[1])
        self._mode = "forward"
        self._lock = threading.Lock()
        self._connections: list[socket.socket] = []
        self._closed = threading.Event()
        self._acceptor = threading.Thread(target=self._accept, name="proxy-accept", daemon=True)
        self._acceptor.start()

    @staticmethod
    def _listen(port: int) -> socket.socket:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
        listener.settimeout(POLL)
        return listener

    def blackhole(self) -> None:
        with self._lock:
            self._mode = "blackhole"

    def refuse(self) -> None:
        with self._lock:
            self._mode = "refuse"
            self._listener.close()
            connections, self._connections = self._connections, []
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.close()

    def forward(self) -> None:
        with self._lock:
            if self._mode == "refuse":
                self._listener = self._listen(self.port)
            self._mode = "forward"

    def close(self) -> None:
        self.refuse()
        self._closed.set()
        self._acceptor.join(timeout=5)

    def _accept(self) -> None:
        while not self._closed.is_set():
            with self._lock:
                listener, refusing = self._listener, self._mode == "refuse"
            if refusing:
                self._closed.wait(POLL)
                continue
            try:
                client, _ = listener.accept()
            except OSError:  # timed out, or closed by refuse()
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
        except OSError:
            client.close()
            return
        with self._lock:
            self._connections += [client, upstream]
        with client, upstream:
            pairs = {client: upstream, upstream: client}
            while not self._closed.is_set():
                with self._lock:
                    mode = self._mode
                if mode == "refuse":
                    return
                if mode == "blackhole":
                    self._closed.wait(POLL)  # read nothing, forward nothing: silence
                    continue
                try:
                    readable, _, _ = select.select(list(pairs), [], [], POLL)
                    for source in readable:
                        data = source.recv(65536)
                        if not data:
                            return
                        pairs[source].sendall(data)
                except OSError:
                    return


@contextlib.contextmanager
def tcp_proxy(target_port: int) -> Iterator[TcpProxy]:
    """A :class:`TcpProxy` to ``target_port`` for the block."""
    proxy = TcpProxy(target_port)
    try:
        yield proxy
    finally:
        proxy.close()
