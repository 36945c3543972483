"""Loop prevention: the pure decision whether a message may be replicated to a namespace.

Every replica carries ``repl-origin``, ``repl-path`` and ``repl-hops`` (see
:mod:`replication.properties`). A message is never sent to a namespace it has already been
enqueued in, and never beyond ``max_hops`` replications. This holds for any topology of N
namespaces, including a misconfigured one where every namespace forwards everything to every
peer: each hop adds the target to the path, so a message can take at most N - 1 hops.

Service Bus subscription rules (``replication IS NULL`` / ``SET replication = 1``) are a second,
broker-side guard for the all-active pattern; this check does not depend on them.
"""

from __future__ import annotations

import dataclasses
import enum

from replication.envelope import Envelope
from replication.properties import ReplicationState, read_state


class LoopVerdict(enum.StrEnum):
    """Why a message may or may not be forwarded to a target namespace."""

    FORWARD = "FORWARD"
    ALREADY_VISITED = "ALREADY_VISITED"
    MAX_HOPS_REACHED = "MAX_HOPS_REACHED"


@dataclasses.dataclass(frozen=True, slots=True)
class LoopDecision:
    """The verdict and a human-readable explanation for logs and plans."""

    verdict: LoopVerdict
    explanation: str

    @property
    def forward(self) -> bool:
        return self.verdict is LoopVerdict.FORWARD


def check_forward(
    envelope: Envelope,
    target_namespace: str,
    max_hops: int,
    *,
    state: ReplicationState | None = None,
) -> LoopDecision:
    """Decide whether ``envelope`` may be replicated into ``target_namespace``; ``state``:
    :func:`~replication.properties.read_state` of its properties, when already read.

    Raises:
        MalformedReplicationPropertyError: the message's ``repl-hops`` cannot be read; the caller
            dead-letters it rather than risk a loop.
    """
    if state is None:
        state = read_state(envelope.application_properties)
    if target_namespace in state.visited:
        return LoopDecision(
            LoopVerdict.ALREADY_VISITED,
            f"{target_namespace} is already on the message's path "
            f"(origin {state.origin}, path {';'.join(state.path) or '-'})",
        )
    if state.hops >= max_hops:
        return LoopDecision(
            LoopVerdict.MAX_HOPS_REACHED,
            f"the message has been replicated {state.hops} times (limit {max_hops})",
        )
    return LoopDecision(LoopVerdict.FORWARD, f"forward to {target_namespace}")


def should_forward(envelope: Envelope, target_namespace: str, max_hops: int) -> bool:
    """True when ``envelope`` may be replicated into ``target_namespace``.

    See :func:`check_forward` for the reasons and errors.
    """
    return check_forward(envelope, target_namespace, max_hops).forward


__all__ = ["LoopDecision", "LoopVerdict", "check_forward", "should_forward"]
