"""Where a scenario's messages can end up: the entities the showcase reads and counts.

A copy of a message can only be counted where something can read it, so the showcase reads
every Service Bus queue and subscription of the (materialized) topology that no replication
task reads. They are one of three kinds:

- **consumer** entities, the ones applications read (``fulfilment``, ``dashboard``, a target
  queue): where replicas must arrive;
- **parking** queues, the tasks' ``deadLetterTarget`` (``replication-parked`` unless the file
  names one): where a message that cannot be replicated is parked with its reason;
- **dead-letter queues** of every queue and subscription, except the one a spillover task reads
  (that one is a source): where the broker puts what nobody could deliver.

Entities a task reads are the replicator's, not the showcase's: taking from them would steal
messages from replication. So are the capture subscriptions of an audited scenario (its capture
tasks read them, :func:`~replication.topology.capture_sources`). The heartbeat topic is the
heartbeats' own (see :mod:`replication.heartbeats`) and left out too. Event hubs are not read: no
showcase scenario sends to one (an event hub is only ever a source here).
"""

from __future__ import annotations

from dataclasses import dataclass

from replication.topology import (
    EntityRef,
    NamespaceKind,
    Topology,
    capture_sources,
    materialize,
    requires_session,
)


@dataclass(frozen=True)
class Places:
    """The entities the showcase reads for one topology, by kind (see the module docstring)."""

    consumers: tuple[EntityRef, ...]
    parking: tuple[EntityRef, ...]
    dead_letter_queues: tuple[EntityRef, ...]
    sessions: frozenset[EntityRef]
    """The entities among them that require sessions (read session by session)."""

    @property
    def read_while_running(self) -> tuple[EntityRef, ...]:
        """Consumer entities and parking queues: read over and over while a scenario runs."""
        return self.consumers + self.parking

    def is_parking(self, place: EntityRef) -> bool:
        return place.dead_letter_queue or place in self.parking


def place(text: str) -> EntityRef:
    """``"neu/orders/billing"`` (a subscription) or ``"neu/jobs"`` (a queue, or a topic)."""
    namespace, entity, *rest = text.split("/")
    return EntityRef(namespace=namespace, entity=entity, subscription=rest[0] if rest else None)


def describe(ref: EntityRef) -> str:
    """The inverse of :func:`place`, with ``/$DeadLetterQueue`` for a dead-letter queue."""
    text = "/".join(p for p in (ref.namespace, ref.entity, ref.subscription) if p)
    return text + ("/$DeadLetterQueue" if ref.dead_letter_queue else "")


def places_of(topology: Topology) -> Places:
    """The :class:`Places` of a loaded topology."""
    materialized = materialize(topology)
    read = {
        (source.namespace, source.entity, source.subscription, source.dead_letter_queue)
        for source in [t.source for t in topology.tasks]
        + [c.source for c in capture_sources(topology)]
    }
    parking = {
        (t.dead_letter_target.namespace, t.dead_letter_target.entity)
        for t in topology.tasks
        if t.dead_letter_target is not None
    }
    heartbeats = topology.heartbeats.entity if topology.heartbeats.enabled else None
    consumers: list[EntityRef] = []
    parked: list[EntityRef] = []
    letters: list[EntityRef] = []
    for namespace in materialized.namespaces:
        if namespace.kind is not NamespaceKind.SERVICEBUS:
            continue
        entities = [(queue.name, None) for queue in namespace.queues] + [
            (topic.name, subscription.name)
            for topic in namespace.topics
            if topic.name != heartbeats
            for subscription in topic.subscriptions
        ]
        for entity, subscription in entities:
            ref = EntityRef(namespace=namespace.name, entity=entity, subscription=subscription)
            if (namespace.name, entity, subscription, False) not in read:
                is_parking = subscription is None and (namespace.name, entity) in parking
                (parked if is_parking else consumers).append(ref)
            if (namespace.name, entity, subscription, True) not in read:
                letters.append(ref.model_copy(update={"dead_letter_queue": True}))
    sessions = frozenset(r for r in consumers + parked if requires_session(materialized, r))
    return Places(tuple(consumers), tuple(parked), tuple(letters), sessions)


__all__ = ["Places", "describe", "place", "places_of"]
