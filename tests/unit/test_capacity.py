"""The capacity plan (``plan --rate``) against counts derived by hand from the example topologies.

Rules the derivations use (Microsoft's throttling page, see :mod:`replication.capacity`):
a message entering an entity is one send; a message entering a topic is evaluated once per
rule of every subscription (a subscription without rules has the ``$Default`` TrueFilter: one
rule) and received once from every subscription that selects it; a queue message is received
once; an event is received once per consumer group. Replication subscriptions carry the
pattern's rule ``replication IS NULL`` / ``SET replication = 1``: originals enter them, replicas
(which carry ``replication = 1``) do not. Credits (Standard) = sends + evaluations + receives.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from replication.capacity import Rate, capacity_plan, render
from replication.cli import main
from replication.exceptions import ConfigurationError
from replication.topology import load_topology, parse_topology

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
R = 100.0


Figures = dict[tuple[str, str], tuple[float, ...]]


def _entity_figures(topology_file: str, rate: float = R) -> Figures:
    plan = capacity_plan(load_topology(EXAMPLES / topology_file), Rate(rate))
    return {
        (load.name, entity): (t.sends, t.filter_evaluations, t.receives)
        for load in plan.namespaces
        for entity, t in load.entities.items()
    }


def test_two_region_all_active() -> None:
    """``weu/orders`` (and symmetrically ``neu/orders``) at R msg/s:

    - sends: R originals + R replicas from neu = 2R;
    - subscriptions: ``billing`` (TrueFilter) and ``replication`` (one rule): 2 evaluations
      for each of the 2R messages = 4R;
    - receives: ``billing`` takes all 2R, ``replication`` only the R originals = 3R;
    - credits 9R: Standard throttles above 1000 / 9 = 111.1 msg/s.
    """
    figures = _entity_figures("two-region-all-active.json")
    assert figures == {("weu", "orders"): (200, 400, 300), ("neu", "orders"): (200, 400, 300)}
    plan = capacity_plan(load_topology(EXAMPLES / "two-region-all-active.json"), Rate(R))
    for load in plan.namespaces:
        assert load.credits == pytest.approx(900)
        assert load.throttles_above == pytest.approx(1000 / 9)
        assert not load.runs_out
    over = capacity_plan(load_topology(EXAMPLES / "two-region-all-active.json"), Rate(112))
    assert all(load.runs_out for load in over.namespaces)


def test_three_region_mesh() -> None:
    """``telemetry`` in each region (the task to two peers runs as two lanes, each with its
    own replication subscription ``replication-to-<peer>``):

    - sends: R originals + R replicas from each of 2 peers = 3R;
    - subscriptions: ``dashboard`` + 2 replication subscriptions, one rule each: 3 x 3R = 9R;
    - receives: ``dashboard`` 3R, each replication subscription the R originals: 5R.
    The namespaces are Premium: operations are counted, no credit verdict is given.
    """
    figures = _entity_figures("three-region-mesh.json")
    assert figures == {(ns, "telemetry"): (300, 900, 500) for ns in ("weu", "eus", "sea")}
    plan = capacity_plan(load_topology(EXAMPLES / "three-region-mesh.json"), Rate(R))
    assert all(load.credits is None and not load.runs_out for load in plan.namespaces)


def test_active_passive_spillover_and_stream() -> None:
    """- ``primary/payments``: R sends, its one subscription ``replication`` (one rule): R
      evaluations, R receives;
    - ``standby/payments``: R replica sends; no subscription, so no evaluation or receive;
    - ``primary/jobs`` (spillover reads its dead-letter queue; ``maxDeliveryCount`` 5): R
      sends, and each message is delivered 5 times before it is dead-lettered, then read once
      from the dead-letter queue: 6R receives;
    - ``standby/jobs``: R replica sends, R receives;
    - ``ingest/devices`` (event hub, group ``replication`` read by the stream task): R events
      in, R out; ``standby/device-events``: R sends, R receives.
    Credits: primary R(1+1+1) + R(1+6) = 10R, exactly 1000 at R = 100; standby 5R.
    """
    figures = _entity_figures("active-passive-and-stream.json")
    assert figures == {
        ("primary", "payments"): (100, 100, 100),
        ("primary", "jobs"): (100, 0, 600),
        ("standby", "payments"): (100, 0, 0),
        ("standby", "device-events"): (100, 0, 100),
        ("standby", "jobs"): (100, 0, 100),
        ("ingest", "devices"): (100, 0, 100),
    }
    plan = capacity_plan(load_topology(EXAMPLES / "active-passive-and-stream.json"), Rate(R))
    by_name = {load.name: load for load in plan.namespaces}
    assert by_name["primary"].credits == pytest.approx(1000)
    assert by_name["standby"].credits == pytest.approx(500)
    assert by_name["ingest"].throughput_units == 1


def test_ordered_sessions() -> None:
    """- ``accounts`` in weu and neu: as the two-region all-active pair (subscriptions
      ``replication`` and ``posting``): 2R sends, 4R evaluations, 3R receives;
    - ``ingest/meters``: R events in, R out to the group ``replication``;
    - ``weu/meter-readings``: the stream task's R replicas, received once: R, R.
    weu needs 9R + 2R = 11R credits: at R = 100 Standard throttles (above 1000/11 msg/s).
    """
    figures = _entity_figures("ordered-sessions.json")
    assert figures == {
        ("weu", "accounts"): (200, 400, 300),
        ("weu", "meter-readings"): (100, 0, 100),
        ("neu", "accounts"): (200, 400, 300),
        ("ingest", "meters"): (100, 0, 100),
    }
    plan = capacity_plan(load_topology(EXAMPLES / "ordered-sessions.json"), Rate(R))
    weu = next(load for load in plan.namespaces if load.name == "weu")
    assert weu.runs_out
    assert weu.throttles_above == pytest.approx(1000 / 11)


def _document(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    return document


def test_heartbeats_are_fixed_traffic() -> None:
    """Heartbeats every 10 s on the two-region pair: each namespace publishes 0.1/s on its
    ``replication-heartbeat`` topic and receives the peer's 0.1/s replica. The topic has
    ``replication-to-<peer>`` (one rule), ``heartbeat-reader`` and ``heartbeat-status``
    (TrueFilters; nobody receives from the second, its messages expire): 0.2 sends, 0.6
    evaluations, 0.1 + 0.2 = 0.3 receives, whatever the publish rate."""
    document = _document("two-region-all-active.json")
    document["heartbeats"] = {"enabled": True, "interval": "PT10S"}
    topology = parse_topology(document)
    for rate in (1.0, 50.0):
        plan = capacity_plan(topology, Rate(rate))
        for load in plan.namespaces:
            beat = load.entities["replication-heartbeat"]
            assert (beat.sends, beat.filter_evaluations, beat.receives) == pytest.approx(
                (0.2, 0.6, 0.3)
            )
            assert load.credits == pytest.approx(9 * rate + 1.1)
        assert plan.heartbeat_interval == 10


def test_correlation_filters_are_evaluated_not_assumed() -> None:
    """An application subscription whose correlation filter the sample does not meet costs
    an evaluation per message and receives nothing."""
    document = copy.deepcopy(_document("two-region-all-active.json"))
    topic = document["namespaces"][0]["topics"][0]
    topic["subscriptions"].append(
        {
            "name": "priority",
            "rules": [{"name": "urgent", "filter": {"correlation": {"subject": "urgent"}}}],
        }
    )
    figures = {
        (load.name, entity): (t.sends, t.filter_evaluations, t.receives)
        for load in capacity_plan(parse_topology(document), Rate(R)).namespaces
        for entity, t in load.entities.items()
    }
    assert figures[("weu", "orders")] == (200, 600, 300)


def test_event_hub_throughput_units() -> None:
    """5,000 events/s of 1 KB into ``ingest/devices``: 5.12 MB/s in needs 6 throughput units
    (the bytes, not the 5 units the event count needs); out is the same."""
    plan = capacity_plan(load_topology(EXAMPLES / "active-passive-and-stream.json"), Rate(5000))
    ingest = next(load for load in plan.namespaces if load.name == "ingest")
    assert ingest.throughput_units == 6


@pytest.mark.parametrize("text", ["", "fast", "0", "-5", "10,0", "10,x", "nan"])
def test_bad_rate_is_a_configuration_error(text: str) -> None:
    with pytest.raises(ConfigurationError, match="--rate"):
        Rate.parse(text)


def test_rate_parses_size() -> None:
    assert Rate.parse("250,4096") == Rate(250, 4096)
    assert Rate.parse("2.5") == Rate(2.5, 1024)


def test_command_prints_the_plan_and_exits_with_findings_when_a_namespace_runs_out(
    capsys: pytest.CaptureFixture[str],
) -> None:
    topology = str(EXAMPLES / "two-region-all-active.json")
    assert main(["plan", "--topology", topology, "--rate", "100"]) == 0
    out = capsys.readouterr().out
    assert "weu (servicebus Standard): 900.0 credits/s of 1,000 (90%)" in out
    assert "throttles above 111.1 msg/s" in out
    assert main(["plan", "--topology", topology, "--rate", "200,512"]) == 1
    out = capsys.readouterr().out
    assert "warning: weu: needs 1,800.0 credits/s; Standard will throttle" in out
    assert main(["plan", "--topology", topology, "--rate", "lots"]) == 2


def test_render_names_tasks_that_forward_nothing() -> None:
    """A validation task whose condition the sample does not meet is named, so a cheap plan
    is not mistaken for a cheap topology."""
    document = _document("two-region-all-active.json")
    task = document["tasks"][0]
    task["pattern"] = "validation"
    task["options"] = {"condition": "sys.Label = 'never'", "onInvalid": "skip"}
    lines = render(capacity_plan(parse_topology(document), Rate(R)))
    assert any(line.startswith("note: task orders-weu-to-neu forwarded nothing") for line in lines)
