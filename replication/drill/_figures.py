"""The drill's figures, from what its sample applications recorded (no I/O).

Per phase (failover, failback) and application:

- **published**: messages a namespace acknowledged during the phase;
- **consumed**: distinct messages the application processed during the phase;
- **lost**: messages acknowledged up to the end of the phase that the application has not
  processed by then (after the drill waited for the consumers to catch up), each named;
- **RTO**: the longest time without a successful publish, and without a processed message,
  counted from the start of the phase (the kill or the switch) to the pause of the publishers;
- **duplicates seen by the application**: messages processed during the phase that it had
  processed before, with the skip helper (what got through) and without it (those plus what the
  helper skipped, each of which the application would otherwise have processed again);
- **switch time** per client: from the start of the phase to the client's first success on the
  namespace it moved to;
- **longest receive**: the longest a Service Bus consumer's ``receive`` call took during the
  phase (the bound a hung namespace or store must respect), None for an event hub's consumer.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Sequence
from typing import Any

from replication.envelope import Envelope


@dataclasses.dataclass(frozen=True, slots=True)
class Done:
    """A message a client published or processed: id, namespace, monotonic time."""

    message_id: str
    namespace: str
    at: float


@dataclasses.dataclass(frozen=True, slots=True)
class Delivery:
    """A copy a Service Bus consumer was handed by ``namespace``: ``processed`` by the
    application, or completed by the skip helper as already processed."""

    namespace: str
    copy: Envelope
    processed: bool


@dataclasses.dataclass(slots=True)
class PhaseFigures:
    published: int
    consumed: int
    lost: int
    lost_messages: list[str]
    rto_publish_seconds: float
    rto_consume_seconds: float
    duplicates_with_skip_helper: int
    duplicates_without_skip_helper: int
    switch_seconds: dict[str, float | None]
    longest_receive_seconds: float | None = None

    def as_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def longest_gap(times: Iterable[float], start: float, end: float) -> float:
    """The longest interval in [start, end] without one of ``times``."""
    inside = sorted(t for t in times if start <= t <= end)
    marks = [start, *inside, end]
    return max((b - a for a, b in itertools.pairwise(marks)), default=0.0)


def first_on(records: Sequence[Done], namespace: str, after: float) -> float | None:
    """Seconds from ``after`` to the first record on ``namespace`` (None: none)."""
    times = [r.at for r in records if r.namespace == namespace and r.at >= after]
    return min(times) - after if times else None


def phase_figures(
    published: Sequence[Done],
    processed: Sequence[Done],
    *,
    start: float,
    paused: float,
    end: float,
    skipped: int,
    target: str,
    receives: Sequence[tuple[float, float]] | None = None,
) -> PhaseFigures:
    """The figures of one application over one phase (see the module docstring): ``start``
    the kill or switch, ``paused`` when its publishers paused, ``end`` after the consumers
    caught up; ``skipped`` what the skip helper skipped during the phase; ``receives`` the
    (start, end) of every ``receive`` call of a Service Bus consumer."""
    sent_in = [r for r in published if start <= r.at <= end]
    done_in = [r for r in processed if start <= r.at <= end]
    acknowledged = {r.message_id for r in published if r.at <= end}
    handled = {r.message_id for r in processed if r.at <= end}
    lost = sorted(acknowledged - handled)
    earlier = {r.message_id for r in processed if r.at < start}
    duplicates = 0
    for record in sorted(done_in, key=lambda r: r.at):
        if record.message_id in earlier:
            duplicates += 1
        earlier.add(record.message_id)
    return PhaseFigures(
        published=len(sent_in),
        consumed=len({r.message_id for r in done_in}),
        lost=len(lost),
        lost_messages=lost,
        rto_publish_seconds=round(longest_gap((r.at for r in published), start, paused), 3),
        rto_consume_seconds=round(longest_gap((r.at for r in processed), start, paused), 3),
        duplicates_with_skip_helper=duplicates,
        duplicates_without_skip_helper=duplicates + skipped,
        switch_seconds={
            "publisher": _rounded(first_on(published, target, start)),
            "consumer": _rounded(first_on(processed, target, start)),
        },
        longest_receive_seconds=None
        if receives is None
        else _rounded(max((b - a for a, b in receives if b >= start and a <= end), default=0.0)),
    )


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


__all__ = ["Delivery", "Done", "PhaseFigures", "first_on", "longest_gap", "phase_figures"]
