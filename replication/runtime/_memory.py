"""An in-memory target: a real :class:`~replication.runtime.TargetSender` that keeps what it gets.

Used by the ``plan`` command (a dry run prints what each target would receive) and by tests of
the runtime. Failure injection makes it fail like a real entity would, so the runtime's
retries, narrowing and parking can be exercised without a broker: ``reject`` refuses envelopes
for which it returns a reason (a :class:`PermanentForwardError` with that reason; with
``name_culprit`` the error says which envelope, as the real senders do for a message that is
too large); ``unavailable`` fails every send transiently; ``accept_per_call`` acknowledges that
many envelopes of a send and then fails transiently (a connection lost mid-send).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from replication.envelope import Envelope, PropertyUpdate
from replication.exceptions import PermanentForwardError, TransientForwardError


class MemoryTarget:
    """Collects sent envelopes in ``received``; optional failure injection."""

    def __init__(
        self,
        name: str,
        *,
        reject: Callable[[Envelope], str | None] | None = None,
        name_culprit: bool = False,
        unavailable: bool = False,
        accept_per_call: int | None = None,
    ) -> None:
        self.name = name
        self.received: list[Envelope] = []
        self.send_calls = 0
        self._reject = reject
        self._name_culprit = name_culprit
        self.unavailable = unavailable
        self.accept_per_call = accept_per_call

    def send(
        self,
        envelopes: Sequence[Envelope],
        *,
        timeout: float | None = None,
        update: PropertyUpdate | None = None,
    ) -> None:
        """Store ``envelopes`` (with ``update`` applied) in order up to the first injected
        failure, which is raised with the positions of the envelopes stored before it."""
        self.send_calls += 1
        if self.unavailable:
            raise TransientForwardError("target unavailable", target=self.name)
        if update is not None:
            envelopes = [update.applied(envelope) for envelope in envelopes]
        for index, envelope in enumerate(envelopes):
            acknowledged = frozenset(range(index))
            if self.accept_per_call is not None and index >= self.accept_per_call:
                raise TransientForwardError(
                    "connection lost", target=self.name, acknowledged=acknowledged
                )
            reason = self._reject(envelope) if self._reject is not None else None
            if reason is not None:
                raise PermanentForwardError(
                    f"rejected {envelope.message_id}",
                    target=self.name,
                    acknowledged=acknowledged,
                    culprit=index if self._name_culprit else None,
                    reason=reason,
                )
            self.received.append(envelope)


__all__ = ["MemoryTarget"]
