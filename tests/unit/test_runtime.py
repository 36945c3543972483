"""TaskRunner: plan, send per target, narrow permanent failures, park or raise for the rest.

Targets are ``MemoryTarget`` objects, the in-memory transport (a real sender that keeps what it
gets); the Service Bus and Event Hubs senders are exercised against the emulator elsewhere.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from patterns import Target
from replication.envelope import Envelope
from replication.exceptions import MessageRejectedError, TransientForwardError
from replication.properties import DEAD_LETTER_REASON, REPL_ORIGIN, REPL_PATH
from replication.runtime import TaskRunner
from replication.topology import load_topology
from replication.transport.memory import MemoryTarget

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def runner(target: MemoryTarget, dead_letter: MemoryTarget | None = None) -> TaskRunner:
    topology = load_topology(EXAMPLES / "two-region-all-active.json")
    task = topology.task("orders-weu-to-neu")
    return TaskRunner(topology.resolved(task), {Target("neu", "orders"): target}, dead_letter)


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
