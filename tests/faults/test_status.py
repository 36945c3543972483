"""``python -m replication status`` against emulator nodes: the counts it prints are what was
published, dead-lettered and parked; heartbeats waiting at a target show their age; a namespace
that is down makes it exit UNAVAILABLE after reporting the rest."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from azure.servicebus import ServiceBusMessage

from replication.cli import main
from replication.envelope import Envelope
from replication.exit_codes import ExitCode
from replication.heartbeats import heartbeat_now
from replication.planning import DeadLetter
from replication.runtime import parked_copy
from replication.transport.servicebus import to_servicebus_message

from .harness import Cluster, originals, topology_document


def _line(output: str, task: str) -> str:
    return next(line for line in output.splitlines() if line.strip().startswith(f"{task} ("))


def test_status_counts_backlog_dead_letters_parked_and_heartbeats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    document = topology_document(["weu", "neu"], [("weu", "neu"), ("neu", "weu")])
    document["heartbeats"] = {"enabled": True, "interval": "PT1S"}
    with Cluster(document, tmp_path) as cluster:
        for name, value in cluster.environ.items():
            monkeypatch.setenv(name, value)
        cluster.publish("weu", "orders", originals("m", 7))
        with (
            cluster.client("weu") as client,
            client.get_subscription_receiver("orders", "to-neu") as receiver,
        ):
            received = receiver.receive_messages(max_message_count=2, max_wait_time=5)
            assert len(received) == 2
            for message in received:
                receiver.dead_letter_message(message, reason="test")
        source = "weu/orders/Subscriptions/to-neu"
        parked = [
            parked_copy(DeadLetter(Envelope(body=b"p", message_id=f"p-{n}"), "r", "d"), source)
            for n in range(3)
        ]
        other = parked_copy(DeadLetter(Envelope(body=b"o"), "r", "d"), "neu/orders")
        with cluster.client("weu") as client, client.get_queue_sender("replication-parked") as s:
            s.send_messages([to_servicebus_message(e) for e in [*parked, other]])
        with cluster.client("neu") as client, client.get_topic_sender("replication-heartbeat") as s:
            s.send_messages([to_servicebus_message(heartbeat_now("weu").envelope())])
            s.send_messages(ServiceBusMessage(b"not a heartbeat"))

        assert main(["status", "--topology", str(cluster.topology_path)]) == ExitCode.OK
        output = capsys.readouterr().out
        assert _line(output, "weu-to-neu").endswith("backlog 5, dead-lettered 2, parked 3"), output
        assert _line(output, "neu-to-weu").endswith("backlog 0, dead-lettered 0, parked 0")
        assert "heartbeat-weu-to-neu (weu/replication-heartbeat/" in output
        age = re.search(r"weu -> neu: age ([0-9.]+) s", output)
        assert age is not None, output
        assert float(age.group(1)) < 30
        assert "neu -> weu: none waiting" in output

        assert main(["status", "--topology", str(cluster.topology_path), "--cap", "3"]) == 0
        capped = capsys.readouterr().out
        assert "backlog 3+, dead-lettered 2, parked 3" in _line(capped, "weu-to-neu")

        cluster.nodes["neu"].kill()
        code = main(["status", "--topology", str(cluster.topology_path)])
        output = capsys.readouterr().out
        assert code == ExitCode.UNAVAILABLE
        assert "UNREACHABLE" in _line(output, "neu-to-weu")
        assert _line(output, "weu-to-neu").endswith("backlog 5, dead-lettered 2, parked 3")
