"""Service Bus capture: what a namespace's ``capture`` section adds to a loaded topology.

Event Hubs has Capture; Service Bus has none. A Service Bus namespace with a ``capture``
section (:class:`~replication.topology.CaptureSpec`) gets, for each topic it declares:

- the subscription :data:`CAPTURE_SUBSCRIPTION` (no rules: Service Bus's ``$Default``
  TrueFilter, so it takes everything the topic holds, originals and replicas alike). Heartbeats
  travel on a topic of their own (:mod:`._heartbeats`, added after this step), so they are never
  captured. Its ``maxDeliveryCount`` is the entity default (10): a capture whose storage is
  down for longer sends the batch to the subscription's dead-letter queue, where
  ``python -m replication redrive`` brings it back. The file may declare the subscription
  itself, without rules, to choose its settings (``lockDuration``, ``maxDeliveryCount``);
- a :class:`CaptureSource`: what the replicator (the Function app, the local host) runs as a
  capture task, named ``capture-<namespace>-<topic>`` (bounded like a task name).

A queue is not captured: a capture subscription needs a topic, and receiving from a queue would
take its messages from the application. Failures are
:class:`~replication.exceptions.ConfigurationError` naming the file and the JSON path: a
declared capture subscription with rules, a capture task name a task already has.
"""

from __future__ import annotations

import dataclasses

from ._checks import failer
from ._lanes import TASK_NAME_LIMIT
from ._names import bounded
from ._specs import CaptureSpec, EntityRef, NamespaceKind, SubscriptionSpec, TopicSpec
from ._topology import Topology

CAPTURE_SUBSCRIPTION = "replication-capture"
"""The subscription of each captured topic that the capture task reads."""


@dataclasses.dataclass(frozen=True)
class CaptureSource:
    """One capture task: ``source`` (a topic's :data:`CAPTURE_SUBSCRIPTION`) written to the
    storage ``spec`` names, under the folder ``region`` (the namespace's logical name, which
    the audit reports by)."""

    name: str
    source: EntityRef
    spec: CaptureSpec

    @property
    def region(self) -> str:
        return self.source.namespace


def capture_sources(topology: Topology) -> list[CaptureSource]:
    """The capture tasks of ``topology``, in file order (none without a Service Bus
    ``capture`` section)."""
    sources = []
    for namespace in topology.namespaces:
        if namespace.kind is not NamespaceKind.SERVICEBUS or namespace.capture is None:
            continue
        for topic in namespace.topics:
            if not any(s.name.lower() == CAPTURE_SUBSCRIPTION for s in topic.subscriptions):
                continue  # added after the captures: the heartbeat topic
            sources.append(
                CaptureSource(
                    name=capture_task_name(namespace.name, topic.name),
                    source=EntityRef(
                        namespace=namespace.name,
                        entity=topic.name,
                        subscription=CAPTURE_SUBSCRIPTION,
                    ),
                    spec=namespace.capture,
                )
            )
    return sources


def capture_task_name(namespace: str, topic: str) -> str:
    """The name of the capture task of ``topic`` in ``namespace`` (a Function name)."""
    return bounded(f"capture-{namespace}-{topic}", TASK_NAME_LIMIT)


def add_captures(topology: Topology, source: str) -> Topology:
    """``topology`` plus the capture subscription of every topic of a Service Bus namespace
    with a ``capture`` section (unchanged when there is none)."""
    fail = failer(source)
    taken = {task.name.lower() for task in topology.tasks}
    heartbeats = topology.heartbeats.entity.lower() if topology.heartbeats.enabled else None
    namespaces = []
    for index, namespace in enumerate(topology.namespaces):
        if namespace.kind is not NamespaceKind.SERVICEBUS or namespace.capture is None:
            namespaces.append(namespace)
            continue
        topics: list[TopicSpec] = []
        for position, topic in enumerate(namespace.topics):
            if topic.name.lower() == heartbeats:  # entity names are case-insensitive
                topics.append(topic)  # never captured (see the module docstring)
                continue
            declared = False
            for number, subscription in enumerate(topic.subscriptions):
                if subscription.name.lower() != CAPTURE_SUBSCRIPTION:
                    continue
                if subscription.rules:
                    fail(
                        f"namespaces[{index}].topics[{position}].subscriptions[{number}].rules",
                        f"'{CAPTURE_SUBSCRIPTION}' is the subscription the namespace's capture "
                        "reads, and it must take everything the topic holds: give it no rules",
                    )
                declared = True
            name = capture_task_name(namespace.name, topic.name)
            if name.lower() in taken:
                fail(
                    f"namespaces[{index}].capture",
                    f"the capture of topic '{topic.name}' needs the task name '{name}', which "
                    "a task of the file already has; rename that task",
                )
            if declared:
                topics.append(topic)
                continue
            capture = SubscriptionSpec(name=CAPTURE_SUBSCRIPTION)
            topics.append(
                topic.model_copy(update={"subscriptions": [*topic.subscriptions, capture]})
            )
        namespaces.append(namespace.model_copy(update={"topics": topics}))
    return topology.model_copy(update={"namespaces": namespaces})


def capture_everywhere(topology: Topology, spec: CaptureSpec, source: str) -> Topology:
    """``topology`` as if every Service Bus namespace without a ``capture`` section had
    ``spec`` as its section: each of its topics (but the heartbeat topic) gets the capture
    subscription and a capture task.

    What the demo audits by: it captures every region it runs, whether or not the file asks for
    it, into a local folder (``REPLICATION_CAPTURE_STORAGE``), exactly as a deployment with
    capture sections would into Blob Storage. ``source`` names the file in errors."""
    namespaces = [
        namespace.model_copy(update={"capture": spec})
        if namespace.kind is NamespaceKind.SERVICEBUS and namespace.capture is None
        else namespace
        for namespace in topology.namespaces
    ]
    return add_captures(topology.model_copy(update={"namespaces": namespaces}), source)


__all__ = [
    "CAPTURE_SUBSCRIPTION",
    "CaptureSource",
    "add_captures",
    "capture_everywhere",
    "capture_sources",
]
