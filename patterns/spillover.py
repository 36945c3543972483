"""Spillover: move messages the primary could not process in time to a healthy region.

The task reads the primary entity's dead-letter queue (``source.deadLetterQueue: true``) and
sends each message to the secondary. The replica is a fresh message: the dead-letter facts
(reason, description, delivery count) belong to the primary and are not copied, but the
replication properties record where it came from, so loop prevention stops it from spilling
back. ``replicaTimeToLive`` (optional) bounds how long the secondary keeps it; the guidance
suggests about half the processing deadline.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from pydantic import Field

from replication.durations import Duration
from replication.envelope import Envelope
from replication.planning import Decision, Pattern, PatternOptions, TaskContext

from ._forwarding import forward_each
from .active_passive import capped_time_to_live


class SpilloverOptions(PatternOptions):
    """The spilled copies live at most ``replicaTimeToLive`` when it is given."""

    replica_time_to_live: Duration | None = Field(default=None, gt=timedelta(0))
    """how long the healthy region keeps a spilled copy (none: the message's own TTL)"""


def spilled_copy(envelope: Envelope, options: SpilloverOptions) -> Envelope:
    """The replica: without the primary's dead-letter facts, TTL capped when configured."""
    replica = envelope.replace(
        dead_letter_reason=None, dead_letter_error_description=None, delivery_count=None
    )
    if options.replica_time_to_live is not None:
        replica = capped_time_to_live(replica, options.replica_time_to_live)
    return replica


def plan(
    batch: Sequence[Envelope], context: TaskContext, options: SpilloverOptions
) -> list[Decision]:
    return forward_each(batch, context, transform=lambda e: spilled_copy(e, options))


PATTERN: Pattern[SpilloverOptions] = Pattern(
    name="spillover",
    summary="send dead-lettered messages of the primary to a secondary region",
    options_model=SpilloverOptions,
    plan=plan,
    fans_out=True,
)
