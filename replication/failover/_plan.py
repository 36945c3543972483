"""What ``python -m replication failover|failback`` does, in which order, and what it refuses.

A switch moves the clients of one application (optionally one instance, one entity) from the
namespace they use now to another of the same replication. The order is Microsoft's
active-passive guidance, made explicit:

- **Planned failover** (to a namespace the current one replicates to): move the publishers;
  wait until they have followed (``settle``: their binding poll interval); wait until
  replication has copied everything (the tasks' source backlog is 0: a message leaves it only
  once the replicator has sent it to the target); move the consumers. The consumers then
  find every message either processed or on the target, where their log skips the first kind.
- **Planned failback** (to the namespace the current one is a replica of): move the publishers;
  wait until they have followed; wait until the current namespace has drained, i.e. nothing
  published *directly* there is left unconsumed (those messages are not replicated back);
  move the consumers. What the primary received meanwhile reached the consumers through
  replication and their log skips it on the primary.
- **Forced** (either direction, ``--force``): move publishers and consumers at once, then
  count what the old namespace has not replicated (the RPO accepted, named where the source can
  still be read, "unknown" where it cannot: a namespace that does not answer is the reason for
  most forced switches, so nothing is read before the clients move).

A binding document that binds the clients to a namespace the topology does not replicate the
entity with (a hand edit, a namespace since removed from the topology) is refused for a planned
switch with the blob and the JSON path of the rule; ``--force`` moves the clients from there.

:func:`plan_switch` checks the request against the topology and the binding document and
returns the plan; it raises :class:`SwitchRefusedError` for a namespace that is not part of the
entity's replication, a direction the command does not do (``failover`` to the primary is a
failback) or an entity the topology does not replicate.
"""

from __future__ import annotations

import dataclasses
import enum
from datetime import timedelta

from replication.exceptions import SwitchRefusedError
from replication.topology import EntityRef, NamespaceKind, Topology

from ._bindings import BindingDocument, Role

REPLICATING_PATTERNS = ("active_passive", "all_active")
"""Patterns that copy an entity to the same entity elsewhere: the ones a switch can follow."""


class Direction(enum.StrEnum):
    FAILOVER = "failover"
    FAILBACK = "failback"


@dataclasses.dataclass(frozen=True, slots=True)
class Pair:
    """One replication of the entity: a task copying ``source`` to ``target``."""

    task: str
    source: str
    target: str
    source_ref: EntityRef


@dataclasses.dataclass(frozen=True, slots=True)
class SwitchPlan:
    """A checked switch: who moves from where to where, what to wait for, the steps."""

    app: str
    instance: str | None
    entity: str | None
    direction: Direction
    force: bool
    source: str
    target: str
    kind: NamespaceKind
    namespaces: tuple[str, ...]
    replication_tasks: tuple[str, ...]
    """Tasks copying source to target (failover: their backlog must reach 0)."""
    drain: tuple[EntityRef, ...]
    """What the application reads in the source (failback: must drain)."""
    steps: tuple[str, ...]

    @property
    def client(self) -> str:
        return "/".join(part for part in (self.app, self.instance, self.entity) if part)


def replication_pairs(topology: Topology, entity: str | None) -> list[Pair]:
    """Every (source, target) copy of ``entity`` (of every replicated entity when None)."""
    heartbeat_entity = topology.heartbeats.entity if topology.heartbeats.enabled else None
    pairs = []
    for task in topology.tasks:
        if task.pattern not in REPLICATING_PATTERNS or task.source.entity == heartbeat_entity:
            continue
        if entity is not None and task.source.entity != entity:
            continue
        for target in task.targets:
            if target.entity == task.source.entity:
                pairs.append(Pair(task.name, task.source.namespace, target.namespace, task.source))
    return pairs


def plan_switch(
    topology: Topology,
    document: BindingDocument | None,
    *,
    app: str,
    instance: str | None,
    entity: str | None,
    target: str,
    direction: Direction,
    force: bool,
    settle: timedelta,
    document_source: str = "the binding document",
) -> SwitchPlan:
    """The plan of a switch (see the module docstring); ``document_source`` names the blob in
    refusals.

    Raises:
        SwitchRefusedError: the request does not fit the topology or the binding.
    """
    pairs = replication_pairs(topology, entity)
    what = f"entity {entity!r}" if entity else "any entity"
    if not pairs:
        raise SwitchRefusedError(
            f"no {' or '.join(REPLICATING_PATTERNS)} task replicates {what}; a switch needs the "
            "entity replicated between the namespaces"
        )
    involved = list(dict.fromkeys(n for pair in pairs for n in (pair.source, pair.target)))
    if target not in involved:
        copies = ", ".join(sorted({f"{p.source} -> {p.target} ({p.task})" for p in pairs}))
        raise SwitchRefusedError(
            f"namespace {target!r} is not part of the replication of {what}: {copies}; "
            f"choose one of {', '.join(involved)}"
        )
    names = list(document.namespaces) if document is not None else involved
    current = _current(document, instance, entity, names[0])
    publish, consume = current
    source = consume if consume != target else publish
    if publish == target and consume == target:
        source = target
    copies_to = {(p.source, p.target) for p in pairs}
    outside = [name for name in dict.fromkeys((consume, publish)) if name not in involved]
    if outside and document is not None:
        client = "/".join(part for part in (app, instance, entity) if part)
        rule = document.rule_for(instance, entity)
        where = f"bindings[{document.bindings.index(rule)}]" if rule is not None else "bindings"
        if not force:
            copies = ", ".join(sorted({f"{p.source} -> {p.target} ({p.task})" for p in pairs}))
            raise SwitchRefusedError(
                f"{document_source}: {where} binds {client} to "
                f"{' and '.join(repr(n) for n in outside)}, which is not part of the "
                f"replication of {what} ({copies}); `--force --to {target}` moves the clients "
                "from there"
            )
        source = outside[0]
    elif source != target:
        if direction is Direction.FAILOVER and (source, target) not in copies_to:
            other = "failback" if (target, source) in copies_to else None
            raise SwitchRefusedError(
                f"{target!r} is not a replica of {source!r} (where {app} is now)"
                + (": moving there is a failback, use `failback`" if other else "")
            )
        if direction is Direction.FAILBACK and (target, source) not in copies_to:
            raise SwitchRefusedError(
                f"{source!r} (where {app} is now) is not a replica of {target!r}"
                + (
                    ": moving there is a failover, use `failover`"
                    if (source, target) in copies_to
                    else ""
                )
            )
    kind = topology.namespace(target).kind
    tasks = tuple(p.task for p in pairs if (p.source, p.target) == (source, target))
    known = source in involved
    drain = tuple(_consumed_entities(topology, source, pairs)) if known and source != target else ()
    plan = SwitchPlan(
        app=app,
        instance=instance,
        entity=entity,
        direction=direction,
        force=force,
        source=source,
        target=target,
        kind=kind,
        namespaces=tuple(names),
        replication_tasks=tasks,
        drain=drain,
        steps=(),
    )
    return dataclasses.replace(plan, steps=tuple(_steps(plan, current, settle)))


def _current(
    document: BindingDocument | None, instance: str | None, entity: str | None, default: str
) -> tuple[str, str]:
    if document is None:
        return default, default
    return (
        document.resolve(instance, entity, Role.PUBLISH) or default,
        document.resolve(instance, entity, Role.CONSUME) or default,
    )


def _consumed_entities(topology: Topology, namespace: str, pairs: list[Pair]) -> list[EntityRef]:
    """What applications read in ``namespace`` for the paired entities: queues, topic
    subscriptions no task reads, event hubs (per consumer group: all of them)."""
    spec = topology.namespace(namespace)
    entities = sorted({pair.source_ref.entity for pair in pairs})
    task_sources = {
        (task.source.namespace, task.source.entity, task.source.subscription)
        for task in topology.tasks
    }
    refs: list[EntityRef] = []
    for queue in spec.queues:
        if queue.name in entities:
            refs.append(EntityRef(namespace=namespace, entity=queue.name))
    for topic in spec.topics:
        if topic.name in entities:
            refs += [
                EntityRef(namespace=namespace, entity=topic.name, subscription=sub.name)
                for sub in topic.subscriptions
                if (namespace, topic.name, sub.name) not in task_sources
            ]
    for hub in spec.event_hubs:
        if hub.name in entities:
            refs.append(EntityRef(namespace=namespace, entity=hub.name))
    return refs


def _steps(plan: SwitchPlan, current: tuple[str, str], settle: timedelta) -> list[str]:
    who = plan.client
    if plan.source == plan.target:
        return [f"nothing to do: publishers and consumers of {who} already use {plan.target}"]
    wait = f"{settle.total_seconds():g} s"
    if plan.force:
        return [
            f"count what {plan.source} has not replicated to {plan.target} (the RPO accepted)",
            f"move publishers and consumers of {who} to {plan.target} at once",
        ]
    steps = []
    if current[0] != plan.target:
        steps += [
            f"move publishers of {who} from {current[0]} to {plan.target}",
            f"wait {wait} for the publishers to follow (their binding poll interval)",
        ]
    if plan.direction is Direction.FAILOVER:
        tasks = ", ".join(plan.replication_tasks)
        steps.append(
            f"wait until replication {plan.source} -> {plan.target} has copied everything "
            f"(backlog 0 in {tasks})"
        )
    else:
        drained = ", ".join(ref.describe() for ref in plan.drain) or "(nothing consumed there)"
        steps.append(
            f"wait until {plan.source} has drained: no message published directly there left "
            f"in {drained}"
        )
    steps.append(f"move consumers of {who} from {current[1]} to {plan.target}")
    return steps


__all__ = [
    "REPLICATING_PATTERNS",
    "Direction",
    "Pair",
    "SwitchPlan",
    "SwitchRefusedError",
    "plan_switch",
    "replication_pairs",
]
