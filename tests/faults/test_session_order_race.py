"""Session order under the SDK's keep-alive race (issue 37), message by message.

azure-servicebus 7.15.0's sync receiver at ``prefetch_count=0`` starts a keep-alive thread that
reads the connection every 5 s beside the thread that receives; a transfer it reads while
``receive_messages`` runs is handed over after transfers read later, so a session's messages
can reach the replicator, and so the target, out of their order. Load makes that rare (about one
demo in five on a busy 2-core machine); the test build in :mod:`tests.faults.keepalive_race`
makes it happen whenever the keep-alive thread handles a transfer, without patching the SDK.

The replicator runs as that build (``python -m tests.faults.keepalive_race run``) against one
emulator process serving both namespaces. A backlog is published first, then more messages of
every session keep coming for :data:`TRICKLE_SECONDS`, so that each session loop holds its
session through several keep-alive intervals, however fast the machine, with transfers
arriving while the keep-alive thread listens. The target's session-enabled ``posting``
subscription is then peeked session by session (peeking is one management request per page,
so the check itself cannot reorder), and each session's first copies must be its messages in
their order, all of them.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusSender

from replication.hosts.local import emulator_process
from replication.transport.servicebus import entity_receiver, peek_pages

from .harness import ROOT, eventually, merged, topology_document
from .keepalive_race import DELAYED_LINE, STARTED_LINE

SESSIONS = 8
"""As many sessions as the local host's session loops: each loop holds one throughout."""
BACKLOG = 200
"""Messages per session published before the replicator starts."""
TRICKLE_SECONDS = 35.0
"""How long one message per session keeps coming every :data:`TRICKLE_INTERVAL` seconds: each
session is held longer than the SDK's keep-alive intervals, 5 s without prefetch and 30 s, the
default, with a prefetch (a receiver not given ``keep_alive=0`` has a thread then too)."""
TRICKLE_INTERVAL = 0.05
BUILD = "tests.faults.keepalive_race"
"""The local host's test build that widens the race (run as a module)."""
FORWARDED = re.compile(rb"forwarded=(\d+)")


def _messages(numbers: range) -> list[ServiceBusMessage]:
    """Message ``n`` of every session, for each ``n`` of ``numbers``, in that order."""
    return [
        ServiceBusMessage(
            b"x" * 512,
            message_id=f"s{s}-{n}",
            session_id=f"s{s}",
            application_properties={"n": n},
        )
        for n in numbers
        for s in range(SESSIONS)
    ]


def _trickle(sender: ServiceBusSender, start: int) -> int:
    """One message per session every :data:`TRICKLE_INTERVAL` for :data:`TRICKLE_SECONDS`,
    numbered on from ``start``; returns the number per session after the last one."""
    n = start
    deadline = time.monotonic() + TRICKLE_SECONDS
    while time.monotonic() < deadline:
        sender.send_messages(_messages(range(n, n + 1)))
        n += 1
        time.sleep(TRICKLE_INTERVAL)
    return n


@pytest.fixture
def namespaces(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """weu -> neu, session-enabled subscriptions, served by one emulator process."""
    document = topology_document(["weu", "neu"], [("weu", "neu")], sessions=True, lock="PT30S")
    topology = tmp_path / "topology.json"
    topology.write_text(json.dumps(document), encoding="utf-8")
    with emulator_process(topology) as settings:
        yield topology, settings


def _stored_in_order(connection: str) -> dict[str, list[Any]]:
    """Each session's messages at the target's ``posting`` subscription, in stored order."""
    stored: dict[str, list[Any]] = {}
    with ServiceBusClient.from_connection_string(connection) as client:
        for s in range(SESSIONS):
            session = f"s{s}"
            with entity_receiver(client, "orders", "posting", session_id=session) as receiver:
                stored[session] = [m for page in peek_pages(receiver) for m in page]
    return stored


def test_sessions_keep_their_order_when_the_sdk_keep_alive_thread_handles_transfers(
    namespaces: tuple[Path, dict[str, str]], tmp_path: Path, figures: dict[str, Any]
) -> None:
    topology, settings = namespaces
    log = tmp_path / "replicator.log"
    with (
        ServiceBusClient.from_connection_string(settings["SB_WEU"]) as client,
        client.get_topic_sender("orders") as sender,
    ):
        for start in range(0, BACKLOG, 10):
            sender.send_messages(_messages(range(start, start + 10)))
        with log.open("ab") as output:
            replicator = subprocess.Popen(
                [sys.executable, "-m", BUILD, "run", "--topology", str(topology)],
                cwd=ROOT,
                env=merged(os.environ, settings),
                stdout=output,
                stderr=output,
            )
        try:
            per_session = _trickle(sender, BACKLOG)
            eventually(
                lambda: (
                    sum(map(int, FORWARDED.findall(log.read_bytes()))) >= SESSIONS * per_session
                ),
                timeout=240,
                interval=0.5,
                what="every message forwarded",
            )
        finally:
            replicator.terminate()
            replicator.wait(timeout=30)
    stored = _stored_in_order(settings["SB_NEU"])
    text = log.read_text(errors="replace")
    figures["session order race: receivers' keep-alive threads started"] = text.count(STARTED_LINE)
    figures["session order race: keep-alive transfers delayed"] = text.count(DELAYED_LINE)
    broken: dict[str, list[tuple[int, int]]] = {}
    for session, copies in stored.items():
        assert all(str(m.session_id) == session for m in copies)
        first = list(dict.fromkeys(int(m.application_properties[b"n"]) for m in copies))
        late = [(a, b) for a, b in itertools.pairwise(first) if b < a]
        if late:
            broken[session] = late
        assert sorted(first) == list(range(per_session)), f"session {session}: messages missing"
    figures["session order race: sessions stored out of order"] = len(broken)
    assert not broken, f"stored out of order, (before, after) per session: {broken}"
