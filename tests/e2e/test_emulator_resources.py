"""The emulator process under resource pressure: out of file descriptors, a reader that stalls.

One thread serves every namespace, so whatever one connection does must not stop it.
"""

from __future__ import annotations

import contextlib
import json
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage

pytestmark = pytest.mark.emulator

ROOT = Path(__file__).resolve().parents[2]
FD_LIMIT = 64


@contextlib.contextmanager
def _emulator(config: Path, *, fd_limit: int | None = None) -> Iterator[str]:
    """``python -m emulator`` in its own process; yields the namespace's connection string."""

    def limit() -> None:
        if fd_limit is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, fd_limit))

    process = subprocess.Popen(
        [sys.executable, "-m", "emulator", "--config", str(config)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=limit,  # only setrlimit, before exec
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        yield line.split("\t", 1)[1].strip()
    finally:
        process.terminate()
        process.wait(timeout=20)


def _port(connection: str) -> int:
    return int(connection.split("sb://localhost:", 1)[1].split(";", 1)[0])


def _round_trip(connection: str, body: str) -> list[str]:
    with ServiceBusClient.from_connection_string(connection) as client:
        with client.get_queue_sender("q") as sender:
            sender.send_messages(ServiceBusMessage(body))
        with client.get_queue_receiver("q", max_wait_time=5) as receiver:
            received = receiver.receive_messages(max_message_count=1, max_wait_time=5)
            for message in received:
                receiver.complete_message(message)
    return [str(m) for m in received]


def test_running_out_of_file_descriptors_stops_no_one_for_good(tmp_path: Path) -> None:
    """More connections than the process may hold files: the ones over the limit wait (or are
    refused), the server thread survives, and once they are gone a new client is served. The
    accept that failed with EMFILE used to kill the only server thread."""
    config = tmp_path / "Config.json"
    config.write_text(
        json.dumps({"UserConfig": {"Namespaces": [{"Name": "fd", "Queues": [{"Name": "q"}]}]}})
    )
    with _emulator(config, fd_limit=FD_LIMIT) as connection:
        assert _round_trip(connection, "before") == ["before"]
        crowd = []
        for _ in range(FD_LIMIT * 2):
            with contextlib.suppress(OSError):
                crowd.append(socket.create_connection(("127.0.0.1", _port(connection)), 2))
        time.sleep(1.5)
        for sock in crowd:
            sock.close()
        deadline = time.monotonic() + 30
        while True:
            try:
                assert _round_trip(connection, "after") == ["after"]
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)


_STALLED_READER = """
import sys, time
from azure.servicebus import ServiceBusClient
with ServiceBusClient.from_connection_string(sys.argv[1]) as client:
    with client.get_queue_receiver("big", prefetch_count=1000) as receiver:
        receiver.receive_messages(max_message_count=1, max_wait_time=10)
        print("attached", flush=True)
        time.sleep(600)
"""


def test_a_client_that_stops_reading_freezes_nobody_else(tmp_path: Path) -> None:
    """A receiver with a large prefetch on a queue of 20 MB is frozen (SIGSTOP): it stops
    reading its socket while the emulator still has deliveries for it. Another client on
    another namespace, and on another queue of the same namespace, is served meanwhile. With
    blocking writes on the one loop thread, the first full socket buffer froze every
    namespace."""
    config = tmp_path / "Config.json"
    namespaces = [
        {"Name": "slow", "Queues": [{"Name": "big"}, {"Name": "q"}]},
        {"Name": "other", "Queues": [{"Name": "q"}]},
    ]
    config.write_text(json.dumps({"UserConfig": {"Namespaces": namespaces}}))
    process = subprocess.Popen(
        [sys.executable, "-m", "emulator", "--config", str(config)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    reader: subprocess.Popen[str] | None = None
    try:
        assert process.stdout is not None
        connections = dict(process.stdout.readline().strip().split("\t") for _ in range(2))
        with (
            ServiceBusClient.from_connection_string(connections["slow"]) as client,
            client.get_queue_sender("big") as sender,
        ):
            for _ in range(100):
                sender.send_messages(ServiceBusMessage(b"x" * 200_000))
        reader = subprocess.Popen(
            [sys.executable, "-c", _STALLED_READER, connections["slow"]],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert reader.stdout is not None
        assert reader.stdout.readline().strip() == "attached"
        reader.send_signal(signal.SIGSTOP)
        time.sleep(2)
        assert _round_trip(connections["other"], "elsewhere") == ["elsewhere"]
        assert _round_trip(connections["slow"], "next door") == ["next door"]
    finally:
        if reader is not None:
            reader.kill()
            reader.wait(timeout=10)
        process.terminate()
        process.wait(timeout=20)
