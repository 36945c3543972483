"""A test build of the local host that widens azure-servicebus's keep-alive race.

``python -m tests.faults.keepalive_race run --topology FILE`` runs ``python -m replication run``
unchanged, with two additions that only make a race of the SDK likelier to show:

- the source receive loops' Service Bus clients (``servicebus_client`` as
  ``replication/transport/servicebus/_loops.py`` calls it) are built with
  ``logging_enable=True`` (the SDK's public network-trace switch), so the SDK logs
  ``<- TransferFrame(...)`` at DEBUG on ``azure.servicebus._pyamqp.receiver`` when it starts
  handling each incoming transfer, after the frame was read from the socket and before the
  message is handed over (``ReceiverLink._incoming_transfer`` in
  ``azure/servicebus/_pyamqp/receiver.py``);
- a filter on that logger, which drops every record (nothing is printed) and, in the SDK's
  keep-alive thread (``threading.Thread(target=self._keep_alive)`` in ``_pyamqp/client.py``,
  named ``Thread-N (_keep_alive)``), sleeps :data:`DELAY_SECONDS` before that thread hands
  the transfer over. In every other thread it sleeps :data:`YIELD_SECONDS`, which lets a
  keep-alive thread waiting for the socket read the next frame instead of the receiving thread
  reading them all (frames are read under the transport's lock, handled outside it).

Nothing of the SDK is replaced or patched: only its public client option and the standard
``logging`` machinery are used, and the product's code path is the one ``python -m replication
run`` takes. Where the product receives without a keep-alive thread, nothing is delayed and the
filter only costs :data:`YIELD_SECONDS` per transfer. Each delay is written to stderr as a line
``keep-alive thread delayed a transfer``, and each receiver's keep-alive thread that starts (in
any receiver of the process: at ``prefetch_count=0`` one every 5 s, and with a prefetch one every
30 s unless the receiver is given ``keep_alive=0``) as ``keep-alive thread started``; the test
counts both.

On azure-servicebus 7.15.0 with a receiver at ``prefetch_count=0`` (which forces a keep-alive
thread that listens on the connection every 5 s, ``_servicebus_receiver.py``
``_create_handler``), a transfer the keep-alive thread reads while ``receive_messages`` runs in
the loop's thread reaches the receive buffer after transfers the loop's thread read later: the
batch then holds a session's messages out of their order, or the late one is released and
comes back after them. This build makes that happen within a few seconds of a session being
held for more than 5 s, where load alone makes it happen in about one demo in five.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import Any

from azure.servicebus import ServiceBusClient

from replication.settings import Settings
from replication.topology import NamespaceSpec

DELAY_SECONDS = 0.1
"""How long the keep-alive thread holds a transfer before handing it over."""
YIELD_SECONDS = 0.001
"""How long any other thread pauses before handling a transfer (lets the keep-alive thread in)."""
DELAYED_LINE = "keep-alive thread delayed a transfer"
STARTED_LINE = "keep-alive thread of a receiver started"
RECEIVER_LOGGER = "azure.servicebus._pyamqp.receiver"
KEEP_ALIVE_THREAD_SUFFIX = "(_keep_alive)"
RECEIVE_CLIENT = "ReceiveClient"
"""The pyamqp client class of a receiver (``_pyamqp/client.py``)."""
CLIENT_FACTORY = "servicebus_client"
"""The name the receive loops build their clients by (``_loops`` imports it)."""


class SlowKeepAlive(logging.Filter):
    """Delays the keep-alive thread's handling of incoming transfers; drops every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("<-"):
            return False
        if threading.current_thread().name.endswith(KEEP_ALIVE_THREAD_SUFFIX):
            print(DELAYED_LINE, file=sys.stderr, flush=True)
            time.sleep(DELAY_SECONDS)
        else:
            time.sleep(YIELD_SECONDS)
        return False


def install() -> None:
    """Trace the receive loops' transfers, slow the keep-alive thread's handling of them, and
    report each keep-alive thread that starts."""
    from replication.transport.servicebus import _loops

    receiver_logger = logging.getLogger(RECEIVER_LOGGER)
    receiver_logger.setLevel(logging.DEBUG)
    receiver_logger.addFilter(SlowKeepAlive())
    build = getattr(_loops, CLIENT_FACTORY)

    def traced(namespace: NamespaceSpec, settings: Settings, **options: Any) -> ServiceBusClient:
        client: ServiceBusClient = build(namespace, settings, logging_enable=True, **options)
        return client

    setattr(_loops, CLIENT_FACTORY, traced)
    threading.Thread(target=_watch_keep_alive_threads, name="keep-alive-watch", daemon=True).start()


def _watch_keep_alive_threads() -> None:
    """Print :data:`STARTED_LINE` once for every keep-alive thread of a receiver seen running
    (the target senders have theirs, every 30 s, with no transfers to hand over)."""
    seen: set[int | None] = set()
    while True:
        for thread in threading.enumerate():
            if thread.ident in seen or not thread.name.endswith(KEEP_ALIVE_THREAD_SUFFIX):
                continue
            # The thread runs the pyamqp client's bound _keep_alive; CPython keeps it as _target.
            client = getattr(getattr(thread, "_target", None), "__self__", None)
            if type(client).__name__ == RECEIVE_CLIENT:
                seen.add(thread.ident)
                print(STARTED_LINE, file=sys.stderr, flush=True)
        time.sleep(0.1)


def main() -> int:
    install()
    from replication.cli import main as replication_main

    return replication_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
