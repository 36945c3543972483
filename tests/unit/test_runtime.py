"""TaskRunner: plan, send per target, narrow permanent failures, park or raise for the rest.

Targets are ``MemoryTarget`` objects, the in-memory transport (a real sender that keeps what it
gets); the Service Bus and Event Hubs senders are exercised against the emulator elsewhere.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import pytest

from replication.envelope import Envelope
from replication.exceptions import MessageRejectedError, TransientForwardError
from replication.planning import Target
from replication.properties import (
    DEAD_LETTER_BODY_OMITTED,
    DEAD_LETTER_ENQUEUED_TIME,
    DEAD_LETTER_ORIGINAL,
    DEAD_LETTER_REASON,
    DEAD_LETTER_SEQUENCE,
    REPL_ORIGIN,
    REPL_PATH,
    unparked,
)
from replication.runtime import MemoryTarget, RetryPolicy, TaskRunner
from replication.topology import load_topology, parse_topology

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class FakeClock:
    """Time that passes only when the runner sleeps (backoff without waiting)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def runner(
    target: MemoryTarget,
    dead_letter: MemoryTarget | None = None,
    *,
    clock: FakeClock | None = None,
    budget: float = 0.0,
) -> TaskRunner:
    topology = load_topology(EXAMPLES / "two-region-all-active.json")
    task = topology.task("orders-weu-to-neu")
    clock = clock or FakeClock()
    return TaskRunner(
        topology.resolved(task),
        {Target("neu", "orders"): target},
        dead_letter,
        retry=RetryPolicy(min_backoff=1, max_backoff=8, budget=budget),
        sleep=clock.sleep,
        clock=clock,
    )


def originals(count: int) -> list[Envelope]:
    return [Envelope(body=b"x", message_id=f"m-{i}") for i in range(count)]


def test_originals_are_forwarded_and_replicas_skipped() -> None:
    neu = MemoryTarget("neu/orders")
    replica = Envelope(message_id="r", application_properties={REPL_ORIGIN: "neu"})
    outcome = runner(neu).run([*originals(3), replica])
    assert (outcome.received, outcome.forwarded, outcome.skipped) == (4, 3, 1)
    assert [e.message_id for e in neu.received] == ["m-0", "m-1", "m-2"]
    assert all(e.application_properties[REPL_PATH] == "weu;neu" for e in neu.received)
    assert neu.send_calls == 1


def test_a_poison_message_is_isolated_and_parked_with_its_reason() -> None:
    neu = MemoryTarget(
        "neu/orders", reject=lambda e: "MessageSizeExceeded" if e.message_id == "m-1" else None
    )
    parking = MemoryTarget("weu/parking")
    outcome = runner(neu, parking).run(originals(3))
    assert [e.message_id for e in neu.received] == ["m-0", "m-2"]
    assert outcome.forwarded == 2
    (parked,) = parking.received
    assert parked.message_id == "m-1"
    assert parked.application_properties[DEAD_LETTER_REASON] == "MessageSizeExceeded"


def test_without_a_dead_letter_target_the_invocation_fails_after_sending_the_rest() -> None:
    neu = MemoryTarget("neu/orders", reject=lambda e: "Bad" if e.message_id == "m-0" else None)
    with pytest.raises(MessageRejectedError) as caught:
        runner(neu).run(originals(2))
    assert caught.value.reason == "Bad"
    assert [e.message_id for e in neu.received] == ["m-1"]


def test_transient_failures_propagate_for_redelivery() -> None:
    neu = MemoryTarget("neu/orders", unavailable=True)
    with pytest.raises(TransientForwardError):
        runner(neu).run(originals(1))


def test_a_runner_needs_a_sender_for_every_target() -> None:
    topology = load_topology(EXAMPLES / "two-region-all-active.json")
    with pytest.raises(ValueError, match="no sender for neu/orders"):
        TaskRunner(topology.resolved("orders-weu-to-neu"), {})


def test_a_transient_failure_is_retried_with_backoff_within_the_budget() -> None:
    neu = MemoryTarget("neu/orders", unavailable=True)
    clock = FakeClock()
    task_runner = runner(neu, clock=clock, budget=20)
    original_sleep = clock.sleep

    def sleep_then_recover(seconds: float) -> None:
        original_sleep(seconds)
        neu.unavailable = clock.now < 7  # down for 7 s

    task_runner._sleep = sleep_then_recover
    outcome = task_runner.run(originals(3))
    assert clock.sleeps == [1, 2, 4]
    assert outcome.retries == 3
    assert [e.message_id for e in neu.received] == ["m-0", "m-1", "m-2"]


def test_the_budget_ends_the_retries_and_the_error_propagates() -> None:
    neu = MemoryTarget("neu/orders", unavailable=True)
    clock = FakeClock()
    with pytest.raises(TransientForwardError):
        runner(neu, clock=clock, budget=10).run(originals(1))
    assert clock.sleeps == [1, 2, 4]  # the next wait (8 s) would end after the budget
    assert sum(clock.sleeps) <= 10


def test_a_redelivered_batch_sends_only_what_the_target_has_not_acknowledged() -> None:
    neu = MemoryTarget("neu/orders", accept_per_call=2)
    task_runner = runner(neu)
    batch = [dataclasses.replace(e, sequence_number=i) for i, e in enumerate(originals(5))]
    with pytest.raises(TransientForwardError):
        task_runner.run(batch)  # no budget: the first lost connection fails the invocation
    neu.accept_per_call = None
    outcome = task_runner.run(batch)  # the redelivery
    assert [e.message_id for e in neu.received] == [f"m-{i}" for i in range(5)]
    assert (outcome.forwarded, outcome.already_sent) == (5, 2)


def test_a_message_the_batch_holds_twice_is_sent_once() -> None:
    """A Service Bus receiver can return, in one batch, a delivery whose lock expired while it
    waited in the SDK's buffer (a stalled process) beside the broker's redelivery of the same
    message: the same sequence number twice. Both are settled; one replica is sent."""
    neu = MemoryTarget("neu/orders")
    batch = [dataclasses.replace(e, sequence_number=i) for i, e in enumerate(originals(3))]
    redelivered = dataclasses.replace(batch[1], delivery_count=2)
    outcome = runner(neu).run([*batch, redelivered, dataclasses.replace(batch[1])])
    assert [e.message_id for e in neu.received] == ["m-0", "m-1", "m-2"]
    assert (outcome.received, outcome.forwarded, outcome.already_sent) == (5, 5, 2)


def test_narrowing_never_resends_what_was_acknowledged() -> None:
    neu = MemoryTarget("neu/orders", reject=lambda e: "Bad" if e.message_id == "m-2" else None)
    parking = MemoryTarget("weu/parking")
    outcome = runner(neu, parking).run(originals(5))
    assert [e.message_id for e in neu.received] == ["m-0", "m-1", "m-3", "m-4"]
    assert [e.message_id for e in parking.received] == ["m-2"]
    assert outcome.forwarded == 4


def test_a_target_that_refuses_every_message_alone_is_an_outage_not_poison() -> None:
    neu = MemoryTarget("neu/orders", reject=lambda e: "Refused")
    parking = MemoryTarget("weu/parking")
    with pytest.raises(TransientForwardError, match="Refused"):
        runner(neu, parking).run(originals(3))
    assert parking.received == []


def test_a_culprit_named_by_the_sender_is_parked_and_the_rest_sent_in_one_go() -> None:
    neu = MemoryTarget(
        "neu/orders",
        reject=lambda e: "MessageSizeExceeded" if e.message_id == "m-1" else None,
        name_culprit=True,
    )
    parking = MemoryTarget("weu/parking")
    outcome = runner(neu, parking).run(originals(4))
    assert neu.send_calls == 2
    assert outcome.forwarded == 3
    assert [e.message_id for e in parking.received] == ["m-1"]


def test_a_parked_copy_too_large_for_the_parking_entity_is_parked_without_its_body() -> None:
    def too_large(envelope: Envelope) -> str | None:
        return "MessageSizeExceeded" if len(envelope.body) > 100 else None

    neu = MemoryTarget("neu/orders", reject=too_large, name_culprit=True)
    parking = MemoryTarget("weu/parking", reject=too_large, name_culprit=True)
    batch = [Envelope(body=b"ok", message_id="small"), Envelope(body=b"x" * 500, message_id="big")]
    outcome = runner(neu, parking).run(batch)
    assert outcome.forwarded == 1
    (parked,) = parking.received
    assert (parked.message_id, parked.body) == ("big", b"")
    assert parked.application_properties[DEAD_LETTER_REASON] == "MessageSizeExceeded"
    assert str(parked.application_properties[DEAD_LETTER_BODY_OMITTED]).startswith("500 bytes")
    # A notice only: the host must keep the original in the source (its dead-letter queue).
    assert parked.application_properties[DEAD_LETTER_ORIGINAL] == (
        "weu/orders/Subscriptions/replication/$DeadLetterQueue"
    )
    assert [d.source.message_id for d in outcome.dead_letter_in_source] == ["big"]


def test_a_redelivered_message_whose_notice_was_parked_still_stays_in_the_source() -> None:
    """The notice was acknowledged but dead-lettering the original failed (lock lost): on
    redelivery the notice is not parked again, and the original must still not be completed."""

    def too_large(envelope: Envelope) -> str | None:
        return "MessageSizeExceeded" if len(envelope.body) > 100 else None

    neu = MemoryTarget("neu/orders", reject=too_large, name_culprit=True)
    parking = MemoryTarget("weu/parking", reject=too_large, name_culprit=True)
    task_runner = runner(neu, parking)
    big = Envelope(body=b"x" * 500, message_id="big", sequence_number=9, source="weu/orders")
    task_runner.run([big])
    outcome = task_runner.run([big])
    assert len(parking.received) == 1
    assert [d.source.message_id for d in outcome.dead_letter_in_source] == ["big"]


def test_a_parked_copy_records_where_the_original_was_in_its_source() -> None:
    parking = MemoryTarget("weu/parking")
    neu = MemoryTarget("neu/orders", reject=lambda e: "Bad", name_culprit=True)
    enqueued = datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC)
    original = Envelope(
        body=b"x",
        message_id="m",
        sequence_number=42,
        enqueued_time_utc=enqueued,
        source="weu/orders",
    )
    runner(neu, parking).run([original])
    (parked,) = parking.received
    assert parked.application_properties[DEAD_LETTER_SEQUENCE] == 42
    assert parked.application_properties[DEAD_LETTER_ENQUEUED_TIME] == "2024-05-01T12:00:00.250Z"
    # Received back from the parking queue (its own broker facts), then redriven: the source's.
    received = parked.replace(sequence_number=7, enqueued_time_utc=datetime.now(UTC))
    assert unparked(received) == original.replace(source="weu/orders")


MULTI_TARGET = {
    "namespaces": [
        {
            "name": name,
            "region": name,
            "kind": "servicebus",
            "fullyQualifiedNamespace": f"{name}.servicebus.windows.net",
            "connection": f"SB_{name.upper()}",
            "queues": [{"name": "orders"}],
        }
        for name in ("weu", "neu", "sea")
    ],
    "tasks": [
        {
            "name": "fan-out",
            "pattern": "all_active",
            "source": {"namespace": "weu", "entity": "orders"},
            "targets": [
                {"namespace": "neu", "entity": "orders"},
                {"namespace": "sea", "entity": "orders"},
            ],
        }
    ],
}


def test_a_target_that_is_down_does_not_hold_back_a_healthy_one() -> None:
    topology = parse_topology(MULTI_TARGET)
    neu = MemoryTarget("neu/orders", unavailable=True)
    sea = MemoryTarget("sea/orders")
    clock = FakeClock()
    task_runner = TaskRunner(
        topology.resolved("fan-out"),
        {Target("neu", "orders"): neu, Target("sea", "orders"): sea},
        retry=RetryPolicy(min_backoff=1, max_backoff=1, budget=3),
        sleep=clock.sleep,
        clock=clock,
    )
    with pytest.raises(TransientForwardError):
        task_runner.run(originals(2))
    assert [e.message_id for e in sea.received] == ["m-0", "m-1"]
    neu.unavailable = False
    outcome = task_runner.run(originals(2))  # the redelivery reaches only the target missing it
    assert len(sea.received) == 2
    assert [e.message_id for e in neu.received] == ["m-0", "m-1"]
    assert outcome.already_sent == 2
