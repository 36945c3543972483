"""The heartbeat functions of the Function app: a timer that publishes, triggers that read.

Registered by :func:`replication.hosts.functions.build_app` when the topology enables heartbeats
(see :mod:`replication.heartbeats`):

- ``heartbeat-publish``: a timer trigger on the NCRONTAB schedule of ``heartbeats.interval``
  (:func:`~replication.topology.heartbeat_schedule`; ``useMonitor`` off, since a missed tick
  needs no catching up) that publishes one heartbeat per origin namespace on its heartbeat
  topic, with the app's own senders and identity. A namespace that cannot be reached does not
  keep the others from getting theirs; the invocation then fails, so the failure shows in the
  app's logs and metrics;
- ``heartbeat-read-<namespace>``: a batch trigger on the ``heartbeat-reader`` subscription of
  every receiving Service Bus namespace's heartbeat topic (or consumer group of an Event Hubs
  namespace's heartbeat event hub, checkpointed by the host as any event hub trigger), which
  records each heartbeat in the app's
  :class:`~replication.heartbeats.HeartbeatBook`, read by the ``replication.heartbeat.age``
  gauge (:mod:`replication.heartbeats`) of that instance.

Scaled out, every instance runs the timer (Functions timers are singletons, so one publishes
per tick) and the readers' heartbeats are spread over instances; each instance's gauge reports
the paths whose heartbeats it read, so take the minimum age per path across instances.
"""

# No "from __future__ import annotations": the Functions worker reads the handlers' annotations.

import logging
import typing
from collections.abc import Callable

import azure.functions as func

from replication.topology import (
    HEARTBEAT_READER,
    NamespaceKind,
    Topology,
    heartbeat_origins,
    heartbeat_receivers,
    heartbeat_schedule,
)
from replication.transport.senders import SenderFactory

from ._messages import HeartbeatBook, heartbeat_now
from ._metric import watch_paths

logger = logging.getLogger(__name__)

PUBLISH_FUNCTION = "heartbeat-publish"


def register_heartbeats(
    app: func.FunctionApp, topology: Topology, factory: SenderFactory
) -> HeartbeatBook | None:
    """Add the heartbeat functions of ``topology`` to ``app``; the book their readers fill
    (None when heartbeats are off or no path exists)."""
    book = HeartbeatBook()
    if not watch_paths(book, topology):
        return None
    spec = topology.heartbeats
    schedule = heartbeat_schedule(spec.interval)
    assert schedule is not None, "checked when the topology was loaded"
    publish = app.timer_trigger(arg_name="timer", schedule=schedule, use_monitor=False)(
        _publisher(topology, factory)
    )
    app.function_name(name=PUBLISH_FUNCTION)(publish)
    for name in heartbeat_receivers(topology):
        namespace = topology.namespace(name)
        if namespace.kind is NamespaceKind.EVENTHUBS:
            reader = app.event_hub_message_trigger(
                arg_name="messages",
                connection=namespace.connection,
                event_hub_name=spec.entity,
                consumer_group=HEARTBEAT_READER,
                cardinality=func.Cardinality.MANY,
                data_type=func.DataType.BINARY,
            )(_event_reader(book, name))
        else:
            reader = app.service_bus_topic_trigger(
                arg_name="messages",
                connection=namespace.connection,
                topic_name=spec.entity,
                subscription_name=HEARTBEAT_READER,
                cardinality=func.Cardinality.MANY,
                data_type=func.DataType.BINARY,
            )(_reader(book, name))
        app.function_name(name=f"heartbeat-read-{name}")(reader)
    return book


def _publisher(topology: Topology, factory: SenderFactory) -> Callable[..., None]:
    entity = topology.heartbeats.entity
    origins = heartbeat_origins(topology)

    def publish(timer: func.TimerRequest) -> None:
        failed = []
        for origin in origins:
            try:
                factory.sender(origin, entity).send([heartbeat_now(origin).envelope()])
            except Exception as error:
                logger.warning("%s: heartbeat not published: %s", origin, error)
                failed.append(origin)
        if failed:
            raise RuntimeError(f"heartbeats not published for {', '.join(failed)}")

    return publish


def _reader(book: HeartbeatBook, target: str) -> Callable[..., None]:
    def read(messages: typing.List[func.ServiceBusMessage]) -> None:  # noqa: UP006
        for message in messages:
            book.receive(message.get_body(), target)

    return read


def _event_reader(book: HeartbeatBook, target: str) -> Callable[..., None]:
    def read(messages: typing.List[func.EventHubEvent]) -> None:  # noqa: UP006
        for message in messages:
            book.receive(message.get_body(), target)

    return read


__all__ = ["PUBLISH_FUNCTION", "register_heartbeats"]
