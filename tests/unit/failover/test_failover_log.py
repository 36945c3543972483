"""The processed-message log, the origin of a message and the consumer state, without a broker."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from replication.envelope import Envelope
from replication.failover import MemoryFailoverStore, OriginPosition, ProcessedLog, origin_of
from replication.failover._state import COMPACT_AFTER, ConsumerState, PartitionPosition
from replication.properties import stamp

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def at(seconds: float, origin: str = "primary") -> OriginPosition:
    return OriginPosition(origin, T0 + timedelta(seconds=seconds), None)


def test_the_origin_of_a_replica_is_its_first_enqueue_and_of_an_original_its_own() -> None:
    original = Envelope(message_id="m", enqueued_time_utc=T0, sequence_number=7)
    replica = stamp(original, source_namespace="primary", target_namespace="secondary")
    again = stamp(
        replica.replace(enqueued_time_utc=T0 + timedelta(seconds=3), sequence_number=99),
        source_namespace="secondary",
        target_namespace="third",
    )
    assert origin_of(
        again.application_properties, namespace="third", enqueued_time=None, sequence=1
    ) == OriginPosition("primary", T0, 7)
    assert origin_of({}, namespace="secondary", enqueued_time=T0, sequence=3) == OriginPosition(
        "secondary", T0, 3
    )
    garbled = {"repl-origin": "primary", "repl-enqueued-time": "yesterday", "repl-sequence": "x"}
    assert origin_of(garbled, namespace="s", enqueued_time=T0, sequence=1) == OriginPosition(
        "primary", None, None
    )


def test_only_a_known_message_id_is_skipped() -> None:
    log = ProcessedLog()
    assert not log.decide("a", at(1)).skip
    log.record("a", at(1))
    assert log.decide("a", at(1)).skip
    assert log.decide("a", at(500, origin="elsewhere")).skip  # the same message, another copy
    assert not log.decide("b", at(0)).skip
    no_id = log.decide(None, at(2))
    assert not no_id.skip
    assert no_id.unverified
    assert (log.counters.checked, log.counters.skipped, log.counters.unverified) == (5, 2, 1)


def test_eviction_by_size_moves_the_horizon_and_flags_what_the_log_cannot_vouch_for() -> None:
    log = ProcessedLog(max_entries=3)
    for index in range(5):
        log.record(f"m{index}", at(index))
    assert len(log) == 3
    assert log.horizon("primary") == T0 + timedelta(seconds=1)
    forgotten = log.decide("m0", at(0))
    assert not forgotten.skip  # processed again rather than risk dropping an unprocessed one
    assert forgotten.unverified
    assert log.decide("m4", at(4)).skip
    fresh = log.decide("new", at(2))
    assert not fresh.unverified  # enqueued after everything the log let go
    assert not log.decide("other-origin", at(0, origin="secondary")).unverified
    assert log.counters.evicted == 2


def test_eviction_by_time_uses_the_processing_time() -> None:
    clock = Clock()
    log = ProcessedLog(retention=timedelta(minutes=10), clock=clock)
    log.record("old", at(0))
    clock.now += timedelta(minutes=11)
    log.record("new", at(1))
    assert "old" not in log
    assert "new" in log
    assert log.horizon("primary") == T0


def test_an_entry_without_origin_time_makes_its_origin_unverifiable_once_evicted() -> None:
    log = ProcessedLog(max_entries=1)
    log.record("a", OriginPosition("primary", None, None))
    log.record("b", at(5))
    assert log.decide("c", at(10_000)).unverified


def test_snapshot_and_journal_restore_the_same_log() -> None:
    log = ProcessedLog(max_entries=4)
    for index in range(3):
        log.record(f"m{index}", at(index))
    snapshot = log.snapshot()
    journal = [entry.as_list() for entry in log.take_journal()]
    log.record("m3", at(3))
    log.record("m4", at(4))
    later = [entry.as_list() for entry in log.take_journal()]
    restored = ProcessedLog(max_entries=4)
    restored.restore(snapshot, [later])
    assert [e for e in ("m0", "m1", "m2", "m3", "m4") if e in restored] == ["m1", "m2", "m3", "m4"]
    assert restored.horizon("primary") == T0
    assert journal == snapshot["entries"]


@pytest.mark.parametrize(
    "snapshot",
    [
        {"entries": "no"},
        {"entries": [["id", "origin", "late", 1]]},
        {"entries": [["id", "origin", 1]]},
        {"entries": [], "horizons": {"primary": "soon"}},
    ],
)
def test_a_malformed_snapshot_is_refused(snapshot: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"malformed|entries|entry"):
        ProcessedLog().restore(snapshot)


def test_bounds_must_be_positive() -> None:
    with pytest.raises(ValueError, match="retention"):
        ProcessedLog(retention=timedelta(0))
    with pytest.raises(ValueError, match="max_entries"):
        ProcessedLog(max_entries=0)


def test_consumer_state_survives_a_restart_through_journal_and_snapshots() -> None:
    store = MemoryFailoverStore()
    state = ConsumerState(ProcessedLog(), store, "app/_/orders/_")
    state.activate("primary")
    for index in range(COMPACT_AFTER + 5):
        state.log.record(f"m{index}", at(index))
        state.advance(PartitionPosition("primary", "0", index, str(index * 10), index))
        assert state.checkpoint()
    restarted = ConsumerState(ProcessedLog(), store, "app/_/orders/_")
    restarted.load()
    assert len(restarted.log) == COMPACT_AFTER + 5
    assert restarted.positions[("primary", "0")].sequence == COMPACT_AFTER + 4
    assert restarted.active == "primary"


def test_a_store_that_fails_keeps_the_entries_for_the_next_checkpoint() -> None:
    store = MemoryFailoverStore()
    state = ConsumerState(ProcessedLog(), store, "c")
    state.log.record("a", at(1))
    store.unavailable = True
    assert not state.checkpoint()
    store.unavailable = False
    state.log.record("b", at(2))
    assert state.checkpoint()
    restarted = ConsumerState(ProcessedLog(), store, "c")
    restarted.load()
    assert "a" in restarted.log
    assert "b" in restarted.log
