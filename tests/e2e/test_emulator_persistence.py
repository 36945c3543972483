"""``python -m emulator --data-dir``: what a restart keeps, through the SDKs only.

The emulator runs as a child process, as a user runs it, and is stopped the hard way
(SIGKILL, a crash) or the clean way (SIGTERM) between the two halves of each test.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.eventhub import EventData, EventHubProducerClient
from azure.servicebus import ServiceBusClient, ServiceBusMessage

from tests.e2e.test_emulator_cli import run_to_exit
from tests.e2e.test_sdk_roundtrip import read_events

pytestmark = pytest.mark.emulator

ROOT = Path(__file__).resolve().parents[2]
CONFIG = {
    "UserConfig": {
        "Namespaces": [{"Name": "sb", "Queues": [{"Name": "q", "Properties": {}}]}],
        "NamespaceConfig": [
            {
                "Type": "EventHub",
                "Name": "eh",
                "Entities": [{"Name": "devices", "PartitionCount": 2}],
            }
        ],
    }
}


def _command(config: Path, data: Path) -> list[str]:
    return [sys.executable, "-m", "emulator", "--config", str(config), "--data-dir", str(data)]


class Emulator:
    """Starts and stops ``python -m emulator`` on one config and data directory."""

    def __init__(self, tmp_path: Path) -> None:
        self.config = tmp_path / "Config.json"
        self.config.write_text(json.dumps(CONFIG))
        self.data = tmp_path / "data"
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> dict[str, str]:
        self.process = subprocess.Popen(
            _command(self.config, self.data),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        lines = [self.process.stdout.readline().rstrip("\n").split("\t") for _ in range(2)]
        return dict(lines)

    def stop(self, how: signal.Signals) -> None:
        assert self.process is not None
        self.process.send_signal(how)
        self.process.communicate(timeout=20)
        self.process = None


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    running = Emulator(tmp_path)
    yield running
    if running.process is not None:
        running.stop(signal.SIGKILL)


def _receive_all(connection: str, *, complete: bool = True) -> list[Any]:
    with (
        ServiceBusClient.from_connection_string(connection) as client,
        client.get_queue_receiver("q", max_wait_time=2) as receiver,
    ):
        received = receiver.receive_messages(max_message_count=50, max_wait_time=2)
        if complete:
            for message in received:
                receiver.complete_message(message)
    return received


def test_acknowledged_sends_survive_a_crash(emulator: Emulator) -> None:
    """Killed right after the sends returned: only a save before the acknowledgement keeps
    them (the periodic save runs a second later)."""
    connections = emulator.start()
    with EventHubProducerClient.from_connection_string(
        connections["eh"], eventhub_name="devices"
    ) as producer:
        batch = producer.create_batch(partition_id="1")
        for i in range(3):
            batch.add(EventData(f"e{i}"))
        producer.send_batch(batch)
    with (
        ServiceBusClient.from_connection_string(connections["sb"]) as client,
        client.get_queue_sender("q") as sender,
    ):
        sender.send_messages([ServiceBusMessage(f"m{i}", message_id=f"id-{i}") for i in range(5)])
        emulator.stop(signal.SIGKILL)

    connections = emulator.start()
    received = _receive_all(connections["sb"])
    assert [(str(m), m.message_id) for m in received] == [(f"m{i}", f"id-{i}") for i in range(5)]
    events = read_events(connections["eh"], lambda e: True, partition_id="1")
    assert [(e.body_as_str(), e.sequence_number) for e in events] == [
        ("e0", 0),
        ("e1", 1),
        ("e2", 2),
    ]
    offsets = [int(e.offset or "") for e in events]
    assert offsets == sorted(set(offsets))


def test_clean_stop_keeps_settlements_and_loses_only_locks(emulator: Emulator) -> None:
    connections = emulator.start()
    with ServiceBusClient.from_connection_string(connections["sb"]) as client:
        with client.get_queue_sender("q") as sender:
            sender.send_messages(
                [ServiceBusMessage(name) for name in ("done", "locked", "later", "new")]
            )
        with client.get_queue_receiver("q", max_wait_time=2) as receiver:
            done, locked, later = receiver.receive_messages(max_message_count=3, max_wait_time=2)
            receiver.complete_message(done)
            receiver.defer_message(later)
            emulator.stop(signal.SIGTERM)
    assert str(locked) == "locked"

    connections = emulator.start()
    received = _receive_all(connections["sb"])
    assert [(str(m), m.delivery_count) for m in received] == [("locked", 1), ("new", 0)]
    with (
        ServiceBusClient.from_connection_string(connections["sb"]) as client,
        client.get_queue_receiver("q", max_wait_time=2) as receiver,
    ):
        assert later.sequence_number is not None
        (deferred,) = receiver.receive_deferred_messages([later.sequence_number])
        receiver.complete_message(deferred)
    assert str(deferred) == "later"


def test_an_unreadable_snapshot_is_a_clear_error(emulator: Emulator) -> None:
    emulator.data.mkdir()
    (emulator.data / "sb.json").write_text("{not json")
    result = run_to_exit("--config", str(emulator.config), "--data-dir", str(emulator.data))
    assert result.returncode == 2
    assert f"{emulator.data / 'sb.json'}: unreadable snapshot" in result.stderr


@pytest.mark.parametrize(
    ("name", "state"),
    [
        ("sb.json", {"entities": ["q"]}),
        ("sb.json", {"entities": {"q": {"messages": [{"sequence": 1}]}}}),
        (
            "sb.json",
            {
                "entities": {
                    "q": {
                        "messages": [
                            {
                                "message": "abc",
                                "sequence": 1,
                                "enqueued": 0,
                                "expires": None,
                                "available": 0,
                                "deliveries": 0,
                                "deferred": False,
                            }
                        ]
                    }
                }
            },
        ),
    ],
    ids=["wrong type", "missing keys", "bad base64"],
)
def test_a_snapshot_with_bad_content_is_one_line_naming_it(
    emulator: Emulator, name: str, state: dict[str, object]
) -> None:
    """A snapshot that parses but does not hold what a snapshot holds (edited by hand, or
    written by something else): the one-line error names the file, no traceback."""
    emulator.data.mkdir()
    (emulator.data / name).write_text(json.dumps({"format": 1, "state": state}))
    result = run_to_exit("--config", str(emulator.config), "--data-dir", str(emulator.data))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"error: {emulator.data / name}: snapshot content is not valid")


def test_a_data_dir_that_is_a_file_is_named_as_such(emulator: Emulator) -> None:
    emulator.data.write_text("a file")
    result = run_to_exit("--config", str(emulator.config), "--data-dir", str(emulator.data))
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        f"error: --data-dir {emulator.data}: exists and is not a directory"
    )
