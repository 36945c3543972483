"""Service Bus request/response operations on ``<entity>/$management``.

The SDKs send these as AMQP messages whose ``operation`` application property names the
operation and whose body is a map; the reply carries ``statusCode`` and, on success, a map.
Each handler here takes the broker, the entity path and the request body and returns
``(status, reply body)``: 200 with a body, 204 for "nothing found", 404 for an unknown entity.
A handler that must name the error raises :class:`ManagementError`; the reply then carries its
``errorCondition``, which the SDK maps to its exception classes
(``_common/mgmt_handlers.py``, ``_ERROR_CODE_TO_ERROR_MAPPING`` in
``_transport/_pyamqp_transport.py``); without one the SDK raises a bare ``ServiceBusError``
("Service request failed. Status Code: 410."). A lock that is gone (expired, or its message
already settled) is 410 with ``com.microsoft:message-lock-lost``, as Service Bus answers it
(``MessageLockLostError``; .NET's ``RenewMessageLockAsync``: "The lock for the message has
expired or the message has already been completed. The Reason will be set to
MessageLockLost").

Session operations (``session-id`` in the request) act on a session that a receiver holds
locked: a session that is not (its lock expired or was never taken) fails with
``com.microsoft:session-lock-lost``, as Service Bus answers a lost session lock.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from proton import UNDESCRIBED, Array, Data, symbol, timestamp

from ._codec import text
from ._message import BrokerMessage
from ._servicebus import Broker, Receivable, Settlement, Stored
from ._sessions import SESSION_LOCK_LOST, MessageSession

Reply = tuple[int, Any]

# update-disposition's status words -> settlements.
_DISPOSITIONS = {
    "completed": Settlement.COMPLETE,
    "abandoned": Settlement.ABANDON,
    "defered": Settlement.DEFER,  # sic: the spelling on the wire
    "suspended": Settlement.DEAD_LETTER,
}

_RECEIVE_AND_DELETE = 0

_ACTIVE_SESSIONS_SENTINEL_MS = 253_402_300_799_000
"""A ``last-updated-time`` from 9999-12-31T23:59:59 on (.NET's ``DateTime.MaxValue``; the
track-1 Java SDK's ``SessionBrowser.MAXDATE`` sends 10000-01-01) asks
``get-message-sessions`` for the sessions with active messages rather than those whose state
changed after it."""


MESSAGE_LOCK_LOST = "com.microsoft:message-lock-lost"
LOCK_LOST_DESCRIPTION = (
    "The lock supplied is invalid. Either the lock expired, or the message has already been "
    "removed from the queue."
)


class ManagementError(Exception):
    """A failed request: its status code, AMQP error condition and description."""

    def __init__(self, status: int, condition: str, description: str) -> None:
        super().__init__(description)
        self.status = status
        self.condition = condition
        self.description = description


def elements(value: Any) -> list[Any]:
    """The items of an AMQP list or array (proton decodes arrays as ``Array``)."""
    if value is None:
        return []
    if isinstance(value, Array):
        return list(value.elements)
    return list(value)


def _field(body: Any, name: str, default: Any = None) -> Any:
    """A request-map entry; the SDKs key the maps with strings or symbols."""
    if not isinstance(body, dict):
        return default
    return body.get(name, body.get(symbol(name), default))


def _longs(values: list[int]) -> Array:
    return Array(UNDESCRIBED, Data.LONG, *values)


def _held_session(receivable: Receivable, body: Any, now: float) -> MessageSession[Stored] | None:
    """The session a request names (``session-id``), None when it names none; a session that
    nobody holds locked any more fails with ``session-lock-lost``."""
    session_id = _field(body, "session-id")
    if session_id is None or receivable.sessions is None:
        return None
    session = receivable.sessions.sessions.get(text(session_id))
    if session is None or session.holder is None or session.locked_until <= now:
        raise ManagementError(
            410,
            SESSION_LOCK_LOST,
            f"The session lock has expired on the MessageSession '{text(session_id)}'. "
            "Accept a new MessageSession.",
        )
    return session


def _session_receivable(broker: Broker, entity: str) -> Receivable | None:
    receivable = broker.receivable(entity)
    if receivable is not None and receivable.sessions is None:
        raise ManagementError(
            400,
            "amqp:not-allowed",
            f"The entity '{entity}' does not require sessions: it has no session operations.",
        )
    return receivable


def renew_session_lock(broker: Broker, entity: str, body: Any) -> Reply:
    """``{session-id}`` -> ``{expiration: timestamp}`` (``_servicebus_session.py renew_lock``)."""
    receivable = _session_receivable(broker, entity)
    if receivable is None:
        return 404, None
    now = broker.clock()
    session = _held_session(receivable, body, now)
    if session is None:
        return 400, None
    until = receivable.renew_session(session, now)
    return 200, {"expiration": timestamp(int(until * 1000))}


def get_session_state(broker: Broker, entity: str, body: Any) -> Reply:
    """``{session-id}`` -> ``{session-state: binary or null}``."""
    receivable = _session_receivable(broker, entity)
    if receivable is None:
        return 404, None
    session = _held_session(receivable, body, broker.clock())
    if session is None:
        return 400, None
    return 200, {"session-state": session.state}


def set_session_state(broker: Broker, entity: str, body: Any) -> Reply:
    """``{session-id, session-state}``; a null state clears it (``set_state(None)``)."""
    receivable = _session_receivable(broker, entity)
    if receivable is None:
        return 404, None
    now = broker.clock()
    session = _held_session(receivable, body, now)
    if session is None:
        return 400, None
    state = _field(body, "session-state")
    session.state = None if state is None else bytes(state)
    session.state_updated = now
    return 200, {}


def get_message_sessions(broker: Broker, entity: str, body: Any) -> Reply:
    """``{last-updated-time, skip, top}`` -> ``{skip, sessions-ids: string[]}``, 204 when
    none (``list_sessions_op`` in ``_common/mgmt_handlers.py``). ``last-updated-time`` at
    the far-future sentinel lists sessions with active messages; an earlier time lists those
    whose state was set after it."""
    receivable = _session_receivable(broker, entity)
    if receivable is None:
        return 404, None
    assert receivable.sessions is not None
    since = _field(body, "last-updated-time")
    skip = int(_field(body, "skip", 0))
    top = int(_field(body, "top", 2**31 - 1))
    updated_after = (
        None if since is None or int(since) >= _ACTIVE_SESSIONS_SENTINEL_MS else int(since) / 1000
    )
    listed = sorted(receivable.sessions.listed(updated_after, broker.clock()))[skip : skip + top]
    if not listed:
        return 204, None
    ids = Array(UNDESCRIBED, Data.STRING, *listed)
    return 200, {"skip": skip + len(listed), "sessions-ids": ids}


def renew_lock(broker: Broker, entity: str, body: Any) -> Reply:
    receivable = broker.receivable(entity)
    if receivable is None:
        return 404, None
    now = broker.clock()
    expirations = []
    for token in elements(_field(body, "lock-tokens")):
        until = receivable.renew(uuid.UUID(str(token)), now)
        if until is None:
            raise ManagementError(410, MESSAGE_LOCK_LOST, LOCK_LOST_DESCRIPTION)
        expirations.append(timestamp(int(until * 1000)))
    return 200, {"expirations": expirations}


def peek(broker: Broker, entity: str, body: Any) -> Reply:
    receivable = broker.receivable(entity)
    if receivable is None:
        return 404, None
    start = int(_field(body, "from-sequence-number", 0))
    count = int(_field(body, "message-count", 1))
    session_id = _field(body, "session-id")
    found = receivable.peek(start, count, None if session_id is None else text(session_id))
    if not found:
        return 204, None
    return 200, {"messages": [{"message": stored.outgoing_bytes()} for stored in found]}


def schedule(broker: Broker, entity: str, body: Any) -> Reply:
    if not broker.is_sendable(entity):
        return 404, None
    numbers = []
    for entry in elements(_field(body, "messages")):
        message = BrokerMessage()
        message.decode(bytes(_field(entry, "message")))
        numbers.append(broker.schedule(entity, message))
    return 200, {"sequence-numbers": _longs(numbers)}


def cancel_scheduled(broker: Broker, entity: str, body: Any) -> Reply:
    if not broker.is_sendable(entity):
        return 404, None
    for number in elements(_field(body, "sequence-numbers")):
        broker.cancel(int(number))
    return 200, {}


def receive_deferred(broker: Broker, entity: str, body: Any) -> Reply:
    receivable = broker.receivable(entity)
    if receivable is None:
        return 404, None
    numbers = [int(n) for n in elements(_field(body, "sequence-numbers"))]
    lock = int(_field(body, "receiver-settle-mode", 1)) != _RECEIVE_AND_DELETE
    now = broker.clock()
    session = _held_session(receivable, body, now)
    found = receivable.lock_deferred(numbers, now, lock=lock, session=session)
    if not found:
        return 204, None
    messages = []
    for stored in found:
        entry: dict[str, Any] = {"message": stored.outgoing_bytes()}
        if stored.lock_token is not None:
            entry["lock-token"] = stored.lock_token
        messages.append(entry)
    return 200, {"messages": messages}


def update_disposition(broker: Broker, entity: str, body: Any) -> Reply:
    receivable = broker.receivable(entity)
    if receivable is None:
        return 404, None
    outcome = _DISPOSITIONS.get(text(_field(body, "disposition-status", "")))
    if outcome is None:
        return 400, None
    reason = _field(body, "deadletter-reason")
    description = _field(body, "deadletter-description")
    now = broker.clock()
    _held_session(receivable, body, now)
    for token in elements(_field(body, "lock-tokens")):
        settled = receivable.settle(
            uuid.UUID(str(token)),
            outcome,
            now,
            reason=text(reason),
            description=text(description),
        )
        if not settled:
            raise ManagementError(410, MESSAGE_LOCK_LOST, LOCK_LOST_DESCRIPTION)
    return 200, {}


OPERATIONS: dict[str, Callable[[Broker, str, Any], Reply]] = {
    "com.microsoft:renew-lock": renew_lock,
    "com.microsoft:peek-message": peek,
    "com.microsoft:schedule-message": schedule,
    "com.microsoft:cancel-scheduled-message": cancel_scheduled,
    "com.microsoft:receive-by-sequence-number": receive_deferred,
    "com.microsoft:update-disposition": update_disposition,
    "com.microsoft:renew-session-lock": renew_session_lock,
    "com.microsoft:get-session-state": get_session_state,
    "com.microsoft:set-session-state": set_session_state,
    "com.microsoft:get-message-sessions": get_message_sessions,
}
"""The supported operations; anything else gets 400 with a description naming it."""

SENDING_OPERATIONS = frozenset(
    {"com.microsoft:schedule-message", "com.microsoft:cancel-scheduled-message"}
)
"""Operations that store or remove messages: saved before the reply, like sends."""
