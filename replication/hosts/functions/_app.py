"""Build the Azure Functions app: one batch-triggered function per task of the topology.

``function_app.py`` at the repository root only calls :func:`build_app`. The topology is loaded
and validated when the host indexes the app, so a bad topology fails deployment-time indexing
with the file and JSON path instead of failing on the first message. No connection is opened
at indexing: senders are created on first use and reused across invocations.

Triggers (Python v2 programming model, ``cardinality="many"``, ``data_type=BINARY`` so that bodies
arrive byte-exact; see :mod:`replication.hosts.functions` for what else the host sends):

- queue source -> ``service_bus_queue_trigger`` (``<queue>/$DeadLetterQueue`` for spillover);
- topic subscription -> ``service_bus_topic_trigger``;
- either with ``is_sessions_enabled`` when the queue or subscription requires sessions: the
  extension's batch loop then takes one session at a time per instance and hands the function
  that session's messages in order, batch by batch (host.json ``sessionIdleTimeout``);
- event hub -> ``event_hub_message_trigger`` with an exponential-backoff retry policy without a
  retry limit (5 s to 5 min, as the official replication samples), so the checkpoint never moves
  past an event that was not replicated.

With the topology's ``heartbeats`` enabled, the heartbeat tasks are tasks like the others, and
:mod:`replication.heartbeats.functions` adds the publishing timer and the reading triggers. A
Service Bus namespace with a ``capture`` section adds a capture function per topic
(:mod:`._capture`).

The trigger's ``connection`` is the namespace's ``connection`` setting prefix: identity-based
(``<prefix>__fullyQualifiedNamespace``) in Azure, a connection string locally.
"""

# No "from __future__ import annotations": the Functions worker reads the handlers' annotations.

import logging
import typing
from collections.abc import Callable, Mapping, Sequence

import azure.functions as func

from replication.envelope import Envelope
from replication.exceptions import OriginalMustStayError
from replication.heartbeats.functions import register_heartbeats
from replication.planning import DeadLetter
from replication.runtime import TaskRunner, runner_for
from replication.settings import Settings
from replication.telemetry import configure_function_app_telemetry
from replication.topology import (
    NamespaceKind,
    TaskSpec,
    Topology,
    load_topology,
    requires_session,
)
from replication.transforms import Transforms
from replication.transport.logs import quiet_sdk_loggers
from replication.transport.senders import SenderFactory

from ._capture import register_captures
from ._conversion import (
    envelopes_from_event_hub_batch,
    envelopes_from_servicebus_batch,
)

logger = logging.getLogger(__name__)

DEAD_LETTER_QUEUE_SUFFIX = "/$DeadLetterQueue"


def _servicebus_handler(
    runner: TaskRunner, factory: SenderFactory, *, sessions: bool
) -> Callable[..., None]:
    """The handler of a Service Bus task. A batch whose metadata cannot give exact copies is
    re-read by peeking the source, except from a session-enabled source: only a receiver that
    holds the session may peek it, and the trigger holds it while the function runs, so such a
    batch fails with :class:`~replication.hosts.functions.TriggerMetadataError`
    (``docs/explanation/limitations.md``)."""
    source = runner.task.source.entity_path

    def reread(sequence_numbers: Sequence[int]) -> Mapping[int, Envelope]:
        return factory.peeker(runner.task.source).peek(sequence_numbers)

    def replicate(messages: typing.List[func.ServiceBusMessage]) -> None:  # noqa: UP006
        unreadable: list[DeadLetter] = []
        envelopes = envelopes_from_servicebus_batch(
            messages, source=source, reread=None if sessions else reread, unreadable=unreadable
        )
        keep = _park_and_run(runner, envelopes, unreadable)
        if keep:
            raise OriginalMustStayError(
                runner.task.name,
                [str(d.source.message_id or d.source.sequence_number) for d in keep],
            )

    return replicate


def _event_hub_handler(runner: TaskRunner) -> Callable[..., None]:
    source = runner.task.source.entity_path

    def replicate(messages: typing.List[func.EventHubEvent]) -> None:  # noqa: UP006
        unreadable: list[DeadLetter] = []
        envelopes = envelopes_from_event_hub_batch(messages, source=source, unreadable=unreadable)
        # An event stays in its hub whatever was parked for it: nothing is kept in the source.
        _park_and_run(runner, envelopes, unreadable)

    return replicate


def _park_and_run(
    runner: TaskRunner, envelopes: list[Envelope], unreadable: list[DeadLetter]
) -> list[DeadLetter]:
    """One invocation's work once its batch is converted: park what could not be read, run the
    rest, log the outcome. Returns the messages whose original must stay in the source (see
    :class:`~replication.runtime.BatchOutcome`)."""
    keep = list(runner.park(unreadable)) if unreadable else []
    outcome = runner.run(envelopes)
    logger.info("%s: %s", runner.task.name, outcome.summary())
    keep.extend(outcome.dead_letter_in_source)
    return keep


def register_task(
    app: func.FunctionApp,
    topology: Topology,
    task: TaskSpec,
    factory: SenderFactory,
    *,
    settings: Settings,
) -> None:
    """Add the triggered function of ``task`` to ``app``."""
    source = task.source
    namespace = topology.namespace(source.namespace)
    runner = runner_for(topology, topology.resolved(task), factory, settings=settings)
    # A session-enabled queue or subscription is read by session receivers only.
    sessions = requires_session(topology, source)
    if namespace.kind is NamespaceKind.EVENTHUBS:
        handler = _event_hub_handler(runner)
        handler = app.event_hub_message_trigger(
            arg_name="messages",
            connection=namespace.connection,
            event_hub_name=source.entity,
            consumer_group=source.consumer_group,
            cardinality=func.Cardinality.MANY,
            data_type=func.DataType.BINARY,
        )(handler)
        handler = app.retry(
            strategy="exponential_backoff",
            max_retry_count="-1",
            minimum_interval="00:00:05",
            maximum_interval="00:05:00",
        )(handler)
    elif source.subscription is not None:
        handler = app.service_bus_topic_trigger(
            arg_name="messages",
            connection=namespace.connection,
            topic_name=source.entity,
            subscription_name=source.subscription
            + (DEAD_LETTER_QUEUE_SUFFIX if source.dead_letter_queue else ""),
            cardinality=func.Cardinality.MANY,
            data_type=func.DataType.BINARY,
            is_sessions_enabled=sessions,
        )(_servicebus_handler(runner, factory, sessions=sessions))
    else:
        queue = source.entity + (DEAD_LETTER_QUEUE_SUFFIX if source.dead_letter_queue else "")
        handler = app.service_bus_queue_trigger(
            arg_name="messages",
            connection=namespace.connection,
            queue_name=queue,
            cardinality=func.Cardinality.MANY,
            data_type=func.DataType.BINARY,
            is_sessions_enabled=sessions,
        )(_servicebus_handler(runner, factory, sessions=sessions))
    app.function_name(name=task.name)(handler)


def build_app(
    topology: Topology | None = None,
    *,
    environ: dict[str, str] | None = None,
    transforms: Transforms | None = None,
) -> func.FunctionApp:
    """The Functions app for ``topology`` (default: the file named by ``REPLICATION_TOPOLOGY``,
    whose tasks may name the ``transforms`` registered in code; see
    :mod:`replication.transforms`).

    Exports telemetry to Application Insights when ``APPLICATIONINSIGHTS_CONNECTION_STRING``
    is set (:mod:`replication.telemetry`), before any runner creates its instruments."""
    quiet_sdk_loggers()
    settings = Settings.from_environ(environ)
    configure_function_app_telemetry(settings)
    topology = (
        topology
        if topology is not None
        else load_topology(settings.topology, transforms=transforms)
    )
    # Read once the topology names its namespaces' connection settings.
    settings = Settings.from_environ(environ, connections=topology.connections)
    factory = SenderFactory(topology, settings)
    app = func.FunctionApp()
    for task in topology.tasks:
        register_task(app, topology, task, factory, settings=settings)
    register_captures(app, topology, factory, settings)
    register_heartbeats(app, topology, factory)
    return app


__all__ = ["build_app", "register_task"]
