"""Event Hubs checkpoint translation: where a consumer group starts in the namespace it moves to.

Offsets and sequence numbers are per event hub; the same event has other ones in the replica
("to locate a position in a copied event stream, use time-based offsets and refer to the
propagated service-assigned metadata", Microsoft's Event Hubs federation guidance). A consumer
moving from namespace A to namespace B therefore gets checkpoints on B computed from what it
handled on A (:class:`~replication.failover._state.PartitionPosition`: per partition of A, the
enqueue time at A up to which every event was handled, kept by the consumer because checkpoint
stores keep no times), and the direction of replication between A and B:

- **B is a replica of A** (failover: replication copies A's events to B). For every partition
  of A the consumer knows a time ``T_p`` up to which it handled every event: the enqueue time
  of the last event it handled, or, when a wait for more returned nothing, the consumer host's
  clock at that moment. A replica is enqueued on B after its original was published on A
  (replication takes time), so B stamps it no earlier than the original's publication by B's
  clock. ``S = min_p T_p - skew_allowance`` is therefore a start on B before which every replica
  is that of a handled event, as long as B's clock lags A's clock and the consumer host's by no
  more than the allowance: B's partitions start at ``S`` (:func:`failover_start`). Replicas
  between ``S`` and the handled positions are read again, and the processed-message log skips
  them; an allowance too small could skip an unhandled replica, one too large costs re-reading
  (``5 s`` by default; Microsoft's guidance: allow "several seconds" of clock drift). The
  property tests in ``tests/unit/failover/test_failover_skip_properties.py`` check exactly this
  condition, and find a dropped event when it does not hold.

  B also holds what publishers sent to it *directly*: in a planned failover they move before
  the consumers, while the consumer still reads A (and A's idle partitions advance its handled
  positions). Those messages are not replicas of handled events, so ``S`` is also no later than
  the moment the binding store moved the publishers (the switch record's start, which precedes
  their move), minus the allowance. A publisher that moves on its own (its unavailability
  window) does so because A fails it; the consumer's positions on A then stop before that
  moment, except in a partition that cuts off that publisher but not the consumer: there the
  operator should move the publishers explicitly (``failover``) before the consumers.

  B's partitions then start at ``S``: the consumer's stale checkpoints on B are removed and its
  state records ``S`` until the partitions' first checkpoints replace it. (Writing a checkpoint
  *at* ``S`` would need the offset of the last event before it, two reads per partition that
  cost seconds of RTO; the start time says the same.)
- **A is a replica of B** (failback: the consumer returns to the namespace whose events were
  copied to A). B still holds the consumer's checkpoints from before it left, untouched since:
  it resumes there (:data:`RESUME`). What came after them on B was either handled through its
  replicas on A (the log skips those) or not handled at all (processed now: events B accepted
  but had not replicated when it went down are exactly these). Nothing is skipped by position,
  and nothing older than the consumer's last position on B is read again.
- Any other pair of namespaces holds unrelated streams: the consumer resumes from B's own
  checkpoints, or the beginning.

If a partition of A has no handled-through time (the consumer never read it), ``T`` is unknown
and B is read from the beginning, the log skipping what it knows.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from ._processed import from_millis
from ._state import PartitionPosition

DEFAULT_SKEW_ALLOWANCE = timedelta(seconds=5)


class StartKind(enum.StrEnum):
    BY_TIME = "by-time"
    """Write B's checkpoints at the last event before :attr:`StartPlan.start`."""
    RESUME = "resume"
    """Keep B's own checkpoints (the beginning where there are none)."""


@dataclasses.dataclass(frozen=True, slots=True)
class StartPlan:
    """How a consumer starts on the namespace it moves to; ``start`` None with ``BY_TIME``:
    from the beginning of every partition."""

    kind: StartKind
    start: datetime | None
    reason: str


RESUME = StartKind.RESUME


def failover_start(
    positions: Iterable[PartitionPosition],
    partition_count: int,
    skew_allowance: timedelta = DEFAULT_SKEW_ALLOWANCE,
    publishers_since: datetime | None = None,
) -> datetime | None:
    """``S``: the earliest handled-through time over the source's partitions, or the moment
    publishers were moved to the target when that is earlier, minus the allowance; None when
    fewer than ``partition_count`` partitions have a position."""
    known = list(positions)
    if not known or len({p.partition for p in known}) < partition_count:
        return None
    earliest = from_millis(min(position.enqueued_millis for position in known))
    if publishers_since is not None:
        earliest = min(earliest, publishers_since)
    return earliest - skew_allowance


def start_plan(
    source: str,
    target: str,
    *,
    replicated_from: Mapping[str, str],
    positions: Iterable[PartitionPosition],
    partition_count: int,
    skew_allowance: timedelta = DEFAULT_SKEW_ALLOWANCE,
    publishers_since: datetime | None = None,
) -> StartPlan:
    """How to start on ``target`` after handling events on ``source`` (module docstring).
    ``replicated_from`` maps each replica namespace to the namespace it is copied from."""
    if replicated_from.get(target) == source:
        mine = [p for p in positions if p.namespace == source]
        start = failover_start(mine, partition_count, skew_allowance, publishers_since)
        if start is None:
            reason = f"{source} has no position for every partition: {target} from the beginning"
        else:
            reason = (
                f"{target} copies {source}: from {start.isoformat()} (the earliest position "
                f"handled on {source}, or the publishers' move, minus the "
                f"{skew_allowance.total_seconds():g} s allowance)"
            )
        return StartPlan(StartKind.BY_TIME, start, reason)
    if replicated_from.get(source) == target:
        reason = f"{source} copies {target}: resume at the checkpoints {target} kept"
    else:
        reason = f"{source} and {target} are not a replication pair: {target}'s own checkpoints"
    return StartPlan(RESUME, None, reason)


__all__ = [
    "DEFAULT_SKEW_ALLOWANCE",
    "RESUME",
    "StartKind",
    "StartPlan",
    "failover_start",
    "start_plan",
]
