"""Reading heartbeats with the Event Hubs SDK: the receiving end of heartbeat paths into an
Event Hubs namespace.

A receiving Event Hubs namespace has a heartbeat event hub of its own (see
:mod:`replication.topology._heartbeats`), never a user's hub:

- :func:`run_heartbeat_reader` reads its consumer group ``heartbeat-reader`` (the local host's
  reader; the Function app has a trigger on the same group), records every heartbeat in a
  :class:`~replication.heartbeats.HeartbeatBook` and raises when the connection fails, so that
  :func:`~replication.runtime.supervise` reconnects it with backoff like a task's loop. It
  starts ``lookback`` before now, so that a restarted reader knows the recent heartbeats at
  once instead of after the next one, and checkpoints nothing (a heartbeat read twice changes
  no age);
- :func:`read_latest_heartbeats` is ``python -m replication status``'s read: the events of the
  look-back window in the consumer group ``$Default``, which nothing else reads, without an
  owner level (:class:`~replication.transport.eventhubs.EventReader`).

An event that is not a heartbeat is ignored (logged at DEBUG by the book), never an error.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from azure.eventhub import EventData, EventHubConsumerClient, PartitionContext

from replication.heartbeats import Heartbeat, HeartbeatBook, parse_heartbeat
from replication.runtime import TaskStatus
from replication.settings import Settings
from replication.topology import HEARTBEAT_READER, HEARTBEAT_STATUS_GROUP, NamespaceSpec
from replication.transport.connections import event_hub_client
from replication.transport.deadlines import progress

from .._common import body_bytes
from ._receiving import receive_until_stopped
from ._reread import EventReader

RECEIVE_WAIT_SECONDS = 1.0


def _body(event: EventData) -> bytes:
    try:
        return body_bytes(event.body, event.body_type.value)
    except Exception:  # an AMQP value or sequence body is not a heartbeat
        return b""


def run_heartbeat_reader(
    namespace: NamespaceSpec,
    entity: str,
    book: HeartbeatBook,
    stop: threading.Event,
    status: TaskStatus,
    *,
    settings: Settings,
    lookback: timedelta,
) -> None:
    """Record the heartbeats arriving in ``namespace``'s heartbeat event hub until ``stop``."""
    consumer = event_hub_client(
        EventHubConsumerClient, namespace, entity, settings, consumer_group=HEARTBEAT_READER
    )

    def on_event(_context: PartitionContext, event: EventData | None) -> None:
        if event is None:
            status.touch()
            return
        status.record(int(book.receive(_body(event), namespace.name)))

    receive_until_stopped(
        consumer,
        consumer.receive,
        {
            "on_event": on_event,
            "max_wait_time": RECEIVE_WAIT_SECONDS,
            "starting_position": datetime.now(UTC) - lookback,
        },
        stop,
        what=f"heartbeat-events-{namespace.name}",
    )


def read_latest_heartbeats(
    namespace: NamespaceSpec,
    entity: str,
    *,
    settings: Settings,
    since: datetime,
    client_options: dict[str, Any] | None = None,
) -> dict[str, Heartbeat]:
    """The latest heartbeat per origin that ``namespace``'s heartbeat event hub received from
    ``since`` on (its own heartbeats left out)."""
    reader = EventReader(
        namespace,
        entity,
        settings,
        wait_seconds=2.0,
        consumer_group=HEARTBEAT_STATUS_GROUP,
        client_options=client_options,
    )
    latest: dict[str, Heartbeat] = {}
    try:
        with event_hub_client(
            EventHubConsumerClient,
            namespace,
            entity,
            settings,
            consumer_group=HEARTBEAT_STATUS_GROUP,
            **(client_options or {}),
        ) as client:
            partitions = client.get_partition_ids()
        for partition in partitions:
            progress()  # a partition read: the next one gets a deadline of its own
            for read in reader.read_since(partition, since):
                heartbeat = parse_heartbeat(_body(read.event))
                if heartbeat is None or heartbeat.origin == namespace.name:
                    continue
                known = latest.get(heartbeat.origin)
                if known is None or heartbeat.published > known.published:
                    latest[heartbeat.origin] = heartbeat
    finally:
        reader.close()
    return latest


__all__ = ["read_latest_heartbeats", "run_heartbeat_reader"]
