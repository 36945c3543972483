"""Poison through the real Python worker: the Function app parks everything that can be kept
and loses nothing (issue 20).

Payloads are built as the host builds them (:mod:`tests.host.host_conversion`, from the messages
the emulator delivered to an SDK receiver). What the Functions host can never hand to a Python
function is not tested here, because it never reaches the worker: an AMQP value or sequence
body makes the extensions' ``EventData.Body`` / ``ServiceBusReceivedMessage.Body`` throw
``NotSupportedException`` while the host binds the batch (``docs/explanation/parking.md``).

- An event with a property no replica can carry (a list; the host sends it as JSON): parked
  with its body and every property that converts, its position and a marker naming what is
  missing; ``redrive`` re-reads it from the hub, finds it still unconvertible and leaves the
  copy parked, never sending it as the event.
- A Service Bus message as large as its Premium source takes: its replica is too large for the
  target and its parked copy for the parking queue. A batch function cannot dead-letter one
  message, so the invocation parks a notice and then fails: the message goes back to the
  source (abandoned), where ``maxDeliveryCount`` brings it to the dead-letter queue the notice
  points to; its batch-mate is replicated once.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from azure.eventhub import EventData
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus.exceptions import MessageSizeExceededError

from replication.cli import main
from replication.properties import (
    DEAD_LETTER_BODY_OMITTED,
    DEAD_LETTER_ORIGINAL,
    DEAD_LETTER_PARTITION,
    DEAD_LETTER_PROPERTIES_OMITTED,
    DEAD_LETTER_REASON,
    DEAD_LETTER_SEQUENCE,
)
from tests.host.brokers import drain
from tests.host.conftest import TOPOLOGY
from tests.host.host import WorkerSession
from tests.host.test_eventhubs_trigger import replicate_events
from tests.host.test_servicebus_trigger import _body, _properties, replicate


def _peek(connection: str, queue: str) -> list[Any]:
    with (
        ServiceBusClient.from_connection_string(connection) as client,
        client.get_queue_receiver(queue) as receiver,
    ):
        return list(receiver.peek_messages(max_message_count=250))


def test_an_unconvertible_event_is_parked_with_what_converts_and_redrive_leaves_it(
    worker: WorkerSession,
    emulator_settings: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = uuid.uuid4().hex[:8]
    events = []
    for n, properties in enumerate([{"n": 0}, {"eid": run, "tags": [1, 2]}, {"n": 2}]):
        event = EventData(f"{run}-{n}".encode())
        event.message_id = f"{run}-{n}"
        event.properties = properties  # type: ignore[assignment]
        events.append(event)
    settings = emulator_settings
    function = "devices-to-queue"
    response, views = replicate_events(
        worker, settings, events, partition_id="0", geo_replicated=False
    )
    assert worker.succeeded(response), response.result.exception.message
    replicas = drain(settings["SB_NEU"], "device-events", 2)
    assert sorted(str(r.message_id) for r in replicas) == [f"{run}-0", f"{run}-2"]
    parked = [
        m for m in _peek(settings["SB_NEU"], "device-events-rejected") if m.message_id == f"{run}-1"
    ]
    (copy,) = parked
    properties = _properties(copy)
    assert _body(copy) == f"{run}-1".encode()
    assert properties["eid"] == run
    assert properties[DEAD_LETTER_REASON] == "UnsupportedApplicationProperty"
    assert "'tags'" in properties[DEAD_LETTER_PROPERTIES_OMITTED]
    assert properties[DEAD_LETTER_SEQUENCE] == views[1].sequence_number
    assert properties[DEAD_LETTER_PARTITION] == "0"
    assert f"partition 0 sequence {views[1].sequence_number}" in properties[DEAD_LETTER_ORIGINAL]

    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    assert main(["redrive", "--topology", str(TOPOLOGY), "--task", function]) == 0
    out = capsys.readouterr().out
    assert "re-reading the original from the event hub" in out
    assert f"    {run}-1: UnsupportedApplicationProperty: " in out
    still = [
        m for m in _peek(settings["SB_NEU"], "device-events-rejected") if m.message_id == f"{run}-1"
    ]
    assert [m.sequence_number for m in still] == [copy.sequence_number]
    assert _peek(settings["SB_NEU"], "device-events") == []


def _largest_body(connection: str, queue: str) -> int:
    """The largest body a message of ``queue`` can have, by the SDK's own size check."""
    with (
        ServiceBusClient.from_connection_string(connection) as client,
        client.get_queue_sender(queue) as sender,
    ):
        low, high = 1, 1024 * 1024
        while low < high:
            size = (low + high + 1) // 2
            try:
                sender.create_message_batch().add_message(ServiceBusMessage(b"x" * size))
                low = size
            except MessageSizeExceededError:
                high = size - 1
        return low


def test_a_message_too_large_to_park_stays_in_the_source(
    worker: WorkerSession, emulator_settings: dict[str, str]
) -> None:
    settings = emulator_settings
    run = uuid.uuid4().hex[:8]
    size = _largest_body(settings["SB_WEU"], "jobs") - 64
    messages = [
        ServiceBusMessage(b"ok", message_id=f"{run}-ok"),
        ServiceBusMessage(
            b"e" * size, message_id=f"{run}-edge", application_properties={"eid": run}
        ),
    ]
    function = "jobs-weu-to-neu"
    try:
        response = replicate(worker, settings, function, messages, source=("SB_WEU", "jobs", None))
        succeeded = worker.succeeded(response)
        assert not succeeded
        assert "must stay in the source" in response.result.exception.message
        assert [str(r.message_id) for r in drain(settings["SB_NEU"], "jobs", 1)] == [f"{run}-ok"]
        (notice,) = [
            m
            for m in _peek(settings["SB_WEU"], "replication-parked")
            if m.message_id == f"{run}-edge"
        ]
        properties = _properties(notice)
        assert _body(notice) == b""
        assert properties["eid"] == run
        assert properties[DEAD_LETTER_BODY_OMITTED].startswith(f"{size} bytes, sha256 ")
        assert properties[DEAD_LETTER_ORIGINAL] == "weu/jobs/$DeadLetterQueue"
        waiting = {str(m.message_id): m for m in _peek(settings["SB_WEU"], "jobs")}
        assert _body(waiting[f"{run}-edge"]) == b"e" * size  # the whole original, not lost
    finally:
        drain(settings["SB_WEU"], "jobs", 0, quiet_seconds=1)
        drain(settings["SB_WEU"], "replication-parked", 0, quiet_seconds=1)
