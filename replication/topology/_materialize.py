"""The topology with everything its tasks need created: the renderers' single input.

Subscriptions that replication tasks read from are *managed*: a task reading a topic
subscription gets that subscription created with the rule its pattern prescribes (all-active:
``replication IS NULL`` / ``SET replication = 1``), named ``$Default`` so that it replaces the
TrueFilter rule Service Bus would otherwise add. A task split into lanes (see :mod:`._lanes`)
reads one such subscription per target. A task reading an event hub consumer group gets the
group created.

Delivery counts: the queue or subscription a Service Bus task reads (not a dead-letter queue,
whose ``maxDeliveryCount`` belongs to the entity's own consumers) gets
``maxDeliveryCount = required_delivery_count(...)`` (see :mod:`._outage`), so that a target
outage of the task's ``retry.outageTolerance`` does not move messages into its dead-letter
queue, unless the file sets ``maxDeliveryCount`` on it explicitly (the validator has checked
that an explicit one is large enough).

Parking: the default parking queue of a Service Bus task (``replication-parked``, filled in
at load by :mod:`._lanes`) is declared in its namespace when the file does not declare it.

Every renderer (Bicep parameters, az CLI script, emulator config) works from
:func:`materialize`, so they never disagree.
"""

from __future__ import annotations

from typing import TypeVar

from replication.rules import RuleSpec

from ._outage import required_delivery_count
from ._specs import (
    DEFAULT_CONSUMER_GROUP,
    EntityRef,
    NamespaceKind,
    NamespaceSpec,
    QueueSpec,
    SubscriptionSpec,
    TopicSpec,
)
from ._topology import Topology

Entity = TypeVar("Entity", QueueSpec, SubscriptionSpec)

EXPLICIT_COUNT = "max_delivery_count"
"""The field whose presence in ``model_fields_set`` means the file chose the delivery count."""


def materialize(topology: Topology) -> Topology:
    """``topology`` plus every subscription, rule, consumer group, delivery count and parking
    queue its tasks need."""
    namespaces = {ns.name: ns for ns in topology.namespaces}
    for task in topology.resolved_tasks():
        source = task.spec.source
        namespace = namespaces[source.namespace]
        count = None
        if namespace.kind is NamespaceKind.SERVICEBUS and not source.dead_letter_queue:
            count = required_delivery_count(topology, task.spec)
        if source.subscription is not None:
            namespace = _with_subscription(namespace, source, task.subscription_rule(), count)
        elif count is not None:
            namespace = _with_queue_count(namespace, source.entity, count)
        if source.consumer_group and source.consumer_group != DEFAULT_CONSUMER_GROUP:
            namespace = _with_consumer_group(namespace, source.entity, source.consumer_group)
        namespaces[source.namespace] = namespace
        parking = task.spec.dead_letter_target
        if parking is not None:
            namespaces[parking.namespace] = _with_parking(namespaces[parking.namespace], parking)
    return topology.model_copy(update={"namespaces": list(namespaces.values())})


def _with_subscription(
    namespace: NamespaceSpec, source: EntityRef, rule: RuleSpec | None, count: int | None
) -> NamespaceSpec:
    """The source's subscription, declared or new, with the task's rule and delivery count."""
    topics = [
        _topic_with_subscription(topic, str(source.subscription), rule, count)
        if topic.name == source.entity
        else topic
        for topic in namespace.topics
    ]
    return namespace.model_copy(update={"topics": topics})


def _topic_with_subscription(
    topic: TopicSpec, name: str, rule: RuleSpec | None, count: int | None
) -> TopicSpec:
    subscriptions = list(topic.subscriptions)
    for index, subscription in enumerate(subscriptions):
        if subscription.name == name:
            subscriptions[index] = _with_count(_with_rule(subscription, rule), count)
            break
    else:
        new = SubscriptionSpec(name=name, rules=[] if rule is None else [rule])
        subscriptions.append(_with_count(new, count))
    return topic.model_copy(update={"subscriptions": subscriptions})


def _with_rule(subscription: SubscriptionSpec, rule: RuleSpec | None) -> SubscriptionSpec:
    # No rule from the pattern: the subscription keeps the rules the file gives it.
    if rule is None:
        return subscription
    return subscription.model_copy(update={"rules": [rule]})


def _with_count(entity: Entity, count: int | None) -> Entity:
    if count is None or EXPLICIT_COUNT in entity.model_fields_set:
        return entity
    return entity.model_copy(update={EXPLICIT_COUNT: count})


def _with_queue_count(namespace: NamespaceSpec, name: str, count: int) -> NamespaceSpec:
    queues = [_with_count(q, count) if q.name == name else q for q in namespace.queues]
    return namespace.model_copy(update={"queues": queues})


def _with_consumer_group(namespace: NamespaceSpec, hub_name: str, group: str) -> NamespaceSpec:
    hubs = [
        hub.model_copy(update={"consumer_groups": [*hub.consumer_groups, group]})
        if hub.name == hub_name and group not in hub.consumer_groups
        else hub
        for hub in namespace.event_hubs
    ]
    return namespace.model_copy(update={"event_hubs": hubs})


def _with_parking(namespace: NamespaceSpec, parking: EntityRef) -> NamespaceSpec:
    # Only the default parking queue can be undeclared: the validator checks every other
    # deadLetterTarget against the file.
    if parking.entity in namespace.entity_names():
        return namespace
    queues = [*namespace.queues, QueueSpec(name=parking.entity)]
    return namespace.model_copy(update={"queues": queues})


__all__ = ["materialize"]
