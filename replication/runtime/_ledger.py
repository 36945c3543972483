"""What a runner remembers between batches: the source positions each target acknowledged.

A replica a target acknowledged is never sent to it again by the same runner: a batch that is
redelivered after a failure sends only what is missing. The ledger keeps the last
:data:`LEDGER_SIZE` (target, source position) pairs; across processes, the replica's MessageId
(kept, or derived from the source position) lets targets with duplicate detection drop the
copies. For the parking entity it also remembers whether what was parked is a notice, whose
original must stay in the source on every redelivery.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Hashable

from replication.envelope import Envelope
from replication.planning import Forward, Target

LEDGER_SIZE = 100_000
"""Source positions of acknowledged replicas a runner remembers (about 10 MB at most)."""


def position(envelope: Envelope) -> Hashable:
    """What identifies a source message across redeliveries: its place in its source."""
    if envelope.sequence_number is not None:
        return (envelope.source, envelope.partition_id, envelope.sequence_number)
    return (envelope.source, envelope.partition_id, envelope.offset, envelope.message_id)


def replica_position(forward: Forward) -> Hashable:
    """What identifies a forwarded replica across redeliveries: its source's position, and which
    part of a split it is (see :attr:`Forward.part <replication.planning.Forward.part>`)."""
    if forward.part == 0:
        return position(forward.source)
    return (position(forward.source), forward.part)


class Ledger:
    """The bounded set of (target, source position) pairs a target has acknowledged.

    Shared by the batches a runner handles at the same time (one per Event Hubs partition or
    Service Bus session in the local host, concurrent invocations in the Function app)."""

    def __init__(self, size: int = LEDGER_SIZE) -> None:
        self._size = size
        self._entries: collections.OrderedDict[tuple[Target, Hashable], bool] = (
            collections.OrderedDict()
        )
        self._lock = threading.Lock()

    def __contains__(self, key: tuple[Target, Hashable]) -> bool:
        return key in self._entries

    def add(self, key: tuple[Target, Hashable], *, notice: bool = False) -> None:
        """Remember ``key``; ``notice``: what was parked for it is a notice (the original must
        stay in the source, on every redelivery too)."""
        with self._lock:
            self._entries[key] = notice
            if len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def notice(self, key: tuple[Target, Hashable]) -> bool:
        return self._entries.get(key, False)


__all__ = ["LEDGER_SIZE", "Ledger", "position", "replica_position"]
