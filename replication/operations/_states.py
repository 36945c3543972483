"""A task's state and its "RPO if you failed over now", decided from its figures (no I/O).

``python -m replication status`` and the failover commands read the figures
(:mod:`._figures`); this module says what they mean, with the thresholds of the topology's
``monitoring`` section (:class:`Thresholds`). The first rule that holds decides:

1. **stalled**: a heartbeat path of the task (its source namespace to a target namespace) has
   had no heartbeat for longer than ``heartbeatMaxAge`` (or none within the look-back, twice
   that) while the target namespace can be read: nothing crosses the path although both ends
   answer, so the replicator (or its access) has stopped. Without heartbeats (off, or a task
   within one namespace) a task is never stalled: a stopped replicator then shows as lagging
   once its oldest message is older than ``lagThreshold``, and as replicating while nothing is
   published.
2. **failing**: more messages than ``parkedThreshold`` are parked by the task or wait in its
   source's dead-letter queue: they are not on the target and nothing retries them
   (``redrive`` does).
3. **lagging**: the source holds messages not replicated yet and the oldest is older than
   ``lagThreshold`` (the target is down or throttling, or the replicator is behind).
4. **unknown**: the source cannot be read, so neither the backlog nor the RPO is known.
5. **replicating**: otherwise; a backlog younger than ``lagThreshold`` is replication at work.

The RPO of a failover now is what the target would lack if the source were lost at this
moment: the backlog plus the parked and dead-lettered messages (``messages``; "at least" when
a count stopped at its cap), and the age of the oldest message in the backlog (``seconds``:
everything the source accepted since may be missing at the target; parked and dead-lettered
messages are counted, not timed).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from datetime import timedelta

from replication.topology import Topology


class TaskState(enum.StrEnum):
    """What a task is doing, as ``status`` names it (see the module docstring)."""

    REPLICATING = "replicating"
    LAGGING = "lagging"
    STALLED = "stalled"
    FAILING = "failing"
    UNKNOWN = "unknown"


@dataclasses.dataclass(frozen=True, slots=True)
class Thresholds:
    """The thresholds of the decisions, from the topology's ``monitoring`` section."""

    lag: timedelta
    heartbeat_max_age: timedelta
    parked: int

    @classmethod
    def of(cls, topology: Topology) -> Thresholds:
        monitoring = topology.monitoring
        return cls(
            monitoring.lag_threshold, monitoring.heartbeat_max_age, monitoring.parked_threshold
        )


@dataclasses.dataclass(frozen=True, slots=True)
class PathHeartbeat:
    """The newest heartbeat of one path as read at its target.

    ``age`` None: none within the ``lookback`` seconds (or the target could not be read:
    ``error``)."""

    origin: str
    target: str
    age: float | None
    lookback: float
    error: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Observed:
    """What was read of one task, the decision's input. ``None``: could not be read."""

    backlog: int | None
    backlog_capped: bool = False
    oldest_age: float | None = None
    """Seconds since the oldest message of the backlog was enqueued (None: backlog empty or
    its age unknown)."""
    oldest_at_least: bool = False
    """``oldest_age`` is a lower bound (the age of a newer message: the oldest one could not
    be read)."""
    parked: int | None = None
    dead_lettered: int | None = None
    counts_capped: bool = False
    heartbeats: Sequence[PathHeartbeat] = ()
    source_error: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Rpo:
    """What the target would lack after a failover now (see the module docstring); None:
    unknown."""

    messages: int | None
    at_least: bool
    seconds: float | None
    seconds_at_least: bool = False

    def __str__(self) -> str:
        if self.messages is None:
            return "unknown"
        noun = "message" if self.messages == 1 and not self.at_least else "messages"
        count = f"{self.messages}{'+' if self.at_least else ''} {noun}"
        if not self.seconds:  # no backlog: parked and dead-lettered ones are counted, not timed
            return count
        bound = "at least " if self.seconds_at_least else ""
        return f"{count}, {bound}the last {self.seconds:.1f} s"


@dataclasses.dataclass(frozen=True, slots=True)
class Decision:
    state: TaskState
    reasons: tuple[str, ...]
    """Why, one phrase per rule that holds (the deciding one first)."""
    rpo: Rpo


def decide(observed: Observed, thresholds: Thresholds) -> Decision:
    """The state and RPO of a task (rules in the module docstring)."""
    stalled = [
        _silent(beat, thresholds)
        for beat in observed.heartbeats
        if beat.error is None
        and (beat.age is None or beat.age > _seconds(thresholds.heartbeat_max_age))
    ]
    unreachable = [
        f"target {beat.target} unreachable ({beat.error})"
        for beat in observed.heartbeats
        if beat.error is not None
    ]
    kept = (observed.parked or 0) + (observed.dead_lettered or 0)
    failing = (
        [f"{kept} parked or dead-lettered (threshold {thresholds.parked})"]
        if kept > thresholds.parked
        else []
    )
    lagging = []
    age, limit = observed.oldest_age, _seconds(thresholds.lag)
    if observed.backlog and age is not None and age > limit:
        bound = "at least " if observed.oldest_at_least else ""
        lagging.append(
            f"oldest unreplicated message {bound}{age:.1f} s old (threshold {limit:g} s)"
        )
    unknown = []
    if observed.backlog is None:
        unknown.append(f"backlog unknown: {observed.source_error or 'not read'}")
    if stalled:
        state = TaskState.STALLED
    elif failing:
        state = TaskState.FAILING
    elif lagging:
        state = TaskState.LAGGING
    elif unknown:
        state = TaskState.UNKNOWN
    else:
        state = TaskState.REPLICATING
    order = {
        TaskState.STALLED: (stalled, failing, lagging, unknown),
        TaskState.FAILING: (failing, lagging, unknown),
        TaskState.LAGGING: (lagging, unknown),
        TaskState.UNKNOWN: (unknown,),
        TaskState.REPLICATING: (),
    }[state]
    reasons = tuple(reason for group in order for reason in group) + tuple(unreachable)
    return Decision(state, reasons, rpo(observed))


def rpo(observed: Observed) -> Rpo:
    """What the target would lack after a failover now."""
    if observed.backlog is None:
        return Rpo(None, False, None)
    messages = observed.backlog + (observed.parked or 0) + (observed.dead_lettered or 0)
    at_least = observed.backlog_capped or observed.counts_capped
    if not observed.backlog:
        return Rpo(messages, at_least, 0.0)
    return Rpo(messages, at_least, observed.oldest_age, observed.oldest_at_least)


def _silent(beat: PathHeartbeat, thresholds: Thresholds) -> str:
    limit = _seconds(thresholds.heartbeat_max_age)
    if beat.age is None:
        return f"no heartbeat {beat.origin} -> {beat.target} within {beat.lookback:g} s"
    return f"heartbeat {beat.origin} -> {beat.target} {beat.age:.1f} s old (threshold {limit:g} s)"


def _seconds(value: timedelta) -> float:
    return value.total_seconds()


__all__ = [
    "Decision",
    "Observed",
    "PathHeartbeat",
    "Rpo",
    "TaskState",
    "Thresholds",
    "decide",
    "rpo",
]
