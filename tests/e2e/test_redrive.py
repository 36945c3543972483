"""``python -m replication redrive`` against the emulator, with the real SDKs on both sides.

Tasks of the topology below read queues of region ``weu`` and replicate to the
duplicate-detecting queue ``redrive-out`` of region ``neu``; two of them park in the shared
queue ``weu/redrive-parking``. Messages reach a source's dead-letter queue the way the broker
puts them there (a receiver dead-letters them) and the parking queue the way the runtime parks
them (:func:`replication.runtime.parked_copy`, sent with the SDK). Every test gets an emulator
of its own (it starts in milliseconds), so it begins with empty queues and an empty duplicate
detection history of ``redrive-out``.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue

from replication.cli import main
from replication.envelope import Envelope
from replication.exit_codes import ExitCode
from replication.planning import DeadLetter
from replication.properties import (
    DEAD_LETTER_PROPERTIES,
    DEAD_LETTER_REASON,
    DEAD_LETTER_SOURCE,
    REPL_ORIGIN,
)
from replication.runtime import parked_copy
from replication.transport.servicebus import envelope_from_received, to_servicebus_message
from tests.e2e.conftest import CONFIG, NEEDS_PROTON

pytestmark = pytest.mark.emulator

SOURCES = ("redrive-in", "redrive-other", "redrive-valid", "redrive-parking")
TARGET = "redrive-out"


def _topology() -> dict[str, Any]:
    def servicebus(name: str, queues: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "name": name,
            "region": name,
            "kind": "servicebus",
            "fullyQualifiedNamespace": f"{name}.servicebus.windows.net",
            "connection": f"SB_{name.upper()}",
            "queues": queues,
            "topics": [{"name": "orders", "subscriptions": [{"name": "billing"}]}],
        }

    def task(name: str, source: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {
            "name": name,
            "pattern": "all_active",
            "source": source,
            "targets": [{"namespace": "neu", "entity": TARGET}],
            **extra,
        }

    parking = {"namespace": "weu", "entity": "redrive-parking"}
    return {
        "namespaces": [
            servicebus("weu", [{"name": name} for name in SOURCES]),
            servicebus("neu", [{"name": TARGET, "requiresDuplicateDetection": True}]),
            {
                "name": "ingest",
                "region": "weu",
                "kind": "eventhubs",
                "fullyQualifiedNamespace": "ingest.servicebus.windows.net",
                "connection": "EH_INGEST",
                "eventHubs": [{"name": "devices", "partitionCount": 2}],
            },
        ],
        "tasks": [
            task("task-a", {"namespace": "weu", "entity": "redrive-in"}, deadLetterTarget=parking),
            task(
                "task-b", {"namespace": "weu", "entity": "redrive-other"}, deadLetterTarget=parking
            ),
            {
                **task(
                    "task-valid",
                    {"namespace": "weu", "entity": "redrive-valid"},
                    deadLetterTarget=parking,
                ),
                "pattern": "validation",
                "options": {"condition": "ok = 1"},
            },
            task(
                "no-parking",
                {"namespace": "weu", "entity": "orders", "subscription": "replication"},
            ),
            {
                "name": "stream",
                "pattern": "stream_to_queue",
                "source": {"namespace": "ingest", "entity": "devices", "consumerGroup": "redrive"},
                "targets": [{"namespace": "neu", "entity": TARGET}],
                "deadLetterTarget": parking,
            },
        ],
    }


@pytest.fixture
def topology(tmp_path: Path) -> Path:
    path = tmp_path / "topology.json"
    path.write_text(json.dumps(_topology()))
    return path


@pytest.fixture
def regions() -> Iterator[Any]:
    """A fresh emulator for each test (the e2e conftest's configuration), instead of the
    session's: nothing is left over from another test."""
    emulator = pytest.importorskip("emulator", reason=NEEDS_PROTON)
    with emulator.run_emulator(CONFIG) as running:
        yield running


@pytest.fixture
def weu(regions: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServiceBusClient]:
    """A client of region weu, with the settings of both regions in the environment."""
    monkeypatch.setenv("SB_WEU", regions.connection_string("weu"))
    monkeypatch.setenv("SB_NEU", regions.connection_string("neu"))
    with ServiceBusClient.from_connection_string(regions.connection_string("weu")) as client:
        yield client


@pytest.fixture
def neu(regions: Any) -> Iterator[ServiceBusClient]:
    with ServiceBusClient.from_connection_string(regions.connection_string("neu")) as client:
        yield client


def _drain(
    client: ServiceBusClient, queue: str, sub_queue: ServiceBusSubQueue | None = None
) -> list[Envelope]:
    drained = []
    with client.get_queue_receiver(queue, sub_queue=sub_queue, max_wait_time=0.5) as receiver:
        while batch := receiver.receive_messages(max_message_count=100, max_wait_time=0.5):
            for message in batch:
                drained.append(envelope_from_received(message))
                receiver.complete_message(message)
    return drained


def _peek(
    client: ServiceBusClient, queue: str, sub_queue: ServiceBusSubQueue | None = None
) -> list[Envelope]:
    with client.get_queue_receiver(queue, sub_queue=sub_queue) as receiver:
        return [envelope_from_received(m) for m in receiver.peek_messages(max_message_count=500)]


def _ids(prefix: str, count: int) -> list[str]:
    run = uuid.uuid4().hex[:8]
    return [f"{prefix}-{run}-{i}" for i in range(count)]


def _dead_letter(client: ServiceBusClient, queue: str, ids: list[str], reason: str) -> None:
    """Put messages into ``queue``'s dead-letter queue, as the broker would after a failure."""
    with client.get_queue_sender(queue) as sender:
        sender.send_messages(
            [ServiceBusMessage(b"{}", message_id=i, application_properties={"n": 1}) for i in ids]
        )
    with client.get_queue_receiver(queue, max_wait_time=2) as receiver:
        pending = set(ids)
        while pending:
            for message in receiver.receive_messages(max_message_count=100, max_wait_time=2):
                receiver.dead_letter_message(message, reason=reason, error_description="test")
                pending.discard(str(message.message_id))


def _park(client: ServiceBusClient, source: str, ids: list[str], properties: Any = None) -> None:
    """Park messages of the task reading ``weu/source`` the way the runtime does."""
    copies = [
        parked_copy(
            DeadLetter(
                Envelope(body=b"{}", message_id=i, application_properties=properties or {}),
                "TargetNotFound",
                "the target was missing",
            ),
            f"weu/{source}",
        )
        for i in ids
    ]
    with client.get_queue_sender("redrive-parking") as sender:
        sender.send_messages([to_servicebus_message(copy) for copy in copies])


def _redrive(topology: Path, *args: str) -> int:
    return main(["redrive", "--topology", str(topology), *args])


def test_dead_lettered_messages_are_redriven_once_each_and_the_dlq_is_empty(
    topology: Path, weu: ServiceBusClient, neu: ServiceBusClient, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = _ids("dlq", 5)
    _dead_letter(weu, "redrive-in", ids, "MaxDeliveryCountExceeded")

    assert _redrive(topology, "--task", "task-a", "--from", "dead-letter") == ExitCode.OK

    out = capsys.readouterr().out
    assert "read 5, forwarded 5, skipped 0, parked again 0, left for other tasks 0" in out
    assert _peek(weu, "redrive-in", ServiceBusSubQueue.DEAD_LETTER) == []
    replicas = _drain(neu, TARGET)
    assert Counter(r.message_id for r in replicas) == Counter(ids)
    for replica in replicas:
        properties = replica.application_properties
        assert properties[REPL_ORIGIN] == "weu"
        assert properties["n"] == 1
        assert not set(DEAD_LETTER_PROPERTIES) & set(properties)


def test_redriving_twice_or_what_already_arrived_leaves_one_copy(
    topology: Path, weu: ServiceBusClient, neu: ServiceBusClient
) -> None:
    ids = _ids("twice", 3)
    # The first message did reach the target before the incident stopped its completion.
    with neu.get_queue_sender(TARGET) as sender:
        sender.send_messages(ServiceBusMessage(b"{}", message_id=ids[0]))
    _dead_letter(weu, "redrive-in", ids, "MaxDeliveryCountExceeded")
    assert _redrive(topology, "--task", "task-a", "--from", "dead-letter") == ExitCode.OK
    # The same messages dead-lettered again (a run stopped after sending, before completing).
    _dead_letter(weu, "redrive-in", ids, "MaxDeliveryCountExceeded")
    assert _redrive(topology, "--task", "task-a", "--from", "dead-letter") == ExitCode.OK
    assert _redrive(topology, "--task", "task-a", "--from", "dead-letter") == ExitCode.OK

    assert Counter(r.message_id for r in _drain(neu, TARGET)) == Counter(ids)
    assert _peek(weu, "redrive-in", ServiceBusSubQueue.DEAD_LETTER) == []


def test_shared_parking_queue_redrive_takes_only_its_own_task_messages(
    topology: Path, weu: ServiceBusClient, neu: ServiceBusClient, capsys: pytest.CaptureFixture[str]
) -> None:
    mine, theirs = _ids("mine", 3), _ids("theirs", 2)
    # Interleaved, so that the redrive has to pass over one of the other task's messages.
    _park(weu, "redrive-in", mine[:1])
    _park(weu, "redrive-other", theirs[:1])
    _park(weu, "redrive-in", mine[1:])
    _park(weu, "redrive-other", theirs[1:])

    assert _redrive(topology, "--task", "task-a", "--from", "parked") == ExitCode.OK

    out = capsys.readouterr().out
    assert "read 3, forwarded 3, skipped 0, parked again 0, left for other tasks 2" in out
    assert "passed over (abandoned, delivery count +1): 1" in out
    assert Counter(r.message_id for r in _drain(neu, TARGET)) == Counter(mine)
    left = _peek(weu, "redrive-parking")
    assert sorted(str(e.message_id) for e in left) == sorted(theirs)
    assert {e.application_properties[DEAD_LETTER_SOURCE] for e in left} == {"weu/redrive-other"}
    # Only the message before task-a's last one was locked (and abandoned) on the way.
    assert sorted((str(e.message_id), e.delivery_count or 0) for e in left) == [
        (theirs[0], 1),
        (theirs[1], 0),
    ]

    assert _redrive(topology, "--task", "task-b") == ExitCode.OK  # default: dead-letter, empty
    assert _redrive(topology, "--task", "task-b", "--from", "parked") == ExitCode.OK
    assert Counter(r.message_id for r in _drain(neu, TARGET)) == Counter(theirs)
    assert _peek(weu, "redrive-parking") == []


def test_a_message_parked_again_counts_so_and_its_old_copy_is_completed(
    topology: Path, weu: ServiceBusClient, neu: ServiceBusClient, capsys: pytest.CaptureFixture[str]
) -> None:
    valid, invalid = _ids("valid", 2), _ids("invalid", 1)
    _park(weu, "redrive-valid", valid, {"ok": 1})
    _park(weu, "redrive-valid", invalid, {"ok": 0})

    assert _redrive(topology, "--task", "task-valid", "--from", "parked") == ExitCode.OK

    out = capsys.readouterr().out
    assert "read 3, forwarded 2, skipped 0, parked again 1" in out
    assert Counter(r.message_id for r in _drain(neu, TARGET)) == Counter(valid)
    (again,) = _peek(weu, "redrive-parking")
    assert again.message_id == invalid[0]
    assert again.application_properties[DEAD_LETTER_REASON] == "ValidationFailed"
    assert again.delivery_count == 0  # a fresh copy, not the old one abandoned


def test_dry_run_changes_nothing_and_prints_the_counts(
    topology: Path, weu: ServiceBusClient, neu: ServiceBusClient, capsys: pytest.CaptureFixture[str]
) -> None:
    _dead_letter(weu, "redrive-in", _ids("dry", 3), "MaxDeliveryCountExceeded")
    _dead_letter(weu, "redrive-in", _ids("dry", 1), "TargetNotFound")
    _park(weu, "redrive-in", _ids("dry-parked", 2))
    _park(weu, "redrive-other", _ids("dry-other", 1))
    before = {
        "dlq": _peek(weu, "redrive-in", ServiceBusSubQueue.DEAD_LETTER),
        "parking": _peek(weu, "redrive-parking"),
    }

    assert _redrive(topology, "--task", "task-a", "--dry-run") == ExitCode.OK
    out = capsys.readouterr().out
    assert "task task-a, dead-letter messages in weu/redrive-in/$DeadLetterQueue:" in out
    assert "would redrive 4 message(s), enqueued 20" in out
    assert "    MaxDeliveryCountExceeded: 3\n    TargetNotFound: 1\n" in out

    assert _redrive(topology, "--task", "task-a", "--from", "parked", "--dry-run") == 0
    out = capsys.readouterr().out
    assert "would redrive 2 message(s)" in out
    assert "    TargetNotFound: 2\n" in out
    assert "left for other tasks: 1, of which 0 lie before" in out

    assert _redrive(topology, "--task", "task-a", "--dry-run", "--max", "1") == 0
    out = capsys.readouterr().out
    assert "would redrive 1 message(s)" in out
    assert "left for a later run (--max): 3" in out

    after = {
        "dlq": _peek(weu, "redrive-in", ServiceBusSubQueue.DEAD_LETTER),
        "parking": _peek(weu, "redrive-parking"),
    }
    assert after == before  # same messages, same delivery counts
    assert _peek(neu, TARGET) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--task", "task-aa"], "unknown task 'task-aa' (did you mean 'task-a'?)"),
        (["--task", "stream", "--from", "dead-letter"], "has no dead-letter queue"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(
    topology: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _redrive(topology, *args) == ExitCode.CONFIGURATION
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("error: ")
    assert message in err


def test_bad_option_values_exit_2(topology: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for args in (["--task", "task-a", "--max", "0"], ["--task", "task-a", "--from", "dlq"]):
        with pytest.raises(SystemExit) as exit_:
            _redrive(topology, *args)
        assert exit_.value.code == ExitCode.CONFIGURATION
        assert capsys.readouterr().err.splitlines()[-1].startswith("replication redrive: error: ")


def test_unreachable_broker_exits_3(
    topology: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(
        "SB_WEU",
        "Endpoint=sb://127.0.0.1:9;SharedAccessKeyName=k;SharedAccessKey=s;"
        "UseDevelopmentEmulator=true;",
    )
    assert _redrive(topology, "--task", "task-a") == ExitCode.UNAVAILABLE
    err = capsys.readouterr().err
    assert err.startswith("error: cannot read weu/redrive-in/$DeadLetterQueue: ")


def test_a_transient_failure_stops_with_exit_3_and_loses_nothing(
    topology: Path,
    weu: ServiceBusClient,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ids = _ids("outage", 3)
    _dead_letter(weu, "redrive-in", ids, "MaxDeliveryCountExceeded")
    monkeypatch.setenv(  # the target region is down
        "SB_NEU",
        "Endpoint=sb://127.0.0.1:9;SharedAccessKeyName=k;SharedAccessKey=s;"
        "UseDevelopmentEmulator=true;",
    )
    assert _redrive(topology, "--task", "task-a") == ExitCode.UNAVAILABLE

    captured = capsys.readouterr()
    assert "read 3, forwarded 0" in captured.out
    assert "not reached (run again): 3" in captured.out
    assert captured.err.startswith("error: redrive of task task-a stopped: ")
    left = _peek(weu, "redrive-in", ServiceBusSubQueue.DEAD_LETTER)
    assert sorted(str(e.message_id) for e in left) == sorted(ids)
