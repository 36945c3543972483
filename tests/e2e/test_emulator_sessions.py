"""Service Bus sessions in the emulator, through the unmodified azure-servicebus SDK.

The emulator here is this module's own (session-enabled entities, some with short lock
durations), so the shared ``regions`` config stays as it is. Each test uses its own queue.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from azure.servicebus import (
    NEXT_AVAILABLE_SESSION,
    AutoLockRenewer,
    ServiceBusClient,
    ServiceBusMessage,
    ServiceBusReceiver,
    ServiceBusSubQueue,
)
from azure.servicebus._common import mgmt_handlers
from azure.servicebus._common.constants import REQUEST_RESPONSE_GET_MESSAGE_SESSIONS_OPERATION
from azure.servicebus.aio import ServiceBusClient as AsyncServiceBusClient
from azure.servicebus.exceptions import (
    OperationTimeoutError,
    ServiceBusError,
    SessionCannotBeLockedError,
    SessionLockLostError,
)

from tests.e2e.conftest import NEEDS_PROTON

pytestmark = pytest.mark.emulator

SESSION = {"RequiresSession": True, "LockDuration": "PT30S", "MaxDeliveryCount": 5}
SHORT_LOCK = {"RequiresSession": True, "LockDuration": "PT2S", "MaxDeliveryCount": 5}
SESSION_QUEUES = ["fifo", "next", "empty", "state", "listed", "renew", "held", "settle", "aio"]

CONFIG: dict[str, Any] = {
    "UserConfig": {
        "Namespaces": [
            {
                "Name": "sessions",
                "Queues": [
                    *({"Name": name, "Properties": SESSION} for name in SESSION_QUEUES),
                    {"Name": "expiry", "Properties": SHORT_LOCK},
                    {"Name": "autorenew", "Properties": SHORT_LOCK},
                    {"Name": "plain"},
                ],
                "Topics": [
                    {
                        "Name": "orders",
                        "Subscriptions": [
                            {"Name": "by-session", "Properties": SESSION},
                            {"Name": "all"},
                        ],
                    }
                ],
            }
        ]
    }
}


@pytest.fixture(scope="module")
def connection() -> Iterator[str]:
    emulator = pytest.importorskip("emulator", reason=NEEDS_PROTON)
    with emulator.run_emulator(CONFIG) as running:
        yield running.connection_string("sessions")


@pytest.fixture
def client(connection: str) -> Iterator[ServiceBusClient]:
    with ServiceBusClient.from_connection_string(connection) as client:
        yield client


@pytest.fixture
def client_without_retries(connection: str) -> Iterator[ServiceBusClient]:
    """For a refusal the test expects: the SDK retries a refused attach (``retry_total``, 3 by
    default, with backoff), which only repeats the same refusal about 20 s long."""
    with ServiceBusClient.from_connection_string(connection, retry_total=0) as client:
        yield client


def _send(client: ServiceBusClient, queue: str, *messages: tuple[str, str]) -> None:
    """Send ``(session id, body)`` pairs in this order."""
    with client.get_queue_sender(queue) as sender:
        sender.send_messages([ServiceBusMessage(body, session_id=sid) for sid, body in messages])


def _receive_all(receiver: ServiceBusReceiver, *, complete: bool = True) -> list[Any]:
    received = []
    while batch := receiver.receive_messages(max_message_count=20, max_wait_time=2):
        for message in batch:
            if complete:
                receiver.complete_message(message)
        received += batch
    return received


def test_each_session_is_received_in_order(client: ServiceBusClient) -> None:
    sent = [(f"s{i % 3}", f"s{i % 3}-{i}") for i in range(12)]
    _send(client, "fifo", *sent)
    for session_id in ("s2", "s0", "s1"):
        with client.get_queue_receiver("fifo", session_id=session_id) as receiver:
            assert receiver.session.session_id == session_id
            received = _receive_all(receiver)
        assert [str(m) for m in received] == [body for sid, body in sent if sid == session_id]
        assert {m.session_id for m in received} == {session_id}


def test_next_available_takes_a_session_with_messages_that_nobody_holds(
    client: ServiceBusClient,
) -> None:
    _send(client, "next", ("first", "1"), ("second", "2"))
    with client.get_queue_receiver("next", session_id="first") as holding:
        with client.get_queue_receiver(
            "next", session_id=NEXT_AVAILABLE_SESSION, max_wait_time=5
        ) as receiver:
            assert receiver.session.session_id == "second"
            assert [str(m) for m in _receive_all(receiver)] == ["2"]
        assert [str(m) for m in _receive_all(holding)] == ["1"]


def test_next_available_times_out_when_no_session_has_messages(
    client_without_retries: ServiceBusClient,
) -> None:
    started = time.monotonic()
    receiver = client_without_retries.get_queue_receiver(
        "empty", session_id=NEXT_AVAILABLE_SESSION, max_wait_time=2
    )
    with pytest.raises(OperationTimeoutError), receiver:
        receiver.receive_messages(max_message_count=1)
    assert time.monotonic() - started < 60  # the receiver's wait, not the SDK's 65 s default


def test_a_session_held_by_a_receiver_cannot_be_locked_by_another(
    client: ServiceBusClient, client_without_retries: ServiceBusClient
) -> None:
    _send(client, "held", ("only", "x"))
    with client.get_queue_receiver("held", session_id="only") as first:
        assert len(first.receive_messages(max_message_count=1, max_wait_time=5)) == 1
        second = client_without_retries.get_queue_receiver(
            "held", session_id="only", max_wait_time=2
        )
        with pytest.raises(SessionCannotBeLockedError), second:
            second.receive_messages(max_message_count=1)
    # Closing the first receiver ends its lock: the session can be locked again.
    with client.get_queue_receiver("held", session_id="only") as receiver:
        (message,) = _receive_all(receiver)
    assert message.delivery_count == 1  # delivered once before, not settled


def test_session_state_is_kept_by_the_session(client: ServiceBusClient) -> None:
    _send(client, "state", ("stateful", "x"))
    with client.get_queue_receiver("state", session_id="stateful") as receiver:
        assert receiver.session.get_state() is None
        receiver.session.set_state("step 1")
    with client.get_queue_receiver("state", session_id="stateful") as receiver:
        assert receiver.session.get_state() == b"step 1"
        receiver.session.set_state(b"\x00\xff")
        assert receiver.session.get_state() == b"\x00\xff"
        receiver.session.set_state(None)
        assert receiver.session.get_state() is None
        _receive_all(receiver)


def _list_sessions(receiver: ServiceBusReceiver, updated_after: datetime | None) -> list[str]:
    """``com.microsoft:get-message-sessions`` through the SDK's own request and reply handling
    (7.15 has the reply handler, ``list_sessions_op``, but no public method calling it).
    Without ``updated_after``: the far-future time that asks for sessions with messages."""
    since = updated_after or datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    listed: list[str] = receiver._mgmt_request_response_with_retry(
        REQUEST_RESPONSE_GET_MESSAGE_SESSIONS_OPERATION,
        {"last-updated-time": since, "skip": 0, "top": 100},
        mgmt_handlers.list_sessions_op,
        keep_alive_associated_link=False,
    )
    return listed


def test_sessions_are_listed_by_messages_or_by_state_updates(client: ServiceBusClient) -> None:
    _send(client, "listed", ("a", "1"), ("b", "2"), ("c", "3"))
    before = datetime.now(UTC) - timedelta(seconds=1)
    with client.get_queue_receiver("listed", session_id="c") as receiver:
        _receive_all(receiver)
        receiver.session.set_state(b"done")
        assert sorted(_list_sessions(receiver, None)) == ["a", "b"]
        assert _list_sessions(receiver, before) == ["c"]
        assert _list_sessions(receiver, datetime.now(UTC) + timedelta(seconds=5)) == []


def test_renewing_the_session_lock_moves_its_end(client: ServiceBusClient) -> None:
    _send(client, "renew", ("kept", "x"))
    with client.get_queue_receiver("renew", session_id="kept") as receiver:
        first = receiver.session.locked_until_utc
        assert first is not None
        assert first > datetime.now(UTC) + timedelta(seconds=20)
        time.sleep(1.1)
        renewed = receiver.session.renew_lock()
        assert renewed > first
        (message,) = receiver.receive_messages(max_message_count=1, max_wait_time=5)
        receiver.complete_message(message)  # its lock is the session's, renewed with it


def test_an_expired_session_lock_is_lost_and_its_messages_come_back(
    client: ServiceBusClient,
) -> None:
    _send(client, "expiry", ("slow", "x"))
    with client.get_queue_receiver("expiry", session_id="slow") as receiver:
        (message,) = receiver.receive_messages(max_message_count=1, max_wait_time=5)
        assert message.delivery_count == 0
        deadline = time.monotonic() + 30
        redelivered = None
        while redelivered is None and time.monotonic() < deadline:
            time.sleep(0.5)
            try:
                with client.get_queue_receiver("expiry", session_id="slow") as second:
                    redelivered = second.receive_messages(max_message_count=1, max_wait_time=5)
                    for again in redelivered:
                        second.complete_message(again)
            except SessionCannotBeLockedError:
                continue
        assert redelivered is not None
        assert [m.delivery_count for m in redelivered] == [1]
        with pytest.raises(SessionLockLostError):
            receiver.complete_message(message)


def test_messages_are_settled_inside_a_session(client: ServiceBusClient) -> None:
    _send(client, "settle", *(("job", body) for body in ("done", "retry", "later", "bad")))
    _send(client, "settle", ("other", "elsewhere"))
    with client.get_queue_receiver("settle", session_id="job") as receiver:
        peeked = receiver.peek_messages(max_message_count=10)
        assert [str(m) for m in peeked] == ["done", "retry", "later", "bad"]
        done, retry, later, bad = receiver.receive_messages(max_message_count=4, max_wait_time=5)
        receiver.complete_message(done)
        receiver.abandon_message(retry)
        receiver.defer_message(later)
        receiver.dead_letter_message(bad, reason="Invalid", error_description="no schema")
        (again,) = receiver.receive_messages(max_message_count=1, max_wait_time=5)
        assert (str(again), again.delivery_count) == ("retry", 1)
        receiver.complete_message(again)
        assert later.sequence_number is not None
        (deferred,) = receiver.receive_deferred_messages([later.sequence_number])
        assert str(deferred) == "later"
        receiver.complete_message(deferred)
        assert receiver.peek_messages(max_message_count=10) == []
    with client.get_queue_receiver("settle", sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
        (dead,) = _receive_all(dlq)
    assert (str(dead), dead.dead_letter_reason, dead.session_id) == ("bad", "Invalid", "job")


def test_a_message_without_session_id_is_refused_by_a_session_queue(
    client: ServiceBusClient,
) -> None:
    with client.get_queue_sender("fifo") as sender, pytest.raises(ServiceBusError) as raised:
        sender.send_messages(ServiceBusMessage("no session"))
    assert "SessionId" in str(raised.value)


def test_receivers_must_match_the_entity_sessions_setting(client: ServiceBusClient) -> None:
    plain_on_sessions = client.get_queue_receiver("fifo", max_wait_time=2)
    with pytest.raises(ServiceBusError) as raised, plain_on_sessions:
        plain_on_sessions.receive_messages(max_message_count=1)
    assert "non-sessionful" in str(raised.value)
    sessions_on_plain = client.get_queue_receiver("plain", session_id="x", max_wait_time=2)
    with pytest.raises(ServiceBusError) as raised, sessions_on_plain:
        sessions_on_plain.receive_messages(max_message_count=1)
    assert "does not require sessions" in str(raised.value)


def test_a_session_subscription_receives_by_session_and_dead_letters_copies_without_one(
    client: ServiceBusClient,
) -> None:
    with client.get_topic_sender("orders") as sender:
        sender.send_messages(
            [ServiceBusMessage("with", session_id="o1"), ServiceBusMessage("without")]
        )
    with client.get_subscription_receiver("orders", "by-session", session_id="o1") as receiver:
        assert [str(m) for m in _receive_all(receiver)] == ["with"]
    with client.get_subscription_receiver("orders", "all") as receiver:
        assert sorted(str(m) for m in _receive_all(receiver)) == ["with", "without"]
    with client.get_subscription_receiver(
        "orders", "by-session", sub_queue=ServiceBusSubQueue.DEAD_LETTER
    ) as dlq:
        (dead,) = _receive_all(dlq)
    assert (str(dead), dead.dead_letter_reason) == ("without", "SessionIdIsMissing")


def test_auto_lock_renewer_keeps_a_next_available_session(client: ServiceBusClient) -> None:
    _send(client, "autorenew", ("long", "x"))
    renewer = AutoLockRenewer(max_lock_renewal_duration=30)
    receiver = client.get_queue_receiver(
        "autorenew", session_id=NEXT_AVAILABLE_SESSION, max_wait_time=5, auto_lock_renewer=renewer
    )
    with renewer, receiver:
        (message,) = receiver.receive_messages(max_message_count=1, max_wait_time=5)
        time.sleep(5)  # more than twice the 2 s lock
        receiver.complete_message(message)
        assert receiver.session.auto_renew_error is None


def test_async_sessions(connection: str) -> None:
    async def scenario() -> tuple[str, list[str], bytes | None]:
        async with AsyncServiceBusClient.from_connection_string(connection) as client:
            async with client.get_queue_sender("aio") as sender:
                await sender.send_messages(
                    [ServiceBusMessage(f"m{i}", session_id="async") for i in range(3)]
                )
            async with client.get_queue_receiver(
                "aio", session_id=NEXT_AVAILABLE_SESSION, max_wait_time=5
            ) as receiver:
                bodies = []
                while batch := await receiver.receive_messages(max_wait_time=2):
                    for message in batch:
                        await receiver.complete_message(message)
                        bodies.append(str(message))
                await receiver.session.set_state(b"async state")
                await receiver.session.renew_lock()
                state = await receiver.session.get_state()
                return receiver.session.session_id, bodies, state

    assert asyncio.run(scenario()) == ("async", ["m0", "m1", "m2"], b"async state")
