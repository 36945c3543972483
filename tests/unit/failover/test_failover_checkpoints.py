"""Where an Event Hubs consumer starts after a switch (the arithmetic; the wire is in e2e)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from replication.failover._checkpoints import StartKind, failover_start, start_plan
from replication.failover._processed import to_millis
from replication.failover._state import PartitionPosition

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PAIR = {"secondary": "primary"}


def handled(namespace: str, partition: str, seconds: float) -> PartitionPosition:
    return PartitionPosition(
        namespace, partition, 1, "1", to_millis(T0 + timedelta(seconds=seconds))
    )


def test_the_replica_starts_at_the_earliest_handled_position_minus_the_allowance() -> None:
    positions = [
        handled("primary", "0", 30),
        handled("primary", "1", 20),
        handled("secondary", "0", 1),
    ]
    plan = start_plan(
        "primary",
        "secondary",
        replicated_from=PAIR,
        positions=positions,
        partition_count=2,
        skew_allowance=timedelta(seconds=5),
    )
    assert plan.kind is StartKind.BY_TIME
    assert plan.start == T0 + timedelta(seconds=15)


def test_a_partition_never_read_sends_the_replica_back_to_the_beginning() -> None:
    assert failover_start([handled("primary", "0", 30)], 2) is None
    plan = start_plan(
        "primary",
        "secondary",
        replicated_from=PAIR,
        positions=[handled("primary", "0", 3)],
        partition_count=2,
    )
    assert (plan.kind, plan.start) == (StartKind.BY_TIME, None)


def test_failback_and_unrelated_namespaces_resume_their_own_checkpoints() -> None:
    back = start_plan("secondary", "primary", replicated_from=PAIR, positions=[], partition_count=2)
    assert back.kind is StartKind.RESUME
    other = start_plan(
        "primary", "elsewhere", replicated_from=PAIR, positions=[], partition_count=2
    )
    assert other.kind is StartKind.RESUME


def test_publishers_moved_before_the_consumer_pull_the_start_back() -> None:
    positions = [handled("primary", "0", 30), handled("primary", "1", 40)]
    moved = T0 + timedelta(seconds=12)
    start = failover_start(positions, 2, timedelta(seconds=5), publishers_since=moved)
    assert start == T0 + timedelta(seconds=7)
