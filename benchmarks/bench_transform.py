"""Per-message cost of a user transform: an identity transform against no transform, side by side.

Run: ``.venv/bin/python benchmarks/bench_transform.py [--batches N] [--size S] [--rounds R]``.

The same all-active task of ``examples/two-region-all-active.json`` runs three ways over the same
batches, rounds interleaved (a fresh runner each, as the ledger would otherwise skip them):

- ``none``: no transform;
- ``def``: ``"transform"`` naming ``def identity(message): return message`` (called in the
  batch's worker thread, its result passed through the guard);
- ``async def``: the same as a coroutine function (the stage's event loop, a timeout per call);
- ``def, +1 prop``: ``message.with_properties({"tagged": True})``, a replica that differs from
  the received message, so the guard compares the replication properties and the decisions are
  mapped back (an identity result skips both).

First to the in-memory target, which isolates the library's own work, so the difference is the
transform's overhead per message; then, as the denominator the issue's goal is stated against, to
the local emulator through the real Service Bus sender (``python -m emulator`` in its own
process), which is what one message costs the local host to send (its receive and settle come on
top, so the printed share is an upper bound). The goal: the ``def`` overhead under 5 % of that.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from replication.envelope import Envelope
from replication.hosts.local import emulator_process
from replication.planning import Target
from replication.runtime import MemoryTarget, TargetSender, TaskRunner
from replication.settings import Settings
from replication.telemetry import TaskTelemetry
from replication.topology import ResolvedTask, parse_topology
from replication.transforms import Transforms
from replication.transport.senders import SenderFactory

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "two-region-all-active.json"
TASK = "orders-weu-to-neu"
NEU = Target("neu", "orders")


def identity(message: Envelope) -> Envelope:
    return message


async def identity_async(message: Envelope) -> Envelope:
    return message


def tag(message: Envelope) -> Envelope:
    return message.with_properties({"tagged": True})


def tasks() -> dict[str, ResolvedTask]:
    document: dict[str, Any] = json.loads(EXAMPLE.read_text())
    registry = Transforms()
    registry.register("identity")(identity)
    registry.register("identity_async")(identity_async)
    registry.register("tag")(tag)
    resolved = {}
    for name, transform in (
        ("none", None),
        ("def", "identity"),
        ("async def", "identity_async"),
        ("def, +1 prop", "tag"),
    ):
        for task in document["tasks"]:
            task.pop("transform", None)
            if task["name"] == TASK and transform is not None:
                task["transform"] = transform
        topology = parse_topology(document, source=str(EXAMPLE), transforms=registry)
        resolved[name] = topology.resolved(TASK)
    return resolved


def batches(count: int, size: int) -> list[list[Envelope]]:
    enqueued = datetime.now(UTC) - timedelta(seconds=1)
    return [
        [
            Envelope(
                body=b'{"amount": 42}',
                message_id=f"{b}-{i}",
                enqueued_time_utc=enqueued,
                sequence_number=b * size + i + 1,
                source="weu/orders",
                application_properties={"tenant": "contoso"},
            )
            for i in range(size)
        ]
        for b in range(count)
    ]


def measure(
    configurations: dict[str, ResolvedTask],
    work: list[list[Envelope]],
    rounds: int,
    target: Callable[[], TargetSender],
) -> dict[str, float]:
    """Median seconds per message of each configuration."""
    messages = sum(len(batch) for batch in work)

    def one_round(task: ResolvedTask) -> float:
        runner = TaskRunner(
            task, {NEU: target()}, telemetry=TaskTelemetry(task.name, enabled=False)
        )
        run = runner.run
        start = time.perf_counter()
        for batch in work:
            run(batch)
        return (time.perf_counter() - start) / messages

    names = list(configurations)
    for name in names:  # warm-up
        one_round(configurations[name])
    per_message: dict[str, list[float]] = {name: [] for name in names}
    for index in range(rounds):
        for name in names[index % len(names) :] + names[: index % len(names)]:
            per_message[name].append(one_round(configurations[name]))
    return {name: statistics.median(values) for name, values in per_message.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--emulator-batches", type=int, default=10)
    parser.add_argument("--emulator-rounds", type=int, default=3)
    args = parser.parse_args()
    configurations = tasks()

    memory = measure(
        configurations, batches(args.batches, args.size), args.rounds, lambda: MemoryTarget("neu")
    )
    print(
        f"TaskRunner.run to the in-memory target, {args.batches} batches of {args.size} "
        f"messages, {args.rounds} rounds (interleaved), median per message:"
    )
    for name, seconds in memory.items():
        extra = (seconds - memory["none"]) * 1e6
        print(f"  {name:13s} {seconds * 1e6:8.2f} us/message  (+{extra:6.2f} us)")

    with contextlib.ExitStack() as stack:
        settings = stack.enter_context(emulator_process(EXAMPLE))
        topology = parse_topology(json.loads(EXAMPLE.read_text()), source=str(EXAMPLE))
        factory = SenderFactory(
            topology, Settings.from_environ(settings, connections=topology.connections)
        )
        stack.callback(factory.close)
        emulator = measure(
            configurations,
            batches(args.emulator_batches, args.size),
            args.emulator_rounds,
            lambda: factory.sender("neu", "orders"),
        )
    print(
        f"TaskRunner.run to the emulator through the Service Bus sender, "
        f"{args.emulator_batches} batches of {args.size}, {args.emulator_rounds} rounds, "
        "median per message:"
    )
    for name, seconds in emulator.items():
        print(
            f"  {name:13s} {seconds * 1e6:8.2f} us/message  {seconds / emulator['none']:5.3f}x none"
        )
    host = emulator["none"]
    for name in ("def", "async def", "def, +1 prop"):
        overhead = memory[name] - memory["none"]
        print(
            f"{name} transform overhead: {overhead * 1e6:.2f} us/message = "
            f"{overhead / host * 100:.2f} % of a message sent by the local host's runner "
            f"({host * 1e6:.1f} us; goal <= 5 %)"
        )


if __name__ == "__main__":
    main()
