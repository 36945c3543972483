"""What a loaded task runs as: one *lane* per target, and a parking place for poison messages.

**Lanes.** A task that reads one replication subscription and sends every message to several
peers is only as fast as its slowest peer: when one peer is down, every batch fails and is
redelivered, so the healthy peers are held back and are sent every message again (dropped
only by their duplicate detection). Microsoft's all-active pattern therefore gives each peer
its own replication subscription. Here a task is split into one lane per target when

- its pattern sends every message to every target (``Pattern.fans_out``: all-active,
  active-passive, latency optimization, stream to queue, spillover);
- it has more than one target;
- its source can be read more than once: a topic subscription (each lane reads its own
  subscription of the topic, with the same rule the pattern prescribes) or an event hub
  consumer group (each lane reads, and checkpoints, its own consumer group; not on the Basic
  tier, which has ``$Default`` only).

Tasks that stay whole: a queue (or any dead-letter queue) source, whose messages are consumed
once, so two readers would split them instead of each receiving all of them; and patterns that
decide per message (routing, validation), whose verdicts (no route matched, failed validation)
concern the message, not one target, so every lane would park the same message again.

A lane is an ordinary task: its spec is the file's spec with one target and its own source
(``ResolvedTask.lane_of`` names the file's task), so the Function app registers one function
per lane, the local host runs one loop per lane, and ``materialize`` creates each lane's
subscription or consumer group. Names, for task ``T`` reading subscription (or consumer group)
``S`` and a target in namespace ``N``:

- the lane's task and Function name is ``T-to-N``, its subscription ``S-to-N`` (``$Default``
  as ``Default-to-N``);
- when two targets share a namespace, ``N-<entity>`` replaces ``N`` (entity slugged, plus a
  digest of the entity if two slugs still coincide);
- a name longer than the limit (task names 64, Service Bus subscriptions and consumer groups
  50 characters) keeps its head and gets ``-<8 hex digits of SHA-256 of the whole name>``.

A subscription the file declares for a task that is split is the template of its lanes'
subscriptions (same settings, each under its lane's name) and is itself no longer part of the
topology: nothing would read it, and a subscription without a reader fills its topic.

**Parking.** A Service Bus-sourced task without ``deadLetterTarget`` gets the queue
:data:`PARKING_QUEUE` of its source namespace, so that a message that cannot be replicated is
parked on its own instead of failing its batch (:func:`~replication.topology.materialize`
declares the queue). Event hub sources must name one (checked in :mod:`._checks`).

Failures are :class:`~replication.exceptions.ConfigurationError` naming the file and the JSON
path of the task: a lane whose name, subscription or consumer group is already taken.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence

from replication.planning import Target

from ._checks import Fail, failer
from ._names import bounded, digest, slug
from ._specs import EntityRef, NamespaceKind, NamespaceSpec
from ._tasks import ResolvedTask
from ._topology import Topology

PARKING_QUEUE = "replication-parked"
"""The default ``deadLetterTarget`` of a Service Bus-sourced task, in its source namespace."""

TASK_NAME_LIMIT = 64
"""Longest task name the topology accepts (Function names may be longer)."""

SOURCE_NAME_LIMIT = 50
"""Longest Service Bus subscription name, and longest Event Hubs consumer group name."""


def expand_tasks(topology: Topology, source: str) -> Topology:
    """``topology`` with its tasks as they run: parking filled in, fan-out tasks split into
    lanes (in place, in target order); template subscriptions renamed to the lanes'."""
    fail = failer(source)
    namespaces = {namespace.name: namespace for namespace in topology.namespaces}
    running: list[tuple[int, ResolvedTask]] = []
    for index, task in enumerate(topology.resolved_tasks()):
        task = with_parking(topology, task)
        lanes = split(topology, task)
        if lanes:
            name = task.spec.source.namespace
            namespaces[name] = _lane_subscriptions(namespaces[name], task, lanes, index, fail)
        running += [(index, lane) for lane in lanes or [task]]
    _check_lanes_unique(running, fail)
    expanded = topology.model_copy(
        update={
            "namespaces": list(namespaces.values()),
            "tasks": [task.spec for _, task in running],
        }
    )
    return expanded.with_resolved({task.name: task for _, task in running})


def with_parking(topology: Topology, task: ResolvedTask) -> ResolvedTask:
    """``task`` with the default parking queue when it reads Service Bus and names none."""
    spec = task.spec
    namespace = topology.namespace(spec.source.namespace)
    if spec.dead_letter_target is not None or namespace.kind is not NamespaceKind.SERVICEBUS:
        return task
    parking = EntityRef(namespace=namespace.name, entity=PARKING_QUEUE)
    return dataclasses.replace(task, spec=spec.model_copy(update={"dead_letter_target": parking}))


def splits(topology: Topology, task: ResolvedTask) -> bool:
    """Whether ``task`` runs as one lane per target (see the module docstring)."""
    spec = task.spec
    source = spec.source
    if not task.pattern.fans_out or len(spec.targets) < 2 or source.dead_letter_queue:
        return False
    if source.subscription is not None:
        return True
    namespace = topology.namespace(source.namespace)
    return source.consumer_group is not None and namespace.sku != "Basic"


def split(topology: Topology, task: ResolvedTask) -> list[ResolvedTask]:
    """The lanes of ``task``, one per target in target order ([] when it stays whole)."""
    if not splits(topology, task):
        return []
    spec = task.spec
    source = spec.source
    field = "subscription" if source.subscription is not None else "consumer_group"
    base = str(getattr(source, field)).lstrip("$")
    lanes = []
    for target, key in zip(spec.targets, lane_keys(spec.targets), strict=True):
        lane_spec = spec.model_copy(
            update={
                "name": bounded(f"{spec.name}-to-{key}", TASK_NAME_LIMIT),
                "source": source.model_copy(
                    update={field: bounded(f"{base}-to-{key}", SOURCE_NAME_LIMIT)}
                ),
                "targets": [target],
            }
        )
        context = dataclasses.replace(
            task.context,
            task_name=lane_spec.name,
            targets=(Target(target.namespace, target.entity),),
        )
        lanes.append(dataclasses.replace(task, spec=lane_spec, context=context, lane_of=spec.name))
    return lanes


def lane_keys(targets: Sequence[EntityRef]) -> list[str]:
    """What names each target in its lane's names: its namespace, unless two targets share it."""
    shared = Counter(target.namespace for target in targets)
    keys = [
        target.namespace
        if shared[target.namespace] == 1
        else f"{target.namespace}-{slug(target.entity)}"
        for target in targets
    ]
    repeated = Counter(keys)
    return [
        f"{key}-{digest(target.entity, 6)}" if repeated[key] > 1 else key
        for key, target in zip(keys, targets, strict=True)
    ]


def _lane_subscriptions(
    namespace: NamespaceSpec, task: ResolvedTask, lanes: list[ResolvedTask], index: int, fail: Fail
) -> NamespaceSpec:
    """The namespace with a declared template subscription replaced by its lanes' copies."""
    source = task.spec.source
    if source.subscription is None:
        return namespace
    topics = []
    for topic in namespace.topics:
        if topic.name != source.entity:
            topics.append(topic)
            continue
        declared = {s.name.lower(): s for s in topic.subscriptions}
        for lane in lanes:
            name = str(lane.spec.source.subscription)
            if name.lower() in declared:
                fail(
                    f"tasks[{index}].source.subscription",
                    f"lane '{lane.name}' of task '{task.name}' reads subscription '{name}' of "
                    f"topic '{topic.name}', which the file already declares; rename that one",
                )
        subscriptions = []
        for subscription in topic.subscriptions:
            if subscription.name != source.subscription:
                subscriptions.append(subscription)
                continue
            subscriptions += [
                subscription.model_copy(update={"name": lane.spec.source.subscription})
                for lane in lanes
            ]
        topics.append(topic.model_copy(update={"subscriptions": subscriptions}))
    return namespace.model_copy(update={"topics": topics})


def _check_lanes_unique(running: list[tuple[int, ResolvedTask]], fail: Fail) -> None:
    """No lane takes the name, subscription or consumer group of another running task."""
    names: dict[str, ResolvedTask] = {}
    sources: dict[tuple[str, str, str, bool], ResolvedTask] = {}
    for index, task in running:
        # The file's own names are unique (checked at load): a clash involves a lane.
        other = names.setdefault(task.name.lower(), task)
        if other is not task:
            fail(f"tasks[{index}].name", _taken("name", task, other))
        reading = task.spec.source.subscription or task.spec.source.consumer_group
        if reading is None:
            continue
        source = task.spec.source
        key = (source.namespace, source.entity, reading.lower(), source.dead_letter_queue)
        other = sources.setdefault(key, task)
        if other is not task and (task.lane_of is not None or other.lane_of is not None):
            what = "subscription" if source.subscription is not None else "consumer group"
            fail(f"tasks[{index}].source", _taken(f"{what} '{reading}'", task, other))


def _taken(what: str, task: ResolvedTask, other: ResolvedTask) -> str:
    def label(t: ResolvedTask) -> str:
        return f"lane '{t.name}' of task '{t.lane_of}'" if t.lane_of else f"task '{t.name}'"

    return f"{label(task)} and {label(other)} would share the {what}; rename one of them"


__all__ = [
    "PARKING_QUEUE",
    "SOURCE_NAME_LIMIT",
    "TASK_NAME_LIMIT",
    "expand_tasks",
    "lane_keys",
    "split",
    "splits",
    "with_parking",
]
