"""Messages per second through the local emulator with the real SDK, and the broker alone.

Run: ``.venv/bin/python benchmarks/bench_emulator.py [--messages N] [--batch B] [--repeat R]``.

Figures, best of R runs each, all in one run so their ratios are comparable on a shared
machine. The SDK figures are measured three times: with the emulator in its own process
(``python -m emulator``, as users run it), the same with ``--data-dir`` (a snapshot saved before
each send is acknowledged), and in a thread of the benchmark's process (as the tests run it,
where emulator and SDK share one GIL):

- ``sdk send``: ``ServiceBusSender.send_messages`` with lists of B messages;
- ``sdk receive+complete``: ``receive_messages(max_message_count=B)`` then
  ``complete_message`` for each, PEEK_LOCK;
- ``broker only``: the same enqueue, lock and complete through the emulator's in-memory broker
  without AMQP, SDK or sockets: the share of the end-to-end time that is the emulator's own
  bookkeeping. The rest is the AMQP engine, the loopback socket and the SDK.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from azure.servicebus import ServiceBusClient, ServiceBusMessage
from proton import Message

from emulator import run_emulator
from emulator._config import build_broker
from emulator._servicebus import Settlement

QUEUE = "bench"
NAMESPACE = {"Name": "bench", "Queues": [{"Name": QUEUE, "Properties": {"MaxDeliveryCount": 10}}]}


def sdk_round(connection: str, messages: int, batch: int) -> tuple[float, float]:
    """Seconds to send ``messages`` in lists of ``batch``, and to receive and complete them."""
    bodies = [ServiceBusMessage(b"x" * 256, message_id=str(i)) for i in range(messages)]
    with ServiceBusClient.from_connection_string(connection) as client:
        with client.get_queue_sender(QUEUE) as sender:
            started = time.perf_counter()
            for start in range(0, messages, batch):
                sender.send_messages(bodies[start : start + batch])
            send_seconds = time.perf_counter() - started
        with client.get_queue_receiver(QUEUE, max_wait_time=5, prefetch_count=batch) as receiver:
            received = 0
            started = time.perf_counter()
            while received < messages:
                got = receiver.receive_messages(max_message_count=batch, max_wait_time=5)
                if not got:
                    raise RuntimeError(f"only {received} of {messages} messages came back")
                for message in got:
                    receiver.complete_message(message)
                received += len(got)
            receive_seconds = time.perf_counter() - started
    return send_seconds, receive_seconds


def broker_round(messages: int) -> float:
    """Seconds for the broker alone to enqueue, lock and complete ``messages``."""
    broker = build_broker(NAMESPACE, "bench")
    queue = broker.receivable(QUEUE)
    assert queue is not None
    encoded = []
    for i in range(messages):
        message = Message(body=b"x" * 256, id=str(i))
        encoded.append(message)
    started = time.perf_counter()
    now = time.time()
    for message in encoded:
        broker.send(QUEUE, message, now=now)
    while (stored := queue.take(now, lock=True)) is not None:
        assert stored.lock_token is not None
        queue.settle(stored.lock_token, Settlement.COMPLETE, now)
    return time.perf_counter() - started


@contextlib.contextmanager
def emulator_process(data_dir: str | None = None) -> Iterator[str]:
    """``python -m emulator`` in a child process; yields the namespace's connection string."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as config:
        json.dump({"UserConfig": {"Namespaces": [NAMESPACE]}}, config)
    persistence = ["--data-dir", data_dir] if data_dir else []
    process = subprocess.Popen(
        [sys.executable, "-m", "emulator", "--config", config.name, *persistence],
        cwd=Path(__file__).resolve().parents[1],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        yield process.stdout.readline().rstrip("\n").split("\t")[1]
    finally:
        process.terminate()
        process.wait(timeout=10)
        Path(config.name).unlink()


def report(label: str, n: int, sends: list[float], receives: list[float]) -> float:
    send, receive = min(sends), min(receives)
    print(f"  {label}")
    print(f"    sdk send               {n / send:>10,.0f} msg/s  ({send:.2f} s)")
    print(f"    sdk receive+complete   {n / receive:>10,.0f} msg/s  ({receive:.2f} s)")
    print(f"    sdk end to end         {n / (send + receive):>10,.0f} msg/s")
    return send + receive


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n = args.messages
    timings: dict[str, tuple[list[float], list[float]]] = {
        "own process": ([], []),
        "own process, --data-dir": ([], []),
        "in-process thread": ([], []),
    }
    brokers = []
    with (
        tempfile.TemporaryDirectory() as data_dir,
        emulator_process() as separate,
        emulator_process(data_dir) as durable,
        run_emulator({"UserConfig": {"Namespaces": [NAMESPACE]}}) as running,
    ):
        connections = {
            "own process": separate,
            "own process, --data-dir": durable,
            "in-process thread": running.connection_string("bench"),
        }
        for _ in range(args.repeat):
            for label, connection in connections.items():
                send_seconds, receive_seconds = sdk_round(connection, n, args.batch)
                timings[label][0].append(send_seconds)
                timings[label][1].append(receive_seconds)
            brokers.append(broker_round(n))
    print(f"emulator, {n} messages of 256 bytes, batches of {args.batch}, best of {args.repeat}")
    totals = {label: report(label, n, *timing) for label, timing in timings.items()}
    broker = min(brokers)
    print(f"  broker only (no AMQP)    {n / broker:>10,.0f} msg/s  ({broker:.2f} s)")
    for label, total in totals.items():
        print(f"  broker share of end-to-end time, {label}: {broker / total:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
