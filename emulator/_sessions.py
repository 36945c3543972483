"""Service Bus message sessions: the per-session queues of a session-enabled entity.

A queue or subscription with ``RequiresSession`` keeps its available messages in one FIFO
queue per session id (the AMQP ``group-id``), and a receiver reads one session at a time: it
locks the whole session for the entity's ``LockDuration``
(https://learn.microsoft.com/azure/service-bus-messaging/message-sessions). While the session
is locked no other receiver gets it; the messages delivered inside it carry no locks of their
own, their lock is the session's (so they expire, are renewed and are lost together with it).
When the session lock runs out, the holder's settlements fail with
``com.microsoft:session-lock-lost`` and the messages it held come back, counted as a delivery
attempt, for the next receiver to lock the session.

Each session also keeps its *state*, an opaque binary the receiver sets and reads
(``set-session-state`` / ``get-session-state``), and when that state last changed, which
``get-message-sessions`` filters on.

This module knows nothing about AMQP links: a session's holder is whatever object the server
uses to identify a receiver, compared by identity.
"""

from __future__ import annotations

import dataclasses
import math
import uuid
from collections import deque
from collections.abc import Iterator
from typing import Generic, Protocol, TypeVar

SESSION_FILTER = "com.microsoft:session-filter"
"""The source filter of a session receiver's attach: the session id, or null for the next
available session (azure-servicebus ``_transport/_pyamqp_transport.py`` ``create_source``)."""
LOCKED_UNTIL_UTC = "com.microsoft:locked-until-utc"
"""The attach property that tells a session receiver when its session lock ends, in .NET ticks
(``on_attach`` there)."""
OPERATION_TIMEOUT = "com.microsoft:timeout"
"""The attach property in which a next-available receiver says how long (ms) it waits for a
session; also the error condition when none came (``OperationTimeoutError``)."""
SESSION_LOCK_LOST = "com.microsoft:session-lock-lost"
SESSION_CANNOT_BE_LOCKED = "com.microsoft:session-cannot-be-locked"

DEFAULT_ACCEPT_TIMEOUT = 60.0
"""How long a next-available receiver waits for a session when it names no time: the service's
default operation timeout, which the SDK's own 65 seconds allow for
(``create_receive_client`` in ``_transport/_pyamqp_transport.py``)."""


class Queued(Protocol):
    """What the session model reads of a stored message (``_servicebus.Stored``)."""

    @property
    def sequence_number(self) -> int: ...

    @property
    def available_at(self) -> float: ...


Message = TypeVar("Message", bound=Queued)

_TICKS_AT_UNIX_EPOCH = 621_355_968_000_000_000
"""``DateTime(1970, 1, 1).Ticks`` (the SDK's ``DATETIMEOFFSET_EPOCH``)."""


def dotnet_ticks(seconds: float) -> int:
    """A Unix time as .NET ``DateTime`` ticks (100 ns since year 1), as Service Bus writes
    ``com.microsoft:locked-until-utc``."""
    return _TICKS_AT_UNIX_EPOCH + int(seconds * 10_000_000)


@dataclasses.dataclass(eq=False)
class MessageSession(Generic[Message]):
    """One session of an entity: its available messages in order, its lock and its state."""

    session_id: str
    available: deque[Message] = dataclasses.field(default_factory=deque)
    holder: object | None = None
    """The receiver holding the session lock, None when the session is free."""
    locked_until: float = 0.0
    locked_tokens: set[uuid.UUID] = dataclasses.field(default_factory=set)
    """Lock tokens of the messages delivered to the holder and not yet settled."""
    state: bytes | None = None
    state_updated: float = -math.inf

    def ready(self, now: float) -> bool:
        """Has a message a receiver could get now."""
        return any(stored.available_at <= now for stored in self.available)

    def is_empty(self) -> bool:
        """Nothing left to keep: no messages, no lock, no state."""
        return not self.available and self.holder is None and self.state is None


class SessionStore(Generic[Message]):
    """The sessions of one session-enabled queue or subscription, by session id."""

    def __init__(self) -> None:
        self.sessions: dict[str, MessageSession[Message]] = {}
        self._next_lock_expiry = math.inf

    def get(self, session_id: str) -> MessageSession[Message]:
        """The session, created on first use (sessions exist as soon as anything names them)."""
        session = self.sessions.get(session_id)
        if session is None:
            session = self.sessions[session_id] = MessageSession[Message](session_id)
        return session

    def queues(self) -> Iterator[deque[Message]]:
        """Every session's available messages."""
        for session in self.sessions.values():
            yield session.available

    def lock(
        self, session_id: str | None, holder: object, now: float, duration: float
    ) -> MessageSession[Message] | None:
        """Lock ``session_id`` (or, with None, a free session that has a message ready, the one
        whose first message is oldest) for ``holder``; None when that cannot be done now."""
        if session_id is None:
            candidates = [s for s in self.sessions.values() if s.holder is None and s.ready(now)]
            if not candidates:
                return None
            session = min(candidates, key=lambda s: s.available[0].sequence_number)
        else:
            session = self.get(session_id)
            if session.holder is not None:
                return None
        session.holder = holder
        session.locked_until = now + duration
        self._next_lock_expiry = min(self._next_lock_expiry, session.locked_until)
        return session

    def renew(self, session: MessageSession[Message], now: float, duration: float) -> float:
        session.locked_until = now + duration
        return session.locked_until

    def unlock(self, session: MessageSession[Message]) -> None:
        """Free the session (its holder closed or lost it); forget it if nothing is left."""
        session.holder = None
        session.locked_tokens.clear()
        self.forget_if_empty(session)

    def forget_if_empty(self, session: MessageSession[Message]) -> None:
        if session.is_empty() and self.sessions.get(session.session_id) is session:
            del self.sessions[session.session_id]

    def expired(self, now: float) -> list[MessageSession[Message]]:
        """The held sessions whose lock has run out (still held: the caller unlocks them)."""
        if now < self._next_lock_expiry:
            return []
        held = [s for s in self.sessions.values() if s.holder is not None]
        self._next_lock_expiry = min(
            (s.locked_until for s in held if s.locked_until > now), default=math.inf
        )
        return [s for s in held if s.locked_until <= now]

    def held_by(self, holder: object) -> list[MessageSession[Message]]:
        return [s for s in self.sessions.values() if s.holder is holder]

    def listed(self, updated_after: float | None, now: float) -> list[str]:
        """Session ids for ``get-message-sessions``: with ``updated_after`` None, the sessions
        that have active messages; otherwise those whose state changed after that time."""
        if updated_after is None:
            return [s.session_id for s in self.sessions.values() if s.ready(now)]
        return [s.session_id for s in self.sessions.values() if s.state_updated > updated_after]
