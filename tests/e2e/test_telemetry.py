"""Telemetry through the emulator and the local host: the metrics equal what happened, message
for message, and a producer's trace continues through the replicator onto the replica.

The local host builds its runners with :func:`replication.runtime.task_telemetry`; the test gives
that an SDK with an in-memory reader and exporter (:class:`tests.otel.Sdk`, recording every
span: this test follows the whole trace chain). Everything else is real: SDK senders and
receivers against the emulator. The senders are the real ones, each call timed on its way out
(:class:`TimedSender`), so that the lag histogram can be checked against the send calls.
"""

from __future__ import annotations

import dataclasses
import datetime
import time
from collections.abc import Sequence
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from opentelemetry import trace
from opentelemetry.sdk.trace.sampling import ALWAYS_ON

from replication.envelope import Envelope
from replication.hosts.local import LocalHost
from replication.properties import REPL_HOPS, REPL_ORIGIN, REPL_PATH
from replication.runtime import _assembly as assembly
from replication.telemetry import DIAGNOSTIC_ID, TRACE_PARENT
from replication.topology import Topology, parse_topology
from replication.transport.senders import SenderFactory
from replication.transport.servicebus import envelope_from_received
from tests.otel import Sdk

pytestmark = pytest.mark.emulator

PRODUCER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PRODUCER_SPAN = "00f067aa0ba902b7"
QUEUES = ("telemetry-in", "telemetry-out", "telemetry-parked")
LAG_TARGET = "neu/telemetry-out"


def _topology() -> Topology:
    namespaces = [
        {
            "name": name,
            "region": name,
            "kind": "servicebus",
            "fullyQualifiedNamespace": f"{name}.servicebus.windows.net",
            "connection": f"SB_{name.upper()}",
            "queues": [{"name": queue} for queue in QUEUES],
        }
        for name in ("weu", "neu")
    ]
    task = {
        "name": "telemetry",
        "pattern": "all_active",
        "source": {"namespace": "weu", "entity": "telemetry-in"},
        "targets": [{"namespace": "neu", "entity": "telemetry-out"}],
        "deadLetterTarget": {"namespace": "weu", "entity": "telemetry-parked"},
    }
    return parse_topology({"namespaces": namespaces, "tasks": [task]})


@dataclasses.dataclass
class TimedSender:
    """A real target sender whose send calls are recorded: when each returned, and the source
    enqueue times of the replicas it sent (a replica keeps its source's broker facts)."""

    sender: Any
    target: str
    calls: list[tuple[str, float, list[float]]]

    def send(self, envelopes: Sequence[Envelope], **options: Any) -> None:
        self.sender.send(envelopes, **options)
        returned = time.time()
        enqueued = [e.enqueued_time_utc.timestamp() for e in envelopes if e.enqueued_time_utc]
        self.calls.append((self.target, returned, enqueued))


def _drain(connection: str, queue: str) -> list[Any]:
    with (
        ServiceBusClient.from_connection_string(connection) as client,
        client.get_queue_receiver(queue, max_wait_time=2) as receiver,
    ):
        received = []
        while batch := receiver.receive_messages(max_message_count=50, max_wait_time=2):
            for message in batch:
                received.append(envelope_from_received(message))
                receiver.complete_message(message)
        return received


def test_metrics_and_traces_follow_every_message(
    regions: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sdk = Sdk(sampler=ALWAYS_ON)
    build = assembly.task_telemetry
    monkeypatch.setattr(
        assembly,
        "task_telemetry",
        lambda topology, task, **options: build(
            topology, task, **options, meter_provider=sdk.meters, tracer_provider=sdk.tracers
        ),
    )
    calls: list[tuple[str, float, list[float]]] = []
    real_sender = SenderFactory.sender
    monkeypatch.setattr(
        SenderFactory,
        "sender",
        lambda factory, namespace, entity: TimedSender(
            real_sender(factory, namespace, entity), f"{namespace}/{entity}", calls
        ),
    )
    environ = {
        "SB_WEU": regions.connection_string("weu"),
        "SB_NEU": regions.connection_string("neu"),
    }
    # One producer's batch: every message carries its span's context, as the SDK writes it.
    producer = f"00-{PRODUCER_TRACE}-{PRODUCER_SPAN}-01"
    traced: dict[str | bytes, Any] = {TRACE_PARENT: producer, DIAGNOSTIC_ID: producer}
    messages = [
        ServiceBusMessage(b"1", message_id="m-1", application_properties=traced),
        ServiceBusMessage(b"2", message_id="m-2", application_properties=traced),
        ServiceBusMessage(b"3", message_id="m-3", application_properties=traced),
        # A replica from neu: loop prevention skips it.
        ServiceBusMessage(
            b"4",
            message_id="replica",
            application_properties={
                **traced,
                REPL_ORIGIN: "neu",
                REPL_PATH: "neu;weu",
                REPL_HOPS: 1,
            },
        ),
        # Malformed replication properties: parked with its reason.
        ServiceBusMessage(
            b"5",
            message_id="malformed",
            application_properties={
                **traced,
                REPL_ORIGIN: "weu",
                REPL_PATH: "weu",
                REPL_HOPS: "many",
            },
        ),
    ]
    with (
        ServiceBusClient.from_connection_string(environ["SB_WEU"]) as client,
        client.get_queue_sender("telemetry-in") as sender,
    ):
        sender.send_messages(messages)
    published = datetime.datetime.now(datetime.UTC)
    with LocalHost(_topology(), environ) as host:
        assert host.wait_until_idle(idle_seconds=2, timeout=60, at_least=5)
        assert not host.failing()
    elapsed = (datetime.datetime.now(datetime.UTC) - published).total_seconds()

    replicas = {e.message_id: e for e in _drain(environ["SB_NEU"], "telemetry-out")}
    parked = _drain(environ["SB_WEU"], "telemetry-parked")
    assert sorted(replicas) == ["m-1", "m-2", "m-3"]
    assert [p.message_id for p in parked] == ["malformed"]

    assert sdk.messages() == {
        ("received", "", ""): 5,
        ("forwarded", "neu/telemetry-out", ""): 3,
        ("skipped", "", "LoopPrevention"): 1,
        ("dead_lettered", "weu/telemetry-parked", "MalformedReplicationProperty"): 1,
    }
    # One lag observation per send call, the lag of its oldest replica: the histogram counts
    # the send calls and its maximum is the largest replica lag (read right after the send
    # returned, so the runner's reading is at most a moment later).
    lag = sdk.histogram("replication.lag", **{"replication.target": "neu/telemetry-out"})
    send_calls = [(done, enqueued) for target, done, enqueued in calls if target == LAG_TARGET]
    assert sum(len(enqueued) for _, enqueued in send_calls) == len(replicas) == 3
    assert lag.count == len(send_calls) >= 1
    largest = max(done - when for done, enqueued in send_calls for when in enqueued)
    assert largest <= lag.max <= largest + 1.0
    assert 0 <= lag.min <= lag.max <= elapsed + 5
    assert lag.attributes["messaging.system"] == "servicebus"
    assert lag.attributes["replication.task"] == "telemetry"
    assert sdk.points("replication.send.failures") == []
    assert sum(p.count for p in sdk.points("replication.batch.duration")) >= 1

    # Each replica continues from the replicator's send span, which continues the producer's
    # trace through the process span.
    spans = sdk.spans.get_finished_spans()
    sends = {s.context.span_id: s for s in spans if s.kind is trace.SpanKind.PRODUCER}
    for replica in replicas.values():
        context = replica.application_properties[TRACE_PARENT]
        version, trace_id, parent_id, flags = context.split("-")
        assert (version, trace_id, flags) == ("00", PRODUCER_TRACE, "01")
        assert replica.application_properties[DIAGNOSTIC_ID] == context
        assert int(parent_id, 16) in sends
    parent_id = replicas["m-1"].application_properties[TRACE_PARENT].split("-")[2]
    send = sends[int(parent_id, 16)]
    assert send.name == "send telemetry-out"
    assert send.attributes is not None
    assert send.attributes["messaging.system"] == "servicebus"
    assert send.attributes["messaging.destination.name"] == "telemetry-out"
    assert send.attributes["messaging.operation.type"] == "send"
    assert send.parent is not None
    (process,) = [s for s in spans if s.context.span_id == send.parent.span_id]
    assert process.kind is trace.SpanKind.CONSUMER
    assert process.attributes is not None
    assert process.attributes["messaging.destination.name"] == "telemetry-in"
    assert process.attributes["messaging.operation.type"] == "process"
    assert process.parent is not None
    assert process.parent.span_id == int(PRODUCER_SPAN, 16)
    assert {link.context.span_id for link in process.links} == {int(PRODUCER_SPAN, 16)}
