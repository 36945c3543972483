"""What the failover helpers cost, measured beside the bare SDK in one run.

Run: ``.venv/bin/python benchmarks/bench_failover.py [--messages N] [--rounds R] [--drill]``.

One emulator process serves the two Service Bus namespaces of
``examples/active-passive-failover.json`` and Azurite holds the binding store, as an
application would have them. Each round runs both variants, in alternating order, from empty
subscriptions, so that the shared machine's speed affects each alike; the figures are the
medians of the rounds, and the ratio also as the median of each round's own ratio:

- **publisher**: N messages sent one at a time with ``ServiceBusSender.send_messages`` (a bare
  SDK sender on the primary) and with :class:`~replication.failover.FailoverPublisher` (binding
  store read every 5 s, MessageIds given), time per message and the ratio (goal: at most 1.1);
- **skip helper in memory**: :meth:`ProcessedLog.decide` plus :meth:`ProcessedLog.record` per
  message, with a log holding 100,000 entries;
- **deadline lane**: what handing one call to a
  :class:`~replication.transport.deadlines.CallLane` and waiting for it costs (a call that does
  nothing; every SDK call of the failover clients pays it once);
- **consumer**: N messages received in batches of 50 and completed, with a bare SDK receiver
  and with :class:`~replication.failover.FailoverConsumer` (every batch screened by the log,
  its entries appended to the log's blob before the batch is completed), per message and the
  ratio;
- with ``--drill``: ``python -m replication drill`` planned, forced (primaries killed), hung
  primary (frozen with SIGSTOP) and hung store (Azurite frozen for 10 s), one after the other,
  their RTO figures, the longest ``receive`` of the Service Bus consumer and each switch
  command's duration (``--drill-only``: only those).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from azure.servicebus import ServiceBusClient, ServiceBusMessage

from replication.drill._processes import azurite
from replication.failover import FailoverConsumer, FailoverPublisher, FailoverStore, ProcessedLog
from replication.failover._origin import OriginPosition
from replication.hosts.local import emulator_process
from replication.transport.deadlines import CallLane

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "active-passive-failover.json"


def bare_publish(connection: str, count: int) -> float:
    with (
        ServiceBusClient.from_connection_string(connection) as client,
        client.get_topic_sender("orders") as sender,
    ):
        sender.send_messages(ServiceBusMessage(b"warm"))
        started = time.perf_counter()
        for index in range(count):
            sender.send_messages(ServiceBusMessage(b"x" * 256, message_id=f"b-{index}"))
        return (time.perf_counter() - started) / count


def failover_publish(namespaces: dict[str, str], store: FailoverStore, count: int) -> float:
    with FailoverPublisher.service_bus(
        app="bench", entity="orders", namespaces=namespaces, store=store
    ) as publisher:
        publisher.send(ServiceBusMessage(b"warm"))
        started = time.perf_counter()
        for _ in range(count):
            publisher.send(ServiceBusMessage(b"x" * 256))
        return (time.perf_counter() - started) / count


def bare_consume(connection: str, count: int) -> float:
    with (
        ServiceBusClient.from_connection_string(connection) as client,
        client.get_subscription_receiver("orders", "billing", prefetch_count=0) as receiver,
    ):
        received = 0
        started = time.perf_counter()
        while received < count:
            batch = receiver.receive_messages(max_message_count=50, max_wait_time=5)
            if not batch:
                raise RuntimeError(f"only {received} of {count} came back")
            for message in batch:
                receiver.complete_message(message)
            received += len(batch)
        return (time.perf_counter() - started) / count


def failover_consume(namespaces: dict[str, str], store: FailoverStore, count: int) -> float:
    consumer = FailoverConsumer.service_bus(
        app="bench",
        instance=uuid.uuid4().hex[:6],
        entity="orders",
        subscription="billing",
        namespaces=namespaces,
        store=store,
    )
    with consumer:
        received = 0
        for message in consumer.receive(max_message_count=1, max_wait_time=1):  # opens the link
            consumer.complete(message)
            received += 1
        started = time.perf_counter()
        while received < count:
            batch = consumer.receive(max_message_count=50, max_wait_time=5)
            if not batch and received < count:
                raise RuntimeError(f"only {received} of {count} came back")
            for message in batch:
                consumer.complete(message)
            received += len(batch)
        consumer.checkpoint()
        return (time.perf_counter() - started) / count


def fill(connection: str, count: int) -> None:
    with (
        ServiceBusClient.from_connection_string(connection) as client,
        client.get_topic_sender("orders") as sender,
    ):
        for start in range(0, count, 100):
            sender.send_messages(
                [ServiceBusMessage(b"x" * 256) for _ in range(min(100, count - start))]
            )


def drain(connection: str) -> None:
    """Empty both subscriptions (no replicator runs here), so every round starts alike."""
    with ServiceBusClient.from_connection_string(connection) as client:
        for subscription in ("billing", "replication"):
            with client.get_subscription_receiver("orders", subscription) as receiver:
                while batch := receiver.receive_messages(max_message_count=100, max_wait_time=1):
                    for message in batch:
                        receiver.complete_message(message)


def skip_helper_cost(entries: int = 100_000, checks: int = 200_000) -> float:
    log = ProcessedLog(max_entries=entries)
    now = datetime.now(UTC)
    for index in range(entries):
        log.record(f"m-{index}", OriginPosition("primary", now, index))
    origin = OriginPosition("primary", now, 0)
    started = time.perf_counter()
    for index in range(checks):
        message_id = f"n-{index}"
        if not log.decide(message_id, origin).skip:
            log.record(message_id, origin)
    return (time.perf_counter() - started) / checks


DRILLS = {
    "planned": ["--planned"],
    "forced": ["--forced"],
    "hung primary": ["--hang", "primary"],
    "hung store": ["--hang", "store"],
}


def lane_cost(calls: int = 2000, rounds: int = 5) -> float:
    """Seconds one :meth:`CallLane.run` of a call that does nothing costs (median of rounds)."""
    lane = CallLane("bench:0", name="bench")
    for _ in range(200):
        lane.run(lambda: None, timeout=10, what="warm up")
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(calls):
            lane.run(lambda: None, timeout=10, what="nothing")
        samples.append((time.perf_counter() - started) / calls)
    lane.retire()
    return statistics.median(samples)


def drill(arguments: list[str]) -> dict[str, object]:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "replication",
            "drill",
            "--topology",
            str(EXAMPLE),
            *arguments,
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    report: dict[str, object] = json.loads(result.stdout)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--drill", action="store_true")
    parser.add_argument("--drill-only", action="store_true")
    args = parser.parse_args()
    if not args.drill_only:
        costs(args)
    if args.drill or args.drill_only:
        drills()


def costs(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as workdir, emulator_process(EXAMPLE) as settings:
        namespaces = {"primary": settings["SB_PRIMARY"], "secondary": settings["SB_SECONDARY"]}
        with azurite(Path(workdir)) as storage:
            store = FailoverStore.from_connection_string(storage)
            bare, wrapped, bare_in, wrapped_in = [], [], [], []
            primary = namespaces["primary"]
            for round_number in range(args.rounds):
                # Alternate which variant goes first: the machine's speed drifts.
                for variant in ("bare", "failover")[:: 1 if round_number % 2 == 0 else -1]:
                    drain(primary)
                    if variant == "bare":
                        bare.append(bare_publish(primary, args.messages))
                    else:
                        wrapped.append(failover_publish(namespaces, store, args.messages))
                    drain(primary)
                    fill(primary, args.messages)
                    if variant == "bare":
                        bare_in.append(bare_consume(primary, args.messages))
                    else:
                        wrapped_in.append(failover_consume(namespaces, store, args.messages))
            store.close()
    send_bare, send_failover = statistics.median(bare), statistics.median(wrapped)
    get_bare, get_failover = statistics.median(bare_in), statistics.median(wrapped_in)
    print(f"{args.messages} messages x {args.rounds} rounds, medians")
    send_ratio = statistics.median(w / b for w, b in zip(wrapped, bare, strict=True))
    get_ratio = statistics.median(w / b for w, b in zip(wrapped_in, bare_in, strict=True))
    print(
        f"publisher: bare SDK {send_bare * 1000:.2f} ms/message, FailoverPublisher "
        f"{send_failover * 1000:.2f} ms/message: {send_failover / send_bare:.2f}x "
        f"(median of the rounds' ratios {send_ratio:.2f}x)"
    )
    print(
        "skip helper in memory (decide + record, 100,000 entries): "
        f"{skip_helper_cost() * 1e6:.2f} µs/message"
    )
    print(f"deadline lane (a thread handoff per SDK call): {lane_cost() * 1e6:.0f} µs per call")
    print(
        f"consumer (batches of 50): bare SDK {get_bare * 1000:.2f} ms/message, FailoverConsumer "
        f"{get_failover * 1000:.2f} ms/message: {get_failover / get_bare:.2f}x "
        f"(median of the rounds' ratios {get_ratio:.2f}x)"
    )


def drills() -> None:
    for mode, arguments in DRILLS.items():
        report = drill(arguments)
        for phase in ("failover", "failback"):
            for kind, figures in report[phase].items():  # type: ignore[attr-defined]
                receive = figures["longest_receive_seconds"]
                print(
                    f"drill {mode} {phase} {kind}: "
                    f"RTO publish {figures['rto_publish_seconds']} s, "
                    f"consume {figures['rto_consume_seconds']} s, lost {figures['lost']}, "
                    f"duplicates {figures['duplicates_with_skip_helper']} with the helper, "
                    f"{figures['duplicates_without_skip_helper']} without, switch publisher / "
                    f"consumer {figures['switch_seconds']['publisher']} / "
                    f"{figures['switch_seconds']['consumer']} s"
                    + ("" if receive is None else f", longest receive {receive} s")
                )
        for key, seconds in report["switch_seconds"].items():  # type: ignore[attr-defined]
            code = report["switch_exit_codes"][key]  # type: ignore[index]
            print(f"drill {mode} switch {key}: exit {code} after {seconds} s")
        print(f"drill {mode} lost at the end: {report['lost_at_end']}")


if __name__ == "__main__":
    main()
