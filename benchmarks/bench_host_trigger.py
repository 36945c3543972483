"""Per-message cost of a Service Bus batch trigger through the real Python worker.

Run (Python 3.13 host environment, which ``./dev.sh bench`` uses for ``bench_host_*`` scripts)::

    .venv-host/bin/python benchmarks/bench_host_trigger.py [--messages N] [--rounds R]

It starts the local emulator (``python -m emulator``, main ``.venv``) and the Python worker
runtime behind the proxy worker's dispatch (``tests/host/worker_process.py``) with the app of
``tests/host/topology.json``, then replicates ``N`` messages of 1 KB from ``weu/jobs`` to
``neu/jobs`` per variant, rounds interleaved so that the machine's noise hits every variant alike:

- ``batch``: batches of ``maxMessageBatchSize`` (host.json) whose metadata is exact (every
  message has the same optional fields, no TTL): converted from the metadata alone;
- ``batch+reread``: the same batches, every message with a TTL: the converter re-reads them
  from the source by sequence number (one peek per batch);
- ``single``: one message per invocation, the cost profile of ``cardinality: one`` triggers
  (one worker round trip and one send per message).

Per message it prints the time of the worker invocation alone (decode, convert, re-read, plan,
send the replicas) and end to end with the extension's part played by the SDK (receive the
batch with one long-lived PEEK_LOCK receiver, build the invocation, settle). Medians over the
rounds; the ratios to ``batch`` are the figures to compare across machines. The emulator is
local, so a send costs no network round trip; in Azure each batch's send to another region
adds one (about 10-150 ms), which makes per-message invocations relatively more expensive
than measured here.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from azure.servicebus import ServiceBusClient, ServiceBusMessage  # noqa: E402

from replication.hosts.local import emulator_process  # noqa: E402
from tests.host.brokers import drain, send, settle  # noqa: E402
from tests.host.host import WorkerSession  # noqa: E402
from tests.host.host_conversion import (  # noqa: E402
    ServiceBusView,
    rpc_bodies,
    rpc_metadata,
    servicebus_binding_data,
)

TOPOLOGY = ROOT / "tests" / "host" / "topology.json"
FUNCTION = "jobs-weu-to-neu"
BATCH = int(
    json.loads((ROOT / "host.json").read_text())["extensions"]["serviceBus"]["maxMessageBatchSize"]
)


def messages(count: int, *, ttl: bool) -> list[ServiceBusMessage]:
    return [
        ServiceBusMessage(
            b"x" * 1024,
            message_id=str(uuid.uuid4()),
            content_type="application/octet-stream",
            time_to_live=timedelta(hours=1) if ttl else None,
            application_properties={"n": n},
        )
        for n in range(count)
    ]


def run_variant(
    worker: WorkerSession, settings: dict[str, str], count: int, batch: int, *, ttl: bool
) -> tuple[float, float]:
    """Seconds per message: (invocation only, end to end)."""
    send(settings["SB_WEU"], "jobs", messages(count, ttl=ttl))
    trigger = worker.functions[FUNCTION].trigger
    invoking = 0.0
    done = 0
    # One long-lived receiver, as the extension's listener keeps one.
    with (
        ServiceBusClient.from_connection_string(settings["SB_WEU"]) as client,
        client.get_queue_receiver("jobs", prefetch_count=0) as receiver,
    ):
        started = time.perf_counter()
        while done < count:
            received = receiver.receive_messages(
                max_message_count=min(batch, count - done), max_wait_time=5
            )
            views = [ServiceBusView.of(message) for message in received]
            metadata = rpc_metadata(
                servicebus_binding_data(views, fully_qualified_namespace="localhost"),
                worker.capabilities,
            )
            bodies = rpc_bodies(trigger, [view.body for view in views], worker.capabilities)
            before = time.perf_counter()
            response = worker.invoke(FUNCTION, {"messages": bodies}, metadata)
            invoking += time.perf_counter() - before
            if not worker.succeeded(response):
                raise SystemExit(response.result.exception.message)
            settle(receiver, received, ok=True)
            done += len(received)
        elapsed = time.perf_counter() - started
    drain(settings["SB_NEU"], "jobs", count, quiet_seconds=0.5)
    return invoking / count, elapsed / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    variants = {
        "batch": (BATCH, False),
        "batch+reread": (BATCH, True),
        "single": (1, False),
    }
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    emulator = emulator_process(TOPOLOGY, python=ROOT / ".venv" / "bin" / "python")
    with emulator as settings, tempfile.TemporaryDirectory() as scratch:
        app = {"FUNCTIONS_WORKER_RUNTIME": "python", "REPLICATION_TOPOLOGY": str(TOPOLOGY)}
        with WorkerSession({**app, **settings}, log=Path(scratch) / "worker.log") as worker:
            worker.start()
            run_variant(worker, settings, BATCH, BATCH, ttl=True)  # warm up links
            for _ in range(args.rounds):
                for name, (batch, ttl) in variants.items():
                    figures[name].append(
                        run_variant(worker, settings, args.messages, batch, ttl=ttl)
                    )
    base = statistics.median(f[1] for f in figures["batch"])
    print(f"{args.messages} messages of 1 KB per variant, batch size {BATCH}, {args.rounds} rounds")
    print(
        f"{'variant':<14}{'invoke ms/msg':>15}{'end-to-end ms/msg':>20}{'msg/s':>9}{'x batch':>9}"
    )
    for name, values in figures.items():
        invoke = statistics.median(v[0] for v in values)
        total = statistics.median(v[1] for v in values)
        print(
            f"{name:<14}{invoke * 1000:>15.2f}{total * 1000:>20.2f}{1 / total:>9.0f}"
            f"{total / base:>9.2f}"
        )


if __name__ == "__main__":
    main()
