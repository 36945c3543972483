"""All-active replication: every namespace is a full replica of every other.

Each namespace replicates the messages that were *published to it* to all its peers; replicas
are never replicated again. On Service Bus topics the replication subscription's rule does that
at the broker (``replication IS NULL`` selects only originals; ``SET replication = 1`` marks the
copy, so the replica is excluded at the target); for queues and event hubs the pattern checks the
replication properties itself. Either way loop prevention also refuses any target already on the
message's path.
"""

from __future__ import annotations

from collections.abc import Sequence

from replication.envelope import Envelope
from replication.planning import Decision, Pattern, PatternOptions, TaskContext
from replication.properties import REPLICATION_FLAG
from replication.rules import DEFAULT_RULE_NAME, RuleFilterSpec, RuleSpec

from ._forwarding import forward_each

LOOP_PREVENTION_FILTER = f"{REPLICATION_FLAG} IS NULL"
LOOP_PREVENTION_ACTION = f"SET {REPLICATION_FLAG} = 1"


class AllActiveOptions(PatternOptions):
    """All-active takes no options."""


def loop_prevention_rule(action: str = LOOP_PREVENTION_ACTION) -> RuleSpec:
    """The replication subscription's rule, named ``$Default`` to replace the TrueFilter.

    Built as it is, without a parse of its texts: they are this module's constants (and the
    TTL action of ``active_passive``, a formatted duration), which
    ``tests/unit/test_patterns_contract.py`` parses for every pattern; every start of the local host
    would otherwise import the SQL parser for them alone."""
    return RuleSpec.model_construct(
        name=DEFAULT_RULE_NAME,
        filter=RuleFilterSpec.model_construct(sql=LOOP_PREVENTION_FILTER),
        action=action,
    )


def subscription_rule(options: AllActiveOptions) -> RuleSpec:
    return loop_prevention_rule()


def plan(
    batch: Sequence[Envelope], context: TaskContext, options: AllActiveOptions
) -> list[Decision]:
    return forward_each(batch, context, originals_only=True)


PATTERN: Pattern[AllActiveOptions] = Pattern(
    name="all_active",
    summary="replicate messages published here to every peer; never re-replicate replicas",
    options_model=AllActiveOptions,
    plan=plan,
    subscription_rule=subscription_rule,
    fans_out=True,
)
