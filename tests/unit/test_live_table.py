"""The live table of ``python -m replication run`` (built from a local host that never started,
so nothing connects): one row per task, rates, failing state, heartbeat age per path."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

from replication.cli._live import LiveTable
from replication.heartbeats import Heartbeat
from replication.hosts.local import LocalHost
from replication.runtime import TaskStatus
from replication.topology import parse_topology

ROOT = Path(__file__).resolve().parents[2]
CONNECTION = (
    "Endpoint=sb://localhost:1;SharedAccessKeyName=k;SharedAccessKey=v;UseDevelopmentEmulator=true"
)


def _render(table: LiveTable) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(table.table())
    return console.export_text()


def test_rows_per_task_with_state_error_and_heartbeat_age() -> None:
    document = json.loads((ROOT / "examples" / "two-region-all-active.json").read_text())
    document["heartbeats"] = {"enabled": True, "interval": "PT1S"}
    topology = parse_topology(document)
    host = LocalHost(topology, {"SB_WEU": CONNECTION, "SB_NEU": CONNECTION})
    for task in topology.tasks:
        host.status[task.name] = TaskStatus()
    host.status["orders-weu-to-neu"].record_failure("ServiceBusConnectionError: refused")
    host.status["orders-neu-to-weu"].record(5, parked=1)
    host.heartbeats.record(Heartbeat("weu", datetime.now(UTC)), "neu")
    table = LiveTable(host)
    text = _render(table)
    rows = {
        line.split()[1]: line
        for line in text.splitlines()
        if "orders-" in line or "heartbeat-" in line
    }
    assert set(rows) == {
        "orders-weu-to-neu",
        "orders-neu-to-weu",
        "heartbeat-weu-to-neu",
        "heartbeat-neu-to-weu",
    }
    assert "FAILING" in rows["orders-weu-to-neu"]
    assert "ServiceBusConnectionError: refused" in rows["orders-weu-to-neu"]
    assert " ok " in rows["orders-neu-to-weu"]
    assert " 0.0 s" in rows["orders-weu-to-neu"] or " 0.1 s" in rows["orders-weu-to-neu"]
    assert " - " in rows["heartbeat-neu-to-weu"] or "│ - " in rows["heartbeat-neu-to-weu"]
    host.status["orders-neu-to-weu"].record(10)
    again = _render(table)
    assert "orders-neu-to-weu" in again
