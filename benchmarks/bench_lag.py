"""Replication lag under load through the local host: a queue source and a session source.

Run: ``.venv/bin/python benchmarks/bench_lag.py [--seconds S] [--rate R] [--rounds N]
[--base DIR] [--load N] [--widen]``.

Issue 37: a message the SDK's keep-alive race leaves locked comes back only when its lock
expires, so it reaches the target late by about one lock duration. This measures how late the
replicas are: ``python -m replication run`` (this checkout, and with ``--base DIR`` another one,
e.g. ``git archive main | tar -x -C DIR``, in the same rounds, alternating) replicates two
sources of one emulator namespace to another while this process publishes to both at a steady
rate for ``--seconds``:

- ``plain``: a queue (``plain-in`` to ``plain-out``);
- ``sessions``: a session-enabled queue (``ordered-in`` to ``ordered-out``), 8 sessions.

Both sources have a lock duration of :data:`LOCK_SECONDS`. When everything has arrived, the
targets are peeked (nothing settled; ``ordered-out`` session by session) and each replica's lag
is the target's enqueue time less the source's (``repl-enqueued-time``, which the replicator
stamps from the source message): both are broker clocks of the same emulator process, so
the figure is the replication's own lag, publishing excluded. A warm-up message through each
source first keeps the host's start-up out of the figures. Per source and variant it prints
p50, p99 and the maximum of every round's replicas together (the first copy of each message),
and how many were later than one lock duration.

``--load N`` runs N extra processes beside the rounds that make what the issue's failing demo had
around it: files written and synced, short-lived processes started, CPU spun (the machine is
shared anyway; say so with the figures). ``--widen`` runs each local host as the test build of
``tests/faults/keepalive_race.py``, which delays the SDK keep-alive thread's handling of
transfers (without patching the SDK) so that the race shows within seconds where it exists.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from azure.servicebus import ServiceBusClient, ServiceBusMessage  # noqa: E402

from replication.hosts.local import emulator_process  # noqa: E402
from replication.properties import REPL_ENQUEUED_TIME  # noqa: E402
from replication.transport.servicebus import entity_receiver, peek_pages  # noqa: E402

LOCK_SECONDS = 20
SESSIONS = 8
SOURCES = {"plain": ("plain-in", "plain-out"), "sessions": ("ordered-in", "ordered-out")}
WIDENING_BUILD = ROOT / "tests" / "faults" / "keepalive_race.py"
ARRIVAL_TIMEOUT = 300.0


def topology() -> dict[str, Any]:
    lock = f"PT{LOCK_SECONDS}S"
    return {
        "namespaces": [
            {
                "name": "weu",
                "region": "westeurope",
                "kind": "servicebus",
                "fullyQualifiedNamespace": "lag-weu.servicebus.windows.net",
                "connection": "SB_WEU",
                "queues": [
                    {"name": "plain-in", "lockDuration": lock},
                    {"name": "ordered-in", "lockDuration": lock, "requiresSession": True},
                ],
            },
            {
                "name": "neu",
                "region": "northeurope",
                "kind": "servicebus",
                "fullyQualifiedNamespace": "lag-neu.servicebus.windows.net",
                "connection": "SB_NEU",
                "queues": [
                    {"name": "plain-out"},
                    {"name": "ordered-out", "requiresSession": True},
                ],
            },
        ],
        "tasks": [
            {
                "name": f"{name}-weu-to-neu",
                "pattern": "all_active",
                "source": {"namespace": "weu", "entity": source},
                "targets": [{"namespace": "neu", "entity": target}],
            }
            for name, (source, target) in SOURCES.items()
        ],
    }


def _message(message_id: str, session: str | None = None) -> ServiceBusMessage:
    return ServiceBusMessage(b"x" * 256, message_id=message_id, session_id=session)


def publish(connection: str, seconds: float, rate: int) -> int:
    """Send ``rate`` messages a second to each source for ``seconds``, ten times a second;
    returns how many each source got."""
    sent = 0
    with ServiceBusClient.from_connection_string(connection) as client:
        plain = client.get_queue_sender("plain-in")
        ordered = client.get_queue_sender("ordered-in")
        with plain, ordered:
            per_tick = max(1, rate // 10)
            started = time.monotonic()
            tick = 0
            while time.monotonic() - started < seconds:
                numbers = range(sent, sent + per_tick)
                plain.send_messages([_message(f"p{n}") for n in numbers])
                ordered.send_messages([_message(f"o{n}", f"s{n % SESSIONS}") for n in numbers])
                sent += per_tick
                tick += 1
                time.sleep(max(0.0, started + tick / 10 - time.monotonic()))
    return sent


def warm_up(settings: Mapping[str, str]) -> None:
    """One message through each source before the measured ones, so that the host's start
    (imports, connections, a session accepted) is not counted as lag."""
    with ServiceBusClient.from_connection_string(settings["SB_WEU"]) as client:
        for name, (source, _) in SOURCES.items():
            with client.get_queue_sender(source) as sender:
                sender.send_messages(_message(f"warm-up-{name}", "s0" if name != "plain" else None))
    deadline = time.monotonic() + ARRIVAL_TIMEOUT
    while time.monotonic() < deadline:
        held = {name: peek_target(settings["SB_NEU"], name) for name in SOURCES}
        if all(any(str(m.message_id).startswith("warm-up") for m in held[n]) for n in SOURCES):
            return
        time.sleep(0.5)
    raise TimeoutError("the warm-up messages did not arrive")


def peek_target(connection: str, name: str) -> list[Any]:
    """Everything the target of source ``name`` holds, peeked."""
    _, target = SOURCES[name]
    with ServiceBusClient.from_connection_string(connection) as client:
        if name == "plain":
            with entity_receiver(client, target) as receiver:
                return [m for page in peek_pages(receiver) for m in page]
        held: list[Any] = []
        for session in range(SESSIONS):
            with entity_receiver(client, target, session_id=f"s{session}") as receiver:
                held += [m for page in peek_pages(receiver) for m in page]
        return held


def lags(replicas: list[Any]) -> dict[str, float]:
    """Seconds from source to target enqueue per MessageId (first copy)."""
    found: dict[str, float] = {}
    for replica in replicas:
        stamp = replica.application_properties.get(REPL_ENQUEUED_TIME.encode())
        if stamp is None or replica.message_id in found:
            continue
        if str(replica.message_id).startswith("warm-up"):
            continue
        text = stamp.decode() if isinstance(stamp, bytes) else str(stamp)
        source = datetime.fromisoformat(text.split(";")[-1].replace("Z", "+00:00"))
        found[str(replica.message_id)] = (replica.enqueued_time_utc - source).total_seconds()
    return found


def host_command(checkout: Path, topology_file: Path, widen: bool) -> list[str]:
    if widen:
        return [sys.executable, str(WIDENING_BUILD), "run", "--topology", str(topology_file)]
    return [sys.executable, "-m", "replication", "run", "--topology", str(topology_file)]


def one_round(
    checkout: Path, topology_file: Path, args: argparse.Namespace, workdir: Path
) -> dict[str, list[float]]:
    """One local host of ``checkout`` against a fresh emulator while publishing; the lags of
    each source's replicas."""
    with emulator_process(topology_file) as settings:
        environ = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("OTEL_") and k not in ("PYTHONPATH", "REPLICATION_TELEMETRY")
        }
        environ.update(settings, PYTHONPATH=str(checkout), REPLICATION_TELEMETRY="off")
        log = workdir / f"host-{checkout.name}-{time.monotonic_ns()}.log"
        with log.open("wb") as output:
            host = subprocess.Popen(
                host_command(checkout, topology_file, args.widen),
                cwd=checkout,
                env=environ,
                stdout=output,
                stderr=output,
                start_new_session=True,
            )
        try:
            warm_up(settings)
            sent = publish(settings["SB_WEU"], args.seconds, args.rate)
            deadline = time.monotonic() + ARRIVAL_TIMEOUT
            found: dict[str, dict[str, float]] = {}
            while time.monotonic() < deadline:
                found = {name: lags(peek_target(settings["SB_NEU"], name)) for name in SOURCES}
                if all(len(found[name]) >= sent for name in SOURCES):
                    break
                time.sleep(2.0)
            missing = {name: sent - len(found.get(name, {})) for name in SOURCES}
            if any(missing.values()):
                print(f"  (round cut short: missing {missing} after {ARRIVAL_TIMEOUT:.0f} s)")
        finally:
            os.killpg(host.pid, signal.SIGINT)
            try:
                host.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(host.pid, signal.SIGKILL)
                host.wait()
    return {name: list(found.get(name, {}).values()) for name in SOURCES}


def churn(stop: Any, directory: str) -> None:
    """Load like the failing demo's neighbours: written and synced files, short-lived
    processes, CPU."""
    block = os.urandom(1 << 20)
    path = Path(directory) / f"churn-{os.getpid()}"
    while not stop.is_set():
        with path.open("wb") as file:
            for _ in range(4):
                file.write(block)
            file.flush()
            os.fsync(file.fileno())
        subprocess.run(["true"], check=False)
        spin = time.monotonic() + 0.05
        while time.monotonic() < spin:
            pass
    path.unlink(missing_ok=True)


@contextlib.contextmanager
def load(processes: int) -> Iterator[None]:
    if not processes:
        yield
        return
    stop = multiprocessing.Event()
    with tempfile.TemporaryDirectory() as directory:
        workers = [
            multiprocessing.Process(target=churn, args=(stop, directory), daemon=True)
            for _ in range(processes)
        ]
        for worker in workers:
            worker.start()
        try:
            yield
        finally:
            stop.set()
            for worker in workers:
                worker.join(timeout=30)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def report(results: Mapping[str, Mapping[str, list[float]]]) -> None:
    for name in SOURCES:
        print(f" {name} source (lock {LOCK_SECONDS} s):")
        for variant, by_source in results.items():
            values = by_source[name]
            if not values:
                print(f"  {variant:12s} no replicas")
                continue
            late = sum(1 for value in values if value >= LOCK_SECONDS)
            print(
                f"  {variant:12s} {len(values):6d} replicas  p50 {statistics.median(values):7.3f} s"
                f"  p99 {percentile(values, 0.99):7.3f} s  max {max(values):7.3f} s"
                f"  later than a lock duration: {late}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rate", type=int, default=50, help="messages a second per source")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--base", type=Path, help="another checkout, run in the same rounds")
    parser.add_argument("--load", type=int, default=0, help="extra churning processes")
    parser.add_argument("--widen", action="store_true", help="the keep-alive race test build")
    args = parser.parse_args()
    variants = {"this code": ROOT}
    if args.base is not None:
        variants = {"base": args.base.resolve(), **variants}
    results: dict[str, dict[str, list[float]]] = {
        variant: {name: [] for name in SOURCES} for variant in variants
    }
    with tempfile.TemporaryDirectory() as scratch, load(args.load):
        workdir = Path(scratch)
        topology_file = workdir / "topology.json"
        topology_file.write_text(json.dumps(topology()), encoding="utf-8")
        names = list(variants)
        for index in range(args.rounds):
            for variant in names[index % len(names) :] + names[: index % len(names)]:
                started = time.monotonic()
                lags_by_source = one_round(variants[variant], topology_file, args, workdir)
                for name, values in lags_by_source.items():
                    results[variant][name] += values
                print(
                    f"round {index + 1} {variant}: {time.monotonic() - started:.0f} s, "
                    f"load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
    print(
        f"Replication lag, source enqueue to target enqueue, {args.rounds} round(s) of "
        f"{args.seconds:.0f} s at {args.rate} messages/s per source"
        f"{', the keep-alive race widened' if args.widen else ''}"
        f"{f', {args.load} churning processes' if args.load else ''}:"
    )
    report(results)


if __name__ == "__main__":
    threading.current_thread().name = "bench-lag"
    main()
