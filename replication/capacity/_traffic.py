"""Follow one message per source through a topology and count what the brokers do with it.

The walk is the ``plan`` command's (every task's real pattern, stamping and loop prevention,
in memory), with the brokers' side added, because that is where the cost is:

- a copy sent to an entity is one *send* on its namespace (the application's for an original,
  the replicator's for a replica, the parking of a rejected message);
- a copy sent to a topic is evaluated against every rule of every subscription (a subscription
  without rules has Service Bus's ``$Default`` TrueFilter: one evaluation), with the topology's
  real SQL and correlation filters, and lands, after the matching rules' actions, in each
  subscription that selects it, where it is *received* once: by the task that reads that
  subscription, or by the application that does (except a heartbeat topic's
  ``heartbeat-status``, which nobody receives from: its messages expire, ``status`` peeks it);
- a copy sent to a queue is received once; one sent to an event hub is received once per
  consumer group the topology declares or a task reads (each is assumed read by someone);
- a task reading a dead-letter queue (spillover) gets every message its entity receives, each
  after ``maxDeliveryCount`` failed deliveries there: the worst case spillover is for.

Counts are per message per second into each source entity (the *unit rate*), except heartbeats,
which are published once per ``heartbeats.interval`` whatever the traffic (*fixed*). What a
pattern decides depends on the message: the walk uses one JSON message without application
properties, like ``plan``, and reports what each task did with it, so that a condition or a
route that the sample does not meet is visible rather than silently cheap.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from replication.envelope import Envelope
from replication.planning import DeadLetter, Forward, Skip
from replication.rules import CorrelationFilterSpec, RuleSpec
from replication.sql import (
    CORRELATION_FIELDS,
    CorrelationFilter,
    SqlEvaluationError,
    SqlFilter,
    SqlRuleAction,
)
from replication.topology import (
    DEFAULT_CONSUMER_GROUP,
    HEARTBEAT_STATUS,
    EntityRef,
    ResolvedTask,
    SubscriptionSpec,
    Topology,
    heartbeat_origins,
    materialize,
)

EntityKey = tuple[str, str]
"""(namespace, entity name as the topology spells it)."""

SAMPLE_BODY = b'{"demo": true}'


@dataclasses.dataclass
class EntityTraffic:
    """Operations per second on one entity."""

    sends: float = 0.0
    filter_evaluations: float = 0.0
    receives: float = 0.0
    ingress_bytes: float = 0.0
    egress_bytes: float = 0.0

    def scaled(self, factor: float) -> EntityTraffic:
        return EntityTraffic(*(getattr(self, f.name) * factor for f in dataclasses.fields(self)))

    def plus(self, other: EntityTraffic) -> EntityTraffic:
        return EntityTraffic(
            *(getattr(self, f.name) + getattr(other, f.name) for f in dataclasses.fields(self))
        )


@dataclasses.dataclass(frozen=True)
class Traffic:
    """What the walk found: per entity, the traffic at one message per second into every
    source (``per_message``) and the traffic that does not depend on it (``fixed``:
    heartbeats); per task, what it did with the sample; and copies that looped."""

    per_message: dict[EntityKey, EntityTraffic]
    fixed: dict[EntityKey, EntityTraffic]
    task_outcomes: dict[str, Counter[str]]
    loops: list[str]


Matcher = Callable[[Envelope], bool]


@dataclasses.dataclass(frozen=True)
class _Rule:
    matches: Matcher
    action: SqlRuleAction | None


def _correlation_matcher(spec: CorrelationFilterSpec) -> Matcher:
    fields = {
        name: value for name in CORRELATION_FIELDS if (value := getattr(spec, name)) is not None
    }
    return CorrelationFilter(fields, dict(spec.properties)).matches


def _compile(rule: RuleSpec) -> _Rule:
    if rule.filter.sql is not None:
        matcher: Matcher = SqlFilter(rule.filter.sql).matches
    else:
        assert rule.filter.correlation is not None  # the model requires one of the two
        matcher = _correlation_matcher(rule.filter.correlation)
    return _Rule(matcher, SqlRuleAction(rule.action) if rule.action else None)


_TRUE_FILTER = _Rule(lambda _: True, None)


@dataclasses.dataclass(frozen=True)
class _Subscription:
    name: str
    rules: tuple[_Rule, ...]
    max_delivery_count: int
    received: bool = True
    """Whether someone receives what it holds (not so ``heartbeat-status``)."""

    @classmethod
    def of(cls, spec: SubscriptionSpec, *, received: bool = True) -> _Subscription:
        rules = tuple(_compile(rule) for rule in spec.rules) or (_TRUE_FILTER,)
        return cls(spec.name, rules, spec.max_delivery_count, received)

    def select(self, envelope: Envelope) -> Envelope | None:
        """The copy this subscription holds after its matching rules' actions, or None."""
        try:
            matched = [rule for rule in self.rules if rule.matches(envelope)]
        except SqlEvaluationError:
            return None  # dead-lettered by the broker as a filter evaluation exception
        if not matched:
            return None
        for rule in matched:
            if rule.action is not None:
                envelope = rule.action.apply(envelope)
        return envelope


def _key(namespace: str, entity: str) -> tuple[str, str]:
    """Service Bus and Event Hubs entity names are case-insensitive."""
    return namespace, entity.lower()


class _Walk:
    """The in-memory brokers of a materialized topology, and the tasks that read them."""

    def __init__(self, topology: Topology, message_bytes: int) -> None:
        self.topology = topology
        self.message_bytes = message_bytes
        self.names: dict[tuple[str, str], EntityKey] = {}
        self.kinds: dict[tuple[str, str], str] = {}
        self.subscriptions: dict[tuple[str, str], list[_Subscription]] = {}
        self.consumer_groups: dict[tuple[str, str], list[str]] = {}
        self.max_delivery_counts: dict[tuple[str, str], int] = {}
        for namespace in materialize(topology).namespaces:
            for queue in namespace.queues:
                self._declare(namespace.name, queue.name, "queue")
                self.max_delivery_counts[_key(namespace.name, queue.name)] = (
                    queue.max_delivery_count
                )
            for topic in namespace.topics:
                key = self._declare(namespace.name, topic.name, "topic")
                heartbeats = (
                    topology.heartbeats.enabled and topic.name == topology.heartbeats.entity
                )
                self.subscriptions[key] = [
                    _Subscription.of(s, received=not (heartbeats and s.name == HEARTBEAT_STATUS))
                    for s in topic.subscriptions
                ]
            for hub in namespace.event_hubs:
                key = self._declare(namespace.name, hub.name, "eventhub")
                self.consumer_groups[key] = list(hub.consumer_groups)
        self.readers: dict[tuple[str, str, str | None], list[ResolvedTask]] = {}
        self.dead_letter_readers: list[ResolvedTask] = []
        for task in topology.resolved_tasks():
            source = task.spec.source
            if source.dead_letter_queue:
                self.dead_letter_readers.append(task)
                continue
            reader: str | None = None
            if self.kinds.get(_key(source.namespace, source.entity)) == "eventhub":
                group = source.consumer_group or DEFAULT_CONSUMER_GROUP
                groups = self.consumer_groups[_key(source.namespace, source.entity)]
                if group.lower() not in (g.lower() for g in groups):
                    groups.append(group)
                reader = group.lower()
            elif source.subscription is not None:
                reader = source.subscription.lower()
            self.readers.setdefault((*_key(source.namespace, source.entity), reader), []).append(
                task
            )
        self.clock = datetime(2024, 1, 1, tzinfo=UTC)
        self.sequence = 0
        self.max_moves = self._max_moves()
        self.task_outcomes: dict[str, Counter[str]] = {}
        self.loops: list[str] = []

    def _declare(self, namespace: str, entity: str, kind: str) -> tuple[str, str]:
        key = _key(namespace, entity)
        self.names[key] = (namespace, entity)
        self.kinds[key] = kind
        return key

    def _max_moves(self) -> int:
        """As in ``plan``: a copy moves at most ``maxHops`` times between namespaces, and once
        per task into parking in between; more is a loop."""
        tasks = self.topology.tasks
        max_hops = max((self.topology.max_hops(task) for task in tasks), default=0)
        return (max_hops + 1) * (len(tasks) + 1) - 1

    def _enqueue(self, envelope: Envelope) -> Envelope:
        self.sequence += 1
        self.clock += timedelta(milliseconds=250)
        return envelope.replace(enqueued_time_utc=self.clock, sequence_number=self.sequence)

    def publish(
        self, namespace: str, entity: str, weight: float, into: dict[EntityKey, EntityTraffic]
    ) -> None:
        """Publish the sample (``weight`` messages per second) into an entity and count
        everything it causes into ``into``."""
        sample = self._enqueue(self._sample(namespace, entity))
        self._arrive(namespace, entity, sample, weight, 0, into)

    @staticmethod
    def _sample(namespace: str, entity: str) -> Envelope:
        return Envelope(
            body=SAMPLE_BODY,
            message_id=f"{namespace}-{entity}-sample",
            content_type="application/json",
        )

    def _traffic(self, key: tuple[str, str], into: dict[EntityKey, EntityTraffic]) -> EntityTraffic:
        return into.setdefault(self.names.get(key, key), EntityTraffic())

    def _arrive(
        self,
        namespace: str,
        entity: str,
        envelope: Envelope,
        weight: float,
        moves: int,
        into: dict[EntityKey, EntityTraffic],
    ) -> None:
        if moves > self.max_moves:
            self.loops.append(f"{envelope.message_id} reached {namespace}/{entity}")
            return
        key = _key(namespace, entity)
        traffic = self._traffic(key, into)
        traffic.sends += weight
        traffic.ingress_bytes += weight * self.message_bytes
        kind = self.kinds.get(key)
        if kind == "queue":
            traffic.receives += weight
            traffic.egress_bytes += weight * self.message_bytes
            self._deliver((*key, None), envelope, weight, moves, into)
        elif kind == "topic":
            for subscription in self.subscriptions[key]:
                traffic.filter_evaluations += weight * len(subscription.rules)
                selected = subscription.select(envelope)
                if selected is None or not subscription.received:
                    continue
                traffic.receives += weight
                traffic.egress_bytes += weight * self.message_bytes
                self._deliver((*key, subscription.name.lower()), selected, weight, moves, into)
        elif kind == "eventhub":
            for group in self.consumer_groups[key]:
                traffic.receives += weight
                traffic.egress_bytes += weight * self.message_bytes
                self._deliver((*key, group.lower()), envelope, weight, moves, into)

    def spill(
        self,
        ref: EntityRef,
        weight: float,
        into: dict[EntityKey, EntityTraffic],
    ) -> None:
        """Every message ``ref``'s entity (or subscription) holds fails ``maxDeliveryCount``
        deliveries and then is read from its dead-letter queue by the spillover task."""
        key = _key(ref.namespace, ref.entity)
        traffic = self._traffic(key, into)
        attempts = self.max_delivery_counts.get(key, 10)
        if ref.subscription is not None:
            for subscription in self.subscriptions.get(key, []):
                if subscription.name.lower() == ref.subscription.lower():
                    attempts = subscription.max_delivery_count
        # The first delivery was counted when the message arrived; the failed redeliveries and
        # the read from the dead-letter queue were not.
        traffic.receives += weight * attempts
        traffic.egress_bytes += weight * attempts * self.message_bytes
        for task in self.dead_letter_readers:
            source = task.spec.source
            if (_key(source.namespace, source.entity), source.subscription) == (
                key,
                ref.subscription,
            ):
                sample = self._sample(ref.namespace, ref.entity)
                self._run(task, self._enqueue(sample), weight, 0, into)

    def _deliver(
        self,
        reader: tuple[str, str, str | None],
        envelope: Envelope,
        weight: float,
        moves: int,
        into: dict[EntityKey, EntityTraffic],
    ) -> None:
        for task in self.readers.get(reader, []):
            self._run(task, envelope, weight, moves, into)

    def _run(
        self,
        task: ResolvedTask,
        envelope: Envelope,
        weight: float,
        moves: int,
        into: dict[EntityKey, EntityTraffic],
    ) -> None:
        outcomes = self.task_outcomes.setdefault(task.name, Counter())
        for decision in task.pattern.plan([envelope], task.context, task.options):
            if isinstance(decision, Forward):
                outcomes["forward"] += 1
                target = decision.target
                replica = self._enqueue(decision.envelope)
                self._arrive(target.namespace, target.entity, replica, weight, moves + 1, into)
            elif isinstance(decision, DeadLetter):
                outcomes[f"park ({decision.reason})"] += 1
                parking = task.spec.dead_letter_target
                if parking is not None:
                    copy = self._enqueue(decision.source)
                    self._arrive(parking.namespace, parking.entity, copy, weight, moves + 1, into)
            elif isinstance(decision, Skip):
                outcomes[f"skip ({decision.reason})"] += 1


def measure_traffic(topology: Topology, message_bytes: int) -> Traffic:
    """Walk ``topology`` (a loaded one) at the unit rate, and its heartbeats at theirs.

    Every entity a task reads gets the sample once, however many tasks or lanes read it; an
    entity whose dead-letter queue a task reads (spillover) gets it too, then spills it.
    """
    walk = _Walk(topology, message_bytes)
    heartbeat_entity = topology.heartbeats.entity.lower()
    heartbeat_namespaces = set(heartbeat_origins(topology))
    per_message: dict[EntityKey, EntityTraffic] = {}
    fixed: dict[EntityKey, EntityTraffic] = {}
    published: set[tuple[str, str]] = set()
    spills: list[EntityRef] = []
    for task in topology.tasks:
        source = task.source
        if source.dead_letter_queue:
            spills.append(source)
        key = _key(source.namespace, source.entity)
        if key in published:
            continue
        published.add(key)
        if source.namespace in heartbeat_namespaces and key[1] == heartbeat_entity:
            interval = topology.heartbeats.interval.total_seconds()
            walk.publish(source.namespace, source.entity, 1.0 / interval, fixed)
        else:
            walk.publish(source.namespace, source.entity, 1.0, per_message)
    spilled: set[tuple[str, str, str | None]] = set()
    for source in spills:
        once = (*_key(source.namespace, source.entity), source.subscription)
        if once not in spilled:
            spilled.add(once)
            walk.spill(source, 1.0, per_message)
    return Traffic(per_message, fixed, walk.task_outcomes, walk.loops)


__all__ = ["EntityKey", "EntityTraffic", "Traffic", "measure_traffic"]
