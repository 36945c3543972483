"""Emulator throughput with sessions against without, through the real SDK, in one run.

Run: ``.venv/bin/python benchmarks/bench_emulator_sessions.py [--messages N] [--sessions S]
[--batch B] [--repeat R]``.

The emulator runs in its own process (``python -m emulator``) with two queues, one of them
``RequiresSession``. Both get the same N messages of 256 bytes in lists of B: the session queue
spread over S sessions (each list within one session), the plain queue the same lists without
session ids. Then:

- ``send``: ``ServiceBusSender.send_messages`` of every list;
- ``receive+complete``: ``receive_messages(max_message_count=B)`` then ``complete_message`` for
  each, PEEK_LOCK; on the session queue one session receiver after another
  (``session_id=NEXT_AVAILABLE_SESSION``), on the plain queue one receiver, each stopping at the
  number of messages it knows it has. Opening the receivers (a connection each, in the SDK) is
  not timed, so the figure is the per-message cost.

It prints messages per second, best of R runs, and the ratio sessions / plain for each.
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

from azure.servicebus import NEXT_AVAILABLE_SESSION, ServiceBusClient, ServiceBusMessage

PLAIN, SESSIONS = "plain", "sessions"
NAMESPACE = {
    "Name": "bench",
    "Queues": [
        {"Name": PLAIN, "Properties": {"MaxDeliveryCount": 10}},
        {"Name": SESSIONS, "Properties": {"MaxDeliveryCount": 10, "RequiresSession": True}},
    ],
}


@contextlib.contextmanager
def emulator_process() -> Iterator[str]:
    """``python -m emulator`` in a child process; yields the namespace's connection string."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as config:
        json.dump({"UserConfig": {"Namespaces": [NAMESPACE]}}, config)
    process = subprocess.Popen(
        [sys.executable, "-m", "emulator", "--config", config.name],
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


def send(client: ServiceBusClient, queue: str, lists: list[list[ServiceBusMessage]]) -> float:
    with client.get_queue_sender(queue) as sender:
        started = time.perf_counter()
        for messages in lists:
            sender.send_messages(messages)
        return time.perf_counter() - started


def drain(client: ServiceBusClient, queue: str, counts: dict[str, int], batch: int) -> float:
    """Seconds spent receiving and completing ``counts`` messages per session id (``""``: the
    plain queue), receiver opening excluded. Each receiver stops at its known count, so no
    figure includes the wait of a last, empty receive."""
    seconds = 0.0
    left = dict(counts)
    while left:
        receiver = client.get_queue_receiver(
            queue,
            session_id=None if "" in left else NEXT_AVAILABLE_SESSION,
            max_wait_time=5,
            prefetch_count=batch,
        )
        with receiver:
            session_id = receiver.session.session_id if receiver.session else ""
            started = time.perf_counter()
            while left[session_id] > 0:
                got = receiver.receive_messages(max_message_count=batch, max_wait_time=5)
                if not got:
                    raise RuntimeError(f"{left[session_id]} messages of {queue!r} never came")
                for message in got:
                    receiver.complete_message(message)
                left[session_id] -= len(got)
            seconds += time.perf_counter() - started
            del left[session_id]
    return seconds


def one_round(connection: str, messages: int, sessions: int, batch: int) -> dict[str, float]:
    body = b"x" * 256
    shape = [(i % sessions, min(batch, messages - start)) for i, start in
             enumerate(range(0, messages, batch))]  # fmt: skip
    with ServiceBusClient.from_connection_string(connection) as client:
        times = {
            "plain send": send(
                client, PLAIN, [[ServiceBusMessage(body) for _ in range(n)] for _, n in shape]
            ),
            "sessions send": send(
                client,
                SESSIONS,
                [[ServiceBusMessage(body, session_id=f"s{s}") for _ in range(n)] for s, n in shape],
            ),
        }
        per_session: dict[str, int] = {}
        for s, n in shape:
            per_session[f"s{s}"] = per_session.get(f"s{s}", 0) + n
        times["plain receive+complete"] = drain(client, PLAIN, {"": messages}, batch)
        times["sessions receive+complete"] = drain(client, SESSIONS, per_session, batch)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=5_000)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    best: dict[str, float] = {}
    with emulator_process() as connection:
        for _ in range(args.repeat):
            for label, seconds in one_round(
                connection, args.messages, args.sessions, args.batch
            ).items():
                best[label] = min(seconds, best.get(label, seconds))
    n = args.messages
    print(
        f"emulator (own process), {n} messages of 256 bytes in lists of {args.batch}, "
        f"{args.sessions} sessions against a plain queue, best of {args.repeat}"
    )
    for step in ("send", "receive+complete"):
        plain, sessions = best[f"plain {step}"], best[f"sessions {step}"]
        print(
            f"  {step:<18} plain {n / plain:>8,.0f} msg/s   sessions {n / sessions:>8,.0f} msg/s"
            f"   sessions/plain {plain / sessions:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
