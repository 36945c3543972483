"""``python -m emulator`` as a user runs it: a real process, real ports, real signals."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage

from replication.exit_codes import ExitCode

pytestmark = pytest.mark.emulator

ROOT = Path(__file__).resolve().parents[2]


def _start(*args: str, cwd: Path = ROOT) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "emulator", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},  # the checkout's emulator from any folder
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_to_exit(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m emulator ARGS`` expected to exit on its own (errors), with its output."""
    return subprocess.run(
        [sys.executable, "-m", "emulator", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_prints_connection_strings_serves_them_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    config = tmp_path / "Config.json"
    config.write_text(
        json.dumps({"UserConfig": {"Namespaces": [{"Name": "local", "Queues": [{"Name": "q"}]}]}})
    )
    process = _start("--config", str(config))
    try:
        assert process.stdout is not None
        name, connection = process.stdout.readline().rstrip("\n").split("\t")
        assert name == "local"
        assert connection.endswith("UseDevelopmentEmulator=true;")
        with ServiceBusClient.from_connection_string(connection) as client:
            with client.get_queue_sender("q") as sender:
                sender.send_messages(ServiceBusMessage(b"over the wire"))
            with client.get_queue_receiver("q", max_wait_time=3) as receiver:
                (message,) = receiver.receive_messages(max_message_count=1, max_wait_time=3)
                receiver.complete_message(message)
        assert str(message) == "over the wire"
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=20)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize("named", [True, False], ids=["--topology", "topology.json by default"])
def test_a_topology_prints_the_settings_it_reads(named: bool, tmp_path: Path) -> None:
    """``--topology FILE``, or without ``--config`` or ``--topology`` the ``topology.json`` of the
    working directory, as every command reads it by default (an app made by ``init``)."""
    (tmp_path / "topology.json").write_text((ROOT / "examples/three-region-mesh.json").read_text())
    process = _start(*(["--topology", "topology.json"] if named else []), cwd=tmp_path)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline().strip() for _ in range(3)]
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=20)
    assert [line.split("=", 1)[0] for line in lines] == [
        "export SB_WEU",
        "export SB_EUS",
        "export SB_SEA",
    ]


def test_local_settings_beside_a_config_file_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "Config.json"
    config.write_text(json.dumps({"UserConfig": {"Namespaces": [{"Name": "n"}]}}))
    result = run_to_exit("--config", str(config), "--local-settings", "local.settings.json")
    assert result.returncode == ExitCode.CONFIGURATION
    assert result.stderr == "error: arguments: --local-settings needs a topology, not --config\n"
    assert result.stdout == ""


def test_bad_config_names_file_and_entry_and_starts_nothing(tmp_path: Path) -> None:
    config = tmp_path / "Config.json"
    namespaces = [
        {"Name": "ok", "Port": 0},
        {"Name": "bad", "Queues": [{"Name": "q", "Properties": {"LockDuration": "5 minutes"}}]},
    ]
    config.write_text(json.dumps({"UserConfig": {"Namespaces": namespaces}}))
    result = run_to_exit("--config", str(config))
    assert result.returncode == 2
    assert result.stdout == ""
    assert str(config) in result.stderr
    assert "UserConfig.Namespaces[1].Queues[0].LockDuration" in result.stderr


def test_a_taken_port_fails_cleanly(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = tmp_path / "Config.json"
        namespaces = [{"Name": "first"}, {"Name": "second", "Port": port}]
        config.write_text(json.dumps({"UserConfig": {"Namespaces": namespaces}}))
        result = run_to_exit("--config", str(config))
    assert result.returncode == ExitCode.UNAVAILABLE
    assert f"cannot listen: namespace 'second' on 127.0.0.1:{port}" in result.stderr
    assert result.stdout == ""


_BAD_TYPES = {
    "a count that is text": (
        {"Namespaces": [{"Name": "n", "Queues": [
            {"Name": "q", "Properties": {"MaxDeliveryCount": "ten"}}]}]},
        "UserConfig.Namespaces[0].Queues[0].Properties.MaxDeliveryCount: expected a whole number",
    ),
    "an object where a list belongs": (
        {"Namespaces": [{"Name": "n", "Queues": {}}]},
        "UserConfig.Namespaces[0].Queues: expected a list",
    ),
    "a list where an object belongs": (
        {"Namespaces": [{"Name": "n", "Queues": [{"Name": "q", "Properties": []}]}]},
        "UserConfig.Namespaces[0].Queues[0].Properties: expected an object",
    ),
    "a rule without properties": (
        {"Namespaces": [{"Name": "n", "Topics": [{"Name": "t", "Subscriptions": [
            {"Name": "s", "Rules": [{"Name": "r"}]}]}]}]},
        "UserConfig.Namespaces[0].Topics[0].Subscriptions[0].Rules[0].Properties: required",
    ),
    "a port that is text": (
        {"Namespaces": [{"Name": "n", "Port": "x"}]},
        "UserConfig.Namespaces[0].Port: expected a whole number",
    ),
    "a partition count that is text": (
        {"NamespaceConfig": [{"Name": "e", "Entities": [{"Name": "h", "PartitionCount": "two"}]}]},
        "UserConfig.NamespaceConfig[0].Entities[0].PartitionCount: expected a whole number",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", _BAD_TYPES)
def test_a_field_of_the_wrong_type_is_one_line_naming_its_path(tmp_path: Path, case: str) -> None:
    user_config, expected = _BAD_TYPES[case]
    config = tmp_path / "Config.json"
    config.write_text(json.dumps({"UserConfig": user_config}))
    result = run_to_exit("--config", str(config))
    assert result.returncode == ExitCode.CONFIGURATION
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {config}: {expected}")
