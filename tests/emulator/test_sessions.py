"""The session model of the Service Bus broker on a fake clock: per-session FIFO, session
locks and their expiry, TTL inside sessions, and session state kept by ``--data-dir``."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")

from proton import Message

from emulator._persistence import restore_servicebus, servicebus_state
from emulator._servicebus import Broker, EntitySettings, Receivable, Settlement


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def session_queue(clock: Clock) -> tuple[Broker, Receivable]:
    broker = Broker(clock=clock)
    broker.add_queue("q", EntitySettings(requires_session=True, lock_duration=30.0))
    receivable = broker.receivable("q")
    assert receivable is not None
    return broker, receivable


def send(broker: Broker, body: str, session_id: str | None, ttl: float | None = None) -> None:
    message = Message(body=body, group_id=session_id)
    if ttl is not None:
        message.ttl = ttl
    assert broker.refusal("q", message) is None
    assert broker.send("q", message)


def test_sessions_are_fifo_and_locked_by_one_holder_at_a_time() -> None:
    clock = Clock()
    broker, queue = session_queue(clock)
    for body, session_id in [("a1", "a"), ("b1", "b"), ("a2", "a")]:
        send(broker, body, session_id)
    holder, other = object(), object()
    session = queue.lock_session(None, holder, clock.now)
    assert session is not None
    assert session.session_id == "a"  # the session whose first message is oldest
    assert queue.lock_session("a", other, clock.now) is None
    assert queue.lock_session(None, other, clock.now) is not None  # b, free
    bodies = []
    while (stored := queue.take(clock.now, lock=True, session=session)) is not None:
        bodies.append(stored.message.body)
    assert bodies == ["a1", "a2"]


def test_an_expired_session_lock_frees_the_session_and_counts_its_messages() -> None:
    clock = Clock()
    broker, queue = session_queue(clock)
    send(broker, "x", "s")
    session = queue.lock_session("s", object(), clock.now)
    assert session is not None
    stored = queue.take(clock.now, lock=True, session=session)
    assert stored is not None
    assert stored.locked_until == session.locked_until
    clock.now += 20
    queue.renew_session(session, clock.now)
    clock.now += 20  # 40 s after the lock, 20 after the renewal: still held
    queue.sweep(clock.now)
    assert session.holder is not None
    clock.now += 11
    queue.sweep(clock.now)
    assert session.holder is None
    assert stored.lock_token is None
    again = queue.lock_session("s", object(), clock.now)
    assert again is not None
    redelivered = queue.take(clock.now, lock=True, session=again)
    assert redelivered is not None
    assert redelivered.delivery_count == 1


def test_a_message_without_session_id_is_refused_and_ttl_applies_in_sessions() -> None:
    clock = Clock()
    broker, queue = session_queue(clock)
    assert broker.refusal("q", Message(body="x")) is not None
    send(broker, "short", "s", ttl=5)
    clock.now += 6
    queue.sweep(clock.now)
    assert queue.available_messages() == []


def test_session_state_and_messages_survive_a_snapshot() -> None:
    clock = Clock()
    broker, queue = session_queue(clock)
    send(broker, "kept", "s")
    session = queue.lock_session("s", object(), clock.now)
    assert session is not None
    session.state, session.state_updated = b"\x00state", clock.now
    stored = queue.take(clock.now, lock=True, session=session)
    assert stored is not None
    assert stored.lock_token is not None
    queue.settle(stored.lock_token, Settlement.DEFER, clock.now)
    send(broker, "waiting", "s")

    restored_broker, restored = session_queue(clock)
    restore_servicebus(restored_broker, servicebus_state(broker), "test")
    assert restored.sessions is not None
    restored_session = restored.sessions.sessions["s"]
    assert (restored_session.state, restored_session.state_updated) == (b"\x00state", clock.now)
    assert restored_session.holder is None
    assert [_body(s.message) for s in restored.available_messages()] == ["waiting"]
    assert [_body(s.message) for s in restored.deferred.values()] == ["kept"]


def _body(message: Message) -> Any:
    """The body proton decodes (the broker itself keeps bodies encoded, emulator._message)."""
    decoded = Message()
    decoded.decode(message.encode())
    return decoded.body
