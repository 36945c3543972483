"""Drain-and-count: the showcase's figures and checks from copies alone, no broker.

The copies are built the way the brokers hold them: the original as published, replicas
stamped with the library's own :func:`replication.properties.stamp`, enqueue times set, so
what is tested is the counting, over the same properties a real run reads.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from replication.envelope import Envelope
from replication.exceptions import ConfigurationError
from replication.properties import DEAD_LETTER_REASON, stamp
from replication.showcase import (
    DEMO_CAPTURE,
    Collected,
    Expectation,
    Finding,
    capture_folders,
    choose,
    count,
    place,
    places_of,
)
from replication.showcase._checks import (
    order_per_key,
    processed_once,
    replica_time_to_live,
    routed_through,
)
from replication.showcase._emulators import ShowcaseEmulators
from replication.showcase._runner import redelivery_allowance
from replication.topology import EntityRef, Topology, capture_everywhere, load_topology

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def original(message_id: str, at: float = 0.0, **properties: object) -> Envelope:
    return Envelope(
        body=b"{}",
        message_id=message_id,
        application_properties=properties,
        enqueued_time_utc=T0 + timedelta(seconds=at),
    )


def replica(copy: Envelope, source: str, target: str, at: float) -> Envelope:
    """``copy`` (as held in ``source``) replicated to ``target``, enqueued there at ``at``."""
    return stamp(copy, source_namespace=source, target_namespace=target).replace(
        enqueued_time_utc=T0 + timedelta(seconds=at)
    )


def two_regions() -> tuple[Topology, EntityRef, EntityRef]:
    topology = load_topology(EXAMPLES / "two-region-all-active.json")
    return topology, place("weu/orders/billing"), place("neu/orders/billing")


def collected_pair(*held_at_neu: Envelope, parked: Envelope | None = None) -> Collected:
    """One message ``m`` published in weu, expected in both regions' billing."""
    topology, weu, neu = two_regions()
    collected = Collected(topology, places_of(topology), [Expectation("m", frozenset({weu, neu}))])
    collected.add(weu, [original("m")])
    collected.add(neu, list(held_at_neu))
    if parked is not None:
        collected.add(place("weu/replication-parked"), [parked])
    return collected


def test_a_replicated_message_counts_once_with_its_lag_and_the_loop_it_was_kept_from() -> None:
    figures = count(collected_pair(replica(original("m"), "weu", "neu", at=0.25)))
    assert (figures.sent, figures.replicated, figures.lost, figures.duplicates) == (1, 1, 0, 0)
    # The replica reached neu, whose task to weu did not send it back: loop prevention.
    assert figures.skipped == 1
    assert (figures.loops, figures.misplaced, figures.parked) == (0, 0, {})
    assert figures.lag_p50 == figures.lag_p95 == 0.25
    assert not figures.failed


def test_a_copy_that_never_arrived_is_lost_and_fails_the_scenario() -> None:
    figures = count(collected_pair())
    assert (figures.replicated, figures.lost) == (0, 1)
    assert figures.failed
    assert figures.problems() == ["1 lost"]


def test_a_second_copy_is_a_duplicate_and_does_not_fail_the_scenario() -> None:
    copy = replica(original("m"), "weu", "neu", at=0.5)
    figures = count(collected_pair(copy, copy))
    assert (figures.replicated, figures.duplicates, figures.lost) == (2, 1, 0)
    assert not figures.failed


def test_a_message_parked_instead_of_delivered_is_misplaced_not_lost() -> None:
    parked = original("m").with_properties({DEAD_LETTER_REASON: "MessageSizeExceeded"})
    figures = count(collected_pair(parked=parked))
    assert (figures.lost, figures.misplaced) == (0, 1)
    assert figures.parked == {"MessageSizeExceeded": 1}
    assert figures.failed


def test_a_replica_that_came_back_to_its_origin_is_a_loop() -> None:
    topology, weu, neu = two_regions()
    there = replica(original("m"), "weu", "neu", at=0.1)
    back = replica(there, "neu", "weu", at=0.2)
    collected = Collected(topology, places_of(topology), [Expectation("m", frozenset({weu, neu}))])
    collected.add(weu, [original("m"), back])
    collected.add(neu, [there])
    figures = count(collected)
    assert figures.loops == 1
    assert figures.misplaced == 0  # the MessageId was expected in weu; the path says it looped
    assert figures.failed


def test_an_expected_rejection_is_parked_with_its_reason() -> None:
    topology = load_topology(EXAMPLES / "validation.json")
    fulfilment = place("weu/orders/fulfilment")
    rejected = original("bad").with_properties({DEAD_LETTER_REASON: "ValidationFailed"})
    collected = Collected(
        topology,
        places_of(topology),
        [Expectation("bad", frozenset({fulfilment}), parked="ValidationFailed")],
    )
    collected.add(fulfilment, [original("bad")])
    collected.add(place("weu/orders-rejected"), [rejected])
    figures = count(collected)
    assert figures.parked == {"ValidationFailed": 1}
    assert (figures.lost, figures.misplaced, figures.failed) == (0, 0, False)


def test_percentiles_are_nearest_rank_over_every_replica() -> None:
    topology, _weu, neu = two_regions()
    ids = [f"m{i}" for i in range(20)]
    collected = Collected(
        topology, places_of(topology), [Expectation(i, frozenset({neu})) for i in ids]
    )
    collected.add(
        neu, [replica(original(i), "weu", "neu", at=0.1 * (n + 1)) for n, i in enumerate(ids)]
    )
    figures = count(collected)
    assert figures.lag_p50 == pytest.approx(1.0)
    assert figures.lag_p95 == pytest.approx(1.9)


def test_places_leave_task_sources_to_the_replicator_and_sort_parking_from_consumers() -> None:
    places = places_of(load_topology(EXAMPLES / "spillover.json"))
    assert set(places.consumers) == {place("primary/jobs"), place("secondary/jobs")}
    assert places.parking == (place("primary/replication-parked"),)
    dead_letter_queues = {(r.namespace, r.entity) for r in places.dead_letter_queues}
    # The primary's jobs DLQ is the spillover task's source: never read by the showcase.
    assert ("primary", "jobs") not in dead_letter_queues
    assert ("secondary", "jobs") in dead_letter_queues


def test_places_leave_capture_subscriptions_to_the_capture_tasks() -> None:
    """The mesh is audited from its captures (the showcase captures it everywhere): the capture
    tasks read the capture subscriptions, the showcase only what applications read."""
    topology = capture_everywhere(
        load_topology(EXAMPLES / "three-region-mesh.json"), DEMO_CAPTURE, "three-region-mesh"
    )
    places = places_of(topology)
    assert set(places.consumers) == {
        place(f"{r}/telemetry/dashboard") for r in ("weu", "eus", "sea")
    }
    assert set(capture_folders(topology, Path("out"))) == {"weu", "eus", "sea"}


def test_session_enabled_places_are_known() -> None:
    places = places_of(load_topology(EXAMPLES / "ordered-sessions.json"))
    assert place("weu/accounts/posting") in places.sessions
    assert place("weu/meter-readings") in places.sessions
    assert place("weu/meter-readings-rejected") not in places.sessions


def stored(n: int, sequence_number: int, key: str = "a") -> Envelope:
    """Reading ``n`` of ``key`` as a queue holds it: the broker numbered it ``sequence_number``."""
    return Envelope(
        message_id=f"{key}{n}",
        partition_key=key,
        application_properties={"n": n},
        sequence_number=sequence_number,
    )


def test_order_per_key_finds_a_key_out_of_order() -> None:
    topology = load_topology(EXAMPLES / "stream-to-queue.json")
    queue = place("weu/device-events")
    collected = Collected(topology, places_of(topology), [])
    collected.add(queue, [stored(0, 1), stored(2, 2), stored(1, 3)])  # stored 0, 2, 1
    finding = order_per_key()(collected)
    assert not finding.ok
    assert finding.text == "order broken for 1 key: a in weu/device-events"
    # a duplicate is not disorder
    collected.held[queue] = [stored(0, 1), stored(1, 2), stored(1, 3), stored(2, 4)]
    assert order_per_key()(collected).ok


def test_order_per_key_is_the_order_the_queue_stored_not_the_order_received() -> None:
    """The stream scenario's failing run under load, copy by copy: the queue stored device-4's
    readings 0..9 as sequence numbers 1..10, but the showcase's reader received 1, then 7..10
    and 20 copies of other devices, then 2..6, every one at its first delivery. The reader's
    SDK had released 2..6, which reached it between two receive calls, and the queue delivered
    them again after newer messages already on their way: nothing replication controls."""
    topology = load_topology(EXAMPLES / "stream-to-queue.json")
    queue = place("weu/device-events")
    collected = Collected(topology, places_of(topology), [])
    others = [stored(n, 11 + n, key="device-6") for n in range(10)]
    device = [stored(n, 1 + n, key="device-4") for n in range(10)]
    collected.add(queue, [device[0], *device[6:], *others, *device[1:6]])
    assert order_per_key()(collected) == Finding(True, "order kept for 2 keys")
    # Stored out of order (reading 1 after reading 2): broken whatever the order received.
    swapped = [*device[:1], stored(1, 3, key="device-4"), stored(2, 2, key="device-4")]
    collected.held[queue] = [*swapped, *device[3:], *others]
    broken = order_per_key()(collected)
    assert broken == Finding(False, "order broken for 1 key: device-4 in weu/device-events")


def test_replica_time_to_live_is_read_from_the_topology() -> None:
    topology = load_topology(EXAMPLES / "active-passive.json")
    standby = place("standby/payments/settlement")
    collected = Collected(topology, places_of(topology), [])
    good = replica(original("p"), "primary", "standby", at=1).replace(
        time_to_live=timedelta(minutes=2)
    )
    collected.add(standby, [good])
    assert replica_time_to_live()(collected).text == "replicas expire after 2 min"
    collected.add(standby, [good.replace(time_to_live=None)])
    assert not replica_time_to_live()(collected).ok


def test_routed_through_finds_a_copy_that_bypassed_the_hub() -> None:
    topology = load_topology(EXAMPLES / "latency-optimization.json")
    collected = Collected(topology, places_of(topology), [])
    at_hub = replica(original("o"), "weu", "eus", at=1)
    collected.add(place("eus/orders/fulfilment"), [at_hub])
    collected.add(place("wus/orders/fulfilment"), [replica(at_hub, "eus", "wus", at=2)])
    assert routed_through("eus", origin="weu")(collected).ok
    collected.add(place("cus/orders/fulfilment"), [replica(original("o"), "weu", "cus", at=2)])
    assert routed_through("eus", origin="weu")(collected).text == "1 of 2 copies bypassed eus"


def failover_pair() -> tuple[Collected, EntityRef, EntityRef]:
    """``a`` and ``b`` published on the primary, ``c`` on the secondary during a failover."""
    topology = load_topology(EXAMPLES / "active-passive-failover.json")
    primary, secondary = place("primary/orders/billing"), place("secondary/orders/billing")
    both = frozenset({primary, secondary})
    sent = [
        Expectation("a", both),
        Expectation("b", both),
        Expectation("c", frozenset({secondary})),
    ]
    return Collected(topology, places_of(topology), sent), primary, secondary


def consumed(collected: Collected, where: EntityRef, copy: Envelope, *, processed: bool) -> None:
    """What the showcase's runner does with a copy the scenario's application took."""
    collected.add(where, [copy])
    (collected.processed if processed else collected.skipped_by_helper).append((where, copy))


def test_an_application_that_consumed_each_message_once_across_a_failover() -> None:
    collected, primary, secondary = failover_pair()
    a, b, c = original("a"), original("b", at=1), original("c", at=2)
    # a processed on the primary, its replica skipped on the secondary; b processed there as a
    # replica (the consumer had moved), its original skipped after the failback.
    consumed(collected, primary, a, processed=True)
    consumed(collected, secondary, replica(a, "primary", "secondary", at=0.5), processed=False)
    consumed(collected, secondary, replica(b, "primary", "secondary", at=1.5), processed=True)
    consumed(collected, secondary, c, processed=True)
    consumed(collected, primary, b, processed=False)
    figures = count(collected, [processed_once()])
    assert (figures.sent, figures.replicated, figures.lost, figures.misplaced) == (3, 2, 0, 0)
    assert figures.duplicates == 0
    (finding,) = figures.findings
    assert finding == Finding(
        True,
        "3 consumed, 0 lost, 0 duplicates (2 skipped by the helper)",
        {"processed": 3, "lost": 0, "duplicates": 0, "skipped_by_helper": 2},
    )
    assert not figures.failed


def test_a_message_the_application_processed_twice_or_never_fails_the_scenario() -> None:
    collected, primary, secondary = failover_pair()
    a, b, c = original("a"), original("b", at=1), original("c", at=2)
    consumed(collected, primary, a, processed=True)
    consumed(collected, secondary, replica(a, "primary", "secondary", at=0.5), processed=True)
    consumed(collected, secondary, c, processed=True)
    # b's copies are still where the brokers hold them: the application never processed b.
    collected.add(primary, [b])
    collected.add(secondary, [replica(b, "primary", "secondary", at=1.5)])
    figures = count(collected, [processed_once()])
    assert (figures.lost, figures.duplicates, figures.misplaced) == (0, 0, 0)  # the brokers' view
    assert figures.failed
    assert figures.problems() == ["2 consumed, 1 lost, 1 duplicates (0 skipped by the helper)"]


def test_what_a_scenario_measured_itself_joins_the_verdict_and_can_fail_it() -> None:
    collected, primary, secondary = failover_pair()
    for message_id in "ab":
        collected.add(primary, [original(message_id)])
        collected.add(secondary, [replica(original(message_id), "primary", "secondary", at=1)])
    collected.add(secondary, [original("c")])
    collected.measured.append(Finding(True, "RTO 0.7 s", {"rto_seconds": 0.7}))
    assert count(collected).findings == (Finding(True, "RTO 0.7 s", {"rto_seconds": 0.7}),)
    assert not count(collected).failed
    collected.measured.append(Finding(False, "failback exited 3"))
    assert count(collected).problems() == ["failback exited 3"]


def test_only_names_the_scenarios_when_the_name_is_unknown() -> None:
    assert [s.name for s in choose("mesh")] == ["mesh"]
    with pytest.raises(ConfigurationError, match="--only mess: no such scenario; choose one of "):
        choose("mess")


def test_a_killable_namespace_starts_each_run_empty(tmp_path: Path) -> None:
    """An earlier run's data directory would restore its duplicate detection history, which
    drops the new run's replicas (same MessageIds): the outage scenario's second run lost
    every message before the showcase removed it."""
    topology = load_topology(EXAMPLES / "two-region-all-active.json")
    earlier = tmp_path / "outage-neu" / "data" / "outage-neu.json"
    earlier.parent.mkdir(parents=True)
    earlier.write_text('{"format": 1, "state": {}}')
    ShowcaseEmulators({"outage": (topology, ("neu",))}, tmp_path)
    assert not earlier.parent.exists()


def test_a_scenario_waits_one_lock_duration_more_for_a_copy_whose_lock_must_expire() -> None:
    topology = load_topology(EXAMPLES / "two-region-all-active.json")
    assert redelivery_allowance(topology) == 60.0  # every entity has the default PT1M
    longer = (
        topology.namespaces[0]
        .topics[0]
        .subscriptions[0]
        .model_copy(update={"lock_duration": timedelta(minutes=3)})
    )
    topology.namespaces[0].topics[0].subscriptions[0] = longer
    assert redelivery_allowance(topology) == 180.0
