"""The one backoff policy: waits that double up to a cap, and an invocation's attempt budget.

Every retry loop of the project waits this way: the runner between rounds of sends and of
parking (:class:`Budget`, within the invocation's budget), the local host's receive loops
between reconnects and its Event Hubs batches between retries (:class:`Backoff` alone, until
they are stopped).

- :class:`Backoff`: ``first``, then twice the previous wait, never more than ``cap``.
- :class:`RetryPolicy`: a task's backoff (``retry.minBackoff`` .. ``retry.maxBackoff``) and
  how long one invocation may retry (``attempt_budget``, under the source's lock).
- :class:`Budget`: one invocation under a policy: its deadline, how long one send may take,
  and :class:`Retries`, the waits of one retry loop, which give up when the next wait would
  end past the deadline.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from datetime import timedelta

from replication.topology import ResolvedTask

MIN_SEND_TIMEOUT = 5.0
"""Seconds a send gets even when the budget is spent (the last attempt must be able to finish)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Backoff:
    """Waits of a retry loop: ``first``, then twice the previous one, at most ``cap``."""

    first: float
    cap: float

    def delays(self) -> Iterator[float]:
        """The waits, one per failure in a row; start again with a new iterator after a
        success."""
        delay = self.first
        while True:
            yield delay
            delay = min(delay * 2, self.cap)


@dataclasses.dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Backoff between attempts of one invocation, and how long the invocation may retry.

    The default retries nothing (dry runs and tests); :meth:`from_task` is what deployed and
    local runs use.
    """

    min_backoff: float = 1.0
    max_backoff: float = 30.0
    budget: float = 0.0
    bound_sends: bool = True
    """Bound each send by what is left of the budget. Needed where nothing renews the
    source's locks (the Functions host, for batches); a host that renews them (the local host)
    turns it off and lets a send to a hung target finish instead of re-sending it."""

    @classmethod
    def from_task(
        cls, task: ResolvedTask, budget: timedelta, *, bound_sends: bool = True
    ) -> RetryPolicy:
        retry = task.spec.retry
        return cls(
            retry.min_backoff.total_seconds(),
            retry.max_backoff.total_seconds(),
            budget.total_seconds(),
            bound_sends,
        )

    @property
    def backoff(self) -> Backoff:
        return Backoff(self.min_backoff, self.max_backoff)


class Budget:
    """One invocation's attempt budget under ``policy``, from now on."""

    def __init__(
        self,
        policy: RetryPolicy,
        clock: Callable[[], float],
        sleep: Callable[[float], object],
    ) -> None:
        self.policy = policy
        self.clock = clock
        self.sleep = sleep
        self.deadline = clock() + policy.budget

    def timeout(self) -> float | None:
        """What is left of the budget for one send (None: no budget, the SDK's default)."""
        if not self.policy.budget or not self.policy.bound_sends:
            return None
        return max(MIN_SEND_TIMEOUT, self.deadline - self.clock())

    def retries(self) -> Retries:
        """The waits of one retry loop within this budget."""
        return Retries(self)


class Retries:
    """The waits of one retry loop: :attr:`delay` is the next one; :meth:`exhausted` when it
    would end past the budget's deadline (the caller gives up); :meth:`wait` sleeps it."""

    def __init__(self, budget: Budget) -> None:
        self._budget = budget
        self._delays = budget.policy.backoff.delays()
        self.delay = next(self._delays)
        self.count = 0
        """Waits taken: the transient failures ridden out."""

    def exhausted(self) -> bool:
        return self._budget.clock() + self.delay > self._budget.deadline

    def wait(self) -> None:
        self.count += 1
        self._budget.sleep(self.delay)
        self.delay = next(self._delays)


__all__ = ["MIN_SEND_TIMEOUT", "Backoff", "Budget", "Retries", "RetryPolicy"]
