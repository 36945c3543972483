"""Heartbeat paths: what the optional ``heartbeats`` section adds to a loaded topology.

A replication path that carries nothing looks the same as one that is broken, until someone
publishes. With ``"heartbeats": {"enabled": true}`` every namespace that is the source of a task
publishes a small heartbeat message every ``interval`` (default ``PT1M``) on an entity of its
own, ``entity`` (default ``replication-heartbeat``), never on a user entity, and the heartbeat is
replicated like any message: through the same replicator (the Function app or the local host),
with the same identity, over the same network path. The receiving side records the age of the
latest heartbeat per path (:mod:`replication.heartbeats`), so a path whose heartbeat age grows
is silent, not idle.

What the loader adds, for each *path* (a namespace ``S`` that is the source of a task, and a
namespace ``D`` that one of ``S``'s tasks sends to, ``D != S``; Service Bus or Event Hubs, in
any combination), in file order:

- the heartbeat entity in ``S`` and in ``D``: in a Service Bus namespace a topic
  (``defaultMessageTimeToLive`` ten intervals, at least an hour, so heartbeats nobody reads
  expire instead of filling the topic), in an Event Hubs namespace an event hub of one
  partition, one day's retention;
- the all-active task ``heartbeat-S-to-D`` reading ``S``'s entity through its subscription
  (Service Bus) or consumer group (Event Hubs) ``replication-to-D``, created by
  :func:`~replication.topology.materialize` (a subscription with the all-active
  loop-prevention rule) and sending to ``D``'s entity. It takes the ``retry`` settings of the
  first of ``S``'s tasks that sends to ``D``; from a Service Bus ``S`` it parks, like every
  Service Bus task without a ``deadLetterTarget``, in ``replication-parked`` of ``S``, from an
  Event Hubs ``S`` in that first task's ``deadLetterTarget`` (an event hub source has no
  dead-letter queue and every event hub task names one);
- at ``D``, what reads the heartbeats that arrive: the subscription (Service Bus) or consumer
  group (Event Hubs) ``heartbeat-reader``, which the heartbeat reader of the host consumes;
  and, for ``python -m replication status``, which cannot see what a running reader consumed,
  the subscription ``heartbeat-status`` (Service Bus; nobody receives from it, and its
  messages live :func:`heartbeat_lookback`) or the consumer group ``$Default`` of the event hub
  (nobody else reads it; status reads the events of the look-back window without an owner
  level).

Why an event hub of its own, not heartbeat events in the user's event hub: a user hub's events
reach every consumer group of it, so heartbeats there would reach the applications as data
(every consumer would have to filter them by a marker), and the readers would need consumer
groups on the user's hubs. A hub of our own keeps heartbeats away from applications
completely, at the price of one event hub of the namespace's quota (10 on Standard) and of
proving the namespace-to-namespace path (identity, network, the replicator) rather than the user
hub's partitions, as on Service Bus. An Event Hubs namespace of the **Basic** tier allows only
the ``$Default`` consumer group per hub, so it takes no part in heartbeats (its paths are left
out; ``status`` then says its tasks have no heartbeat path).

Names longer than the limits (task 64, subscription and consumer group 50 characters) are
bounded like lane names (:func:`~replication.topology.bounded`). Failures are
:class:`~replication.exceptions.ConfigurationError` naming the file and the JSON path: the
heartbeat entity already declared by the file (``heartbeats.entity``), a generated task name
the file already uses (``heartbeats``).
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from ._checks import failer
from ._lanes import SOURCE_NAME_LIMIT, TASK_NAME_LIMIT, with_parking
from ._names import bounded
from ._specs import (
    DEFAULT_CONSUMER_GROUP,
    EntityRef,
    EventHubSpec,
    NamespaceKind,
    NamespaceSpec,
    SubscriptionSpec,
    TopicSpec,
)
from ._tasks import TaskSpec, resolve_task
from ._topology import Topology

HEARTBEAT_READER = "heartbeat-reader"
"""What the heartbeat reader of a receiving namespace reads: a subscription of its heartbeat
topic, or a consumer group of its heartbeat event hub."""

HEARTBEAT_STATUS = "heartbeat-status"
"""The subscription of a receiving Service Bus namespace's heartbeat topic that only
``status`` peeks (nobody receives from it; its messages live :func:`heartbeat_lookback`)."""

HEARTBEAT_STATUS_GROUP = DEFAULT_CONSUMER_GROUP
"""The consumer group of a receiving event hub ``status`` reads heartbeats with (no owner
level; nothing else reads it)."""

HEARTBEAT_PARTITIONS = 1
"""Partitions of a heartbeat event hub: a heartbeat a minute needs no more."""

HEARTBEAT_PATTERN = "all_active"

MINIMUM_TIME_TO_LIVE = timedelta(hours=1)


@dataclasses.dataclass(frozen=True, slots=True)
class HeartbeatPath:
    """One replication path heartbeats travel: ``origin`` publishes, ``task`` replicates to
    ``target``."""

    origin: str
    target: str
    task: str


def heartbeat_paths(topology: Topology) -> list[HeartbeatPath]:
    """The paths of ``topology`` (a loaded one: its heartbeat tasks included) when heartbeats
    are enabled, in file order; [] when they are not."""
    if not topology.heartbeats.enabled:
        return []
    entity = topology.heartbeats.entity
    return [
        HeartbeatPath(task.source.namespace, task.targets[0].namespace, task.name)
        for task in topology.tasks
        if task.source.entity == entity and task.pattern == HEARTBEAT_PATTERN
    ]


def heartbeat_origins(topology: Topology) -> list[str]:
    """The namespaces that publish heartbeats."""
    return list(dict.fromkeys(path.origin for path in heartbeat_paths(topology)))


def heartbeat_receivers(topology: Topology) -> list[str]:
    """The namespaces that receive heartbeats (and have a ``heartbeat-reader``)."""
    return list(dict.fromkeys(path.target for path in heartbeat_paths(topology)))


def heartbeat_time_to_live(interval: timedelta) -> timedelta:
    """How long a heartbeat lives on a heartbeat topic: ten intervals, at least an hour."""
    return max(MINIMUM_TIME_TO_LIVE, interval * 10)


def heartbeat_lookback(topology: Topology) -> timedelta:
    """How far back ``status`` looks for the newest heartbeat of a path: twice the
    ``monitoring.heartbeatMaxAge`` (so that "none within the look-back" means "older than the
    threshold"), at least three intervals. It is the time to live of the ``heartbeat-status``
    subscription and the window status reads of a heartbeat event hub."""
    return max(topology.monitoring.heartbeat_max_age * 2, topology.heartbeats.interval * 3)


def heartbeat_schedule(interval: timedelta) -> str | None:
    """The six-field NCRONTAB expression of the Functions timer that publishes every
    ``interval``, or None when no such expression ticks evenly at that interval (cron steps
    restart every minute, hour or day, so the step must divide it)."""
    seconds = interval.total_seconds()
    if seconds != int(seconds):
        return None
    whole = int(seconds)
    # (seconds per unit, units per next unit, the expression for a step of n units)
    units = (
        (1, 60, "*/{n} * * * * *", "0 * * * * *"),
        (60, 60, "0 */{n} * * * *", "0 0 * * * *"),
        (3600, 24, "0 0 */{n} * * *", "0 0 0 * * *"),
    )
    for size, per_next, step, whole_next in units:
        if whole % size:
            return None
        count = whole // size
        if count < per_next and per_next % count == 0:
            return step.format(n=count)
        if count == per_next:
            return whole_next
    return None


def add_heartbeats(topology: Topology, source: str) -> Topology:
    """``topology`` (tasks as they run) plus its heartbeat topics, subscriptions and tasks
    (unchanged when heartbeats are not enabled)."""
    spec = topology.heartbeats
    if not spec.enabled:
        return topology
    fail = failer(source)
    if heartbeat_schedule(spec.interval) is None:
        fail(
            "heartbeats.interval",
            f"{spec.interval} cannot be a Functions timer schedule: use whole seconds that "
            "divide a minute (PT1S ... PT30S), whole minutes that divide an hour (PT1M ... "
            "PT30M) or whole hours that divide a day",
        )
    for namespace in topology.namespaces:
        if spec.entity.lower() in (name.lower() for name in namespace.entity_names()):
            fail(
                "heartbeats.entity",
                f"namespace '{namespace.name}' already declares an entity named '{spec.entity}'; "
                "heartbeats need an entity of their own (choose another heartbeats.entity)",
            )
    pairs = _pairs(topology)
    taken = {task.name.lower() for task in topology.tasks}
    resolved = {task.name: task for task in topology.resolved_tasks()}
    specs: list[TaskSpec] = []
    kinds = {namespace.name: namespace.kind for namespace in topology.namespaces}
    for (origin, target), first in pairs.items():
        name = bounded(f"heartbeat-{origin}-to-{target}", TASK_NAME_LIMIT)
        if name.lower() in taken:
            fail(
                "heartbeats",
                f"heartbeats need the task name '{name}', which a task of the file already has; "
                "rename that task",
            )
        reader = bounded(f"replication-to-{target}", SOURCE_NAME_LIMIT)
        from_hub = kinds[origin] is NamespaceKind.EVENTHUBS
        task_spec = TaskSpec(
            name=name,
            pattern=HEARTBEAT_PATTERN,
            source=EntityRef(
                namespace=origin,
                entity=spec.entity,
                consumer_group=reader if from_hub else None,
                subscription=None if from_hub else reader,
            ),
            targets=[EntityRef(namespace=target, entity=spec.entity)],
            retry=first.retry,
            # An event hub source parks where the path's first task parks (every event hub
            # task names a deadLetterTarget); a Service Bus one in its replication-parked.
            dead_letter_target=first.dead_letter_target if from_hub else None,
        )
        specs.append(task_spec)
    namespaces = _with_entities(topology, pairs)
    expanded = topology.model_copy(
        update={"namespaces": namespaces, "tasks": [*topology.tasks, *specs]}
    )
    for task_spec in specs:
        task = resolve_task(task_spec, max_hops=expanded.max_hops(task_spec))
        resolved[task.name] = with_parking(expanded, task)
    expanded = expanded.model_copy(
        update={"tasks": [resolved[task.name].spec for task in expanded.tasks]}
    )
    return expanded.with_resolved(resolved)


def takes_part(namespace: NamespaceSpec) -> bool:
    """Whether ``namespace`` can publish and receive heartbeats: every Service Bus namespace,
    and Event Hubs namespaces above Basic (which allows one consumer group per event hub)."""
    return namespace.kind is NamespaceKind.SERVICEBUS or namespace.sku != "Basic"


def _pairs(topology: Topology) -> dict[tuple[str, str], TaskSpec]:
    """(origin, target) of every path, with the first task of the file that takes it."""
    namespaces = {namespace.name: namespace for namespace in topology.namespaces}
    pairs: dict[tuple[str, str], TaskSpec] = {}
    for task in topology.tasks:
        origin = task.source.namespace
        if not takes_part(namespaces[origin]):
            continue
        for target in task.targets:
            if target.namespace != origin and takes_part(namespaces[target.namespace]):
                pairs.setdefault((origin, target.namespace), task)
    return pairs


def _with_entities(
    topology: Topology, pairs: dict[tuple[str, str], TaskSpec]
) -> list[NamespaceSpec]:
    """The namespaces with their heartbeat topic or event hub, and at receiving namespaces
    what the reader and ``status`` read (the tasks' subscriptions and consumer groups come from
    :func:`~replication.topology.materialize`)."""
    spec = topology.heartbeats
    involved = {name for pair in pairs for name in pair}
    receivers = {target for _, target in pairs}
    namespaces = []
    for namespace in topology.namespaces:
        if namespace.name in involved:
            receives = namespace.name in receivers
            if namespace.kind is NamespaceKind.EVENTHUBS:
                hub = EventHubSpec(
                    name=spec.entity,
                    partition_count=HEARTBEAT_PARTITIONS,
                    message_retention_in_days=1,
                    consumer_groups=[HEARTBEAT_READER] if receives else [],
                )
                namespace = namespace.model_copy(
                    update={"event_hubs": [*namespace.event_hubs, hub]}
                )
            else:
                readers = (
                    [
                        SubscriptionSpec(name=HEARTBEAT_READER),
                        SubscriptionSpec(
                            name=HEARTBEAT_STATUS,
                            default_message_time_to_live=heartbeat_lookback(topology),
                        ),
                    ]
                    if receives
                    else []
                )
                topic = TopicSpec(
                    name=spec.entity,
                    default_message_time_to_live=heartbeat_time_to_live(spec.interval),
                    subscriptions=readers,
                )
                namespace = namespace.model_copy(update={"topics": [*namespace.topics, topic]})
        namespaces.append(namespace)
    return namespaces


__all__ = [
    "HEARTBEAT_PARTITIONS",
    "HEARTBEAT_READER",
    "HEARTBEAT_STATUS",
    "HEARTBEAT_STATUS_GROUP",
    "HeartbeatPath",
    "add_heartbeats",
    "heartbeat_lookback",
    "heartbeat_origins",
    "heartbeat_paths",
    "heartbeat_receivers",
    "heartbeat_schedule",
    "heartbeat_time_to_live",
    "takes_part",
]
