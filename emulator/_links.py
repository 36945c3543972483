"""What the connection code and both broker handlers do to proton links and deliveries.

Opening a link the peer sends on, refusing an attach, settling a delivery, writing an error
as Service Bus writes it, and keeping a handler's own state on a link. proton hands out a new
Python wrapper object for the same link on every event, so a link's identity cannot hold
state; attributes set on a wrapper do persist (proton keeps them in the link's record), and
:func:`keep_state` / :func:`state_of` use exactly one of them, typed.
"""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

from proton import Condition, Delivery, Endpoint, Link, Terminus, symbol

BATCH_CREDIT = 300
"""Credit the emulator gives a link the peer sends on, topped up when half is used."""

_TRACKING_ID = symbol("com.microsoft:tracking-id")

State = TypeVar("State")


def amqp_error(condition: str, description: str) -> Condition:
    """An AMQP error as Service Bus writes it, info map included: the SDK reads the info field
    positionally, and proton leaves an empty one out."""
    return Condition(condition, description, {_TRACKING_ID: str(uuid.uuid4())})


def refuse(link: Link, condition: str, description: str) -> None:
    """Refuse a peer's attach the way Service Bus and Event Hubs do: an attach that names no
    source and no target, then a detach with the error.

    That is Microsoft.Azure.Amqp's answer to every link whose opening fails on the service
    side (``AmqpLink.OnLinkOpenFailed`` sends ``CreateAttachForClose()``, only name, role and
    handle, then closes with the exception's error; Azure/azure-amqp ``src/AmqpLink.cs``), and
    what a frame trace of Service Bus shows for a next-available session receiver on an empty
    session queue: ``Attach{source=null, target=null, properties=null}``, then
    ``Detach{closed=true, error=com.microsoft:timeout}`` (an Azure SDK for Java investigation
    of session links that could not recover). The
    SDKs never count such a link as attached: ``_incoming_attach`` in their
    ``_pyamqp/link.py`` (and ``aio/_link_async.py``) marks a link whose attach has no source
    or target detached, the detach's error is kept, and the receiver's open raises it (the
    link's ``get_state``), mapped to its exception class, e.g. ``com.microsoft:timeout`` to
    ``OperationTimeoutError``. An attach echoing the source would count as attached first: the
    open would succeed with no session and the error would only surface later.
    """
    link.source.type = Terminus.UNSPECIFIED
    link.target.type = Terminus.UNSPECIFIED
    link.open()
    link.condition = amqp_error(condition, description)
    link.close()


def open_for_transfers(link: Link) -> None:
    """Accept a link the peer sends on and give it credit."""
    link.open()
    link.flow(BATCH_CREDIT)


def replenish_credit(link: Link) -> None:
    """Top up a sending peer's credit once half of it is used."""
    if link.credit < BATCH_CREDIT // 2:
        link.flow(BATCH_CREDIT - link.credit)


def finish(delivery: Delivery, state: Any) -> None:
    """Settle ``delivery`` with ``state``; a delivery the client already settled gets no
    disposition back, only our side of the settlement."""
    if not delivery.settled:
        delivery.update(state)
    delivery.settle()


def is_open(link: Link) -> bool:
    """Neither side has closed the link."""
    return not link.state & (Endpoint.LOCAL_CLOSED | Endpoint.REMOTE_CLOSED)


def remote_filter(link: Link) -> dict[Any, Any]:
    """The filter map of the source the peer attached with ({} when it has none); its values
    are described types (``.value``) or plain values."""
    data = link.remote_source.filter
    try:
        data.rewind()
        if not data.next():
            return {}
        value = data.get_object()
    except Exception:  # proton raises its own errors for data it cannot decode
        return {}
    return value if isinstance(value, dict) else {}


def keep_state(link: Link, state: object) -> None:
    """Keep a handler's state for ``link`` on the link itself."""
    link.emulator_state = state


def state_of(link: Link, kind: type[State]) -> State | None:
    """The state :func:`keep_state` kept on ``link`` if it is a ``kind``, else None (a link the
    connection code serves itself, such as a management reply link)."""
    state = getattr(link, "emulator_state", None)
    return state if isinstance(state, kind) else None


__all__ = [
    "BATCH_CREDIT",
    "amqp_error",
    "finish",
    "is_open",
    "keep_state",
    "open_for_transfers",
    "refuse",
    "remote_filter",
    "replenish_credit",
    "state_of",
]
