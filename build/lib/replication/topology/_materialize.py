"""The topology with everything its tasks need created: the renderers' single input.

Subscriptions that replication tasks read from are *managed*: a task reading a topic
subscription gets that subscription created with the rule its pattern prescribes (all-active:
``replication IS NULL`` / ``SET replication = 1``), named ``$Default`` so that it replaces the
TrueFilter rule Service Bus would otherwise add. A task reading an event hub consumer group gets
the group created. Every renderer (Bicep parameters, az CLI script, emulator config) works from
:func:`materialize`, so they never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence

from replication.rules import RuleSpec

from ._specs import DEFAULT_CONSUMER_GROUP, NamespaceSpec, SubscriptionSpec, TopicSpec
from ._topology import Topology


def materialize(topology: Topology) -> Topology:
    """``topology`` plus every subscription, rule and consumer group its tasks need."""
    namespaces = {ns.name: ns.model_copy(deep=True) for ns in topology.namespaces}
    for task in topology.resolved_tasks():
        source = task.spec.source
        namespace = namespaces[source.namespace]
        if source.subscription is not None:
            rule = task.subscription_rule()
            namespace = _with_topics(
                namespace, source.entity, source.subscription, [] if rule is None else [rule]
            )
        if source.consumer_group and source.consumer_group != DEFAULT_CONSUMER_GROUP:
            hubs = [
                hub.model_copy(
                    update={
                        "consumer_groups": _add_once(hub.consumer_groups, source.consumer_group)
                    }
                )
                if hub.name == source.entity
                else hub
                for hub in namespace.event_hubs
            ]
            namespace = namespace.model_copy(update={"event_hubs": hubs})
        namespaces[source.namespace] = namespace
    return topology.model_copy(update={"namespaces": list(namespaces.values())})


def _with_topics(
    namespace: NamespaceSpec, topic_name: str, subscription: str, rules: list[RuleSpec]
) -> NamespaceSpec:
    topics = [
        _with_subscription(topic, subscription, rules) if topic.name == topic_name else topic
        for topic in namespace.topics
    ]
    return namespace.model_copy(update={"topics": topics})


def _add_once(items: Sequence[str], item: str) -> list[str]:
    return list(items) if item in items else [*items, item]


def _with_subscription(topic: TopicSpec, name: str, rules: list[RuleSpec]) -> TopicSpec:
    subscriptions = list(topic.subscriptions)
    for index, subscription in enumerate(subscriptions):
        if subscription.name == name:
            subscriptions[index] = subscription.model_copy(update={"rules": rules})
            break
    else:
        subscriptions.append(SubscriptionSpec(name=name, rules=rules))
    return topic.model_copy(update={"subscriptions": subscriptions})


__all__ = ["materialize"]
