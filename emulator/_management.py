"""Service Bus request/response operations on ``<entity>/$management``.

The SDKs send these as AMQP messages whose ``operation`` application property names the
operation and whose body is a map; the reply carries ``statusCode`` and, on success, a map.
Each handler here takes the broker, the entity path and the request body and returns
``(status, reply body)``: 200 with a body, 204 for "nothing found", 404 for an unknown entity,
410 for a lock that is gone (what the SDK turns into ``MessageLockLostError``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from proton import UNDESCRIBED, Array, Data, Message, symbol, timestamp

from ._codec import text
from ._servicebus import Broker, Settlement

Reply = tuple[int, Any]

# update-disposition's status words -> settlements.
_DISPOSITIONS = {
    "completed": Settlement.COMPLETE,
    "abandoned": Settlement.ABANDON,
    "defered": Settlement.DEFER,  # sic: the spelling on the wire
    "suspended": Settlement.DEAD_LETTER,
}

_RECEIVE_AND_DELETE = 0


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


def renew_lock(broker: Broker, entity: str, body: Any) -> Reply:
    receivable = broker.receivable(entity)
    if receivable is None:
        return 404, None
    now = broker.clock()
    expirations = []
    for token in elements(_field(body, "lock-tokens")):
        until = receivable.renew(uuid.UUID(str(token)), now)
        if until is None:
            return 410, None
        expirations.append(timestamp(int(until * 1000)))
    return 200, {"expirations": expirations}


def peek(broker: Broker, entity: str, body: Any) -> Reply:
    receivable = broker.receivable(entity)
    if receivable is None:
        return 404, None
    start = int(_field(body, "from-sequence-number", 0))
    count = int(_field(body, "message-count", 1))
    found = receivable.peek(start, count)
    if not found:
        return 204, None
    return 200, {"messages": [{"message": stored.outgoing_bytes()} for stored in found]}


def schedule(broker: Broker, entity: str, body: Any) -> Reply:
    if not broker.is_sendable(entity):
        return 404, None
    numbers = []
    for entry in elements(_field(body, "messages")):
        message = Message()
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
    found = receivable.lock_deferred(numbers, broker.clock(), lock=lock)
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
    for token in elements(_field(body, "lock-tokens")):
        settled = receivable.settle(
            uuid.UUID(str(token)),
            outcome,
            now,
            reason=text(reason),
            description=text(description),
        )
        if not settled:
            return 410, None
    return 200, {}


OPERATIONS: dict[str, Callable[[Broker, str, Any], Reply]] = {
    "com.microsoft:renew-lock": renew_lock,
    "com.microsoft:peek-message": peek,
    "com.microsoft:schedule-message": schedule,
    "com.microsoft:cancel-scheduled-message": cancel_scheduled,
    "com.microsoft:receive-by-sequence-number": receive_deferred,
    "com.microsoft:update-disposition": update_disposition,
}
"""The supported operations; anything else gets 400 with a description naming it."""

SENDING_OPERATIONS = frozenset(
    {"com.microsoft:schedule-message", "com.microsoft:cancel-scheduled-message"}
)
"""Operations that store or remove messages: saved before the reply, like sends."""
