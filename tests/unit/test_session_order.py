"""The session order guard of the local host's session loops: a batch that goes back in its
session's sequence numbers is never forwarded, and its session is stopped, saying so.

The guard reads only each message's sequence number and scheduled time, so these tests give it
plain values; the loops that use it run end to end in ``tests/faults/test_sessions.py`` and
``tests/faults/test_session_order_race.py``."""

from __future__ import annotations

import dataclasses
import logging
import threading
from datetime import UTC, datetime

import pytest

from replication.exceptions import SessionOrderError
from replication.runtime import TaskStatus
from replication.transport.servicebus import SessionOrder, hold_stopped_session


@dataclasses.dataclass(frozen=True)
class Received:
    sequence_number: int | None
    scheduled_enqueue_time_utc: datetime | None = None


def batch(*numbers: int) -> list[Received]:
    return [Received(n) for n in numbers]


def test_batches_in_order_pass_and_what_was_settled_counts() -> None:
    order = SessionOrder("weu/orders", "s1")
    order.check(batch(3, 7, 9))
    order.settled(batch(3, 7, 9))
    order.check(batch(12, 13))  # gaps are other sessions' messages
    assert order.settled_up_to == 9


@pytest.mark.parametrize(
    ("first", "second", "late"),
    [((3, 7, 9), (8, 10), 8), ((3, 7, 9), (9,), 9), ((), (5, 4), 4)],
)
def test_a_message_after_one_that_followed_it_is_refused(
    first: tuple[int, ...], second: tuple[int, ...], late: int
) -> None:
    order = SessionOrder("weu/orders", "s1")
    order.check(batch(*first))
    order.settled(batch(*first))
    with pytest.raises(SessionOrderError, match=f"session s1: message {late} arrived after"):
        order.check(batch(*second))


def test_a_failed_batch_comes_back_from_its_first_message() -> None:
    """A batch that failed was abandoned, not settled: its redelivery is in order."""
    order = SessionOrder("weu/orders", "s1")
    order.check(batch(3, 4))
    order.check(batch(3, 4, 5))


def test_scheduled_messages_keep_their_earlier_sequence_numbers() -> None:
    """A scheduled message got its sequence number when it was scheduled and comes when its
    time comes, after messages stored later: not a break of the order."""
    order = SessionOrder("weu/orders", "s1")
    order.check(batch(10, 11))
    order.settled(batch(10, 11))
    order.check([Received(5, datetime.now(UTC)), Received(12)])


def test_a_stopped_session_is_held_renewed_and_reported_until_the_host_stops(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stop = threading.Event()
    status = TaskStatus()
    renewals: list[int] = []

    def renew() -> None:
        renewals.append(1)
        if len(renewals) == 2:
            stop.set()

    error = SessionOrderError("weu/orders: session s1: message 8 arrived after message 9")
    with caplog.at_level(logging.ERROR):
        hold_stopped_session(renew, stop, status, error, renew_every=0.001)
    assert len(renewals) == 2
    assert status.failing
    (record,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert "message 8 arrived after message 9" in record.getMessage()
    assert "the session is stopped" in record.getMessage()
