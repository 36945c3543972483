"""The local host against the SDK's floor: a bare SDK loop on the same emulator, side by side.

Run: ``.venv/bin/python benchmarks/bench_local_host_floor.py [--messages N] [--rounds R]
[--base DIR] [--only servicebus,eventhubs,conversion,functions]``.

Black box, as a user runs it: the CLI (``python -m replication run --topology FILE``) in its own
process, the emulator in another (``python -m emulator``, a fresh one per run, so every run starts
from the same empty state), the real SDKs. Every child runs with its bytecode cached, as an
installed program does: ``PYTHONDONTWRITEBYTECODE`` is not passed on, so the untimed warm-up runs
write each checkout's ``.pyc`` files (with it set, as on some CI machines, the local host compiled
its own modules on every start, about 75 ms of CPU the bare loop did not pay). Per run, N messages
of 1 KB are published before the replicator starts; the run ends when the replicator's log says
that all N were received, forwarded and settled (the host's INFO line per batch,
``received=... forwarded=...``, written after the batch was completed). Rounds interleave the
variants, in a rotating order, so that the shared machine's noise hits all of them alike; figures
are the median and (min-max) over the rounds, and every ratio is taken round by round before its
median.

Variants:

- ``servicebus``: all-active between two Service Bus namespaces (``weu/orders`` <->
  ``neu/orders``, the topics' replication subscriptions; N/2 messages published in each
  region, so both tasks work), with:

  - ``bare SDK loop``: one thread per direction that receives (PEEK_LOCK, no prefetch, the
    host's batch size and wait), builds a ``ServiceBusMessage`` per message copying the body,
    the application properties and the message fields, sends the list and completes each
    message. It also writes the six ``repl-*`` properties the replicator stamps, computed the
    simplest way, so that both send the same messages on the wire (the source rule's
    ``replication = 1``, which it copies, already keeps its replicas from coming back);
  - ``local host``: ``python -m replication run`` as it runs by default (telemetry on, no
    OpenTelemetry SDK configured, so the API is a no-op);
  - ``local host, telemetry off``: ``REPLICATION_TELEMETRY=off``;
  - ``local host, OTLP exporter``: ``OTEL_EXPORTER_OTLP_ENDPOINT`` pointing at a sink in this
    process that accepts every export (HTTP 200), so the SDK, its batch span processor and
    periodic metric reader and the OTLP/HTTP exporters do their real work.

- ``eventhubs``: an event hub (2 partitions) into a Service Bus queue (``stream_to_queue``),
  N events: the ``bare SDK loop`` (one ``receive_batch`` consumer per partition, a
  ``ServiceBusMessage`` per event copying body and properties, send) against the ``local host``
  (without ``AzureWebJobsStorage``, so neither checkpoints).

- ``conversion``: in this process, over the same messages received from the emulator once,
  the CPU per message of the local host's work between receive and send
  (``envelope_from_received``, the all-active plan, ``to_servicebus_message``) against the
  bare loop's copy (``bare_copies``): the steady state's difference without the wire, the
  settling and the noise of the other processes, which on a shared machine is larger than it.

- ``functions``: in this process, the per-message cost of the Functions path, what the host
  delivers (a batch of ``azure.functions.ServiceBusMessage`` decoded by the library's own
  converter from trigger metadata of the host's shape, see ``tests/host/host_conversion.py``)
  to ``Envelope`` to SDK ``ServiceBusMessage``, against building the ``ServiceBusMessage``
  straight from the same delivered messages (body, application properties, message fields).
  With ``--instructions`` it counts instructions per message under valgrind's callgrind
  instead (a process per contender; the same on a busy machine as on a quiet one).

Figures per child process: messages per second over the whole run (from the process's start to
the last batch, start-up included) and in steady state (first batch to last); CPU per message
from the process's own CPU time (``/proc/<pid>/stat``, user + system, all threads) over the
whole run and in steady state; the time to the first batch and the CPU spent until then
(start-up: interpreter, imports, configuration, connections). The emulator's CPU is not
counted. ``--base DIR`` also runs the local host from another checkout (e.g. ``git archive
main | tar -x -C DIR``) in the same rounds, for before/after figures from one run.
``--telemetry`` runs only the two telemetry variants of ``servicebus`` (off, OTLP exporter) of
each checkout, for the telemetry's cost in rounds that take less of the shared machine.
``--instructions`` (with ``servicebus`` or ``eventhubs``) counts instead of timing: the bare
loop and the local host under valgrind's callgrind, instructions per message in steady state
and over the whole run (:func:`count_floor`; e.g. ``--only eventhubs --instructions --rounds 2
--messages 2000``, about 4 minutes a run).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import http.server
import json
import os
import re
import selectors
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar, cast

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BODY_SIZE = 1024
BATCH = 100
"""Messages per receive: the local host's ``max_batch_size`` (transport/receivers.py)."""
WAIT_SECONDS = 1.0
"""A receive's wait: the local host's ``RECEIVE_WAIT_SECONDS``."""
RUN_TIMEOUT = 600.0
PRODUCER_TRACE = "00-0af7651916cd43dd8448eb211c80319c-{:016x}-01"
OUTCOME = re.compile(rb"received=(\d+) forwarded=(\d+)")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

SERVICEBUS_TOPOLOGY: dict[str, Any] = {
    "namespaces": [
        {
            "name": name,
            "region": region,
            "kind": "servicebus",
            "fullyQualifiedNamespace": f"bench-{name}.servicebus.windows.net",
            "connection": f"SB_{name.upper()}",
            "topics": [{"name": "orders"}],
        }
        for name, region in (("weu", "westeurope"), ("neu", "northeurope"))
    ],
    "tasks": [
        {
            "name": f"orders-{source}-to-{target}",
            "pattern": "all_active",
            "source": {"namespace": source, "entity": "orders", "subscription": "replication"},
            "targets": [{"namespace": target, "entity": "orders"}],
        }
        for source, target in (("weu", "neu"), ("neu", "weu"))
    ],
}

PARTITIONS = 2
EVENTHUBS_TOPOLOGY: dict[str, Any] = {
    "namespaces": [
        {
            "name": "ingest",
            "region": "westeurope",
            "kind": "eventhubs",
            "fullyQualifiedNamespace": "bench-ingest.servicebus.windows.net",
            "connection": "EH_INGEST",
            "eventHubs": [{"name": "devices", "partitionCount": PARTITIONS}],
        },
        {
            "name": "standby",
            "region": "northeurope",
            "kind": "servicebus",
            "fullyQualifiedNamespace": "bench-standby.servicebus.windows.net",
            "connection": "SB_STANDBY",
            "queues": [{"name": "device-events"}, {"name": "device-events-rejected"}],
        },
    ],
    "tasks": [
        {
            "name": "devices-to-queue",
            "pattern": "stream_to_queue",
            "source": {"namespace": "ingest", "entity": "devices", "consumerGroup": "replication"},
            "targets": [{"namespace": "standby", "entity": "device-events"}],
            "deadLetterTarget": {"namespace": "standby", "entity": "device-events-rejected"},
        }
    ],
}


# --- the bare SDK loops (child processes; they import nothing but the SDKs) ----------------


def _stamps(
    origin: str, target: str, enqueued: datetime | None, sequence: int | None
) -> dict[str | bytes, Any]:
    """The ``repl-*`` properties a replica carries, computed the simplest way."""
    when = enqueued.astimezone(UTC).isoformat(timespec="milliseconds") if enqueued else ""
    position = "" if sequence is None else str(sequence)
    return {
        "repl-origin": origin,
        "repl-path": f"{origin};{target}",
        "repl-hops": 1,
        "repl-enqueued-time": when,
        "repl-sequence": position,
        "repl-offset": position,
    }


def _text(value: str | bytes | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def _report(received: int, forwarded: int) -> None:
    sys.stderr.write(f"received={received} forwarded={forwarded}\n")
    sys.stderr.flush()


def bare_copies(messages: Sequence[Any], source: str, target: str) -> list[Any]:
    """The bare loop's replicas: a ServiceBusMessage per received message, copying the body,
    the application properties (plus the ``repl-*`` stamps) and the message fields."""
    from azure.servicebus import ServiceBusMessage

    return [
        ServiceBusMessage(
            body=b"".join(message.body),
            application_properties={
                **(message.application_properties or {}),
                **_stamps(source, target, message.enqueued_time_utc, message.sequence_number),
            },
            message_id=message.message_id,
            session_id=message.session_id,
            partition_key=message.partition_key,
            content_type=message.content_type,
            correlation_id=message.correlation_id,
            subject=message.subject,
            to=message.to,
            reply_to=message.reply_to,
            reply_to_session_id=message.reply_to_session_id,
            time_to_live=message.time_to_live,
        )
        for message in messages
    ]


def bare_servicebus(environ: Mapping[str, str]) -> None:
    """Receive, copy into a new ServiceBusMessage, send, complete; one thread per direction."""
    from azure.servicebus import ServiceBusClient

    # BARE_PREFETCH_SETTING: the variant that receives as the local host does since issue 37
    # (a prefetch of one batch, no keep-alive thread); else no prefetch.
    prefetch = BATCH if environ.get(BARE_PREFETCH_SETTING) else 0
    options: dict[str, Any] = {"keep_alive": 0} if prefetch else {}

    def direction(source: str, target: str) -> None:
        with (
            ServiceBusClient.from_connection_string(
                environ[f"SB_{source.upper()}"], **options
            ) as inbound,
            ServiceBusClient.from_connection_string(environ[f"SB_{target.upper()}"]) as outbound,
            inbound.get_subscription_receiver(
                "orders", "replication", max_wait_time=WAIT_SECONDS, prefetch_count=prefetch
            ) as receiver,
            outbound.get_topic_sender("orders") as sender,
        ):
            while True:
                messages = receiver.receive_messages(
                    max_message_count=BATCH, max_wait_time=WAIT_SECONDS
                )
                if not messages:
                    continue
                replicas = bare_copies(messages, source, target)
                sender.send_messages(replicas)
                for message in messages:
                    receiver.complete_message(message)
                _report(len(messages), len(replicas))

    threads = [
        threading.Thread(target=direction, args=pair, daemon=True)
        for pair in (("weu", "neu"), ("neu", "weu"))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def bare_eventhubs(environ: Mapping[str, str]) -> None:
    """One consumer per partition (the first one also asks which partitions there are, as
    any replicator must): copy each event into a ServiceBusMessage and send."""
    from azure.eventhub import EventData, EventHubConsumerClient, PartitionContext
    from azure.servicebus import ServiceBusClient, ServiceBusMessage

    outbound = ServiceBusClient.from_connection_string(environ["SB_STANDBY"])
    # One sender and one lock, as the host's sender factory has one sender per target entity.
    sender = outbound.get_queue_sender("device-events")
    lock = threading.Lock()

    def client() -> EventHubConsumerClient:
        return EventHubConsumerClient.from_connection_string(
            environ["EH_INGEST"], consumer_group="replication", eventhub_name="devices"
        )

    first = client()
    partitions = first.get_partition_ids()

    def partition(number: str, consumer: EventHubConsumerClient) -> None:
        def on_batch(context: PartitionContext, events: list[EventData]) -> None:
            if not events:
                return
            replicas = [
                ServiceBusMessage(
                    body=b"".join(cast("Iterable[bytes]", event.body)),
                    application_properties={
                        **(event.properties or {}),
                        **_stamps("ingest", "standby", event.enqueued_time, event.sequence_number),
                    },
                    message_id=event.message_id,
                    content_type=event.content_type,
                    correlation_id=event.correlation_id,
                    session_id=_text(event.partition_key),
                )
                for event in events
            ]
            with lock:  # one connection, as the host's sender factory shares it
                sender.send_messages(replicas)
            _report(len(events), len(replicas))

        with consumer:
            consumer.receive_batch(
                on_event_batch=on_batch,
                partition_id=number,
                max_batch_size=BATCH,
                max_wait_time=WAIT_SECONDS,
                starting_position="-1",
            )

    threads = [
        threading.Thread(
            target=partition, args=(number, first if index == 0 else client()), daemon=True
        )
        for index, number in enumerate(partitions)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


# --- the harness ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Variant:
    label: str
    kind: str  # servicebus | eventhubs
    command: Callable[[Path], list[str]]
    checkout: Path
    environ: Mapping[str, str] = dataclasses.field(default_factory=dict)


BARE_PREFETCH = "bare SDK loop, prefetch"
BARE_PREFETCH_SETTING = "BENCH_BARE_PREFETCH"
"""``--bare-prefetch``: a second bare loop that receives as the local host does since issue 37,
with a prefetch of one batch and ``keep_alive=0`` (like for like), beside the one without."""
TELEMETRY_OFF = "local host, telemetry off"
OTLP_EXPORTER = "local host, OTLP exporter"
OTLP_PER_REPLICA = "local host, OTLP, lag per replica"
"""The telemetry variants' labels (they key the figures that compare them): the OTLP exporter
as the host configures it by default, and with ``REPLICATION_TELEMETRY_LAG=per-replica``."""
PER_REPLICA_SETTING = {"REPLICATION_TELEMETRY_LAG": "per-replica"}


@dataclasses.dataclass(frozen=True)
class Run:
    """One child process's figures."""

    wall: float  # start to the last batch, seconds
    first: float  # start to the first batch
    cpu: float  # CPU seconds at the last batch
    first_cpu: float  # CPU seconds at the first batch
    first_count: int  # messages in the first batch
    messages: int
    batches: int = 0  # batch lines until the last

    @property
    def throughput(self) -> float:
        return self.messages / self.wall

    @property
    def steady_throughput(self) -> float:
        return (self.messages - self.first_count) / (self.wall - self.first)

    @property
    def cpu_per_message(self) -> float:
        return self.cpu / self.messages

    @property
    def steady_cpu_per_message(self) -> float:
        return (self.cpu - self.first_cpu) / (self.messages - self.first_count)


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid``, all its threads (``/proc/<pid>/stat``)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    # Fields 14 and 15 of proc(5) (utime, stime); the list starts at field 3 (state).
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def host_command(topology: Path) -> Callable[[Path], list[str]]:
    return lambda checkout: [
        sys.executable,
        "-m",
        "replication",
        "run",
        "--topology",
        str(topology),
    ]


def bare_command(kind: str) -> Callable[[Path], list[str]]:
    # As a module (-m), not a script: Python caches a module's bytecode but compiles a script
    # given by its path on every start, which would charge the bare loop for this whole file.
    return lambda checkout: [
        sys.executable, "-m", "benchmarks.bench_local_host_floor", "--bare-loop", kind
    ]  # fmt: skip


def child_environ(variant: Variant, settings: Mapping[str, str]) -> dict[str, str]:
    environ = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("OTEL_")
        and name
        not in (
            "REPLICATION_TELEMETRY",
            "AzureWebJobsStorage",
            "PYTHONPATH",
            "PYTHONDONTWRITEBYTECODE",
        )
    }
    environ.update(settings)
    environ.update(variant.environ)
    environ["PYTHONPATH"] = str(variant.checkout)
    return environ


def time_child(
    command: list[str],
    cwd: Path,
    environ: Mapping[str, str],
    expected: int,
    *,
    mark: Callable[[int], None] | None = None,
) -> Run:
    """Start the child and watch its batch lines until ``expected`` messages were forwarded.
    ``mark`` is called with the child's pid at its first batch line and at its last."""
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=dict(environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        bufsize=0,
        start_new_session=True,  # py-spy and its child stop together (see below)
    )
    assert process.stderr is not None
    received = forwarded = batches = 0
    first = first_cpu = 0.0
    first_count = 0
    pending = b""
    tail: list[bytes] = []
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(process.stderr, selectors.EVENT_READ)
            while forwarded < expected:
                if time.perf_counter() - started > RUN_TIMEOUT:
                    raise TimeoutError(f"{forwarded} of {expected} after {RUN_TIMEOUT} s")
                if not selector.select(timeout=1.0):
                    if process.poll() is not None:
                        raise RuntimeError(
                            f"{command} exited {process.returncode}: " + b" | ".join(tail).decode()
                        )
                    continue
                chunk = os.read(process.stderr.fileno(), 65536)
                if not chunk:
                    process.wait(timeout=10)
                    raise RuntimeError(
                        f"{command} exited {process.returncode}: " + b" | ".join(tail).decode()
                    )
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    tail = [*tail, line][-5:]
                    match = OUTCOME.search(line)
                    if match is None:
                        continue
                    if received == 0:
                        first = time.perf_counter() - started
                        first_cpu = process_cpu(process.pid)
                        first_count = int(match.group(1))
                        if mark is not None:
                            mark(process.pid)
                    received += int(match.group(1))
                    forwarded += int(match.group(2))
                    batches += 1
            wall = time.perf_counter() - started
            cpu = process_cpu(process.pid)
            if mark is not None:
                mark(process.pid)
    finally:
        # Ctrl-C to the whole group: the host stops as on a terminal, py-spy writes its file.
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    if forwarded != expected:
        raise RuntimeError(f"{forwarded} replicas forwarded, expected {expected}")
    return Run(wall, first, cpu, first_cpu, first_count, expected, batches)


def _messages(count: int, prefix: str) -> list[Any]:
    from azure.servicebus import ServiceBusMessage

    return [
        ServiceBusMessage(
            os.urandom(BODY_SIZE // 2).hex().encode(),
            message_id=f"{prefix}-{uuid.uuid4()}",
            content_type="application/octet-stream",
            application_properties={
                "traceparent": PRODUCER_TRACE.format(n + 1),
                "region": prefix,
                "n": n,
            },
        )
        for n in range(count)
    ]


def publish_servicebus(settings: Mapping[str, str], count: int) -> None:
    from azure.servicebus import ServiceBusClient

    for region, share in (("weu", count // 2), ("neu", count - count // 2)):
        with (
            ServiceBusClient.from_connection_string(settings[f"SB_{region.upper()}"]) as client,
            client.get_topic_sender("orders") as sender,
        ):
            messages = _messages(share, region)
            for start in range(0, share, BATCH):
                sender.send_messages(messages[start : start + BATCH])


def publish_eventhubs(settings: Mapping[str, str], count: int) -> None:
    from azure.eventhub import EventData, EventHubProducerClient

    with EventHubProducerClient.from_connection_string(
        settings["EH_INGEST"], eventhub_name="devices"
    ) as producer:
        for start in range(0, count, BATCH):
            batch = producer.create_batch(partition_id=str((start // BATCH) % PARTITIONS))
            for n in range(start, min(count, start + BATCH)):
                event = EventData(os.urandom(BODY_SIZE // 2).hex().encode())
                event.message_id = f"device-{uuid.uuid4()}"
                event.properties = {"traceparent": PRODUCER_TRACE.format(n + 1), "n": n}
                batch.add(event)
            producer.send_batch(batch)


class _Sink(http.server.BaseHTTPRequestHandler):
    """Accepts every OTLP/HTTP export (an empty protobuf response is a full success)."""

    exports = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).exports += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextlib.contextmanager
def otlp_sink() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def publisher(kind: str) -> Callable[[Mapping[str, str], int], None]:
    """What publishes a run's messages for a variant of ``kind`` (servicebus | eventhubs)."""
    return publish_servicebus if kind == "servicebus" else publish_eventhubs


def one_run(variant: Variant, topology: Path, messages: int, *, profile: Path | None = None) -> Run:
    """Publish ``messages`` into a fresh emulator and time the variant's child until it has
    replicated them all (under py-spy, writing ``profile``, when one is given)."""
    from replication.hosts.local import emulator_process

    publish = publisher(variant.kind)
    command = variant.command(variant.checkout)
    if profile is not None:
        command = profiled(command, profile)
    with emulator_process(topology) as settings:
        publish(settings, messages)
        return time_child(command, variant.checkout, child_environ(variant, settings), messages)


def spread(values: Sequence[float], scale: float = 1.0, digits: int = 2) -> str:
    ordered = sorted(v * scale for v in values)
    return (
        f"{statistics.median(ordered):.{digits}f} "
        f"({ordered[0]:.{digits}f}-{ordered[-1]:.{digits}f})"
    )


Measured = TypeVar("Measured")
"""One variant's record of a run: a timed :class:`Run` or a :class:`Counted` one."""


def ratio(
    runs: Mapping[str, Sequence[Measured]],
    over: str,
    under: str,
    figure: Callable[[Measured], float],
    digits: int = 2,
) -> str:
    """``figure`` of ``over`` against ``under``, round by round, median (min-max)."""
    values = [figure(a) / figure(b) for a, b in zip(runs[over], runs[under], strict=True)]
    return spread(values, digits=digits) + "x"


def difference(
    runs: Mapping[str, list[Run]],
    over: str,
    under: str,
    figure: Callable[[Run, Run], float],
    scale: float = 1.0,
    digits: int = 3,
) -> str:
    """``figure(over_run, under_run)`` round by round (e.g. a difference of the two), median
    (min-max), signed."""
    ordered = sorted(figure(a, b) * scale for a, b in zip(runs[over], runs[under], strict=True))
    return (
        f"{statistics.median(ordered):+.{digits}f} "
        f"({ordered[0]:+.{digits}f} to {ordered[-1]:+.{digits}f})"
    )


def print_kind(kind: str, variants: Sequence[Variant], runs: Mapping[str, list[Run]]) -> None:
    print(f"\n{kind}:")
    print(
        f"  {'variant':34s} {'msg/s whole':>18s} {'msg/s steady':>18s} {'first batch s':>16s}"
        f" {'CPU ms/msg whole':>17s} {'CPU ms/msg steady':>17s} {'start-up CPU s':>16s}"
    )
    for variant in variants:
        done = runs[variant.label]
        print(
            f"  {variant.label:34s} {spread([r.throughput for r in done], digits=0):>18s}"
            f" {spread([r.steady_throughput for r in done], digits=0):>18s}"
            f" {spread([r.first for r in done]):>16s}"
            f" {spread([r.cpu_per_message for r in done], 1e3, 3):>17s}"
            f" {spread([r.steady_cpu_per_message for r in done], 1e3, 3):>17s}"
            f" {spread([r.first_cpu for r in done]):>16s}"
        )
    bare = variants[0].label
    print(f"  ratios against the {bare}, round by round, median (min-max):")
    for variant in variants[1:]:
        print(
            f"    {variant.label:32s} throughput {ratio(runs, variant.label, bare, _whole)} whole,"
            f" {ratio(runs, variant.label, bare, _steady)} steady;"
            f" CPU/msg {ratio(runs, variant.label, bare, _cpu)} whole,"
            f" {ratio(runs, variant.label, bare, _steady_cpu)} steady;"
            f" first batch {ratio(runs, variant.label, bare, _first)}"
        )


def _whole(run: Run) -> float:
    return run.throughput


def _steady(run: Run) -> float:
    return run.steady_throughput


def _cpu(run: Run) -> float:
    return run.cpu_per_message


def _steady_cpu(run: Run) -> float:
    return run.steady_cpu_per_message


def _first(run: Run) -> float:
    return run.first


def _wall(run: Run) -> float:
    return run.wall


def write_topologies(workdir: Path) -> dict[str, Path]:
    topologies = {
        "servicebus": workdir / "servicebus.json",
        "eventhubs": workdir / "eventhubs.json",
    }
    topologies["servicebus"].write_text(json.dumps(SERVICEBUS_TOPOLOGY))
    topologies["eventhubs"].write_text(json.dumps(EVENTHUBS_TOPOLOGY))
    return topologies


def run_hosts(args: argparse.Namespace, kinds: Sequence[str], workdir: Path) -> None:
    topologies = write_topologies(workdir)
    checkouts = [("", ROOT)] + ([(" (base)", args.base.resolve())] if args.base else [])
    with otlp_sink() as endpoint:
        variants: dict[str, list[Variant]] = {}
        for kind in kinds:
            host = host_command(topologies[kind])
            found = (
                [] if args.telemetry else [Variant("bare SDK loop", kind, bare_command(kind), ROOT)]
            )
            if args.bare_prefetch and kind == "servicebus" and not args.telemetry:
                found.append(
                    Variant(
                        BARE_PREFETCH, kind, bare_command(kind), ROOT, {BARE_PREFETCH_SETTING: "1"}
                    )
                )
            for suffix, checkout in checkouts:
                if not args.telemetry:
                    found.append(Variant("local host" + suffix, kind, host, checkout))
                if kind == "servicebus":
                    found.append(
                        Variant(
                            TELEMETRY_OFF + suffix,
                            kind,
                            host,
                            checkout,
                            {"REPLICATION_TELEMETRY": "off"},
                        )
                    )
                    found.append(
                        Variant(
                            OTLP_EXPORTER + suffix,
                            kind,
                            host,
                            checkout,
                            {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint},
                        )
                    )
                    if args.telemetry:
                        found.append(
                            Variant(
                                OTLP_PER_REPLICA + suffix,
                                kind,
                                host,
                                checkout,
                                {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, **PER_REPLICA_SETTING},
                            )
                        )
            variants[kind] = found
        everything = [v for kind in kinds for v in variants[kind]]
        runs: dict[str, list[Run]] = {f"{v.kind}/{v.label}": [] for v in everything}
        for variant in everything:  # warm-up: .pyc files (each checkout's), page cache
            if args.telemetry or variant.label in (
                "bare SDK loop",
                "local host",
                "local host (base)",
            ):
                one_run(variant, topologies[variant.kind], min(args.messages, 500))
        for index in range(args.rounds):
            turn = index % len(everything)
            for variant in everything[turn:] + everything[:turn]:
                run = one_run(variant, topologies[variant.kind], args.messages)
                runs[f"{variant.kind}/{variant.label}"].append(run)
                print(
                    f"  round {index + 1} {variant.kind} {variant.label}: "
                    f"{run.throughput:.0f} msg/s, {run.cpu_per_message * 1e3:.3f} ms CPU/msg",
                    file=sys.stderr,
                )
        exports = _Sink.exports
    print(
        f"{args.messages} messages of {BODY_SIZE} bytes per run, batches of {BATCH}, "
        f"{args.rounds} interleaved rounds, a fresh emulator process per run; "
        f"median (min-max); {exports} OTLP exports received"
    )
    for kind in kinds:
        print_kind(
            kind,
            variants[kind],
            {v.label: runs[f"{kind}/{v.label}"] for v in variants[kind]},
        )
        if kind == "servicebus":
            by_label = {v.label: runs[f"{kind}/{v.label}"] for v in variants[kind]}
            compared = (OTLP_EXPORTER, OTLP_PER_REPLICA) if args.telemetry else (OTLP_EXPORTER,)
            for suffix, label in ((s, label) for s, _ in checkouts for label in compared):
                off = by_label[TELEMETRY_OFF + suffix]
                otlp = by_label[label + suffix]
                pairs = {"off": off, "otlp": otlp}
                print(
                    f"  telemetry{suffix}: {label.removeprefix('local host, ')} against off: "
                    f"CPU/msg {ratio(pairs, 'otlp', 'off', _cpu)} whole, "
                    f"{ratio(pairs, 'otlp', 'off', _steady_cpu)} steady; "
                    f"wall {ratio(pairs, 'otlp', 'off', _wall)}"
                )
                # Where the difference is: the SDK's and exporters' imports before the first
                # batch (a fixed cost per process), and the CPU per message once it runs.
                print(
                    f"    of which start-up CPU {difference(pairs, 'otlp', 'off', _startup)} s"
                    f" ({difference(pairs, 'otlp', 'off', _startup_share, 100, 1)} % of off's"
                    " whole CPU); steady CPU"
                    f" {difference(pairs, 'otlp', 'off', _steady_extra, 1e6, 1)} us/msg"
                )


@dataclasses.dataclass(frozen=True)
class Counted:
    """One child's instructions under callgrind: until its first batch line (start-up, with
    the first batch), from there to its last batch line (steady), for ``messages``."""

    startup: int
    steady: int
    first_count: int
    messages: int
    wall: float  # seconds to the last batch line, under callgrind
    batches: int  # the host's batch lines (its two tasks' batches)

    @property
    def per_message(self) -> float:
        return (self.startup + self.steady) / self.messages

    @property
    def steady_per_message(self) -> float:
        return self.steady / (self.messages - self.first_count)


CALLGRIND_SLOWDOWN = 50
"""About how many times slower the local host runs under callgrind (wall time per message)."""
STRETCHED_TIMERS = {
    "OTEL_BSP_SCHEDULE_DELAY": str(5_000 * CALLGRIND_SLOWDOWN),
    "OTEL_METRIC_EXPORT_INTERVAL": str(15_000 * CALLGRIND_SLOWDOWN),
}
"""The exporters' timers (milliseconds; the SDK's 5 s for spans, the local host's 15 s for
metrics) stretched for a counted run."""


EXPORTED_SPANS = 10
"""Spans per export in the variant that exports during the run (``OTEL_BSP_MAX_EXPORT_BATCH_SIZE``):
two spans per batch of 100, so one export per 500 messages."""
EXPORTING = f"local host, OTLP, export per {EXPORTED_SPANS} spans"


def count_telemetry(args: argparse.Namespace, workdir: Path) -> None:
    """``--telemetry --instructions``: the local host with telemetry off and with the OTLP
    exporter (of each checkout), each run under valgrind's callgrind, which dumps its count at
    the host's first batch line and at its last (``callgrind_control --dump``): instructions
    of the whole run per message, and of the steady state per message.

    The CPU-time ratio of these two variants spread by +-30 points round by round on the
    shared machine; an instruction count does not depend on what else runs, though it weighs
    every instruction alike (a proxy for CPU time, not a measurement of it). Under callgrind
    the host runs about :data:`CALLGRIND_SLOWDOWN` times slower while the emulator (its own
    process, not counted) and the wall-clock timers do not: receive calls wait less often, and
    the exporters' periodic work (spans every 5 s, metrics every 15 s: each a collection, an
    encoding and an HTTP post) would happen that many times more often per message than in a
    native run. So the counted runs stretch those two timers by the same factor
    (``OTEL_BSP_SCHEDULE_DELAY``, ``OTEL_METRIC_EXPORT_INTERVAL``): the exporters do per
    message what they do in a native run of the same length, which for a few thousand
    messages is nothing before the run's end (the spans wait for their export, which is not
    counted). A host that runs for hours exports its spans every 5 s, encoding every link, so a
    third variant exports whenever :data:`EXPORTED_SPANS` spans are waiting (every 500
    messages; it overcounts each export's fixed cost, which a host exporting every 5 s at
    1,000 msg/s spreads over ten times as many messages). All variants run under the same
    conditions.

    Unlike the send path's count (``bench_telemetry.py --instructions``, fixed batches of
    100), these counts vary from run to run: a receive returns 0.2 s after its first message
    at the latest (``_further_pull_receive_timeout``, ``azure/servicebus/_servicebus_receiver.py``),
    and under callgrind that is often after 30-40 messages, so the number of batches (printed;
    each costs a receive, a send, the completions, a log line and two spans) varies with the
    timing."""
    topology = write_topologies(workdir)["servicebus"]
    host = host_command(topology)
    checkouts = [("", ROOT)] + ([(" (base)", args.base.resolve())] if args.base else [])
    with otlp_sink() as endpoint:
        variants = [
            Variant(label + suffix, "servicebus", host, checkout, environ)
            for suffix, checkout in checkouts
            for label, environ in (
                (TELEMETRY_OFF, {"REPLICATION_TELEMETRY": "off"}),
                (OTLP_EXPORTER, {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}),
                (
                    OTLP_PER_REPLICA,
                    {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, **PER_REPLICA_SETTING},
                ),
                (
                    EXPORTING,
                    {
                        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
                        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": str(EXPORTED_SPANS),
                    },
                ),
            )
        ]
        counts = counted_rounds(variants, topology, args, workdir)
        exports = _Sink.exports
    print(
        f"servicebus, instructions (callgrind) of the local host's process, {args.messages} "
        f"messages of {BODY_SIZE} bytes per run, batches of {BATCH}, {args.rounds} rounds; "
        f"median (min-max); {exports} OTLP exports received"
    )
    print(
        f"  {'variant':36s} {'per msg, whole run':>34s} {'per msg, steady':>34s} "
        f"{'start-up (millions)':>28s} {'batches':>16s}"
    )
    for variant in variants:
        done = counts[variant.label]
        print(
            f"  {variant.label:36s} {spread([c.per_message for c in done], digits=0):>34s} "
            f"{spread([c.steady_per_message for c in done], digits=0):>34s} "
            f"{spread([c.startup for c in done], 1e-6, 0):>28s} "
            f"{spread([c.batches for c in done], digits=0):>16s}"
        )
    print("  against telemetry off, round by round:")
    for suffix, _ in checkouts:
        off = counts[TELEMETRY_OFF + suffix]
        for label in (OTLP_EXPORTER, OTLP_PER_REPLICA, EXPORTING):
            pairs = list(zip(counts[label + suffix], off, strict=True))
            startup = [(a.startup - b.startup) * 1e-6 for a, b in pairs]
            whole = ratio(counts, label + suffix, TELEMETRY_OFF + suffix, _per_message, 3)
            steady = ratio(counts, label + suffix, TELEMETRY_OFF + suffix, _steady_per_message, 3)
            print(
                f"    {label + suffix}: instructions per message {whole} whole, {steady} steady; "
                f"start-up {spread(startup, digits=0)} million more"
            )
    fitted = {variant.label: fit_per_batch(counts[variant.label]) for variant in variants}
    if all(fit is not None for fit in fitted.values()):
        print(
            f"  steady state fitted over the rounds as per message + per batch, per message at "
            f"full batches of {BATCH} (the batching differs from run to run, see above):"
        )
        for suffix, _ in checkouts:
            off_fit = fitted[TELEMETRY_OFF + suffix]
            assert off_fit is not None
            off_full = off_fit[0] + off_fit[1] / BATCH
            for label in (TELEMETRY_OFF, OTLP_EXPORTER, OTLP_PER_REPLICA, EXPORTING):
                fit = fitted[label + suffix]
                assert fit is not None
                per_message, per_batch = fit
                full = per_message + per_batch / BATCH
                print(
                    f"    {label + suffix:44s} {per_message:>12,.0f} + {per_batch:>14,.0f} per "
                    f"batch = {full:>12,.0f}  {full / off_full:6.3f}x off"
                )


def fit_per_batch(done: Sequence[Counted]) -> tuple[float, float] | None:
    """Least squares of the steady instructions per message over the batches per message of
    each round: (instructions per message, per batch), or None with fewer than three rounds
    or one batching for all."""
    shares = [(c.batches - 1) / (c.messages - c.first_count) for c in done]
    if len(done) < 3 or len(set(shares)) < 2:
        return None
    fitted = statistics.linear_regression(shares, [c.steady_per_message for c in done])
    return fitted.intercept, fitted.slope


def count_floor(args: argparse.Namespace, kinds: Sequence[str], workdir: Path) -> None:
    """``--instructions`` for ``servicebus`` and ``eventhubs``: the bare SDK loop and the local
    host (of each checkout) in interleaved rounds, each run under valgrind's callgrind as
    :func:`count_telemetry` runs them: instructions per message of the steady state (first
    batch line to last) and of the whole run, and the ratio to the bare loop round by round
    (with ``--bare-prefetch``, for ``servicebus``, to the loop that receives as the host does
    too: under callgrind the loop without prefetch gets batches of 20 to 30 messages where the
    host gets full ones, and a batch costs a receive, a send, a log line).

    CPU-time ratios of these variants spread by +-15 points round by round on the shared
    machine, more than the gap they measure; an instruction count does not depend on what
    else runs. Read the steady figure. The start-up and whole-run counts of ``eventhubs`` are
    not comparable to a native run: until the SDK's load balancer has claimed a partition,
    its receive thread loops without waiting (``EventProcessor.start`` in
    ``azure/eventhub/_eventprocessor/event_processor.py``), in both variants, and under
    callgrind, about :data:`CALLGRIND_SLOWDOWN` times slower, that takes many more turns."""
    topologies = write_topologies(workdir)
    checkouts = [("", ROOT)] + ([(" (base)", args.base.resolve())] if args.base else [])
    for kind in kinds:
        host = host_command(topologies[kind])
        bares = [Variant("bare SDK loop", kind, bare_command(kind), ROOT)]
        if args.bare_prefetch and kind == "servicebus":
            bares.append(
                Variant(BARE_PREFETCH, kind, bare_command(kind), ROOT, {BARE_PREFETCH_SETTING: "1"})
            )
        hosts = [
            Variant("local host" + suffix, kind, host, checkout) for suffix, checkout in checkouts
        ]
        variants = bares + hosts
        counts = counted_rounds(variants, topologies[kind], args, workdir)
        print(
            f"\n{kind}, instructions (callgrind) of the replicating process, {args.messages} "
            f"messages of {BODY_SIZE} bytes per run, batches of {BATCH}, {args.rounds} rounds; "
            "median (min-max)"
        )
        print(
            f"  {'variant':24s} {'per msg, steady':>34s} {'per msg, whole run':>34s} "
            f"{'batches':>16s}"
        )
        for variant in variants:
            done = counts[variant.label]
            print(
                f"  {variant.label:24s} "
                f"{spread([c.steady_per_message for c in done], digits=0):>34s} "
                f"{spread([c.per_message for c in done], digits=0):>34s} "
                f"{spread([c.batches for c in done], digits=0):>16s}"
            )
        for bare in bares:
            for variant in hosts:
                steady = ratio(counts, variant.label, bare.label, _steady_per_message, 3)
                whole = ratio(counts, variant.label, bare.label, _per_message, 3)
                print(
                    f"  {variant.label} against the {bare.label}, round by round: "
                    f"{steady} steady, {whole} whole run"
                )


def _per_message(counted: Counted) -> float:
    return counted.per_message


def _steady_per_message(counted: Counted) -> float:
    return counted.steady_per_message


def counted_rounds(
    variants: Sequence[Variant], topology: Path, args: argparse.Namespace, workdir: Path
) -> dict[str, list[Counted]]:
    """An untimed warm-up run of each variant (each checkout's ``.pyc`` files), then
    ``args.rounds`` rounds of :func:`counted_run`, the variants in a rotating order."""
    for variant in variants:
        one_run(variant, topology, min(args.messages, 500))
    counts: dict[str, list[Counted]] = {variant.label: [] for variant in variants}
    for index in range(args.rounds):
        turn = index % len(variants)
        for variant in [*variants[turn:], *variants[:turn]]:
            counted = counted_run(variant, topology, args.messages, workdir)
            counts[variant.label].append(counted)
            print(
                f"  round {index + 1} {variant.kind} {variant.label}: "
                f"{counted.per_message:,.0f} instructions/msg, "
                f"{counted.steady_per_message:,.0f} steady, {counted.wall:.0f} s, "
                f"{counted.batches} batches",
                file=sys.stderr,
            )
    return counts


def counted_run(variant: Variant, topology: Path, messages: int, workdir: Path) -> Counted:
    """One run of ``variant`` under callgrind (see :func:`count_telemetry`)."""
    from benchmarks._callgrind import HASH_SEED, callgrind, dump, dumped_total
    from replication.hosts.local import emulator_process

    prefix = workdir / f"callgrind-{uuid.uuid4().hex}"
    command = callgrind(variant.command(variant.checkout), f"{prefix}.%p")
    with emulator_process(topology) as settings:
        publisher(variant.kind)(settings, messages)
        run = time_child(
            command,
            variant.checkout,
            {**child_environ(variant, settings), **STRETCHED_TIMERS, **HASH_SEED},
            messages,
            mark=dump,
        )
    # The first dump holds the start-up, the second the steady state (each dump restarts the
    # count); the file without a number is the shutdown's, not counted.
    dumps = sorted(workdir.glob(f"{prefix.name}.*.*"), key=lambda path: int(path.suffix[1:]))
    if len(dumps) != 2:
        raise RuntimeError(f"expected two callgrind dumps, found {[d.name for d in dumps]}")
    startup, steady = (dumped_total(path) for path in dumps)
    for path in workdir.glob(f"{prefix.name}.*"):
        path.unlink()
    return Counted(startup, steady, run.first_count, messages, run.wall, run.batches)


def _startup(over: Run, under: Run) -> float:
    return over.first_cpu - under.first_cpu


def _startup_share(over: Run, under: Run) -> float:
    return (over.first_cpu - under.first_cpu) / under.cpu


def _steady_extra(over: Run, under: Run) -> float:
    return over.steady_cpu_per_message - under.steady_cpu_per_message


# --- profiles (py-spy) -----------------------------------------------------------------------


def profiled(command: list[str], output: Path) -> list[str]:
    """``command`` under ``py-spy record`` (raw stacks of every thread that is not idle)."""
    return [
        str(Path(sys.executable).with_name("py-spy")),
        "record",
        "--format",
        "raw",
        "--rate",
        "200",
        "--nonblocking",
        "--full-filenames",
        "--output",
        str(output),
        "--",
        *command,
    ]


@dataclasses.dataclass(frozen=True)
class Profile:
    """Where a process spent its busy samples (py-spy's raw format: one stack per line)."""

    samples: int
    areas: list[tuple[str, int]]  # self samples per area (the leaf frame's)
    functions: list[tuple[str, int]]  # self samples per function
    ours: list[tuple[str, int]]  # inclusive samples per function of this repository


def cost_centres(raw: Path, top: int) -> Profile:
    areas: dict[str, int] = {}
    own: dict[str, int] = {}
    ours: dict[str, int] = {}
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = [_function(frame) for frame in stack.split(";")]
        leaf = frames[-1]
        own[leaf] = own.get(leaf, 0) + count
        area = _area(leaf)
        areas[area] = areas.get(area, 0) + count
        for function in set(frames):
            if function.partition("(")[2].startswith(("replication.", "patterns.")):
                ours[function] = ours.get(function, 0) + count

    def ranked(counts: dict[str, int]) -> list[tuple[str, int]]:
        return sorted(counts.items(), key=lambda item: -item[1])[:top]

    return Profile(total, ranked(areas), ranked(own), ranked(ours))


_FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^:()]*)(?::\d+)?\)$")


def _function(frame: str) -> str:
    """``function (module path)`` of a py-spy frame, without its line number."""
    match = _FRAME.match(frame)
    if match is None:
        return frame
    return f"{match['function']} ({_module(match['file'])})"


def _module(file: str) -> str:
    """The dotted module of a source file (standard library modules prefixed ``stdlib:``)."""
    if "site-packages/" in file:
        file = file.split("site-packages/", 1)[1]
    elif "/lib/python3" in file:
        file = "stdlib:" + file.split("/lib/python3", 1)[1].split("/", 1)[-1]
    elif file.startswith("<frozen "):
        file = "stdlib:" + file.removeprefix("<frozen ").rstrip(">")
    else:
        file = file.removeprefix(str(ROOT) + "/")
    return file.removesuffix(".py").replace("/", ".")


AREAS = (
    ("azure.servicebus._pyamqp", "the SDKs' AMQP stacks (azure/*/_pyamqp)"),
    ("azure.eventhub._pyamqp", "the SDKs' AMQP stacks (azure/*/_pyamqp)"),
    ("azure.servicebus", "azure-servicebus outside its AMQP stack"),
    ("azure.eventhub", "azure-eventhub outside its AMQP stack"),
    ("opentelemetry", "OpenTelemetry"),
    ("replication.telemetry", "replication.telemetry"),
    ("replication.runtime", "replication.runtime"),
    ("replication.transport", "replication.transport"),
    ("replication", "replication (other packages)"),
    ("patterns", "patterns"),
    ("stdlib:importlib", "imports (importlib)"),
    ("stdlib:logging", "logging"),
    ("stdlib:threading", "threading"),
    ("stdlib:", "standard library (other)"),
)


def _area(function: str) -> str:
    module = function.rpartition("(")[2].rstrip(")")
    for prefix, name in AREAS:
        if module.startswith(prefix):
            return name
    return "other"


def run_profiles(args: argparse.Namespace, kinds: Sequence[str], workdir: Path) -> None:
    """One run of the bare loop and of the local host per kind (and of the local host with the
    OTLP exporter for Service Bus) under py-spy; prints where each spends its CPU and keeps
    the raw stacks (``--profile-dir``, e.g. for flamegraph.pl)."""
    topologies = write_topologies(workdir)
    keep = args.profile_dir or workdir
    keep.mkdir(parents=True, exist_ok=True)
    with otlp_sink() as endpoint:
        for kind in kinds:
            variants = [
                Variant("bare SDK loop", kind, bare_command(kind), ROOT),
                Variant("local host", kind, host_command(topologies[kind]), ROOT),
            ]
            if kind == "servicebus":
                variants.append(
                    Variant(
                        OTLP_EXPORTER,
                        kind,
                        host_command(topologies[kind]),
                        ROOT,
                        {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint},
                    )
                )
            for variant in variants:
                output = keep / f"{kind}-{variant.label.replace(' ', '-').replace(',', '')}.txt"
                one_run(variant, topologies[kind], args.messages, profile=output)
                found = cost_centres(output, args.top)
                print(
                    f"\n{kind}, {variant.label}: {found.samples} samples "
                    "(py-spy, 200 per second, threads that are not idle)"
                )
                for title, rows in (
                    ("self time by area", found.areas),
                    ("functions with the most self time", found.functions),
                    ("this repository's functions, inclusive", found.ours),
                ):
                    print(f"  {title}:")
                    for name, count in rows:
                        print(f"    {count / found.samples:6.1%}  {name}")


# --- the Functions path, in this process ---------------------------------------------------


def delivered_batch(size: int, properties: int) -> list[Any]:
    """A batch as ``azure.functions`` hands it to the function: the library's own converter
    over trigger data of the host's shape (bodies as ``collection_bytes``, string arrays as
    ``collection_string``, sequence numbers as ``collection_sint64``, the rest as JSON text;
    ``tests/host/host_conversion.py`` derives these shapes from the host's source)."""
    from types import SimpleNamespace

    from azure.functions import meta
    from azure.functions.servicebus import ServiceBusMessageInConverter

    enqueued = "2026-01-05T10:00:00.123+00:00"
    never = "9999-12-31T23:59:59.9999999+00:00"
    props = [
        {
            "traceparent": PRODUCER_TRACE.format(n + 1),
            **{f"p{k}": f"value-{k}-{n}" for k in range(properties - 1)},
        }
        for n in range(size)
    ]

    def strings(values: list[str]) -> meta.Datum:
        return meta.Datum(SimpleNamespace(string=values), "collection_string")

    def as_json(value: Any) -> meta.Datum:
        return meta.Datum(json.dumps(value), "json")

    metadata = {
        "MessageIdArray": strings([str(uuid.uuid4()) for _ in range(size)]),
        "ContentTypeArray": strings(["application/octet-stream"] * size),
        "CorrelationIdArray": strings([]),
        "SubjectArray": strings([]),
        "ToArray": strings([]),
        "ReplyToArray": strings([]),
        "ReplyToSessionIdArray": strings([]),
        "SessionIdArray": strings([]),
        "PartitionKeyArray": strings([]),
        "SequenceNumberArray": meta.Datum(
            SimpleNamespace(sint64=list(range(1, size + 1))), "collection_sint64"
        ),
        "DeliveryCountArray": as_json([1] * size),
        "EnqueuedTimeArray": as_json([enqueued] * size),
        "EnqueuedTimeUtcArray": as_json([enqueued[:-6]] * size),
        "ExpiresAtArray": as_json([never] * size),
        "ExpiresAtUtcArray": as_json([never[:-6]] * size),
        "ApplicationPropertiesArray": as_json(props),
        "UserPropertiesArray": as_json(props),
    }
    bodies = meta.Datum(
        SimpleNamespace(bytes=[os.urandom(BODY_SIZE) for _ in range(size)]), "collection_bytes"
    )
    batch = ServiceBusMessageInConverter.decode(bodies, trigger_metadata=metadata)
    assert isinstance(batch, list)
    for message in batch[:1]:
        message.metadata  # noqa: B018 (the worker's lazy decode, done before timing)
    return batch


def sdk_construction(batch: Sequence[Any]) -> list[Any]:
    """The floor: a ServiceBusMessage straight from what the host delivered."""
    from azure.servicebus import ServiceBusMessage

    metadata = batch[0].metadata
    properties = metadata["ApplicationPropertiesArray"]
    ids = metadata["MessageIdArray"]
    types = metadata["ContentTypeArray"]
    return [
        ServiceBusMessage(
            body=message.get_body(),
            application_properties=properties[index],
            message_id=ids[index],
            content_type=types[index],
        )
        for index, message in enumerate(batch)
    ]


def functions_path(batch: Sequence[Any]) -> list[Any]:
    """Ours: the Functions converter to envelopes, then the Service Bus sender's conversion."""
    from replication.hosts.functions import envelopes_from_servicebus_batch
    from replication.transport.servicebus import to_servicebus_message

    return [
        to_servicebus_message(envelope)
        for envelope in envelopes_from_servicebus_batch(batch, source="weu/orders")
    ]


def local_host_path(topology_file: Path) -> Callable[[Sequence[Any]], list[Any]]:
    """Ours in the local host: each received message to an Envelope, then :func:`planned`."""
    from replication.transport.servicebus import envelope_from_received

    return planned(
        topology_file,
        lambda batch: [envelope_from_received(message, source="weu/orders") for message in batch],
    )


def planned_functions_path(workdir: Path) -> Callable[[Sequence[Any]], list[Any]]:
    """Ours in a Function: the host's delivery to Envelopes, then :func:`planned`."""
    from replication.hosts.functions import envelopes_from_servicebus_batch

    return planned(
        write_topologies(workdir)["servicebus"],
        lambda batch: envelopes_from_servicebus_batch(batch, source="weu/orders"),
    )


def planned(
    topology_file: Path, envelopes_of: Callable[[Sequence[Any]], list[Any]]
) -> Callable[[Sequence[Any]], list[Any]]:
    """``envelopes_of`` a batch, the all-active pattern's plan of ``orders-weu-to-neu`` (the
    replicas it stamps), and each replica as the ServiceBusMessage the runner sends."""
    from replication.topology import load_topology
    from replication.transport.servicebus import to_servicebus_message

    try:
        from replication.planning import Forward
    except ImportError:  # a checkout from before the decisions moved there (--base)
        from patterns import Forward  # type: ignore[attr-defined,no-redef]

    topology = load_topology(topology_file)
    task = topology.resolved(topology.task("orders-weu-to-neu"))

    def build(batch: Sequence[Any]) -> list[Any]:
        decisions = task.pattern.plan(envelopes_of(batch), task.context, task.options)
        return [to_servicebus_message(d.envelope) for d in decisions if isinstance(d, Forward)]

    return build


FUNCTIONS_SHAPES = {"3 properties": 3, "10 properties": 10}
"""Delivered batches whose messages carry this many application properties."""


def functions_contenders(workdir: Path) -> dict[str, Callable[[Sequence[Any]], list[Any]]]:
    """The Functions path's contenders, the floor first."""
    return {
        "ServiceBusMessage from the delivered message": sdk_construction,
        "host delivery -> Envelope -> ServiceBusMessage": functions_path,
        "the same with the all-active plan": planned_functions_path(workdir),
    }


def run_functions(rounds: int, batches: int, workdir: Path) -> None:
    """Per-message CPU time (this process's, so that other processes on the machine count
    less) of each contender over the same delivered batches, rounds interleaved."""
    contenders = functions_contenders(workdir)
    print(
        f"\nfunctions: CPU per message, {batches} delivered batches of {BATCH} x {BODY_SIZE} "
        f"bytes, {rounds} interleaved rounds, median (min-max)"
    )
    for label, count in FUNCTIONS_SHAPES.items():
        print(f"  {label}:")
        time_contenders(contenders, [delivered_batch(BATCH, count) for _ in range(batches)], rounds)


COUNTED_BATCHES = 8
"""Delivered batches per instruction count."""


def count_functions(library: Path | None) -> None:
    """The Functions figures in instructions per message: each contender in a process of its
    own under valgrind's callgrind, less a process that does everything but run it. An
    instruction count does not depend on what else the machine runs (CPU time on a shared
    machine varied by more than the 30 % the goal allows), though it weighs every instruction
    alike, so it is a proxy for CPU time, not a measurement of it. Only the goal's pair is
    counted (the planned path has no goal), over :data:`COUNTED_BATCHES` batches, so that the
    garbage collector's runs, which a count includes, are spread over many messages."""
    batches = COUNTED_BATCHES
    print(
        f"\nfunctions: instructions per message (callgrind), {batches} delivered batches of "
        f"{BATCH} x {BODY_SIZE} bytes, after one untimed batch of each contender"
    )
    with tempfile.TemporaryDirectory() as workdir:
        names = list(functions_contenders(Path(workdir)))[:2]
    for label, count in FUNCTIONS_SHAPES.items():
        print(f"  {label}:")
        spent = {name: _instructions(library, name, count) for name in ["", *names]}
        per_message = {name: (spent[name] - spent[""]) / (batches * BATCH) for name in names}
        for name in names:
            figure = per_message[name]
            print(f"    {name:48s} {figure:>12,.0f}  {figure / per_message[names[0]]:5.3f}x")


def _instructions(library: Path | None, contender: str, properties: int) -> int:
    from benchmarks._callgrind import count_python

    arguments = [__file__, "--count-contender", f"{properties}:{contender}"]
    if library is not None:
        arguments += ["--library", str(library)]
    return count_python(arguments, os.environ)


def run_counted_contender(spec: str) -> None:
    """Inside callgrind: every contender once (imports, first calls), then ``spec``'s
    (``PROPERTIES:NAME``; an empty name runs none, the baseline) over COUNTED_BATCHES."""
    properties, _, name = spec.partition(":")
    with tempfile.TemporaryDirectory() as workdir:
        contenders = functions_contenders(Path(workdir))
    work = [delivered_batch(BATCH, int(properties)) for _ in range(COUNTED_BATCHES)]
    for build in contenders.values():
        build(work[0])
    gc.collect()  # every count starts from the same heap
    if name:
        for batch in work:
            contenders[name](batch)


def run_conversion(rounds: int, batches: int, workdir: Path) -> None:
    """The local host's per-message work between receiving and sending, against the bare
    loop's copy, over the same received messages, in this process (CPU time): the steady
    state's difference without the wire, the settling and the other processes' noise."""
    from azure.servicebus import ServiceBusClient, ServiceBusReceiveMode

    from replication.hosts.local import emulator_process

    topology = write_topologies(workdir)["servicebus"]
    received: list[Any] = []
    with emulator_process(topology) as settings:
        publish_servicebus(settings, 2 * batches * BATCH)  # half of them to each region
        with (
            ServiceBusClient.from_connection_string(settings["SB_WEU"]) as client,
            client.get_subscription_receiver(
                "orders", "replication", receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE
            ) as receiver,
        ):
            while len(received) < batches * BATCH:
                received += receiver.receive_messages(BATCH, max_wait_time=WAIT_SECONDS)
    print(
        f"\nservicebus, between receive and send: CPU per message, {batches} received batches "
        f"of {BATCH} x {BODY_SIZE} bytes, {rounds} interleaved rounds, median (min-max)"
    )
    time_contenders(
        {
            "ServiceBusMessage from the received message": lambda batch: bare_copies(
                batch, "weu", "neu"
            ),
            "received -> Envelope -> plan -> ServiceBusMessage": local_host_path(topology),
        },
        [received[start : start + BATCH] for start in range(0, len(received), BATCH)],
        rounds,
    )


def time_contenders(
    contenders: Mapping[str, Callable[[Sequence[Any]], list[Any]]],
    work: Sequence[Sequence[Any]],
    rounds: int,
) -> None:
    """Print each contender's CPU time per message over ``work`` and its ratio to the first,
    round by round, rounds interleaved in a rotating order."""
    names = list(contenders)
    messages = sum(len(batch) for batch in work)
    timings: dict[str, list[float]] = {name: [] for name in names}
    for build in contenders.values():  # warm-up
        build(work[0])
    for index in range(rounds):
        turn = index % len(names)
        for name in names[turn:] + names[:turn]:
            build = contenders[name]
            started = time.process_time()
            for batch in work:
                build(batch)
            timings[name].append((time.process_time() - started) / messages)
    floor = timings[names[0]]
    for name in names:
        ratios = [t / f for t, f in zip(timings[name], floor, strict=True)]
        print(f"    {name:48s} {spread(timings[name], 1e6, 1):>20s} us  {spread(ratios):>18s}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--base", type=Path, help="another checkout whose local host runs too")
    parser.add_argument(
        "--only",
        default="servicebus,eventhubs,conversion,functions",
        help="comma-separated: servicebus, eventhubs, conversion, functions",
    )
    parser.add_argument(
        "--telemetry",
        action="store_true",
        help="Service Bus only, and only the local host with telemetry off and with the OTLP "
        "exporter (of each checkout): the telemetry's cost, in shorter rounds",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="instead of timing: one run of each variant under py-spy, and its cost centres",
    )
    parser.add_argument("--top", type=int, default=12, help="rows per profile table")
    parser.add_argument("--profile-dir", type=Path, help="where --profile keeps py-spy's stacks")
    parser.add_argument("--bare-loop", choices=("servicebus", "eventhubs"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--bare-prefetch",
        action="store_true",
        help="servicebus: also a bare loop with a prefetch of one batch and no keep-alive thread",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="the figures in instructions per message (valgrind's callgrind), not CPU time: "
        "the local host against the bare loop, the functions path, or with --telemetry the "
        "telemetry's cost",
    )
    parser.add_argument("--library", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--count-contender", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.library is not None:  # the Functions figures of another checkout (--base)
        sys.path.insert(0, str(args.library.resolve()))
    if args.count_contender is not None:
        run_counted_contender(args.count_contender)
        return
    if args.bare_loop == "servicebus":
        bare_servicebus(os.environ)
        return
    if args.bare_loop == "eventhubs":
        bare_eventhubs(os.environ)
        return
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    if args.telemetry:
        chosen = ["servicebus"]
    kinds = [kind for kind in ("servicebus", "eventhubs") if kind in chosen]
    if kinds:
        with tempfile.TemporaryDirectory() as workdir:
            if args.profile:
                run_profiles(args, kinds, Path(workdir))
                return
            if args.telemetry and args.instructions:
                count_telemetry(args, Path(workdir))
                return
            if args.instructions:
                count_floor(args, kinds, Path(workdir))
            else:
                run_hosts(args, kinds, Path(workdir))
    in_process = [name for name in ("conversion", "functions") if name in chosen]
    if in_process:
        if args.base is not None:
            # The base checkout's library in a process of its own (one library per process).
            print(f"\nthe base checkout ({args.base}):", flush=True)
            only = ",".join(in_process)
            command = [sys.executable, __file__, "--only", only, "--library", args.base]
            command += ["--rounds", str(args.rounds)]
            subprocess.run(command + (["--instructions"] if args.instructions else []), check=True)
            print("\nthis checkout:")
        with tempfile.TemporaryDirectory() as workdir:
            if "conversion" in chosen:
                run_conversion(max(args.rounds, 15), 20, Path(workdir))
            if "functions" in chosen and args.instructions:
                count_functions(args.library)
            elif "functions" in chosen:
                run_functions(max(args.rounds, 15), 20, Path(workdir))


if __name__ == "__main__":
    main()
