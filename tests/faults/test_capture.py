"""The Service Bus capture consumer killed mid-batch (SIGKILL, several times) and restarted: what
the region's topic held equals what the capture holds, message by message. Nothing is lost;
a message is captured twice only when the consumer died between writing its batch and
completing it and the redelivered batch was grouped differently, and then both copies carry the
same sequence number and enqueue time (replication/capture, "Retries").

The consumer is the real SDK receiver against the emulator, writing with the library's
capture writer to a folder (Azure Blob Storage's store is one Put Blob per file, committed
whole or not at all; the folder store writes a temporary file and renames it).
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

from .harness import ROOT, Cluster, eventually, originals, topology_document

MESSAGES = 400
CONSUMER = Path(__file__).with_name("capture_consumer.py")


def captured(folder: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in sorted(folder.rglob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]


def consumer(cluster: Cluster, folder: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as handle:
        return subprocess.Popen(
            [sys.executable, str(CONSUMER), cluster.nodes["weu"].connection_string, "orders",
             "capture", "weu", str(folder)],
            cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT,
            env={**os.environ, **child_environment()},
        )  # fmt: skip


def test_a_capture_consumer_killed_mid_batch_loses_nothing_and_duplicates_only_as_documented(
    tmp_path: Path, figures: dict[str, Any]
) -> None:
    document = topology_document(["weu"], [])
    topic = document["namespaces"][0]["topics"][0]
    topic["subscriptions"].append(
        {"name": "capture", "lockDuration": "PT5S", "maxDeliveryCount": 40}
    )
    folder, log = tmp_path / "capture", tmp_path / "consumer.log"
    with Cluster(document, tmp_path) as cluster:
        cluster.publish("weu", "orders", originals("m", MESSAGES, size=256))
        # What the capture subscription holds (peeked: nothing locked or settled), each copy
        # with the sequence number and enqueue time the consumer will receive.
        held = {m.message_id: m for m in cluster.peek("weu", "orders", "capture")}
        assert len(held) == MESSAGES
        for kills in range(3):
            running = consumer(cluster, folder, log)
            target = len(captured(folder)) + 60

            def between_write_and_complete(target: int = target) -> bool:
                # Aim at the widest gap: a batch written whose completions are under way.
                lines = log.read_text().splitlines()
                return len(captured(folder)) >= target and bool(lines) and "wrote" in lines[-1]

            eventually(
                between_write_and_complete,
                timeout=90,
                interval=0.01,
                what=f"a batch written before kill {kills + 1}",
            )
            running.send_signal(signal.SIGKILL)
            running.wait(timeout=10)
        last = consumer(cluster, folder, log)
        assert last.wait(timeout=180) == 0, log.read_text()[-3000:]
        left = cluster.peek("weu", "orders", "capture")
        dead = cluster.peek("weu", "orders", "capture", dead_letter=True)
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
    figures[f"capture consumer SIGKILLed 3 times ({MESSAGES} messages): captured twice"] = (
        sum(copies.values()) - MESSAGES
    )
