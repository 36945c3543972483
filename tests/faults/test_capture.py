"""The Service Bus capture task killed mid-batch (SIGKILL, several times) and restarted: what
the region's topic held equals what the capture holds, message by message. Nothing is lost;
a message is captured twice only when the replicator died between writing its batch and
completing it and the redelivered batch was grouped differently, and then both copies carry the
same sequence number and enqueue time (replication/capture, "Retries").

The replicator is the local host as a user starts it (``python -m replication run``) on a
topology whose namespace has a ``capture`` section: its capture task reads the topic's
``replication-capture`` subscription with the real SDK against the emulator and writes with
the library's capture writer into the folder ``REPLICATION_CAPTURE_STORAGE`` names (Azure Blob
Storage's store is one Put Blob per file, committed whole or not at all, and is tested against
Azurite in tests/e2e/test_capture_blobs.py; the folder store writes a temporary file and
renames it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from replication.layout import child_environment
from replication.topology import CAPTURE_SUBSCRIPTION

from .harness import ROOT, Cluster, eventually, merged, originals, topology_document

MESSAGES = 400
CONTAINER = "captures"


def captured(folder: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in sorted(folder.rglob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]


def replicator(
    cluster: Cluster, folder: Path, log: Path, *until_idle: str
) -> subprocess.Popen[bytes]:
    """The local host, logging at DEBUG: the capture's "copies in" line is written after a
    batch's files are durable and before the batch is completed."""
    settings = {"REPLICATION_CAPTURE_STORAGE": str(folder)}
    with log.open("ab") as handle:
        return subprocess.Popen(
            [sys.executable, "-m", "replication", "run", "--topology",
             str(cluster.topology_path), "-v", *until_idle],
            cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT,
            env=merged(os.environ, child_environment(), cluster.environ, settings),
        )  # fmt: skip


def test_a_capture_consumer_killed_mid_batch_loses_nothing_and_duplicates_only_as_documented(
    tmp_path: Path, figures: dict[str, Any]
) -> None:
    document = topology_document(["weu"], [])
    namespace = document["namespaces"][0]
    namespace["capture"] = {"storageAccount": "stcaptures", "container": CONTAINER}
    # Declared to choose short locks: a killed replicator's batch comes back after 5 s.
    namespace["topics"][0]["subscriptions"].append(
        {"name": CAPTURE_SUBSCRIPTION, "lockDuration": "PT5S", "maxDeliveryCount": 40}
    )
    root, log = tmp_path / "capture", tmp_path / "replicator.log"
    folder = root / CONTAINER
    with Cluster(document, tmp_path) as cluster:
        cluster.publish("weu", "orders", originals("m", MESSAGES, size=256))
        # What the capture subscription holds (peeked: nothing locked or settled), each copy
        # with the sequence number and enqueue time the capture will receive.
        held = {m.message_id: m for m in cluster.peek("weu", "orders", CAPTURE_SUBSCRIPTION)}
        assert len(held) == MESSAGES
        for kills in range(3):
            running = replicator(cluster, root, log)
            target = len(captured(folder)) + 60

            def between_write_and_complete(target: int = target) -> bool:
                # Aim at the widest gap: a batch written whose completions are under way.
                lines = log.read_text().splitlines()
                return len(captured(folder)) >= target and bool(lines) and "copies in" in lines[-1]

            eventually(
                between_write_and_complete,
                timeout=90,
                interval=0.01,
                what=f"a batch written before kill {kills + 1}",
            )
            running.send_signal(signal.SIGKILL)
            running.wait(timeout=10)
        last = replicator(cluster, root, log, "--until-idle", "8", "--timeout", "180")
        assert last.wait(timeout=240) == 0, log.read_text()[-3000:]
        left = cluster.peek("weu", "orders", CAPTURE_SUBSCRIPTION)
        dead = cluster.peek("weu", "orders", CAPTURE_SUBSCRIPTION, dead_letter=True)
    assert (left, dead) == ([], [])
    records = captured(folder)
    copies = Counter(record["message_id"] for record in records)
    assert set(copies) == set(held)  # nothing lost
    for record in records:  # each copy is the message the region held
        message = held[record["message_id"]]
        assert record["sequence_number"] == message.sequence_number
        assert record["enqueued_time_utc"].startswith(
            message.enqueued_time_utc.strftime("%Y-%m-%dT%H:%M:%S")
        )
    figures[
        f"capture task (local host) SIGKILLed 3 times ({MESSAGES} messages): captured twice"
    ] = sum(copies.values()) - MESSAGES
