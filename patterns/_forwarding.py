"""The forwarding step shared by the patterns: loop check, stamp, one decision per target."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from replication.envelope import Envelope
from replication.exceptions import MalformedReplicationPropertyError
from replication.loops import check_forward
from replication.planning import (
    DeadLetter,
    Decision,
    Forward,
    PatternOptions,
    Skip,
    Target,
    TaskContext,
)
from replication.properties import read_state, stamp, with_replication_properties_of


def forward_to_targets(
    envelope: Envelope,
    context: TaskContext,
    *,
    replica: Envelope | None = None,
    targets: tuple[Target, ...] | None = None,
    originals_only: bool = False,
) -> list[Decision]:
    """Decide, for each target, whether ``envelope`` is replicated there.

    ``replica`` is the (possibly transformed) message to send in place of ``envelope``; it gets
    ``envelope``'s replication properties back whatever the transformation did to them, so no
    option can take a message off its recorded path. ``originals_only`` replicates only
    messages that have not been replicated before (the all-active rule: a replica is never
    replicated again).
    """
    if replica is not None:
        replica = with_replication_properties_of(replica, envelope)
    try:
        state = read_state(envelope.application_properties)
        if originals_only and state.is_replica:
            return [Skip(envelope, "already a replica: all-active replicates originals only")]
        decisions: list[Decision] = []
        for target in targets if targets is not None else context.targets:
            verdict = check_forward(envelope, target.namespace, context.max_hops, state=state)
            if not verdict.forward:
                decisions.append(Skip(envelope, f"{target}: {verdict.explanation}"))
                continue
            stamped = stamp(
                replica if replica is not None else envelope,
                source_namespace=context.source_namespace,
                target_namespace=target.namespace,
                # The replica carries exactly the original's replication properties (above),
                # so their state is the one already read.
                state=state,
            )
            decisions.append(Forward(envelope, stamped, target))
    except MalformedReplicationPropertyError as error:
        return [DeadLetter(envelope, error.reason, str(error))]
    return decisions or [Skip(envelope, "no target")]


def forward_each(
    batch: Sequence[Envelope],
    context: TaskContext,
    *,
    transform: Callable[[Envelope], Envelope] | None = None,
    originals_only: bool = False,
) -> list[Decision]:
    """:func:`forward_to_targets` for every message; ``transform`` shapes each replica."""
    decisions: list[Decision] = []
    for envelope in batch:
        replica = transform(envelope) if transform is not None else None
        decisions.extend(
            forward_to_targets(envelope, context, replica=replica, originals_only=originals_only)
        )
    return decisions


def forward_every_message(
    batch: Sequence[Envelope], context: TaskContext, options: PatternOptions
) -> list[Decision]:
    """The plan of patterns that forward every message unchanged (loop prevention applies)."""
    return forward_each(batch, context)
