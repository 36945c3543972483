"""The heartbeat threads of the local host (``python -m replication run``).

With the topology's ``heartbeats`` enabled (:mod:`replication.heartbeats`),
:func:`start_heartbeats` starts one publisher thread per origin namespace (the local stand-in
for the Function app's timer trigger) and one reader per receiving namespace (its
``heartbeat-reader`` subscription, or consumer group of an Event Hubs namespace's heartbeat
event hub), supervised like a task's receive loop (reconnects with backoff), recording into the
host's
:class:`~replication.heartbeats.HeartbeatBook`, which it also exposes as the
``replication.heartbeat.age`` gauge. The heartbeat *tasks* are ordinary tasks of the host.
"""

from __future__ import annotations

import functools
import threading

from replication.runtime import TaskStatus, supervise
from replication.settings import Settings
from replication.topology import (
    NamespaceKind,
    Topology,
    heartbeat_lookback,
    heartbeat_origins,
    heartbeat_receivers,
)
from replication.transport import servicebus
from replication.transport.senders import SenderFactory

from ._messages import HeartbeatBook, publish_forever
from ._metric import watch_paths


def start_heartbeats(
    topology: Topology,
    factory: SenderFactory,
    book: HeartbeatBook,
    stop: threading.Event,
    settings: Settings,
) -> list[threading.Thread]:
    """Start the publishers and readers of ``topology``'s heartbeats (none when disabled)."""
    if not watch_paths(book, topology):
        return []
    spec = topology.heartbeats
    threads = [
        threading.Thread(
            target=publish_forever,
            args=(origin, factory.sender(origin, spec.entity), spec.interval, stop),
            name=f"heartbeat-publisher-{origin}",
            daemon=True,
        )
        for origin in heartbeat_origins(topology)
    ]
    for name in heartbeat_receivers(topology):
        status = TaskStatus()
        namespace = topology.namespace(name)
        loop: functools.partial[None]
        if namespace.kind is NamespaceKind.EVENTHUBS:
            # Imported here: azure-eventhub loads only for a topology with an event hub (a
            # tenth of a second of the local host's start-up otherwise, issue 26).
            from replication.transport import eventhubs

            loop = functools.partial(
                eventhubs.run_heartbeat_reader,
                namespace,
                spec.entity,
                book,
                stop,
                status,
                settings=settings,
                lookback=heartbeat_lookback(topology),
            )
        else:
            loop = functools.partial(
                servicebus.run_heartbeat_reader,
                namespace,
                spec.entity,
                book,
                stop,
                status,
                settings=settings,
            )
        threads.append(
            threading.Thread(
                target=supervise,
                args=(f"heartbeat-reader-{name}", loop, stop, status),
                name=f"heartbeat-reader-{name}",
                daemon=True,
            )
        )
    for thread in threads:
        thread.start()
    return threads


__all__ = ["start_heartbeats"]
