"""An in-memory target: a real :class:`~replication.runtime.TargetSender` that keeps what it gets.

Used by the ``plan`` command (a dry run prints what each target would receive) and by tests of
the runtime. ``reject`` makes it fail like a real entity would: envelopes for which it returns a
reason raise :class:`PermanentForwardError` with that reason, so the runtime's narrowing and
dead-lettering can be exercised without a broker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from replication.envelope import Envelope
from replication.exceptions import PermanentForwardError, TransientForwardError


class MemoryTarget:
    """Collects sent envelopes in ``received``; optional failure injection."""

    def __init__(
        self,
        name: str,
        *,
        reject: Callable[[Envelope], str | None] | None = None,
        unavailable: bool = False,
    ) -> None:
        self.name = name
        self.received: list[Envelope] = []
        self.send_calls = 0
        self._reject = reject
        self.unavailable = unavailable

    def send(self, envelopes: Sequence[Envelope]) -> None:
        """Store ``envelopes`` atomically: all of them or, on failure, none."""
        self.send_calls += 1
        if self.unavailable:
            raise TransientForwardError("target unavailable", target=self.name)
        if self._reject is not None:
            for envelope in envelopes:
                reason = self._reject(envelope)
                if reason is not None:
                    error = PermanentForwardError(
                        f"rejected {envelope.message_id}", target=self.name
                    )
                    error.reason = reason
                    raise error
        self.received.extend(envelopes)


__all__ = ["MemoryTarget"]
