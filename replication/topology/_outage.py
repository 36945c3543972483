"""How long one invocation may retry a target, and how many deliveries an outage costs.

A Service Bus batch trigger holds its messages under a peek lock that the Functions host does
not renew for batches (``maxAutoLockRenewalDuration`` applies to single-message functions only),
so an invocation that keeps retrying a target that is down must give up before the lock
expires; the batch is then abandoned and redelivered at once, which costs one delivery. A
target outage of length T therefore costs about ``T / attempt budget`` deliveries, and the
entity the task reads needs a ``maxDeliveryCount`` at least that large, or its messages move to
its dead-letter queue in the middle of the outage. These two numbers are computed here from the
topology so that the runtime, the renderers and the validator agree on them.

Event Hubs has no lock and no delivery count: an Event Hubs invocation retries within the same
budget and the trigger's retry policy (unlimited, exponential) retries the batch after that,
so the checkpoint never passes an unreplicated event however long the outage lasts.
"""

from __future__ import annotations

import math
from datetime import timedelta

from ._specs import NamespaceKind, QueueSpec, SubscriptionSpec
from ._tasks import RetrySpec, TaskSpec
from ._topology import Topology

LOCK_SHARE = 0.8
"""Share of the source's lock duration an invocation may spend retrying: the rest is for
receiving, the last send and completing the batch before the lock expires."""

MAX_ATTEMPT = timedelta(minutes=4)
"""Upper bound of one invocation's retries, below the Consumption plan's default 5-minute
``functionTimeout`` (Event Hubs sources, and Service Bus sources with 5-minute locks)."""

DELIVERY_HEADROOM = 10
"""Deliveries kept for what is not an outage: a replicator restarted mid-batch, a lock lost to a
slow send, a transient error after the outage window."""

MAX_DELIVERY_COUNT = 2000
"""The largest ``maxDeliveryCount`` the topology schema accepts."""


def source_settings(topology: Topology, task: TaskSpec) -> QueueSpec | SubscriptionSpec | None:
    """The declared queue or subscription a Service Bus task reads (None: not declared, or the
    source is an event hub). Service Bus defaults apply to an undeclared one."""
    source = task.source
    namespace = topology.namespace(source.namespace)
    if namespace.kind is NamespaceKind.EVENTHUBS:
        return None
    if source.subscription is None:
        return next((q for q in namespace.queues if q.name == source.entity), None)
    for topic in namespace.topics:
        if topic.name == source.entity:
            return next((s for s in topic.subscriptions if s.name == source.subscription), None)
    return None


def attempt_budget(topology: Topology, task: TaskSpec) -> timedelta:
    """How long one invocation of ``task`` may keep retrying its targets."""
    namespace = topology.namespace(task.source.namespace)
    if namespace.kind is NamespaceKind.EVENTHUBS:
        return MAX_ATTEMPT
    settings = source_settings(topology, task) or QueueSpec(name="default")
    return min(settings.lock_duration * LOCK_SHARE, MAX_ATTEMPT)


def required_delivery_count(topology: Topology, task: TaskSpec) -> int:
    """The ``maxDeliveryCount`` a Service Bus source needs to ride out the task's
    ``retry.outageTolerance`` without dead-lettering (capped at :data:`MAX_DELIVERY_COUNT`)."""
    budget = attempt_budget(topology, task)
    attempts = math.ceil(task.retry.outage_tolerance / budget)
    return min(attempts + DELIVERY_HEADROOM, MAX_DELIVERY_COUNT)


def tolerated_outage(topology: Topology, task: TaskSpec, max_delivery_count: int) -> timedelta:
    """The outage a source with ``max_delivery_count`` rides out (for error messages)."""
    attempts = max(0, max_delivery_count - DELIVERY_HEADROOM)
    return attempt_budget(topology, task) * attempts


def longest_outage_tolerance(topology: Topology) -> timedelta:
    """The longest ``retry.outageTolerance`` of the topology's tasks (the default tolerance when
    it has none): how much later than its original a replica may still be delivered, its
    messages having waited at the source through a target outage instead of being
    dead-lettered. The streaming duplicate audit keeps message ids in state for this long."""
    tolerances = [task.retry.outage_tolerance for task in topology.tasks]
    return max(tolerances, default=RetrySpec().outage_tolerance)


__all__ = [
    "DELIVERY_HEADROOM",
    "LOCK_SHARE",
    "MAX_ATTEMPT",
    "attempt_budget",
    "longest_outage_tolerance",
    "required_delivery_count",
    "source_settings",
    "tolerated_outage",
]
