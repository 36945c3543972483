"""Active-passive replication: a primary replicates to a standby whose copies expire.

Publishers and consumers use the primary; the standby holds replicas with a time-to-live of
about twice the failover window, so that after a failover consumers find the recent messages
there and old copies have expired (Microsoft's guidance uses ``'0:2:0'``). On a Service Bus topic
the replication subscription's rule sets the TTL at the broker
(``SET replication = 1; SET sys.TimeToLive = '0:02:00'``); the pattern also caps the replica's TTL
itself so queue and event hub sources behave the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from pydantic import Field

from replication.durations import Duration, format_timespan
from replication.envelope import Envelope
from replication.planning import Decision, Pattern, PatternOptions, TaskContext
from replication.rules import RuleSpec

from ._forwarding import forward_each
from .all_active import LOOP_PREVENTION_ACTION, loop_prevention_rule


class ActivePassiveOptions(PatternOptions):
    """The standby's replicas live at most ``replicaTimeToLive``."""

    # The bound is given with the field, not in Annotated, for pydantic's message ("greater than
    # 0 seconds"); pydantic then leaves it out of the JSON Schema, so json_schema_extra writes
    # it there as pydantic writes the other durations' bounds.
    replica_time_to_live: Duration = Field(gt=timedelta(0), json_schema_extra={"gt": "PT0S"})
    """how long the standby keeps a replica (about twice the failover window)"""


def subscription_rule(options: ActivePassiveOptions) -> RuleSpec:
    ttl = format_timespan(options.replica_time_to_live)
    return loop_prevention_rule(f"{LOOP_PREVENTION_ACTION}; SET sys.TimeToLive = '{ttl}'")


def capped_time_to_live(envelope: Envelope, limit: timedelta) -> Envelope:
    """The envelope with its TTL lowered to ``limit`` (a shorter TTL of its own is kept)."""
    current = envelope.time_to_live
    if current is not None and current <= limit:
        return envelope
    return envelope.replace(time_to_live=limit)


def plan(
    batch: Sequence[Envelope], context: TaskContext, options: ActivePassiveOptions
) -> list[Decision]:
    ttl = options.replica_time_to_live
    return forward_each(
        batch, context, transform=lambda e: capped_time_to_live(e, ttl), originals_only=True
    )


PATTERN: Pattern[ActivePassiveOptions] = Pattern(
    name="active_passive",
    summary="replicate the primary to a standby whose replicas expire after a TTL",
    options_model=ActivePassiveOptions,
    plan=plan,
    subscription_rule=subscription_rule,
    fans_out=True,
)
