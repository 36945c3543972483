"""Drain and count: a scenario's figures from the copies its entities held, nothing else.

The input is what the showcase read from the emulator at the end of a scenario
(:class:`Collected`: the copies each entity held, in the order received) and what the scenario
published with where each message must end up (:class:`~._scenario.Expectation`). Nothing the
replicator reports about itself is used. The figures:

- **sent**: messages the scenario published (the broker acknowledged each send);
- **replicated**: replicas (copies carrying ``repl-origin``) held by consumer entities;
- **skipped by loop prevention**: replicas that reached a namespace where a task reads their
  entity, yet were not sent on to at least one of that task's targets: no copy anywhere has
  the path ``<their path>;<target>``. All-active's broker rule (``replication IS NULL``) and the
  path check in code both show up here; a replica counts once per namespace and entity it
  reached, whatever the number of subscriptions that held it;
- **parked**: copies in parking queues and dead-letter queues, by ``DeadLetterReason``;
- **lost**: expected copies that never arrived, of messages that were not parked either (a
  message parked instead of delivered is *misplaced*, not lost);
- **duplicates**: copies beyond the first of one MessageId in one entity;
- **loops**: copies whose ``repl-path`` names a namespace twice, or replicas held in their own
  origin namespace;
- **misplaced**: copies where the scenario did not expect one (a wrong route, a message parked
  that should have been delivered or the other way round, a MessageId nobody sent);
- **lag p50 / p95**: per replica, its enqueue time at the target minus its origin's enqueue time
  (``repl-enqueued-time``, first entry): both are the brokers' clocks.

A scenario **fails** when anything is lost, loops or is misplaced, or a check does not hold;
duplicates (same MessageId, at-least-once delivery) are reported without failing it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from replication.envelope import Envelope
from replication.exceptions import MalformedReplicationPropertyError
from replication.properties import DEAD_LETTER_REASON, read_state, source_enqueued_times
from replication.topology import EntityRef, Topology

from ._places import Places


@dataclass(frozen=True)
class Expectation:
    """Where one published message must end up: one copy in each of ``places`` (entities its
    applications read) and, when ``parked`` names a reason, one parked copy with that reason."""

    message_id: str
    places: frozenset[EntityRef]
    parked: str | None = None


@dataclass(frozen=True)
class Finding:
    """The outcome of a :data:`Check`: whether it holds, one line a person reads, and the
    numbers behind it (by name, in ``showcase.json``)."""

    ok: bool
    text: str
    figures: Mapping[str, float] = field(default_factory=dict)


Check = Callable[["Collected"], Finding]
"""Looks at what the entities held at the end of a scenario (pure; see :mod:`._checks`)."""


@dataclass
class Collected:
    """What one scenario published and what its entities held at the end."""

    topology: Topology
    places: Places
    sent: list[Expectation]
    held: dict[EntityRef, list[Envelope]] = field(default_factory=dict)
    processed: list[tuple[EntityRef, Envelope]] = field(default_factory=list)
    """Copies the scenario's own application processed (they are in ``held`` too)."""
    skipped_by_helper: list[tuple[EntityRef, Envelope]] = field(default_factory=list)
    """Copies its skip helper completed as already processed (in ``held`` too)."""
    measured: list[Finding] = field(default_factory=list)
    """What the scenario measured itself (times no broker holds), for the verdict."""

    def add(self, place: EntityRef, copies: Sequence[Envelope]) -> None:
        self.held.setdefault(place, []).extend(copies)

    def delivered(self) -> Iterator[tuple[EntityRef, Envelope]]:
        """Every copy held by a consumer entity (not parked), in the order received."""
        for place, copies in self.held.items():
            if not self.places.is_parking(place):
                yield from ((place, copy) for copy in copies)

    def parked(self) -> Iterator[tuple[EntityRef, Envelope]]:
        for place, copies in self.held.items():
            if self.places.is_parking(place):
                yield from ((place, copy) for copy in copies)

    def replicas(self) -> Iterator[tuple[EntityRef, Envelope]]:
        """The delivered copies that are replicas."""
        return ((p, c) for p, c in self.delivered() if _path(c))

    def missing(self) -> list[tuple[str, EntityRef | str]]:
        """(MessageId, place or parking reason) of every expected copy not held yet."""
        delivered = {(c.message_id, p) for p, c in self.delivered()}
        parked = {(c.message_id, parked_reason(c)) for _, c in self.parked()}
        gaps: list[tuple[str, EntityRef | str]] = []
        for expected in self.sent:
            gaps += [
                (expected.message_id, p)
                for p in expected.places
                if (expected.message_id, p) not in delivered
            ]
            if expected.parked and (expected.message_id, expected.parked) not in parked:
                gaps.append((expected.message_id, expected.parked))
        return gaps


@dataclass(frozen=True)
class Figures:
    """A scenario's row of the showcase table (see the module docstring)."""

    sent: int
    replicated: int
    skipped: int
    parked: dict[str, int]
    lost: int
    duplicates: int
    loops: int
    misplaced: int
    lag_p50: float | None
    lag_p95: float | None
    findings: tuple[Finding, ...] = ()

    @property
    def failed(self) -> bool:
        return bool(
            self.lost or self.loops or self.misplaced or any(not f.ok for f in self.findings)
        )

    def problems(self) -> list[str]:
        """What failed, in words (empty when nothing did)."""
        words = [
            f"{count} {what}"
            for count, what in (
                (self.lost, "lost"),
                (self.loops, "looping"),
                (self.misplaced, "misplaced"),
            )
            if count
        ]
        return words + [f.text for f in self.findings if not f.ok]


def count(collected: Collected, checks: Sequence[Check] = ()) -> Figures:
    """The :class:`Figures` of ``collected`` (see the module docstring)."""
    expected = {e.message_id: e for e in collected.sent}
    copies: Counter[tuple[str | None, EntityRef]] = Counter(
        (c.message_id, p) for p, c in collected.delivered()
    )
    parked_ids: Counter[str | None] = Counter(c.message_id for _, c in collected.parked())
    duplicates = sum(n - 1 for n in copies.values() if n > 1) + sum(
        n - 1 for n in parked_ids.values() if n > 1
    )
    unexpected: Counter[str | None] = Counter(
        message_id
        for message_id, p in copies.elements()
        if message_id not in expected or p not in expected[message_id].places
    )
    unexpected.update(
        message_id
        for message_id in parked_ids.elements()
        if message_id not in expected or expected[message_id].parked is None
    )
    # A copy that is missing where it belongs and turns up somewhere else is misplaced, not lost.
    lost = sum(1 for message_id, _ in collected.missing() if message_id not in unexpected)
    reasons = Counter(parked_reason(c) for _, c in collected.parked())
    lags = sorted(lag for _, c in collected.replicas() if (lag := _lag(c)) is not None)
    return Figures(
        sent=len(collected.sent),
        replicated=sum(1 for _ in collected.replicas()),
        skipped=_skipped(collected),
        parked=dict(sorted(reasons.items())),
        lost=lost,
        duplicates=duplicates,
        loops=_loops(collected),
        misplaced=unexpected.total(),
        lag_p50=_percentile(lags, 0.50),
        lag_p95=_percentile(lags, 0.95),
        findings=tuple(check(collected) for check in checks) + tuple(collected.measured),
    )


def parked_reason(copy: Envelope) -> str:
    """The reason a parked or dead-lettered copy carries (``?`` when it carries none)."""
    reason = copy.dead_letter_reason or copy.application_properties.get(DEAD_LETTER_REASON)
    return str(reason) if reason else "?"


def _path(copy: Envelope) -> tuple[str, ...]:
    try:
        return read_state(copy.application_properties).path
    except MalformedReplicationPropertyError:
        return ()


def _skipped(collected: Collected) -> int:
    paths = {(c.message_id, _path(c)) for _, c in collected.delivered()}
    onward: dict[tuple[str, str], set[str]] = {}
    for task in collected.topology.tasks:
        if not task.source.dead_letter_queue:
            key = (task.source.namespace, task.source.entity)
            onward.setdefault(key, set()).update(t.namespace for t in task.targets)
    held_back = {
        (c.message_id, p.namespace, p.entity)
        for p, c in collected.replicas()
        if any(
            (c.message_id, (*_path(c), target)) not in paths
            for target in onward.get((p.namespace, p.entity), ())
        )
    }
    return len(held_back)


def _loops(collected: Collected) -> int:
    looping = 0
    for place, copy in collected.delivered():
        path = _path(copy)
        origin = path[0] if path else None
        if len(set(path)) != len(path) or (origin == place.namespace and len(path) > 1):
            looping += 1
    return looping


def _lag(copy: Envelope) -> float | None:
    times = source_enqueued_times(copy.application_properties)
    if not times or not times[0] or copy.enqueued_time_utc is None:
        return None
    origin = datetime.fromisoformat(times[0])
    return (copy.enqueued_time_utc - origin).total_seconds()


def _percentile(values: Sequence[float], fraction: float) -> float | None:
    """The nearest-rank percentile of sorted ``values`` (None when there are none)."""
    if not values:
        return None
    return values[max(1, math.ceil(fraction * len(values))) - 1]


__all__ = ["Check", "Collected", "Expectation", "Figures", "Finding", "count", "parked_reason"]
