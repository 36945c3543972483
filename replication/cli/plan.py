"""``python -m replication plan``: a dry run of the whole topology without any broker.

It publishes one message in the source entity of every task, then runs every task's real
pattern, stamping and loop prevention over what arrives, delivering replicas to in-memory targets
until nothing moves. It prints each decision, so you can see what would be forwarded where, and
what loop prevention stops. (Broker-side subscription rules are not simulated: the patterns
apply the same "originals only" rule themselves.)

The walk is bounded whatever the patterns do. With loop prevention working, a copy is
replicated at most ``maxHops`` times, and between two replications it can be moved to a
``deadLetterTarget`` at most once per task (a task that parks the same copy twice would park it
forever). A copy that has moved more often than that is in a loop: the walk stops, says which
message and where, and the command exits with 1 (findings) instead of running forever.

With ``--rate MSG_PER_S[,SIZE]`` it prints the capacity plan instead
(:mod:`replication.capacity`): per namespace and entity, the sends, filter evaluations and
receives per second the topology causes at that publish rate, set against the tier's limits;
it exits with 1 when a namespace runs out.
"""

from __future__ import annotations

import argparse
from collections import deque
from datetime import UTC, datetime, timedelta
from typing import Any

from replication.capacity import Rate, capacity_plan, render
from replication.envelope import Envelope
from replication.exit_codes import ExitCode
from replication.planning import DeadLetter, Forward, Skip, Target
from replication.properties import read_state
from replication.runtime import MemoryTarget, TargetSender, TaskRunner
from replication.topology import Topology

from ._options import add_topology_option, positive_int, topology_of
from ._text import counted

Entity = tuple[str, str]


def configure(parser: argparse.ArgumentParser) -> None:
    add_topology_option(parser)
    parser.add_argument(
        "--messages", type=positive_int, default=1, help="messages per source entity"
    )
    parser.add_argument(
        "--rate",
        metavar="MSG_PER_S[,SIZE]",
        help="print the capacity plan at this publish rate into every source entity (message "
        "size in bytes, default 1024) against each tier's limits, instead of the walk",
    )


class _Simulation:
    """Delivers messages between in-memory entities by running every task's runner."""

    def __init__(self, topology: Topology) -> None:
        self.targets: dict[Entity, MemoryTarget] = {}
        self.runners: list[tuple[Entity, TaskRunner]] = []
        for task in topology.tasks:
            senders: dict[Target, TargetSender] = {}
            for ref in task.targets:
                senders[Target(ref.namespace, ref.entity)] = self._target(ref.namespace, ref.entity)
            dead = task.dead_letter_target
            parking = self._target(dead.namespace, dead.entity) if dead else MemoryTarget("parking")
            runner = TaskRunner(topology.resolved(task), senders, parking)
            self.runners.append(((task.source.namespace, task.source.entity), runner))
        self.clock = datetime(2024, 1, 1, tzinfo=UTC)
        self.sequence = 0

    def _target(self, namespace: str, entity: str) -> MemoryTarget:
        return self.targets.setdefault((namespace, entity), MemoryTarget(f"{namespace}/{entity}"))

    def enqueue(self, envelope: Envelope) -> Envelope:
        self.sequence += 1
        self.clock += timedelta(milliseconds=250)
        return envelope.replace(enqueued_time_utc=self.clock, sequence_number=self.sequence)


def run(args: argparse.Namespace) -> int:
    if args.rate is not None:
        return capacity(topology_of(args), Rate.parse(args.rate))
    return walk(topology_of(args), args.messages)


def capacity(topology: Topology, rate: Rate) -> int:
    """Print the capacity plan; :attr:`ExitCode.FINDINGS` when a namespace runs out or a copy
    loops."""
    plan = capacity_plan(topology, rate)
    print("\n".join(render(plan)))
    if plan.loops or any(load.runs_out for load in plan.namespaces):
        return ExitCode.FINDINGS
    return ExitCode.OK


def walk(topology: Topology, messages: int = 1) -> int:
    """Publish ``messages`` per source entity, replicate until quiet; print it all.

    Returns :attr:`ExitCode.OK`, or :attr:`ExitCode.FINDINGS` when a copy moved more often than
    loop prevention allows (see the module docstring; the walk stops there).
    """
    simulation = _Simulation(topology)
    max_hops = max((topology.max_hops(task) for task in topology.tasks), default=0)
    limit = (max_hops + 1) * (len(topology.tasks) + 1) - 1
    # Each entry: the entity a copy arrives in, the copy, and how many times it was moved
    # (replicated or parked) since it was published.
    pending: deque[tuple[Entity, Envelope, int]] = deque()
    for entity in dict.fromkeys(source for source, _ in simulation.runners):
        for index in range(messages):
            message = Envelope(
                body=b'{"demo": true}',
                message_id=f"{entity[0]}-{entity[1]}-{index + 1}",
                content_type="application/json",
            )
            pending.append((entity, simulation.enqueue(message), 0))
            print(f"publish  {entity[0]}/{entity[1]:<14} {message.message_id}")
    deliveries: dict[str, list[str]] = {}
    width = max((len(task.name) for task in topology.tasks), default=0)
    while pending:
        entity, envelope, moves = pending.popleft()
        if moves > limit:
            print(
                f"\nloop: {envelope.message_id} arrived in {entity[0]}/{entity[1]} after {moves} "
                f"moves; with maxHops {max_hops} and {len(topology.tasks)} tasks a copy needs at "
                f"most {limit}, so loop prevention did not stop it (does a task edit the repl- "
                "properties, or do dead-letter targets form a cycle?)"
            )
            return ExitCode.FINDINGS
        deliveries.setdefault(envelope.message_id or "?", []).append(f"{entity[0]}/{entity[1]}")
        for source, runner in simulation.runners:
            if source != entity:
                continue
            before = {key: len(t.received) for key, t in simulation.targets.items()}
            for decision in runner.run([envelope]).decisions:
                _print_decision(runner.task.name.ljust(width), decision)
            for key, target in simulation.targets.items():
                for replica in target.received[before.get(key, 0) :]:
                    pending.append((key, simulation.enqueue(replica), moves + 1))
    print("\nwhere each message ended up:")
    for message_id, places in deliveries.items():
        print(f"  {message_id:<28} {', '.join(places)}")
    duplicates = {m: p for m, p in deliveries.items() if len(p) != len(set(p))}
    copies = sum(map(len, deliveries.values()))
    print(
        f"\n{counted(len(deliveries), 'message', 'messages')}, "
        f"{counted(copies, 'copy', 'copies')}, {len(duplicates)} delivered twice to one entity"
    )
    return ExitCode.OK


def _print_decision(task: str, decision: Any) -> None:
    """One line per decision; ``task`` comes padded to the longest task (or lane) name."""
    message = decision.source.message_id
    if isinstance(decision, Forward):
        state = read_state(decision.envelope.application_properties)
        print(
            f"  {task} {message:<28} -> {decision.target}  "
            f"(path {';'.join(state.path)}, hop {state.hops})"
        )
    elif isinstance(decision, Skip):
        print(f"  {task} {message:<28} skip: {decision.reason}")
    elif isinstance(decision, DeadLetter):
        print(f"  {task} {message:<28} dead-letter: {decision.reason}: {decision.description}")
