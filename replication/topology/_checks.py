"""Cross-reference checks: what pydantic cannot express field by field.

Names unique (case-insensitively, as Azure compares them), every reference to a namespace or
entity resolvable with a "did you mean", sources and targets of the right kind, one task per
subscription, an explicit ``maxDeliveryCount`` on a task's source large enough for the task's
``retry.outageTolerance`` (see :mod:`._outage`), and the pattern's own checks of a resolved
task. Each failure is a
:class:`~replication.exceptions.ConfigurationError` naming the file and the JSON path.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import NoReturn

from pydantic.alias_generators import to_camel

from replication.exceptions import ConfigurationError

from ._outage import required_delivery_count, tolerated_outage
from ._specs import EntityRef, NamespaceKind, QueueSpec, SubscriptionSpec
from ._tasks import ResolvedTask, TaskSpec
from ._topology import Topology

Fail = Callable[[str, str], NoReturn]


def failer(source: str) -> Fail:
    """A function that raises the configuration error for (location, message) in ``source``."""

    def fail(location: str, message: str) -> NoReturn:
        raise ConfigurationError(message, source=source, location=location)

    return fail


def check_references(topology: Topology, source: str) -> None:
    """Cross-reference checks of the document, before any task is resolved."""
    fail = failer(source)
    names = [ns.name for ns in topology.namespaces]
    _check_unique(names, "namespaces", "name", fail)
    _check_unique([ns.connection for ns in topology.namespaces], "namespaces", "connection", fail)
    for n, namespace in enumerate(topology.namespaces):
        _check_unique(namespace.entity_names(), f"namespaces[{n}]", "entity name", fail)
        for t, topic in enumerate(namespace.topics):
            where = f"namespaces[{n}].topics[{t}].subscriptions"
            _check_unique([s.name for s in topic.subscriptions], where, "name", fail)
            for s, subscription in enumerate(topic.subscriptions):
                rules = f"{where}[{s}].rules"
                _check_unique([r.name for r in subscription.rules], rules, "name", fail)
    _check_unique([task.name for task in topology.tasks], "tasks", "name", fail)
    for i, task in enumerate(topology.tasks):
        here = f"tasks[{i}]"
        _check_entity_ref(topology, task.source, f"{here}.source", fail, is_source=True)
        if task.dead_letter_target is not None:
            _check_entity_ref(
                topology, task.dead_letter_target, f"{here}.deadLetterTarget", fail, is_source=False
            )
        elif topology.namespace(task.source.namespace).kind is NamespaceKind.EVENTHUBS:
            fail(
                f"{here}.deadLetterTarget",
                "an event hub source has no dead-letter queue: name a deadLetterTarget entity "
                "where events that cannot be replicated are parked",
            )
        for j, target in enumerate(task.targets):
            _check_entity_ref(topology, target, f"{here}.targets[{j}]", fail, is_source=False)
            if (target.namespace, target.entity) == (task.source.namespace, task.source.entity):
                fail(f"{here}.targets[{j}]", "a task's target must differ from its source entity")
        for subscription_task in topology.tasks[:i]:
            if task.source.subscription is not None and subscription_task.source == task.source:
                fail(
                    f"{here}.source",
                    f"task '{subscription_task.name}' already reads {task.source.describe()}: "
                    "two tasks on one subscription would split its messages between them",
                )


def _check_unique(values: list[str], where: str, what: str, fail: Fail) -> None:
    seen: set[str] = set()
    for index, value in enumerate(values):
        key = value.lower()
        if key in seen:
            fail(f"{where}[{index}]", f"duplicate {what} '{value}' (names are case-insensitive)")
        seen.add(key)


def _check_entity_ref(
    topology: Topology, ref: EntityRef, location: str, fail: Fail, *, is_source: bool
) -> None:
    known = [ns.name for ns in topology.namespaces]
    if ref.namespace not in known:
        import difflib  # only for a wrong topology: a good one loads without importing it

        close = difflib.get_close_matches(ref.namespace, known, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        fail(
            f"{location}.namespace",
            f"unknown namespace '{ref.namespace}'{hint}; known: {', '.join(known)}",
        )
    namespace = topology.namespace(ref.namespace)
    entities = namespace.entity_names()
    if ref.entity not in entities:
        fail(
            f"{location}.entity",
            f"namespace '{namespace.name}' has no entity '{ref.entity}'; "
            f"declared: {', '.join(entities) or 'none'}",
        )
    is_topic = any(topic.name == ref.entity for topic in namespace.topics)
    is_hub = namespace.kind is NamespaceKind.EVENTHUBS
    if not is_source:
        for field_name in ("subscription", "consumer_group"):
            if getattr(ref, field_name) is not None:
                fail(f"{location}.{to_camel(field_name)}", "only a source can name this")
        if ref.dead_letter_queue:
            fail(f"{location}.deadLetterQueue", "a dead-letter queue cannot be a target")
        return
    if is_topic and ref.subscription is None:
        fail(
            f"{location}.subscription", f"'{ref.entity}' is a topic: name the subscription to read"
        )
    if not is_topic and ref.subscription is not None:
        fail(f"{location}.subscription", f"'{ref.entity}' is not a topic")
    if is_hub and ref.consumer_group is None:
        fail(f"{location}.consumerGroup", "an event hub source needs a consumerGroup")
    if not is_hub and ref.consumer_group is not None:
        fail(f"{location}.consumerGroup", "only event hub sources have consumer groups")
    if is_hub and ref.dead_letter_queue:
        fail(f"{location}.deadLetterQueue", "event hubs have no dead-letter queue")


def check_resolved(topology: Topology, task: ResolvedTask, index: int, source: str) -> None:
    """The pattern's own checks of a resolved task, and its managed subscription."""
    fail = failer(source)
    here = f"tasks[{index}]"
    for relative, message in task.pattern.check(task.options, task.context.targets):
        fail(f"{here}.options.{relative}", message)
    _check_managed_subscription(topology, task, here, fail)
    _check_delivery_count(topology, task.spec, fail)


def _check_managed_subscription(
    topology: Topology, task: ResolvedTask, here: str, fail: Fail
) -> None:
    """A subscription a task reads is created by the task; hand-written rules there conflict."""
    source = task.spec.source
    if source.subscription is None or task.subscription_rule() is None:
        return
    for topic in topology.namespace(source.namespace).topics:
        if topic.name != source.entity:
            continue
        for subscription in topic.subscriptions:
            if subscription.name == source.subscription and subscription.rules:
                fail(
                    f"{here}.source.subscription",
                    f"subscription '{subscription.name}' gets its loop-prevention rule from "
                    f"task '{task.name}' (pattern {task.spec.pattern}); remove its 'rules'",
                )


def _check_delivery_count(topology: Topology, task: TaskSpec, fail: Fail) -> None:
    """An explicit ``maxDeliveryCount`` on the queue or subscription a Service Bus task reads
    must ride out the task's ``retry.outageTolerance`` (an implicit one is raised to it by
    ``materialize``). A dead-letter queue source is exempt: the entity's delivery count
    belongs to its own consumers."""
    source = task.source
    location = _declared_source_path(topology, source)
    if location is None or source.dead_letter_queue:
        return
    entity, path = location
    if "max_delivery_count" not in entity.model_fields_set:
        return
    have = entity.max_delivery_count
    need = required_delivery_count(topology, task)
    if have >= need:
        return
    rides_out = _whole_seconds(tolerated_outage(topology, task, have))
    fail(
        f"{path}.maxDeliveryCount",
        f"{have} deliveries ride out {rides_out} of target outage, but task '{task.name}' has "
        f"retry.outageTolerance {_whole_seconds(task.retry.outage_tolerance)} and needs {need} "
        "(raise it, or lower the tolerance)",
    )


def _declared_source_path(
    topology: Topology, source: EntityRef
) -> tuple[QueueSpec | SubscriptionSpec, str] | None:
    """The declared queue or subscription ``source`` reads and its JSON path (None: an event
    hub, or a subscription the file does not declare)."""
    for n, namespace in enumerate(topology.namespaces):
        if namespace.name != source.namespace or namespace.kind is NamespaceKind.EVENTHUBS:
            continue
        if source.subscription is None:
            for q, queue in enumerate(namespace.queues):
                if queue.name == source.entity:
                    return queue, f"namespaces[{n}].queues[{q}]"
        for t, topic in enumerate(namespace.topics):
            if topic.name != source.entity:
                continue
            for s, subscription in enumerate(topic.subscriptions):
                if subscription.name == source.subscription:
                    return subscription, f"namespaces[{n}].topics[{t}].subscriptions[{s}]"
    return None


def _whole_seconds(value: timedelta) -> timedelta:
    return timedelta(seconds=int(value.total_seconds()))


__all__ = ["check_references", "check_resolved", "failer"]
