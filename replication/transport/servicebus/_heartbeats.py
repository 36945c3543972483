"""Reading heartbeats with the Service Bus SDK: the receiving end of heartbeat paths.

:func:`run_heartbeat_reader` receives from the ``heartbeat-reader`` subscription of a receiving
namespace's heartbeat topic (see :mod:`replication.topology._heartbeats`), records every
heartbeat in a :class:`~replication.heartbeats.HeartbeatBook` and completes it; it raises when
the connection fails, so that :func:`~replication.runtime.supervise` reconnects it
with backoff like a task's loop. A message that is not a heartbeat is completed and ignored
(logged at DEBUG). :func:`peek_latest_heartbeats` reads without settling anything, for
``python -m replication status``, the ``heartbeat-status`` subscription, which nobody receives
from (its messages expire after :func:`~replication.topology.heartbeat_lookback`), so that it
sees the heartbeats a running reader has already consumed from its own subscription.
"""

from __future__ import annotations

import threading
from typing import Any

from replication.heartbeats import Heartbeat, HeartbeatBook, parse_heartbeat
from replication.runtime import TaskStatus
from replication.settings import Settings
from replication.topology import HEARTBEAT_READER, HEARTBEAT_STATUS, EntityRef, NamespaceSpec
from replication.transport.connections import servicebus_client

from ._receivers import peek_pages, source_receiver

RECEIVE_WAIT_SECONDS = 1.0
PEEK_LIMIT = 5000
"""Most heartbeats :func:`peek_latest_heartbeats` looks at per namespace (a look-back of 20
minutes holds 20 per origin at the default interval, 1,200 at one second)."""


def reader_source(namespace: str, entity: str, subscription: str = HEARTBEAT_READER) -> EntityRef:
    """The subscription the heartbeat reader of ``namespace`` reads (or another of its
    heartbeat topic)."""
    return EntityRef(namespace=namespace, entity=entity, subscription=subscription)


def run_heartbeat_reader(
    namespace: NamespaceSpec,
    entity: str,
    book: HeartbeatBook,
    stop: threading.Event,
    status: TaskStatus,
    *,
    settings: Settings,
) -> None:
    """Record the heartbeats arriving at ``namespace`` until ``stop`` is set."""
    with servicebus_client(namespace, settings) as client:
        receiver = source_receiver(client, reader_source(namespace.name, entity), wait=1)
        with receiver:
            while not stop.is_set():
                messages = receiver.receive_messages(
                    max_message_count=100, max_wait_time=RECEIVE_WAIT_SECONDS
                )
                recorded = 0
                for message in messages:
                    recorded += book.receive(b"".join(message.body), namespace.name)
                    receiver.complete_message(message)
                if messages:
                    status.record(recorded)
                else:
                    status.touch()


def peek_latest_heartbeats(
    namespace: NamespaceSpec, entity: str, *, settings: Settings, **client_options: Any
) -> dict[str, Heartbeat]:
    """The latest heartbeat per origin in ``namespace``'s ``heartbeat-status`` subscription,
    by peeking (nothing is settled), its own heartbeats left out."""
    latest: dict[str, Heartbeat] = {}
    source = reader_source(namespace.name, entity, HEARTBEAT_STATUS)
    with (
        servicebus_client(namespace, settings, **client_options) as client,
        source_receiver(client, source, wait=1) as receiver,
    ):
        for page in peek_pages(receiver, limit=PEEK_LIMIT):
            for message in page:
                heartbeat = parse_heartbeat(b"".join(message.body))
                if heartbeat is None or heartbeat.origin == namespace.name:
                    continue
                known = latest.get(heartbeat.origin)
                if known is None or heartbeat.published > known.published:
                    latest[heartbeat.origin] = heartbeat
    return latest


__all__ = ["peek_latest_heartbeats", "reader_source", "run_heartbeat_reader"]
