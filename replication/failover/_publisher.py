"""When a publisher moves to another namespace: the decisions behind the failover publishers.

:class:`PublisherCore` holds no client; the sync and async publishers
(:mod:`replication.failover._clients`) ask it where to send, and tell it how each attempt went.

- **The operator's switch**: the target is what the binding store says for the publisher
  (:class:`~replication.failover._follower.BindingFollower`), followed within its poll interval.
- **The publisher's own switch**: when sends to the target keep failing transiently for the
  ``unavailability_window`` (measured from the *start* of the first failed attempt after the
  last success: a namespace that hangs costs the window, not the window plus a call deadline
  before the window even starts), the
  publisher moves to the next namespace of its list (in order, wrapping around) and logs a
  WARNING. That choice holds until the binding store changes (a new generation): an operator's
  decision made after the publisher switched wins, and the publisher never drifts back to a
  namespace the store still names but that it found unusable. The publisher does not write the
  store: consumers move when the operator moves them (``python -m replication failover``).
- Between failed attempts on one namespace it waits with backoff, 0.1 s doubling to 1 s.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta

from ._follower import BindingFollower

logger = logging.getLogger(__name__)

DEFAULT_UNAVAILABILITY_WINDOW = timedelta(seconds=30)
FIRST_BACKOFF = 0.1
MAX_BACKOFF = 1.0


@dataclasses.dataclass(slots=True)
class PublisherCounters:
    """Sends that succeeded, attempts that failed, and switches of namespace by cause."""

    sends: int = 0
    failures: int = 0
    own_switches: int = 0
    followed_switches: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class _OwnChoice:
    namespace: str
    generation: int | None


class PublisherCore:
    """Where to send now, from the binding store and the publisher's own experience."""

    def __init__(
        self,
        follower: BindingFollower,
        *,
        unavailability_window: timedelta = DEFAULT_UNAVAILABILITY_WINDOW,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if unavailability_window < timedelta(0):
            raise ValueError(f"unavailability_window must not be negative: {unavailability_window}")
        self.follower = follower
        self.window = unavailability_window.total_seconds()
        self._clock = clock
        self._lock = threading.Lock()
        self._own: _OwnChoice | None = None
        self._failing_since: dict[str, float] = {}
        self._succeeded_at: dict[str, float] = {}
        self._last_target: str | None = None
        self.counters = PublisherCounters()

    def target(self) -> str:
        """The namespace to send to now."""
        bound = self.follower.namespace()
        with self._lock:
            if self._own is not None and self._own.generation != self.follower.generation:
                logger.info("%s: the binding store changed; following it to %s", self._who(), bound)
                self._own = None
            target = bound if self._own is None else self._own.namespace
            if self._last_target is not None and target != self._last_target and self._own is None:
                self.counters.followed_switches += 1
            self._last_target = target
            return target

    def succeeded(self, namespace: str) -> None:
        with self._lock:
            self.counters.sends += 1
            self._failing_since.pop(namespace, None)
            self._succeeded_at[namespace] = self._clock()

    def failed(
        self, namespace: str, error: BaseException, *, started: float | None = None
    ) -> str | None:
        """A transient failure of an attempt to send to ``namespace`` that began at ``started``
        (the ``clock``'s time; default now); returns the namespace to switch to when it has now
        been failing for the unavailability window, counted from the start of the first failed
        attempt, else None (retry it)."""
        now = self._clock()
        began = now if started is None else min(started, now)
        with self._lock:
            # An attempt that began before another one succeeded fails after the success:
            # the namespace has been failing since the success, not since that attempt began.
            began = max(began, self._succeeded_at.get(namespace, began))
            self.counters.failures += 1
            since = self._failing_since.setdefault(namespace, began)
            if now - since < self.window or len(self.follower.namespaces) < 2:
                return None
            names = self.follower.namespaces
            following = names[(names.index(namespace) + 1) % len(names)]
            self._failing_since.pop(namespace, None)
            self._failing_since.pop(following, None)
            self._own = _OwnChoice(following, self.follower.generation)
            self._last_target = following
            self.counters.own_switches += 1
        logger.warning(
            "%s: %s failing for %.1f s (%s); publishing to %s until the binding store changes",
            self._who(),
            namespace,
            now - since,
            error,
            following,
        )
        return following

    @staticmethod
    def backoff(attempt: int) -> float:
        """Seconds to wait before retry ``attempt`` (0-based) on the same namespace."""
        return float(min(MAX_BACKOFF, FIRST_BACKOFF * 2**attempt))

    def _who(self) -> str:
        parts = [self.follower.app, self.follower.instance, self.follower.entity]
        return "/".join(part for part in parts if part)


__all__ = ["DEFAULT_UNAVAILABILITY_WINDOW", "PublisherCore", "PublisherCounters"]
