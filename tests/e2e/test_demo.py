"""The README's first command, end to end: ``python -m replication demo`` as a subprocess.

Emulator, local host, capture and the Spark audit all run for real (the failover drill's
binding store on Azurite). The showcase (no arguments) runs every scenario once for this module;
each scenario's figures, which the demo counted from what the emulator held, are checked against
what its example and its publishing must produce. (``--topology``, one topology's demo, is in
test_demo_topology.py: a file of its own, so that the Spark tier's processes run the two demos
side by side.)
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from replication.exit_codes import ExitCode
from replication.showcase import Scenario, Stage, message, run_showcase

pytestmark = [pytest.mark.emulator, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]


# scenario: (sent, replicated, skipped by loop prevention, parked by reason)
SHOWCASE = {
    # 50 readings in each of 3 regions; each reaches the 2 others; every replica is kept from
    # going further by loop prevention.
    "mesh": (150, 300, 300, {}),
    "active-passive": (40, 40, 0, {}),
    # 1 job in 4 fails at the primary's consumer, is dead-lettered and spills over.
    "spillover": (40, 10, 0, {}),
    # 30 orders in weu and 30 in eus, each to the 3 other regions; the hub does not send weu's
    # back to weu, and weu does not send the hub's back to the hub.
    "latency": (60, 180, 60, {}),
    "validation": (50, 40, 0, {"ValidationFailed": 10}),
    "stream": (80, 80, 0, {}),
    # emea, amer, apac (no route), recall (both regions): 10 each.
    "routing": (40, 40, 0, {"NoRouteMatched": 10}),
    "consolidation": (60, 60, 0, {}),
    # 12 orders (2 not JSON, 2 whose masked card breaks the schema), 12 sales (3 of an unknown
    # store), 12 shipments routed by their body's country.
    "transforms": (36, 29, 0, {"TransformRejected": 5, "ValidationFailed": 2}),
    # 6 accounts x 8 postings in each region, replicated to the other.
    "sessions": (96, 96, 96, {}),
    # 40 orders in neu (20 before, 20 after its outage), 60 in weu, 20 of them while neu is down.
    "outage": (100, 100, 100, {}),
}
# The failover drill publishes for as long as its phases last: its figures are checked against
# each other (test_the_failover_drill_consumes_each_message_once_and_says_how_long_it_took).
SCENARIOS = sorted([*SHOWCASE, "failover"])


@pytest.fixture(scope="module")
def output(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The showcase's ``--output`` folder."""
    return tmp_path_factory.mktemp("showcase")


@pytest.fixture(scope="module")
def showcase(output: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    result = subprocess.run(
        [sys.executable, "-m", "replication", "demo", "--output", str(output)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=290,
    )
    figures = (
        json.loads((output / "showcase.json").read_text())
        if (output / "showcase.json").exists()
        else {}
    )
    return result, figures


def test_the_showcase_passes_quietly_with_one_table(
    showcase: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    result, document = showcase
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert sorted(document["scenarios"]) == SCENARIOS
    # Library and Spark logs went to files, not to the person reading.
    assert " INFO " not in result.stdout + result.stderr
    assert "WARN" not in result.stdout + result.stderr
    table = result.stdout.split("verdict", 1)[1]
    for entry in document["scenarios"].values():  # one row per scenario, with its example
        assert entry["title"] in table
        assert entry["example"].removeprefix("examples/") in table
    assert "every scenario passed" in result.stdout
    assert "verdict: every message replicated once, no loops" in result.stdout


@pytest.mark.parametrize("name", sorted(SHOWCASE))
def test_each_scenario_counts_what_its_example_must_produce(
    showcase: tuple[subprocess.CompletedProcess[str], dict[str, Any]], name: str
) -> None:
    entry = showcase[1]["scenarios"][name]
    assert "error" not in entry, entry.get("error")
    figures = entry["figures"]
    sent, replicated, skipped, parked = SHOWCASE[name]
    assert (figures["sent"], figures["replicated"], figures["skipped"]) == (
        sent,
        replicated,
        skipped,
    )
    assert figures["parked"] == parked
    assert (figures["lost"], figures["loops"], figures["misplaced"]) == (0, 0, 0)
    assert figures["duplicates"] == 0
    assert all(finding["ok"] for finding in figures["findings"]), figures["findings"]
    assert 0 < figures["lag_p50"] <= figures["lag_p95"]
    assert figures["failed"] is False


def test_the_failover_drill_consumes_each_message_once_and_says_how_long_it_took(
    showcase: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    entry = showcase[1]["scenarios"]["failover"]
    assert "error" not in entry, entry.get("error")
    figures = entry["figures"]
    # The brokers' side: every acknowledged message held where it belongs (the primary's in
    # both billing subscriptions, original and replica; those published on the secondary
    # during the failover there only), once each, nothing parked or looping.
    assert (figures["lost"], figures["loops"], figures["misplaced"]) == (0, 0, 0)
    assert (figures["duplicates"], figures["skipped"], figures["parked"]) == (0, 0, {})
    assert 0 < figures["replicated"] < figures["sent"]
    assert 0 < figures["lag_p50"] <= figures["lag_p95"]
    # The application's side: it consumed every message once across both namespaces, and the
    # skip helper kept it from processing the replicas of what it had processed on the primary.
    consumed, timings = figures["findings"]
    assert consumed["ok"], consumed["text"]
    skipped = consumed["figures"]["skipped_by_helper"]
    assert consumed["figures"] == {
        "processed": figures["sent"],
        "lost": 0,
        "duplicates": 0,
        "skipped_by_helper": skipped,
    }
    assert skipped > 0
    assert consumed["text"].startswith(f"{figures['sent']} consumed, 0 lost, 0 duplicates")
    # Both switch commands succeeded; the drill measured each recovery time.
    assert timings["ok"], timings["text"]
    assert sorted(timings["figures"]) == sorted(
        f"{phase}_rto_{side}_seconds"
        for phase in ("failover", "failback")
        for side in ("publish", "consume")
    )
    assert all(seconds > 0 for seconds in timings["figures"].values())
    assert figures["failed"] is False


def test_the_audit_of_the_mesh_agrees(
    showcase: tuple[subprocess.CompletedProcess[str], dict[str, Any]], output: Path
) -> None:
    report = showcase[1]["audit"]
    # Its input is what the regions' capture tasks wrote (hourly JSON-lines files, as in Azure),
    # not the showcase's own reads: each region's capture holds every copy its topic got.
    for region in ("weu", "eus", "sea"):
        files = list((output / "capture" / "captures" / region).glob("????/??/??/??/*.jsonl"))
        records = [json.loads(line) for f in files for line in f.read_text().splitlines()]
        assert len({r["message_id"] for r in records}) == 150, region
        assert sum(r["message_id"].startswith(region) for r in records) >= 50, region
    assert report["capture_repeats"] == 0
    assert (report["total_records"], report["unique_messages"]) == (450, 150)
    assert (report["missing_total"], report["loops"], report["duplicate_records"]) == (0, 0, 300)
    # Two of each message's three copies are replicas the mesh sends, not duplicates.
    assert (report["expected_replicas"], report["unexpected_duplicates"]) == (300, 0)
    assert set(report["regions"]) == {"weu", "eus", "sea"}
    assert all(region["in_region_duplicates"] == 0 for region in report["regions"].values())


def _expects_too_little(stage: Stage) -> None:
    """weu's orders replicate to neu; expecting them in neu only makes the originals that
    weu's own billing subscription holds misplaced."""
    orders = [message(f"weu-{n}", {"n": n}) for n in range(3)]
    stage.publish("weu", "orders", orders, expect=["neu/orders/billing"])


def _publishes_nowhere(stage: Stage) -> None:
    stage.publish("weu", "orders", [message("lost-in-thought")], expect=["neu/orders/nowhere"])


def test_a_scenario_the_brokers_contradict_fails_the_demo(tmp_path: Path) -> None:
    example = "two-region-all-active.json"
    scenarios = [
        Scenario("contradicted", "expects too little", example, _expects_too_little, timeout=60),
        Scenario("broken", "publishes nowhere", example, _publishes_nowhere),
    ]
    printed = io.StringIO()
    code = run_showcase(
        scenarios=scenarios, output=tmp_path, console=Console(file=printed, width=140)
    )
    assert code == ExitCode.FINDINGS
    document = json.loads((tmp_path / "showcase.json").read_text())
    figures = document["scenarios"]["contradicted"]["figures"]
    assert (figures["sent"], figures["replicated"], figures["misplaced"]) == (3, 3, 3)
    assert (figures["lost"], figures["loops"], figures["failed"]) == (0, 0, True)
    error = document["scenarios"]["broken"]["error"]
    assert error.endswith("neu/orders/nowhere is not an entity applications read in " + example)
    assert "✗ 3 misplaced" in printed.getvalue()
    assert "2 scenario(s) failed" in printed.getvalue()
