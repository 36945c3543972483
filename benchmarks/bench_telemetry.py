"""Per-message cost of TaskRunner.run with telemetry on against off, side by side.

Run: ``.venv/bin/python benchmarks/bench_telemetry.py [--batches N] [--size S] [--rounds R]
[--target memory|emulator] [--split] [--instructions]``.
Configurations of the same runner over the same batches (an all-active task, every message
with its own producer span's ``traceparent`` (as the SDKs write one span per message) and an
enqueue time, sent to the in-memory target, so only the library's own work is measured):

- ``off``: ``REPLICATION_TELEMETRY=off`` (nothing recorded, replicas keep the producer's trace);
- ``api only``: on, but no SDK configured (the OpenTelemetry API's no-op);
- ``sdk``: on, with an SDK MeterProvider (in-memory reader) and TracerProvider (batch span
  processor to an in-memory exporter) as the applications configure it by default (issue 37):
  one lag observation per send call, traces sampled parent-based with 10 % of the roots
  (``replication.telemetry.traces_sampler``; each batch here starts a trace, its messages
  carrying different producer contexts);
- ``sdk, lag per replica``: the same with ``REPLICATION_TELEMETRY_LAG=per-replica``;
- ``sdk, every trace``: the same with ``OTEL_TRACES_SAMPLER=always_on``;
- ``sdk, per replica, every trace``: both, which is what the library recorded before issue 37.

With ``--split`` more configurations say where the SDK's cost is: ``sdk metrics`` (the SDK
MeterProvider, no TracerProvider: the counters and the lag histogram) and ``sdk traces`` (the
SDK TracerProvider with every span recorded, the API's no-op metrics: the spans, their links to
each message's producer context, the trace properties of the replicas); it then prints what the
OTLP exporter's thread spends encoding one round's spans, per message, the batch sensor's own
work with SDK traces (no runner, no sender), and ``Histogram.record``'s cost by attribute count
and exemplar filter.

With ``--target emulator`` the replicas go to the local emulator through the real Service Bus
sender instead (``python -m emulator`` in its own process, the two-region example), so the
ratio includes a real send, as a deployed replicator's would.

Rounds interleave the configurations (a fresh runner each, as the ledger would otherwise skip
the batches); each configuration's per-message time is printed as median (min-max) over the
rounds, with its ratio to ``off`` taken within each round (the same machine noise on both):
wall time, then this process's CPU time (all its threads, so the SDK's batch span processor
too; not the emulator's), which waiting for a core on a shared machine does not inflate. The
issue's goal: under 10 % overhead with the SDK.

On the shared machine those ratios spread by +-30 points round by round. ``--instructions``
counts instead (valgrind's callgrind, ``--jobs`` children side by side): per configuration a
child that runs a warm-up round and two more, less one that runs the warm-up round alone, so
imports and first calls cancel out; the spans go to an exporter that encodes them as the
OTLP/HTTP exporter's requests (the exporter thread's real work, no collector). A count is the
same on a busy machine as on a quiet one; it weighs every instruction alike, so it is a proxy
for CPU time.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.metrics import Histogram, NoOpMeterProvider
from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter, ExemplarFilter, MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON as ALWAYS_ON_SAMPLER
from opentelemetry.trace import NoOpTracerProvider

from benchmarks._callgrind import count_python
from replication.envelope import Envelope
from replication.hosts.local import emulator_process
from replication.planning import Target
from replication.runtime import MemoryTarget, TargetSender, TaskRunner
from replication.settings import Settings
from replication.telemetry import TaskTelemetry, traces_sampler
from replication.telemetry._instruments import LAG_BUCKETS, TARGET, TASK
from replication.topology import load_topology
from replication.transport.senders import SenderFactory

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "two-region-all-active.json"
PRODUCER = "00-0af7651916cd43dd8448eb211c80319c-{:016x}-01"


def batches(count: int, size: int, *, shared: bool = False) -> list[list[Envelope]]:
    enqueued = datetime.now(UTC) - timedelta(seconds=1)
    return [
        [
            Envelope(
                body=b'{"amount": 42}',
                message_id=f"{b}-{i}",
                sequence_number=b * size + i,
                enqueued_time_utc=enqueued,
                application_properties={
                    "traceparent": PRODUCER.format(1 if shared else b * size + i + 1),
                    "region": "weu",
                },
            )
            for i in range(size)
        ]
        for b in range(count)
    ]


SDK = "sdk"
PER_REPLICA = "sdk, lag per replica"
EVERY_TRACE = "sdk, every trace"
BEFORE_37 = "sdk, per replica, every trace"
CONFIGURATIONS = ("off", "api only", SDK, PER_REPLICA, EVERY_TRACE, BEFORE_37)
SPLIT_CONFIGURATIONS = ("sdk metrics", "sdk traces")
LAG_PER_REPLICA = (PER_REPLICA, BEFORE_37)
"""The configurations that record one lag observation per replica."""
ALWAYS_ON = (EVERY_TRACE, BEFORE_37, "sdk traces")
"""The configurations whose TracerProvider records every span."""
SETTINGS_VARIABLE = "BENCH_TELEMETRY_SETTINGS"
"""How a counted child gets the emulator's app settings (JSON) from the parent."""


class OtlpEncodingExporter(SpanExporter):
    """Encodes every exported span batch as the OTLP/HTTP exporter's request body and drops
    it: the exporter thread's real CPU work without a collector to post to."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        encode_spans(spans).SerializePartialToString()
        return SpanExportResult.SUCCESS

    def clear(self) -> None:
        """Nothing is kept (:meth:`Workbench.flush` clears every exporter)."""


class Workbench:
    """One workload and every configuration's telemetry over it: a fresh runner per round
    (the ledger would otherwise skip the batches), one set of SDK providers for all rounds.

    ``encode`` exports the spans through :class:`OtlpEncodingExporter` instead of keeping
    them in memory (the instruction counts include the exporter thread's encoding)."""

    def __init__(
        self, args: argparse.Namespace, factory: SenderFactory | None, *, encode: bool = False
    ) -> None:
        topology = load_topology(EXAMPLE)
        self.task = topology.resolved(topology.task("orders-weu-to-neu"))
        self.work = batches(args.batches, args.size, shared=args.shared_context)
        self.messages = args.batches * args.size
        self.factory = factory
        self.reader = InMemoryMetricReader()
        self.meters = MeterProvider(metric_readers=[self.reader])
        self.exporter: InMemorySpanExporter | OtlpEncodingExporter = (
            OtlpEncodingExporter() if encode else InMemorySpanExporter()
        )
        self.tracers = TracerProvider(sampler=ALWAYS_ON_SAMPLER)
        self.tracers.add_span_processor(BatchSpanProcessor(self.exporter))
        self.sampled_exporter: InMemorySpanExporter | OtlpEncodingExporter = (
            OtlpEncodingExporter() if encode else InMemorySpanExporter()
        )
        # The applications' default sampler, as configure_local_telemetry builds it.
        self.sampled = TracerProvider(sampler=traces_sampler({}))
        self.sampled.add_span_processor(BatchSpanProcessor(self.sampled_exporter))

    def telemetry(self, name: str) -> TaskTelemetry:
        if name == "off":
            return TaskTelemetry(self.task.name, enabled=False)
        if name == "api only":
            return TaskTelemetry(self.task.name)
        return TaskTelemetry(
            self.task.name,
            source_namespace="weu",
            source_entity="orders",
            systems={"weu": "servicebus", "neu": "servicebus"},
            lag_per_replica=name in LAG_PER_REPLICA,
            meter_provider=NoOpMeterProvider() if name == "sdk traces" else self.meters,
            tracer_provider=(
                NoOpTracerProvider()
                if name == "sdk metrics"
                else self.tracers
                if name in ALWAYS_ON
                else self.sampled
            ),
        )

    def one_round(self, name: str) -> tuple[float, float]:
        """Wall time and CPU time (this process, all threads) per message."""
        memory = MemoryTarget("neu/orders")
        target: TargetSender = (
            memory if self.factory is None else self.factory.sender("neu", "orders")
        )
        runner = TaskRunner(
            self.task, {Target("neu", "orders"): target}, telemetry=self.telemetry(name)
        )
        run: Callable[[list[Envelope]], object] = runner.run
        start = time.perf_counter()
        start_cpu = time.process_time()
        for batch in self.work:
            run(batch)
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - start_cpu
        if self.factory is None:
            assert len(memory.received) == self.messages
        return elapsed / self.messages, cpu / self.messages

    def flush(self) -> None:
        """End of a round: export every span (the exporters keep nothing), collect the metrics."""
        for provider, spans in (
            (self.tracers, self.exporter),
            (self.sampled, self.sampled_exporter),
        ):
            provider.force_flush()
            spans.clear()
        self.reader.get_metrics_data()

    def shutdown(self) -> None:
        self.tracers.shutdown()
        self.sampled.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument(
        "--target",
        choices=("memory", "emulator"),
        default="memory",
        help="where replicas go: the in-memory target, or the emulator through the SDK",
    )
    parser.add_argument(
        "--shared-context",
        action="store_true",
        help="every message carries the same producer context (one producer span per batch)",
    )
    parser.add_argument(
        "--split",
        action="store_true",
        help="also the SDK's metrics alone and its traces alone (where the SDK's cost is)",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count instructions per message under valgrind's callgrind instead of timing",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=2,
        help="with --instructions: counted processes run side by side (counts do not depend on it)",
    )
    parser.add_argument("--count-child", help=argparse.SUPPRESS)
    args = parser.parse_args()

    names = CONFIGURATIONS + (SPLIT_CONFIGURATIONS if args.split else ())
    if args.count_child:
        run_counted_child(args)
        return
    stack = contextlib.ExitStack()
    factory: SenderFactory | None = None
    settings: dict[str, str] = {}
    if args.target == "emulator":
        settings = stack.enter_context(emulator_process(EXAMPLE))
    if args.instructions:
        with stack:
            count_instructions(args, names, settings)
        return
    if settings:
        topology = load_topology(EXAMPLE)
        factory = SenderFactory(
            topology, Settings.from_environ(settings, connections=topology.connections)
        )
        stack.callback(factory.close)
    bench = Workbench(args, factory)
    stack.callback(bench.shutdown)
    with stack:
        time_rounds(args, names, bench)


def time_rounds(args: argparse.Namespace, names: Sequence[str], bench: Workbench) -> None:
    """Every configuration's rounds, interleaved in a rotating order, and their figures."""
    for name in names:  # warm-up
        bench.one_round(name)
    per_message: dict[str, list[float]] = {name: [] for name in names}
    cpu_per_message: dict[str, list[float]] = {name: [] for name in names}
    for index in range(args.rounds):
        turn = index % len(names)
        order = [*names[turn:], *names[:turn]]
        for name in order:
            wall, cpu = bench.one_round(name)
            per_message[name].append(wall)
            cpu_per_message[name].append(cpu)
        bench.flush()

    print(
        f"TaskRunner.run to the {args.target} target, "
        f"{args.batches} batches of {args.size} messages "
        f"({'one producer context' if args.shared_context else 'a producer context each'}), "
        f"{args.rounds} rounds (interleaved), per message median (min-max); the ratio to off "
        "is taken round by round, then its median (min-max):"
    )
    for title, figures in (
        ("wall time", per_message),
        ("CPU time of this process (all threads; not the emulator's)", cpu_per_message),
    ):
        print(f" {title}:")
        for name in names:
            times = sorted(figures[name])
            ratios = sorted(
                mine / off for mine, off in zip(figures[name], figures["off"], strict=True)
            )
            median = statistics.median(ratios)
            print(
                f"  {name:32s} {statistics.median(times) * 1e6:8.2f} us/message "
                f"({times[0] * 1e6:.2f}-{times[-1] * 1e6:.2f})  "
                f"{median:5.3f}x off ({ratios[0]:.3f}-{ratios[-1]:.3f}, "
                f"median {(median - 1) * 100:+.1f} %)"
            )
    if args.split:
        print_export_cost(bench, args.batches * args.size)
        print_sensor_cost(bench.telemetry("sdk traces"), bench.work)
        print_record_cost(bench.task.name)


COUNTED_ROUNDS = 2
"""Rounds a counted child runs after its warm-up round (a child with none is the baseline)."""


def count_instructions(
    args: argparse.Namespace, names: Sequence[str], settings: Mapping[str, str]
) -> None:
    """Every configuration's instructions per message under valgrind's callgrind: per
    configuration a child process that runs one warm-up round and :data:`COUNTED_ROUNDS` more,
    less one that runs the warm-up round alone, over both rounds' messages. A count does not
    depend on what else the shared machine runs (the CPU-time ratios above spread by +-30
    points round by round); it weighs every instruction alike, so it is a proxy for CPU time.
    It counts every thread of the process (the batch span processor's export, here the OTLP
    encoding of the spans), not the emulator, which runs natively in its own process."""
    environ = {**os.environ, SETTINGS_VARIABLE: json.dumps(dict(settings))}
    contexts = "one producer context" if args.shared_context else "a producer context each"
    print(
        f"TaskRunner.run to the {args.target} target, instructions per message (callgrind), "
        f"{COUNTED_ROUNDS} rounds of {args.batches} batches of {args.size} messages after a "
        f"warm-up round ({contexts}); "
        "the SDK's spans are encoded as OTLP requests by the exporter thread:"
    )
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        counts = {
            (name, rounds): pool.submit(_instructions, args, name, rounds, environ)
            for name in names
            for rounds in (COUNTED_ROUNDS, 0)
        }
        per_message: dict[str, float] = {}
        for name in names:
            spent = counts[name, COUNTED_ROUNDS].result() - counts[name, 0].result()
            per_message[name] = spent / (COUNTED_ROUNDS * args.batches * args.size)
            ratio = per_message[name] / per_message[names[0]]
            print(
                f"  {name:32s} {per_message[name]:>12,.0f} instructions/message  "
                f"{ratio:6.3f}x off ({(ratio - 1) * 100:+.1f} %)",
                flush=True,
            )


def _instructions(
    args: argparse.Namespace, name: str, rounds: int, environ: Mapping[str, str]
) -> int:
    arguments = [
        __file__, "--count-child", f"{rounds}:{name}",
        "--target", args.target, "--batches", str(args.batches), "--size", str(args.size),
    ]  # fmt: skip
    if args.shared_context:
        arguments.append("--shared-context")
    return count_python(arguments, environ)


def run_counted_child(args: argparse.Namespace) -> None:
    """Inside callgrind: ``ROUNDS:NAME``'s warm-up round, then ROUNDS rounds, each ended by a
    flush (every span exported, the metrics collected), as the timed rounds are."""
    rounds, _, name = args.count_child.partition(":")
    factory: SenderFactory | None = None
    if args.target == "emulator":
        topology = load_topology(EXAMPLE)
        settings = json.loads(os.environ[SETTINGS_VARIABLE])
        factory = SenderFactory(
            topology, Settings.from_environ(settings, connections=topology.connections)
        )
    bench = Workbench(args, factory, encode=True)
    bench.one_round(name)
    bench.flush()
    gc.collect()  # every count starts from the same heap
    for _ in range(int(rounds)):
        bench.one_round(name)
        bench.flush()
    bench.shutdown()
    if factory is not None:
        factory.close()


def print_sensor_cost(
    telemetry: TaskTelemetry, work: list[list[Envelope]], rounds: int = 9
) -> None:
    """The traces' work on the runner's thread alone: each batch's sensor as the runner drives
    it (the batch span with its links to the messages' producer contexts, one send span, the
    acknowledgement), without the runner, the sender or the export. CPU per message, median
    and min of ``rounds`` rounds: the min is the figure that machine noise does not inflate."""
    times = []
    for _ in range(rounds):
        started = time.process_time()
        for batch in work:
            with telemetry.batch(batch) as sensor:
                sensor.on_send("neu/orders", "orders", len(batch))
                sensor.on_sent("neu/orders", [None] * len(batch))
        times.append((time.process_time() - started) / sum(len(batch) for batch in work))
    print(
        "  the batch sensor alone with SDK traces (spans, links, no runner, no export): "
        f"{statistics.median(times) * 1e6:.2f} us/message, min {min(times) * 1e6:.2f}"
    )


def print_record_cost(task: str, calls: int = 20_000, rounds: int = 7) -> None:
    """The SDK's own cost of one ``Histogram.record`` (the lag's, one per replica) by the size
    of its attribute set: the SDK cleans and hashes the attributes on every call, and the
    OpenTelemetry API has neither bound instruments nor a call that records several values.
    Then the exemplars: the lag's record as the runner makes it (outside any current span, so
    the SDK's default ``trace_based`` exemplar filter offers nothing to the reservoir), with the
    filter ``always_off``, and inside a sampled span (the filter offers every measurement).
    CPU time per call, median (min-max) of ``rounds`` rounds of ``calls`` calls, interleaved."""

    def histogram(exemplars: ExemplarFilter | None = None) -> Histogram:
        provider = MeterProvider(metric_readers=[InMemoryMetricReader()], exemplar_filter=exemplars)
        return provider.get_meter("bench").create_histogram(
            "lag", unit="s", explicit_bucket_boundaries_advisory=LAG_BUCKETS
        )

    lag, lag_without_exemplars = histogram(), histogram(AlwaysOffExemplarFilter())
    lag_attributes = TaskTelemetry(
        task, systems={"neu": "servicebus"}, meter_provider=NoOpMeterProvider()
    ).target_attributes("neu/orders")
    in_span = trace.set_span_in_context(TracerProvider().get_tracer("bench").start_span("span"))
    five = f"the lag's {len(lag_attributes)}"
    cases: dict[str, tuple[Histogram, dict[str, str] | None, Context | None]] = {
        "no attributes": (lag, None, None),
        "1 attribute": (lag, {TASK: task}, None),
        "2 (task, target)": (lag, {key: lag_attributes[key] for key in (TASK, TARGET)}, None),
        five: (lag, lag_attributes, None),
        f"{five}, exemplar filter always_off": (lag_without_exemplars, lag_attributes, None),
        f"{five} inside a sampled span": (lag, lag_attributes, in_span),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, (instrument, attributes, current) in cases.items():
            token = None if current is None else otel_context.attach(current)
            record = instrument.record
            started = time.process_time()
            for _ in range(calls):
                record(0.5, attributes)
            times[name].append((time.process_time() - started) / calls)
            if token is not None:
                otel_context.detach(token)
    print("  the SDK's Histogram.record, CPU per call:")
    for name, t in times.items():
        print(
            f"    {name:42s} {statistics.median(t) * 1e6:6.2f} us "
            f"({min(t) * 1e6:.2f}-{max(t) * 1e6:.2f})"
        )


def print_export_cost(bench: Workbench, messages: int) -> None:
    """What the OTLP exporter's thread does with one round's spans: their protobuf encoding
    (the request body ``OTLPSpanExporter`` posts), per message, median of 5 encodings. The
    process span links each message's producer context, so this grows with the messages."""
    exporter = bench.exporter
    assert isinstance(exporter, InMemorySpanExporter)
    exporter.clear()
    bench.one_round(EVERY_TRACE)
    bench.tracers.force_flush()
    spans = exporter.get_finished_spans()
    times = []
    size = 0
    for _ in range(5):
        started = time.process_time()
        size = len(encode_spans(spans).SerializePartialToString())
        times.append(time.process_time() - started)
    links = sum(len(span.links) for span in spans)
    print(
        f"  OTLP encoding of the every-trace round's spans ({len(spans)} spans, {links} links), "
        "in the "
        f"exporter's thread: {statistics.median(times) / messages * 1e6:.2f} us/message, "
        f"{size / messages:.0f} bytes/message"
    )


if __name__ == "__main__":
    main()
