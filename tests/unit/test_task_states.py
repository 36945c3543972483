"""A task's state and its RPO if you failed over now, decided from its figures
(:func:`replication.operations.decide`; the rules are ``docs/how-to/status.md``'s), and the
line ``status`` prints of them (:func:`replication.operations.task_lines`)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from replication.exceptions import SourceUnreadableError
from replication.operations import (
    Count,
    FiguresReader,
    Observed,
    PartitionLag,
    PathHeartbeat,
    Rpo,
    TaskReport,
    TaskState,
    Thresholds,
    decide,
    task_lines,
)
from replication.settings import Settings
from replication.topology import load_topology, parse_topology

MESH = Path(__file__).resolve().parents[2] / "examples" / "three-region-mesh.json"
TWO_REGIONS = Path(__file__).resolve().parents[2] / "examples" / "two-region-all-active.json"
LIMITS = Thresholds(lag=timedelta(seconds=5), heartbeat_max_age=timedelta(seconds=10), parked=0)


def beat(age: float | None, *, target: str = "neu", error: str | None = None) -> PathHeartbeat:
    return PathHeartbeat("weu", target, age, lookback=20.0, error=error)


def test_an_empty_source_with_fresh_heartbeats_is_replicating_and_loses_nothing() -> None:
    decision = decide(
        Observed(backlog=0, parked=0, dead_lettered=0, heartbeats=[beat(1.2)]), LIMITS
    )
    assert decision.state is TaskState.REPLICATING
    assert decision.reasons == ()
    assert decision.rpo == Rpo(0, False, 0.0)
    assert str(decision.rpo) == "0 messages"


def test_a_backlog_younger_than_the_lag_threshold_is_replication_at_work() -> None:
    decision = decide(Observed(backlog=40, oldest_age=4.9, heartbeats=[beat(1.0)]), LIMITS)
    assert decision.state is TaskState.REPLICATING
    assert decision.rpo == Rpo(40, False, 4.9)
    assert str(decision.rpo) == "40 messages, the last 4.9 s"


def test_an_old_backlog_is_lagging_and_the_rpo_is_its_window() -> None:
    decision = decide(
        Observed(backlog=12, backlog_capped=True, oldest_age=30.0, heartbeats=[beat(2.0)]), LIMITS
    )
    assert decision.state is TaskState.LAGGING
    assert decision.reasons == ("oldest unreplicated message 30.0 s old (threshold 5 s)",)
    assert decision.rpo == Rpo(12, True, 30.0)
    assert str(decision.rpo) == "12+ messages, the last 30.0 s"


def test_a_lower_bound_of_the_oldest_age_is_said_to_be_one() -> None:
    decision = decide(Observed(backlog=3, oldest_age=8.0, oldest_at_least=True), LIMITS)
    assert decision.state is TaskState.LAGGING
    assert decision.reasons == ("oldest unreplicated message at least 8.0 s old (threshold 5 s)",)
    assert str(decision.rpo) == "3 messages, at least the last 8.0 s"


def test_a_target_down_with_a_backlog_building_is_lagging_not_stalled() -> None:
    """The heartbeat cannot be read at a target that is down: that says nothing about the
    replicator, so the backlog decides, and the reason names the target."""
    decision = decide(
        Observed(
            backlog=7, oldest_age=9.0, heartbeats=[beat(None, error="ServiceBusConnectionError")]
        ),
        LIMITS,
    )
    assert decision.state is TaskState.LAGGING
    assert decision.reasons[-1] == "target neu unreachable (ServiceBusConnectionError)"


def test_a_silent_path_whose_target_answers_is_stalled_before_anything_else() -> None:
    observed = Observed(
        backlog=9, oldest_age=30.0, parked=2, heartbeats=[beat(11.0), beat(1.0, target="sea")]
    )
    decision = decide(observed, LIMITS)
    assert decision.state is TaskState.STALLED
    assert decision.reasons == (
        "heartbeat weu -> neu 11.0 s old (threshold 10 s)",
        "2 parked or dead-lettered (threshold 0)",
        "oldest unreplicated message 30.0 s old (threshold 5 s)",
    )
    none = decide(Observed(backlog=0, heartbeats=[beat(None)]), LIMITS)
    assert none.state is TaskState.STALLED
    assert none.reasons == ("no heartbeat weu -> neu within 20 s",)


def test_a_heartbeat_at_the_threshold_is_not_yet_stalled() -> None:
    assert decide(Observed(backlog=0, heartbeats=[beat(10.0)]), LIMITS).state is (
        TaskState.REPLICATING
    )


def test_without_heartbeats_a_task_is_never_stalled() -> None:
    decision = decide(Observed(backlog=5, oldest_age=600.0), LIMITS)
    assert decision.state is TaskState.LAGGING


@pytest.mark.parametrize(
    ("parked", "dead_lettered", "threshold", "state"),
    [
        (1, 0, 0, TaskState.FAILING),
        (0, 1, 0, TaskState.FAILING),
        (2, 1, 3, TaskState.REPLICATING),
        (2, 2, 3, TaskState.FAILING),
    ],
)
def test_parked_and_dead_lettered_messages_over_the_threshold_are_failing(
    parked: int, dead_lettered: int, threshold: int, state: TaskState
) -> None:
    limits = Thresholds(LIMITS.lag, LIMITS.heartbeat_max_age, threshold)
    observed = Observed(backlog=1, oldest_age=1.0, parked=parked, dead_lettered=dead_lettered)
    decision = decide(observed, limits)
    assert decision.state is state
    # They are not on the target either: the RPO counts them (not their age).
    assert decision.rpo == Rpo(1 + parked + dead_lettered, False, 1.0)


def test_failing_comes_before_lagging() -> None:
    decision = decide(Observed(backlog=3, oldest_age=60.0, parked=1), LIMITS)
    assert decision.state is TaskState.FAILING
    assert decision.reasons[1].startswith("oldest unreplicated message 60.0 s")


def test_a_capped_parked_count_makes_the_rpo_a_lower_bound() -> None:
    decision = decide(Observed(backlog=0, parked=5000, counts_capped=True), LIMITS)
    assert decision.rpo == Rpo(5000, True, 0.0)
    assert str(decision.rpo) == "5000+ messages"


def test_an_unreadable_source_is_unknown_and_so_is_its_rpo() -> None:
    decision = decide(
        Observed(backlog=None, source_error="ServiceBusConnectionError: refused"), LIMITS
    )
    assert decision.state is TaskState.UNKNOWN
    assert decision.reasons == ("backlog unknown: ServiceBusConnectionError: refused",)
    assert decision.rpo == Rpo(None, False, None)
    assert str(decision.rpo) == "unknown"
    # A silent path still says stalled: the source being down is why nothing crosses.
    assert decide(Observed(backlog=None, heartbeats=[beat(15.0)]), LIMITS).state is (
        TaskState.STALLED
    )


def test_thresholds_come_from_the_monitoring_section() -> None:
    document = json.loads(MESH.read_text(encoding="utf-8"))
    assert Thresholds.of(parse_topology(document)) == Thresholds(
        timedelta(minutes=5), timedelta(minutes=10), 0
    )
    document["monitoring"] = {
        "lagThreshold": "PT1M",
        "heartbeatMaxAge": "PT3M",
        "parkedThreshold": 4,
    }
    assert Thresholds.of(parse_topology(document)) == Thresholds(
        timedelta(minutes=1), timedelta(minutes=3), 4
    )


@pytest.mark.parametrize(
    ("first", "last", "checkpoint", "lag"),
    [
        (0, -1, None, 0),  # never held an event
        (0, 9, None, 10),  # no checkpoint: everything retained is unreplicated
        (0, 9, 9, 0),
        (0, 9, 6, 3),
        (50, 59, None, 10),  # retention dropped 0..49: they cannot be replicated any more
        (50, 59, 20, 10),  # a checkpoint older than retention: from the first retained one
    ],
)
def test_an_event_hub_partition_lag(
    first: int, last: int, checkpoint: int | None, lag: int
) -> None:
    assert PartitionLag("0", last, checkpoint, first).lag == lag


@pytest.mark.parametrize(
    ("heartbeats", "heartbeats_off", "text"),
    [
        ([beat(1.2)], False, "heartbeat weu -> neu age 1.2 s"),
        ([beat(None)], False, "heartbeat weu -> neu none within 20 s"),
        ([beat(None, error="timed out")], False, "heartbeat weu -> neu target unreachable"),
        ([], False, "heartbeat no path"),  # on, but none of the task's targets is a path
        ([], True, "heartbeats off"),
    ],
    ids=["fresh", "none-yet", "unreachable", "no-path", "off"],
)
def test_the_status_line_of_a_task_says_how_its_heartbeats_are(
    heartbeats: list[PathHeartbeat], heartbeats_off: bool, text: str
) -> None:
    report = TaskReport(
        "weu-to-neu",
        "weu/orders/replication",
        backlog=Count(0, False),
        heartbeats=heartbeats,
        heartbeats_off=heartbeats_off,
        state=TaskState.REPLICATING,
        rpo=Rpo(0, False, 0.0),
    )
    assert task_lines(report)[1] == (
        f"REPLICATING; oldest unreplicated -; {text}; RPO if you failed over now: 0 messages"
    )


def test_a_topology_with_heartbeats_switched_off_gives_reports_that_say_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topology = load_topology(TWO_REGIONS)  # "heartbeats" absent: off
    assert not topology.heartbeats.enabled
    reader = FiguresReader(topology, Settings.from_environ({}, connections=topology.connections))

    def unreadable(task: object) -> None:
        raise SourceUnreadableError("not connected in this test")

    monkeypatch.setattr(reader, "backlog", unreadable)
    monkeypatch.setattr(reader, "_parked", lambda task: None)
    try:
        report = reader.task(topology.tasks[0].name)
    finally:
        reader.close()
    assert report.heartbeats == []
    assert report.heartbeats_off
    assert "; heartbeats off; " in task_lines(report)[1]
