"""Heartbeat paths: what the optional ``heartbeats`` section adds to a loaded topology.

A replication path that carries nothing looks the same as one that is broken, until someone
publishes. With ``"heartbeats": {"enabled": true}`` every Service Bus namespace that is the
source of a task publishes a small heartbeat message every ``interval`` (default ``PT1M``) on a
topic of its own, ``entity`` (default ``replication-heartbeat``), never on a user entity, and
the heartbeat is replicated like any message: through the same replicator (the Function app or
the local host), with the same identity, over the same network path. The receiving side records
the age of the latest heartbeat per path (:mod:`replication.heartbeats`), so a path whose
heartbeat age grows is silent, not idle.

What the loader adds, for each *path* (a Service Bus namespace ``S`` that is the source of a
task, and a Service Bus namespace ``D`` that one of ``S``'s tasks sends to, ``D != S``), in
file order:

- the topic ``entity`` in ``S`` and in ``D`` (``defaultMessageTimeToLive`` ten intervals, at
  least an hour, so heartbeats nobody reads expire instead of filling the topic);
- the all-active task ``heartbeat-S-to-D`` reading the subscription ``replication-to-D`` of
  ``S``'s topic (created by :func:`~replication.topology.materialize` with the all-active
  loop-prevention rule) and sending to ``D``'s topic; it takes the ``retry`` settings of the
  first of ``S``'s tasks that sends to ``D`` and parks, like every Service Bus task without a
  ``deadLetterTarget``, in ``replication-parked`` of ``S``;
- the subscription ``heartbeat-reader`` of ``D``'s topic (no rule: the reader drops the
  heartbeats ``D`` publishes itself), which the heartbeat reader consumes.

Event Hubs namespaces neither publish nor receive heartbeats (not supported yet): an event hub
cannot be added to a namespace without changing its partitions and consumer groups, and an
event hub source has no subscription to keep heartbeats apart from user events.

Names longer than the limits (task 64, subscription 50 characters) are bounded like lane names
(:func:`~replication.topology.bounded`). Failures are
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
from ._specs import EntityRef, NamespaceKind, NamespaceSpec, SubscriptionSpec, TopicSpec
from ._tasks import TaskSpec, resolve_task
from ._topology import Topology

HEARTBEAT_READER = "heartbeat-reader"
"""The subscription of a receiving namespace's heartbeat topic that the heartbeat reader reads."""

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
    """The namespaces that receive heartbeats (and have a ``heartbeat-reader`` subscription)."""
    return list(dict.fromkeys(path.target for path in heartbeat_paths(topology)))


def heartbeat_time_to_live(interval: timedelta) -> timedelta:
    """How long a heartbeat lives: ten intervals, at least an hour."""
    return max(MINIMUM_TIME_TO_LIVE, interval * 10)


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
    for (origin, target), retry_of in pairs.items():
        name = bounded(f"heartbeat-{origin}-to-{target}", TASK_NAME_LIMIT)
        if name.lower() in taken:
            fail(
                "heartbeats",
                f"heartbeats need the task name '{name}', which a task of the file already has; "
                "rename that task",
            )
        task_spec = TaskSpec(
            name=name,
            pattern=HEARTBEAT_PATTERN,
            source=EntityRef(
                namespace=origin,
                entity=spec.entity,
                subscription=bounded(f"replication-to-{target}", SOURCE_NAME_LIMIT),
            ),
            targets=[EntityRef(namespace=target, entity=spec.entity)],
            retry=retry_of.retry,
        )
        specs.append(task_spec)
    namespaces = _with_topics(topology, pairs)
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


def _pairs(topology: Topology) -> dict[tuple[str, str], TaskSpec]:
    """(origin, target) of every path, with the first task of the file that takes it."""
    kinds = {namespace.name: namespace.kind for namespace in topology.namespaces}
    pairs: dict[tuple[str, str], TaskSpec] = {}
    for task in topology.tasks:
        origin = task.source.namespace
        if kinds[origin] is not NamespaceKind.SERVICEBUS:
            continue
        for target in task.targets:
            if target.namespace != origin and kinds[target.namespace] is NamespaceKind.SERVICEBUS:
                pairs.setdefault((origin, target.namespace), task)
    return pairs


def _with_topics(topology: Topology, pairs: dict[tuple[str, str], TaskSpec]) -> list[NamespaceSpec]:
    spec = topology.heartbeats
    ttl = heartbeat_time_to_live(spec.interval)
    involved = {name for pair in pairs for name in pair}
    receivers = {target for _, target in pairs}
    namespaces = []
    for namespace in topology.namespaces:
        if namespace.name in involved:
            reader = SubscriptionSpec(name=HEARTBEAT_READER)
            readers = [reader] if namespace.name in receivers else []
            topic = TopicSpec(
                name=spec.entity, default_message_time_to_live=ttl, subscriptions=readers
            )
            namespace = namespace.model_copy(update={"topics": [*namespace.topics, topic]})
        namespaces.append(namespace)
    return namespaces


__all__ = [
    "HEARTBEAT_READER",
    "HeartbeatPath",
    "add_heartbeats",
    "heartbeat_origins",
    "heartbeat_paths",
    "heartbeat_receivers",
    "heartbeat_schedule",
    "heartbeat_time_to_live",
]
