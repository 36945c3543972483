"""Telemetry of TaskRunner: the instruments, their attributes, the trace context on replicas,
and the off switch. The SDK's in-memory reader and exporter (:class:`tests.otel.Sdk`) are passed
to the runner's :class:`TaskTelemetry` (no global provider); targets are ``MemoryTarget``s.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from replication.envelope import Envelope
from replication.exceptions import (
    ConfigurationError,
    MessageRejectedError,
    PermanentForwardError,
    TransientForwardError,
)
from replication.planning import Target
from replication.properties import REPL_HOPS, REPL_ORIGIN, REPL_PATH
from replication.runtime import MemoryTarget, RetryPolicy, TaskRunner
from replication.settings import Settings
from replication.telemetry import (
    DIAGNOSTIC_ID,
    TRACE_PARENT,
    TaskTelemetry,
    configure_function_app_telemetry,
    configure_local_telemetry,
    error_type,
    producer_span_context,
    skip_reason,
    telemetry_enabled,
    traces_sampler,
    traces_sampler_settings,
)
from replication.telemetry._setup import _distro_sampler_settings
from replication.topology import load_topology
from tests.otel import Sdk

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SAMPLER = "OTEL_TRACES_SAMPLER"
SAMPLER_ARG = "OTEL_TRACES_SAMPLER_ARG"
PRODUCER_TRACE = "0af7651916cd43dd8448eb211c80319c"
PRODUCER_PARENT = f"00-{PRODUCER_TRACE}-b7ad6b7169203331-01"


def runner(
    sdk: Sdk, target: MemoryTarget, parking: MemoryTarget | None = None, *, enabled: bool = True
) -> TaskRunner:
    topology = load_topology(EXAMPLES / "two-region-all-active.json")
    task = topology.resolved(topology.task("orders-weu-to-neu"))
    telemetry = TaskTelemetry(
        task.name,
        source_namespace="weu",
        source_entity="orders",
        subscription="replication",
        systems={"weu": "servicebus", "neu": "servicebus"},
        enabled=enabled,
        meter_provider=sdk.meters,
        tracer_provider=sdk.tracers,
    )
    return TaskRunner(
        task, {Target("neu", "orders"): target}, parking, retry=RetryPolicy(), telemetry=telemetry
    )


def original(name: str, /, **properties: Any) -> Envelope:
    """A message enqueued two seconds ago with ``properties``."""
    return Envelope(
        body=b"x",
        message_id=name,
        enqueued_time_utc=datetime.now(UTC) - timedelta(seconds=2),
        sequence_number=hash(name) % 10_000,
        application_properties=properties,
    )


def test_counts_per_outcome_and_one_lag_observation_per_send_call() -> None:
    sdk = Sdk()
    neu, parked = MemoryTarget("neu/orders"), MemoryTarget("weu/replication-parked")
    batch = [
        original("a"),
        original("b"),
        original("replica", **{REPL_ORIGIN: "neu", REPL_PATH: "neu;weu", REPL_HOPS: 1}),
        original("bad", **{REPL_ORIGIN: "weu", REPL_PATH: "weu", REPL_HOPS: "many"}),
    ]
    outcome = runner(sdk, neu, parked).run(batch)
    assert (outcome.forwarded, outcome.skipped, len(outcome.dead_lettered)) == (2, 1, 1)
    assert sdk.messages() == {
        ("received", "", ""): 4,
        ("forwarded", "neu/orders", ""): 2,
        ("skipped", "", "LoopPrevention"): 1,
        ("dead_lettered", "weu/replication-parked", "MalformedReplicationProperty"): 1,
    }
    (lag,) = sdk.points("replication.lag")
    assert neu.send_calls == 1
    assert lag.count == neu.send_calls  # one call of two replicas: one observation
    assert 1.5 < lag.min == lag.max < 30
    assert lag.attributes is not None
    assert lag.attributes["messaging.system"] == "servicebus"
    assert lag.attributes["messaging.destination.name"] == "orders"
    (duration,) = sdk.points("replication.batch.duration")
    assert duration.count == 1
    assert "error.type" not in duration.attributes
    assert "lag_p50=" in outcome.summary()
    assert "forwarded=2" in outcome.summary()


def _aged(name: str, seconds: float) -> Envelope:
    """A message enqueued ``seconds`` ago."""
    return Envelope(
        body=b"x",
        message_id=name,
        enqueued_time_utc=datetime.now(UTC) - timedelta(seconds=seconds),
        sequence_number=int(seconds * 10),
    )


@pytest.mark.parametrize("per_replica", [False, True])
def test_the_lag_is_each_send_calls_oldest_replica_or_every_replica(per_replica: bool) -> None:
    """Five replicas enqueued 10, 8, 6, 4 and 2 s ago, to a target that acknowledges two per
    call: three send calls. By default the histogram has one observation per call, its oldest
    replica's lag (about 10, 6 and 2 s), so its maximum is the largest replica lag; with
    ``lag_per_replica`` one per replica, as ``REPLICATION_TELEMETRY_LAG=per-replica`` asks.
    The counter counts the five either way."""
    sdk = Sdk()
    topology = load_topology(EXAMPLES / "two-region-all-active.json")
    task = topology.resolved(topology.task("orders-weu-to-neu"))
    telemetry = TaskTelemetry(
        task.name,
        lag_per_replica=per_replica,
        meter_provider=sdk.meters,
        tracer_provider=sdk.tracers,
    )
    neu = MemoryTarget("neu/orders", accept_per_call=2)
    ages = [10.0, 8.0, 6.0, 4.0, 2.0]
    TaskRunner(
        task,
        {Target("neu", "orders"): neu},
        retry=RetryPolicy(budget=60.0),
        telemetry=telemetry,
        sleep=lambda _: None,
    ).run([_aged(f"m{age}", age) for age in ages])
    assert neu.send_calls == 3
    assert sdk.messages()[("forwarded", "neu/orders", "")] == 5
    (lag,) = sdk.points("replication.lag")
    expected = ages if per_replica else [10.0, 6.0, 2.0]
    assert lag.count == len(expected)
    assert expected[0] <= lag.max < expected[0] + 5
    assert expected[-1] <= lag.min < expected[-1] + 5
    assert sum(expected) <= lag.sum < sum(expected) + 5 * len(expected)


@pytest.mark.parametrize(
    ("value", "per_replica"), [(None, False), ("per-send", False), ("Per-Replica", True)]
)
def test_the_lag_setting(value: str | None, per_replica: bool) -> None:
    environ = {} if value is None else {"REPLICATION_TELEMETRY_LAG": value}
    assert Settings.from_environ(environ).lag_per_replica is per_replica


def test_an_unknown_lag_setting_is_refused_naming_it() -> None:
    with pytest.raises(ConfigurationError, match="REPLICATION_TELEMETRY_LAG"):
        Settings.from_environ({"REPLICATION_TELEMETRY_LAG": "sometimes"})


def test_a_failed_batch_counts_its_unsent_replicas_and_each_failed_send() -> None:
    sdk = Sdk()
    neu = MemoryTarget("neu/orders", unavailable=True)
    with pytest.raises(TransientForwardError):
        runner(sdk, neu).run([original("a"), original("b")])
    assert sdk.messages() == {
        ("received", "", ""): 2,
        ("failed", "neu/orders", "TransientForwardError"): 2,
    }
    (failures,) = sdk.points("replication.send.failures")
    assert failures.value == 1
    assert failures.attributes["error.type"] == "TransientForwardError"
    assert failures.attributes["replication.target"] == "neu/orders"
    (duration,) = sdk.points("replication.batch.duration")
    assert duration.attributes["error.type"] == "TransientForwardError"
    (process,) = [s for s in sdk.spans.get_finished_spans() if s.kind is trace.SpanKind.CONSUMER]
    assert process.status.status_code is trace.StatusCode.ERROR


def test_replicas_carry_the_send_span_whose_parent_continues_the_producer() -> None:
    sdk = Sdk()
    neu = MemoryTarget("neu/orders")
    runner(sdk, neu).run([original("a", traceparent=PRODUCER_PARENT, tracestate="k=v")])
    spans = {span.kind: span for span in sdk.spans.get_finished_spans()}
    process, send = spans[trace.SpanKind.CONSUMER], spans[trace.SpanKind.PRODUCER]
    assert process.context.trace_id == int(PRODUCER_TRACE, 16)
    assert process.parent is not None
    assert process.parent.span_id == 0xB7AD6B7169203331
    assert [link.context.span_id for link in process.links] == [0xB7AD6B7169203331]
    assert process.attributes is not None
    assert send.attributes is not None
    assert process.attributes["messaging.operation.type"] == "process"
    assert process.attributes["messaging.destination.subscription.name"] == "replication"
    assert send.parent is not None
    assert send.parent.span_id == process.context.span_id
    assert send.attributes["messaging.system"] == "servicebus"
    assert send.attributes["messaging.destination.name"] == "orders"
    assert send.attributes["messaging.operation.type"] == "send"
    assert send.attributes["messaging.batch.message_count"] == 1
    (replica,) = neu.received
    expected = f"00-{PRODUCER_TRACE}-{send.context.span_id:016x}-01"
    assert replica.application_properties[TRACE_PARENT] == expected
    assert replica.application_properties[DIAGNOSTIC_ID] == expected
    assert replica.application_properties["tracestate"] == "k=v"  # W3C: the state travels on


def test_a_batch_of_several_traces_is_linked_to_each_not_parented() -> None:
    sdk = Sdk()
    other = "00-11111111111111111111111111111111-2222222222222222-01"
    runner(sdk, MemoryTarget("neu/orders")).run(
        [original("a", traceparent=PRODUCER_PARENT), original("b", **{DIAGNOSTIC_ID: other})]
    )
    (process,) = [s for s in sdk.spans.get_finished_spans() if s.kind is trace.SpanKind.CONSUMER]
    assert process.parent is None
    assert len(process.links) == 2


def test_the_batch_span_links_each_distinct_producer_context_once() -> None:
    """The batch reads each message's context in one pass over its properties: every link is
    the context the W3C propagator reads from one of the messages (flags and state kept), and
    a context carried by several messages is linked once."""
    sdk = Sdk()
    unsampled = "00-11111111111111111111111111111111-2222222222222222-00"
    other_flags = "00-33333333333333333333333333333333-4444444444444444-03"
    messages = [
        original("a", traceparent=PRODUCER_PARENT),
        original("b", traceparent=PRODUCER_PARENT),
        original("c", traceparent=unsampled, tracestate="k=v"),
        original("d", **{DIAGNOSTIC_ID: other_flags}),
        original("e"),
    ]
    runner(sdk, MemoryTarget("neu/orders")).run(messages)
    (process,) = [s for s in sdk.spans.get_finished_spans() if s.kind is trace.SpanKind.CONSUMER]
    propagator = TraceContextTextMapPropagator()
    expected = [
        trace.get_current_span(propagator.extract(carrier)).get_span_context()
        for carrier in (
            {"traceparent": PRODUCER_PARENT},
            {"traceparent": unsampled, "tracestate": "k=v"},
            {"traceparent": other_flags},
        )
    ]
    assert [link.context for link in process.links] == expected
    assert [link.context.trace_flags for link in process.links] == [1, 0, 3]
    assert process.links[1].context.trace_state == expected[1].trace_state
    assert process.parent is None  # several contexts, and one message without any


def test_a_batch_with_untraced_messages_is_not_parented_to_the_traced_one() -> None:
    sdk = Sdk()
    neu = MemoryTarget("neu/orders")
    runner(sdk, neu).run([original("a", traceparent=PRODUCER_PARENT), original("b")])
    (process,) = [s for s in sdk.spans.get_finished_spans() if s.kind is trace.SpanKind.CONSUMER]
    assert process.parent is None
    assert len(process.links) == 1
    assert all(
        e.application_properties[TRACE_PARENT].split("-")[1] != PRODUCER_TRACE for e in neu.received
    )


def test_off_records_nothing_and_keeps_the_producers_trace_properties() -> None:
    sdk = Sdk()
    neu = MemoryTarget("neu/orders")
    runner(sdk, neu, enabled=False).run([original("a", traceparent=PRODUCER_PARENT)])
    assert sdk.points("replication.messages") == []
    assert sdk.spans.get_finished_spans() == ()
    assert neu.received[0].application_properties[TRACE_PARENT] == PRODUCER_PARENT


def test_without_an_sdk_replicas_keep_their_trace_properties() -> None:
    topology = load_topology(EXAMPLES / "two-region-all-active.json")
    task = topology.resolved(topology.task("orders-weu-to-neu"))
    neu = MemoryTarget("neu/orders")
    TaskRunner(task, {Target("neu", "orders"): neu}).run(
        [original("a", traceparent=PRODUCER_PARENT)]
    )
    assert neu.received[0].application_properties[TRACE_PARENT] == PRODUCER_PARENT


@pytest.mark.parametrize(
    ("value", "enabled"),
    [(None, True), ("on", True), ("console", True), ("off", False), ("OFF", False), ("0", False)],
)
def test_the_off_switch(value: str | None, enabled: bool) -> None:
    environ = {} if value is None else {"REPLICATION_TELEMETRY": value}
    assert telemetry_enabled(environ) is enabled


@pytest.mark.parametrize(
    ("reason", "code"),
    [
        ("NoRouteMatched: no route condition is true", "NoRouteMatched"),
        ("ValidationFailed: body too large", "ValidationFailed"),
        ("already a replica: all-active replicates originals only", "LoopPrevention"),
        ("neu/orders: already on the path", "LoopPrevention"),
        ("no target", "LoopPrevention"),
    ],
)
def test_skip_reasons_are_bounded_codes(reason: str, code: str) -> None:
    assert skip_reason(reason) == code


def test_error_type_prefers_the_errors_reason() -> None:
    assert error_type(TransientForwardError("x", target="t")) == "TransientForwardError"
    error = PermanentForwardError("x", target="t", reason="MessageTooLarge")
    assert error_type(error) == "MessageTooLarge"


def test_exporters_are_configured_only_when_asked() -> None:
    assert configure_function_app_telemetry(Settings.from_environ({})) is False
    assert (
        configure_function_app_telemetry(
            Settings.from_environ(
                {
                    "APPLICATIONINSIGHTS_CONNECTION_STRING": "InstrumentationKey=x",
                    "REPLICATION_TELEMETRY": "off",
                }
            )
        )
        is False
    )
    assert configure_local_telemetry(Settings.from_environ({})) is None
    assert (
        configure_local_telemetry(
            Settings.from_environ(
                {"REPLICATION_TELEMETRY": "off", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}
            )
        )
        is None
    )


def _fresh_interpreter(code: str, environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a new interpreter at the repository's root: the global providers it
    installs cannot be undone in this one. The sampler settings of this process are left out
    unless ``environ`` names them."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_TRACES_SAMPLER")}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[2],
        env={**clean, **environ},
        capture_output=True,
        text=True,
        timeout=60,
    )


CONSOLE_RUN = """
import os
from pathlib import Path
from replication.planning import Target
from replication.envelope import Envelope
from replication.runtime import TaskRunner
from replication.settings import Settings
from replication.telemetry import configure_local_telemetry
from replication.topology import load_topology
from replication.runtime import MemoryTarget
from opentelemetry import metrics, trace

console = Settings.from_environ({"REPLICATION_TELEMETRY": "console"})
assert configure_local_telemetry(console) == "console"
topology = load_topology(Path("examples/two-region-all-active.json"))
task = topology.resolved(topology.task("orders-weu-to-neu"))
neu = MemoryTarget("neu/orders")
TaskRunner(task, {Target("neu", "orders"): neu}).run([Envelope(body=b"x", message_id="a")])
assert neu.received[0].application_properties["traceparent"].startswith("00-")
metrics.get_meter_provider().shutdown()
trace.get_tracer_provider().shutdown()
"""


def test_local_console_telemetry_prints_metrics_and_spans() -> None:
    """In a fresh interpreter: the global providers it installs cannot be undone in this one.
    Every span is sampled (``OTEL_TRACES_SAMPLER=always_on``): the batch starts a trace, which
    the default sampler records one time in ten."""
    result = _fresh_interpreter(CONSOLE_RUN, {"OTEL_TRACES_SAMPLER": "always_on"})
    assert result.returncode == 0, result.stderr
    assert '"name": "replication.messages"' in result.stdout
    assert '"name": "send orders"' in result.stdout


SAMPLER_RUN = """
from opentelemetry import trace
from replication.settings import Settings
from replication.telemetry import configure_local_telemetry

assert configure_local_telemetry(Settings.from_environ({"REPLICATION_TELEMETRY": "console"}))
print(trace.get_tracer_provider().sampler.get_description())
"""


def test_local_traces_are_sampled_parent_based_with_ten_percent_of_the_roots_by_default() -> None:
    """In a fresh interpreter (the global TracerProvider is set once per process)."""
    result = _fresh_interpreter(SAMPLER_RUN, {})
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ParentBased{root:TraceIdRatioBased{0.1},"), result.stdout


@pytest.mark.parametrize(
    ("environ", "sampler"),
    [
        ({}, "ParentBased{root:TraceIdRatioBased{0.1},"),
        ({"OTEL_TRACES_SAMPLER_ARG": "0.25"}, "ParentBased{root:TraceIdRatioBased{0.25},"),
        ({"OTEL_TRACES_SAMPLER": "always_on"}, None),
        ({"OTEL_TRACES_SAMPLER": "parentbased_traceidratio"}, None),
    ],
)
def test_the_local_sampler_is_the_standard_settings_or_the_default(
    environ: dict[str, str], sampler: str | None
) -> None:
    """None: the SDK's TracerProvider reads the standard settings itself."""
    found = traces_sampler(environ)
    if sampler is None:
        assert found is None
    else:
        assert found.get_description().startswith(sampler)


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        (
            {},
            {"OTEL_TRACES_SAMPLER": "parentbased_trace_id_ratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"},
        ),
        (
            {SAMPLER: "traceidratio", SAMPLER_ARG: "0.5"},
            {SAMPLER: "trace_id_ratio", SAMPLER_ARG: "0.5"},
        ),
        (
            {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio"},
            {"OTEL_TRACES_SAMPLER": "parentbased_trace_id_ratio"},
        ),
        ({SAMPLER: "always_off"}, {}),
    ],
)
def test_the_function_app_names_the_ratio_samplers_as_the_azure_monitor_distro_does(
    environ: dict[str, str], expected: dict[str, str]
) -> None:
    """What ``configure_function_app_telemetry`` puts in the environment before calling
    ``configure_azure_monitor`` (checked end to end in a fresh interpreter below)."""
    assert _distro_sampler_settings(environ) == expected


def test_the_default_sampler_ratio_must_be_a_ratio() -> None:
    assert traces_sampler_settings({"OTEL_TRACES_SAMPLER": "always_off"}) == {}
    with pytest.raises(ConfigurationError, match="OTEL_TRACES_SAMPLER_ARG"):
        traces_sampler_settings({"OTEL_TRACES_SAMPLER_ARG": "ten percent"})
    with pytest.raises(ConfigurationError, match="OTEL_TRACES_SAMPLER_ARG"):
        traces_sampler_settings({"OTEL_TRACES_SAMPLER_ARG": "10"})


INTERVAL_RUN = """
import time
from replication.settings import Settings
from replication.telemetry import configure_local_telemetry
from opentelemetry import metrics

assert configure_local_telemetry(Settings.from_environ({"REPLICATION_TELEMETRY": "console"}))
counter = metrics.get_meter("interval-test").create_counter("interval.test")
counter.add(1)
print("configured", flush=True)
time.sleep(60)  # the parent stops this process once the export is printed
"""


def test_local_metrics_export_every_otel_metric_export_interval_when_it_is_set() -> None:
    """The standard ``OTEL_METRIC_EXPORT_INTERVAL`` wins over the local 15 s: at 100 ms the
    console exporter prints the counter within 10 s of the configuration (at 15 s it would
    not; the child's start-up, however slow, is not part of the wait)."""
    root = Path(__file__).resolve().parents[2]
    environ = {**os.environ, "OTEL_METRIC_EXPORT_INTERVAL": "100", "PYTHONUNBUFFERED": "1"}
    child = subprocess.Popen(
        [sys.executable, "-c", INTERVAL_RUN],
        cwd=root,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert child.stdout is not None
    printed = b""
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(child.stdout, selectors.EVENT_READ)
            deadline = time.monotonic() + 120  # until "configured", then 10 s from it
            while b'"name": "interval.test"' not in printed and time.monotonic() < deadline:
                if selector.select(timeout=deadline - time.monotonic()):
                    chunk = os.read(child.stdout.fileno(), 65536)
                    if not chunk:
                        break
                    if b"configured" in chunk and b"configured" not in printed:
                        deadline = time.monotonic() + 10
                    printed += chunk
    finally:
        child.kill()
        child.wait()
    assert b'"name": "interval.test"' in printed


def test_a_rejected_message_without_a_parking_entity_counts_as_failed() -> None:
    sdk = Sdk()
    bad = original("bad", **{REPL_ORIGIN: "weu", REPL_PATH: "weu", REPL_HOPS: "many"})
    with pytest.raises(MessageRejectedError):
        runner(sdk, MemoryTarget("neu/orders")).run([bad])
    assert sdk.messages() == {
        ("received", "", ""): 1,
        ("failed", "", "MalformedReplicationProperty"): 1,
    }


AZURE_MONITOR_RUN = """
import os
from azure.core.settings import settings
from opentelemetry import metrics, trace
from replication.settings import Settings
from replication.telemetry import configure_function_app_telemetry

connection = "InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint=http://127.0.0.1:9/"
assert configure_function_app_telemetry(
    Settings.from_environ({"APPLICATIONINSIGHTS_CONNECTION_STRING": connection})
)
assert type(metrics.get_meter_provider()).__module__.startswith("opentelemetry.sdk")
assert type(trace.get_tracer_provider()).__module__.startswith("opentelemetry.sdk")
assert settings.tracing_implementation() is None, "SDK tracing would replace traceparent"
description = trace.get_tracer_provider().sampler.get_description()
assert description.startswith(os.environ["EXPECTED_SAMPLER"]), description
"""


def test_the_function_app_exports_to_azure_monitor_with_a_connection_string() -> None:
    """In a fresh interpreter, against an ingestion endpoint that refuses connections; traces
    are sampled as in local runs (parent-based, 10 % of the roots), not by the distro's own
    default (5 traces a second), although the distro spells the ratio samplers its own way."""
    environ = {
        "APPLICATIONINSIGHTS_STATSBEAT_DISABLED_ALL": "true",
        "EXPECTED_SAMPLER": "ParentBased{root:TraceIdRatioBased{0.1},",
    }
    result = _fresh_interpreter(AZURE_MONITOR_RUN, environ)
    assert result.returncode == 0, result.stderr


TRACEPARENTS = st.one_of(
    st.builds(
        lambda version, trace_id, span_id, flags, rest: (
            f"{version}-{trace_id}-{span_id}-{flags}" + rest
        ),
        st.sampled_from(["00", "01", "cc", "ff", "0g", "0"]),
        st.sampled_from(["0" * 32, PRODUCER_TRACE, PRODUCER_TRACE.upper(), "a" * 31]),
        st.sampled_from(["0" * 16, "b7ad6b7169203331", "b7ad6b716920333"]),
        st.sampled_from(["00", "01", "ff", "1"]),
        st.sampled_from(["", "-what-follows", "-", " ", "\t"]),
    ),
    st.text(max_size=60),
)


@given(
    TRACEPARENTS,
    st.sampled_from([TRACE_PARENT, DIAGNOSTIC_ID]),
    st.one_of(st.none(), st.just("k=v"), st.just("bad state!"), st.text(max_size=20)),
)
def test_producer_contexts_are_read_as_the_w3c_propagator_reads_them(
    parent: str, name: str, state: str | None
) -> None:
    """producer_span_context parses a traceparent itself (faster than a Context per message):
    it must accept and refuse exactly what TraceContextTextMapPropagator does."""
    carrier = {"traceparent": parent} | ({"tracestate": state} if state is not None else {})
    expected = trace.get_current_span(
        TraceContextTextMapPropagator().extract(carrier)
    ).get_span_context()
    properties = {name: parent} | ({"tracestate": state} if state is not None else {})
    found = producer_span_context(properties)
    if not expected.is_valid:
        assert found is None
    else:
        assert found == expected
        assert found.trace_state == expected.trace_state
