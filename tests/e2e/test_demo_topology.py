"""``python -m replication demo --topology FILE`` end to end, as a subprocess: one topology's
demo (emulator, local host, its capture tasks and the Spark audit, all real). The audit's report is
checked against what the two-region all-active example must produce. (The showcase, the demo
without arguments, is in test_demo.py.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.emulator, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]


def test_demo_replicates_every_message_once_and_the_audit_agrees(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "replication",
            "demo",
            "--topology",
            "examples/two-region-all-active.json",
            "--messages",
            "7",
            "--output",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "verdict: every message replicated once, no loops" in result.stdout
    report = json.loads((tmp_path / "audit" / "report.json").read_text())
    assert (report["total_records"], report["unique_messages"]) == (28, 14)
    assert report["regions"] == {
        region: {
            "records": 14,
            "unique_messages": 14,
            "expected_replicas": 7,
            "capture_repeats": 0,
            "in_region_duplicates": 0,
            "unexpected_duplicates": 0,
            "missing": 0,
        }
        for region in ("weu", "neu")
    }
    assert (report["missing_total"], report["loops"], report["late_records"]) == (0, 0, 0)
    assert set(report["lag_seconds"]) == {"weu->neu", "neu->weu"}
    assert all(lag["count"] == 7 for lag in report["lag_seconds"].values())
    # The audit read what neu's capture task wrote (the demo captures every topic), hourly
    # JSON-lines files as a deployment writes them to Blob Storage.
    files = sorted((tmp_path / "capture" / "captures" / "neu").glob("????/??/??/??/*.jsonl"))
    captured = [line for path in files for line in path.read_text().splitlines()]
    assert len(captured) == 14
    replicas = [json.loads(line) for line in captured if "repl-origin" in line]
    assert sorted(r["message_id"] for r in replicas) == [f"weu-orders-{i:05d}" for i in range(7)]
    assert {r["properties"]["repl-path"] for r in replicas} == {"weu;neu"}
