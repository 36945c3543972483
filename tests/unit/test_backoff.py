"""The one backoff policy: doubling waits with a cap, and an invocation's budget."""

from __future__ import annotations

import itertools

from replication.runtime import Backoff, Budget, RetryPolicy


def test_waits_double_up_to_the_cap_and_start_again_with_a_new_iterator() -> None:
    backoff = Backoff(5.0, 30.0)
    assert list(itertools.islice(backoff.delays(), 6)) == [5.0, 10.0, 20.0, 30.0, 30.0, 30.0]
    assert next(backoff.delays()) == 5.0


def test_retries_give_up_when_the_next_wait_would_end_past_the_deadline() -> None:
    now = [100.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    budget = Budget(RetryPolicy(1.0, 4.0, budget=10.0), lambda: now[0], sleep)
    assert budget.deadline == 110.0
    retries = budget.retries()
    while not retries.exhausted():
        retries.wait()
    assert slept == [1.0, 2.0, 4.0]  # 7 s spent; the next 4 s wait would end at 111
    assert (retries.count, retries.delay) == (3, 4.0)


def test_a_send_is_bounded_by_what_is_left_unless_the_host_renews_locks() -> None:
    now = [0.0]
    bounded = Budget(RetryPolicy(budget=60.0), lambda: now[0], lambda _: None)
    now[0] = 20.0
    assert bounded.timeout() == 40.0
    now[0] = 58.0
    assert bounded.timeout() == 5.0  # the last attempt still gets MIN_SEND_TIMEOUT
    assert Budget(RetryPolicy(budget=60.0, bound_sends=False), lambda: 0.0, print).timeout() is None
    assert Budget(RetryPolicy(), lambda: 0.0, print).timeout() is None
