"""Event Hubs batches through the real Python worker into a Service Bus queue.

The events are read from the emulator as the Event Hubs extension reads them, turned into the
invocation the host sends (:mod:`tests.host.host_conversion`; for a geo-replicated namespace
the offsets take the opaque form under which the extension reports ``Offset`` -1), and the
Service Bus replicas are compared with what was published.

Against the app as it was before this tier existed (commit 994ab12, with ``dataType`` added so
that the bodies bind), the geo-replicated case loses four of six events: every event without a
message-id got the MessageId ``PARTITION:-1`` and the target's duplicate detection kept one.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from azure.eventhub import EventData

from tests.host.brokers import drain, invoke_batch, publish_events, read_events
from tests.host.host import WorkerSession
from tests.host.host_conversion import EventView, event_hub_binding_data

ROOT = Path(__file__).resolve().parents[2]
HOST_JSON = json.loads((ROOT / "host.json").read_text())
MAX_BATCH = int(HOST_JSON["extensions"]["eventHubs"]["maxEventBatchSize"])
FUNCTION = "devices-to-queue"
SOURCE = "ingest/devices"


def _text(value: Any) -> Any:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def replicate_events(
    worker: WorkerSession,
    settings: dict[str, str],
    events: list[EventData],
    *,
    partition_id: str,
    geo_replicated: bool,
) -> tuple[Any, list[EventView]]:
    before = publish_events(settings["EH_INGEST"], "devices", partition_id, events)
    received = read_events(
        settings["EH_INGEST"], "devices", "replication", partition_id, before, len(events)
    )
    views = [EventView.of(event, geo_replicated=geo_replicated) for event in received]
    binding_data = event_hub_binding_data(
        views,
        fully_qualified_namespace="localhost",
        event_hub="devices",
        consumer_group="replication",
        partition_id=partition_id,
    )
    response = invoke_batch(
        worker, FUNCTION, [view.body for view in views], binding_data, retry_count=0
    )
    return response, views


@pytest.mark.parametrize("geo_replicated", [True, False], ids=["geo-replicated", "standard"])
def test_events_without_message_id_keep_distinct_ids_and_their_fields(
    worker: WorkerSession, emulator_settings: dict[str, str], geo_replicated: bool
) -> None:
    run = uuid.uuid4().hex[:8]
    events = []
    for n in range(6):
        event = EventData(b"\x01\x02 raw" if n % 2 else json.dumps({"n": n, "t": 21.50}).encode())
        event.properties = {"run": run, "n": n}
        if n == 3:
            event.message_id = f"evt-{run}-3"
            event.content_type = "application/octet-stream"
            event.correlation_id = f"corr-{run}"
        events.append(event)
    # Partition keys on some events only: PartitionKeyArray loses the others' entries.
    events[1].raw_amqp_message.annotations = {b"x-opt-partition-key": b"device-1"}
    events[4].raw_amqp_message.annotations = {b"x-opt-partition-key": b"device-4"}
    response, views = replicate_events(
        worker, emulator_settings, events, partition_id="1", geo_replicated=geo_replicated
    )
    assert worker.succeeded(response), response.result.exception.message
    if geo_replicated:
        assert {view.offset for view in views} == {-1}
    replicas = {
        int(_text((r.application_properties or {})[b"n"])): r
        for r in drain(emulator_settings["SB_NEU"], "device-events", len(events))
    }
    assert sorted(replicas) == list(range(len(events)))
    for n, view in enumerate(views):
        replica = replicas[n]
        body = replica.body if isinstance(replica.body, bytes) else b"".join(replica.body)
        assert body == view.body
        if n == 3:
            assert replica.message_id == f"evt-{run}-3"
            assert replica.content_type == "application/octet-stream"
            assert replica.correlation_id == f"corr-{run}"
        else:
            assert replica.message_id == f"{SOURCE}/1/{view.sequence_number}"
            assert replica.content_type is None
            assert replica.correlation_id is None
        expected_key = {1: "device-1", 4: "device-4"}.get(n)
        assert replica.session_id == expected_key
        assert replica.partition_key == expected_key
        assert _text((replica.application_properties or {})[b"run"]) == run


def test_largest_event_batch(worker: WorkerSession, emulator_settings: dict[str, str]) -> None:
    run = uuid.uuid4().hex[:8]
    events = []
    for n in range(MAX_BATCH):
        event = EventData(f"reading {n}".encode())
        event.properties = {"run": run, "n": n}
        events.append(event)
    response, views = replicate_events(
        worker, emulator_settings, events, partition_id="0", geo_replicated=False
    )
    assert worker.succeeded(response), response.result.exception.message
    replicas = drain(emulator_settings["SB_NEU"], "device-events", len(events))
    assert sorted(str(r.message_id) for r in replicas) == sorted(
        f"{SOURCE}/0/{view.sequence_number}" for view in views
    )
    assert {b"".join(r.body) for r in replicas} == {view.body for view in views}
