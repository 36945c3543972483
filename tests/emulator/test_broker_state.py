"""The Service Bus broker model on a fake clock: locks, delivery counts, TTL, settlements.

No sockets and no sleeping: time is a number the test moves, so a 30-second lock expiry or a
one-hour TTL is checked in microseconds, and each assertion names the exact state reached.
"""

from __future__ import annotations

import uuid

import pytest

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")

from proton import Message

from emulator._servicebus import Broker, EntitySettings, Receivable, Settlement


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def queue(clock: Clock, **settings: object) -> tuple[Broker, Receivable]:
    broker = Broker(clock=clock)
    broker.add_queue("q", EntitySettings(**settings))  # type: ignore[arg-type]
    receivable = broker.receivable("q")
    assert receivable is not None
    return broker, receivable


def send(broker: Broker, body: str, *, ttl: float | None = None) -> None:
    message = Message(body=body)
    if ttl is not None:
        message.ttl = ttl
    assert broker.send("q", message)


def lock(receivable: Receivable, clock: Clock) -> uuid.UUID:
    stored = receivable.take(clock.now, lock=True)
    assert stored is not None
    assert stored.lock_token is not None
    return stored.lock_token


def test_an_expired_lock_counts_a_delivery_and_redelivers(clock: Clock) -> None:
    broker, q = queue(clock, lock_duration=30.0, max_delivery_count=5)
    send(broker, "a")
    first = lock(q, clock)
    clock.now += 29.9
    q.sweep(clock.now)
    assert first in q.locked
    clock.now += 0.2
    q.sweep(clock.now)
    assert not q.locked
    assert [s.delivery_count for s in q.available] == [1]
    # The old token is gone: settling with it fails and changes nothing.
    assert q.settle(first, Settlement.COMPLETE, clock.now) is False
    assert len(q.available) == 1


def test_max_delivery_count_moves_the_message_to_the_dead_letter_queue(clock: Clock) -> None:
    broker, q = queue(clock, max_delivery_count=2)
    send(broker, "poison")
    for _ in range(2):
        assert q.settle(lock(q, clock), Settlement.ABANDON, clock.now)
    assert not q.available
    assert q.dead_letter is not None
    (dead,) = q.dead_letter.available
    assert dead.message.properties["DeadLetterReason"] == "MaxDeliveryCountExceeded"


def test_release_does_not_count_a_delivery(clock: Clock) -> None:
    broker, q = queue(clock, max_delivery_count=1)
    send(broker, "prefetched")
    for _ in range(3):
        assert q.settle(lock(q, clock), Settlement.RELEASE, clock.now)
    assert [s.delivery_count for s in q.available] == [0]


def test_defer_keeps_the_message_for_receive_by_sequence_number(clock: Clock) -> None:
    broker, q = queue(clock)
    send(broker, "later")
    token = lock(q, clock)
    assert q.settle(token, Settlement.DEFER, clock.now)
    assert not q.available
    (deferred,) = q.deferred.values()
    (again,) = q.lock_deferred([deferred.sequence_number], clock.now, lock=True)
    assert again.message.body == "later"


def test_dead_letter_keeps_reason_and_description_and_never_expires_there(clock: Clock) -> None:
    broker, q = queue(clock, default_ttl=60.0)
    send(broker, "bad")
    assert q.settle(
        lock(q, clock), Settlement.DEAD_LETTER, clock.now, reason="Invalid", description="why"
    )
    assert q.dead_letter is not None
    clock.now += 3_600
    q.dead_letter.sweep(clock.now)
    (dead,) = q.dead_letter.available
    assert dead.expires_at is None
    assert dead.message.properties["DeadLetterReason"] == "Invalid"
    assert dead.message.properties["DeadLetterErrorDescription"] == "why"


def test_dead_lettering_in_a_dead_letter_queue_keeps_the_message(clock: Clock) -> None:
    """A dead-letter queue has none of its own: the message goes back instead of vanishing."""
    broker, q = queue(clock)
    send(broker, "twice bad")
    assert q.settle(lock(q, clock), Settlement.DEAD_LETTER, clock.now, reason="once")
    assert q.dead_letter is not None
    dlq = q.dead_letter
    assert dlq.settle(lock(dlq, clock), Settlement.DEAD_LETTER, clock.now, reason="twice")
    assert [s.message.body for s in dlq.available] == ["twice bad"]


def test_ttl_expiry_dead_letters_when_configured_and_drops_otherwise(clock: Clock) -> None:
    broker, kept = queue(clock, dead_lettering_on_expiration=True)
    send(broker, "short", ttl=10.0)
    clock.now += 10.0
    kept.sweep(clock.now)
    assert not kept.available
    assert kept.dead_letter is not None
    (dead,) = kept.dead_letter.available
    assert dead.message.properties["DeadLetterReason"] == "TTLExpiredException"

    broker, dropped = queue(clock)
    send(broker, "short", ttl=10.0)
    clock.now += 10.0
    dropped.sweep(clock.now)
    assert not dropped.available
    assert dropped.dead_letter is not None
    assert not dropped.dead_letter.available


def test_every_settlement_is_handled() -> None:
    """A new outcome must be handled by Receivable.settle (mypy's assert_never checks it too)."""
    assert {s.value for s in Settlement} == {
        "complete",
        "abandon",
        "release",
        "defer",
        "dead-letter",
    }
