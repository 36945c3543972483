"""The one place where Azure SDK exceptions become :mod:`replication.exceptions` errors.

Errors about the target (throttling, timeouts, lost connections, busy servers, and a target
that is missing, disabled or refuses access) become :class:`TransientForwardError`; errors about
one message (too large) and unknown non-retryable errors become :class:`PermanentForwardError`,
whose ``reason`` is used when the message is parked. The original error is always chained.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Iterator

from azure.core.exceptions import AzureError, ClientAuthenticationError
from azure.servicebus.exceptions import (
    MessageSizeExceededError,
    MessagingEntityDisabledError,
    MessagingEntityNotFoundError,
    OperationTimeoutError,
    ServiceBusAuthenticationError,
    ServiceBusAuthorizationError,
    ServiceBusConnectionError,
    ServiceBusError,
    ServiceBusQuotaExceededError,
    ServiceBusServerBusyError,
)

from replication.exceptions import (
    ForwardError,
    PermanentForwardError,
    ReplicationError,
    TransientForwardError,
)

_PERMANENT_REASONS: tuple[tuple[type[BaseException], str], ...] = (
    (MessageSizeExceededError, "MessageSizeExceeded"),
)

_TRANSIENT: tuple[type[BaseException], ...] = (
    # The target is missing, disabled or refuses us. Right after a deployment that is normal
    # for minutes (entities and role assignments propagate), and it concerns every message,
    # not one: retried until the source's delivery budget runs out, never parked.
    MessagingEntityNotFoundError,
    MessagingEntityDisabledError,
    ServiceBusAuthorizationError,
    ClientAuthenticationError,
    ServiceBusServerBusyError,
    ServiceBusQuotaExceededError,
    OperationTimeoutError,
    ServiceBusConnectionError,
    ServiceBusAuthenticationError,
    TimeoutError,
    ConnectionError,
)


_EVENT_HUB_ERRORS = "azure.eventhub.exceptions"


@functools.cache
def _event_hub_kinds() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """The Event Hubs SDK's (transient, all) error classes. Looked at once that SDK is loaded:
    before, none of its errors can exist, and a process that uses Service Bus only never loads
    azure-eventhub for its error handling."""
    from azure.eventhub.exceptions import (
        AuthenticationError,
        ConnectError,
        EventDataSendError,
        EventHubError,
    )
    from azure.eventhub.exceptions import OperationTimeoutError as EventHubTimeoutError

    return (EventHubTimeoutError, ConnectError, AuthenticationError), (
        EventHubError,
        EventDataSendError,
    )


def translate(
    error: BaseException, *, target: str, acknowledged: frozenset[int] = frozenset()
) -> ForwardError:
    """The library error for an exception raised while sending to ``target``.

    Callers write ``raise translate(error, target=..., acknowledged=...) from error``, where
    ``acknowledged`` holds the positions of the envelopes the target accepted before the error.
    Errors about the target (missing, disabled, unauthorized, unreachable, busy) are transient;
    only errors about a message are permanent. An unknown non-retryable error is permanent too:
    the runtime then narrows the batch down and treats it as transient after all when the
    target refuses every message on its own.
    """
    text = f"{type(error).__name__}: {error}"
    for kind, reason in _PERMANENT_REASONS:
        if isinstance(error, kind):
            return PermanentForwardError(
                text, target=target, acknowledged=acknowledged, reason=reason
            )
    transient: tuple[type[BaseException], ...] = _TRANSIENT
    known: tuple[type[BaseException], ...] = (ServiceBusError, AzureError)
    if _EVENT_HUB_ERRORS in sys.modules:
        event_hub_transient, event_hub_errors = _event_hub_kinds()
        transient, known = transient + event_hub_transient, known + event_hub_errors
    if isinstance(error, transient):
        return TransientForwardError(text, target=target, acknowledged=acknowledged)
    if isinstance(error, known):
        retryable = bool(getattr(error, "retryable", False))
        kind_ = TransientForwardError if retryable else PermanentForwardError
        return kind_(text, target=target, acknowledged=acknowledged)
    return PermanentForwardError(text, target=target, acknowledged=acknowledged)


@contextlib.contextmanager
def translated(target: str) -> Iterator[None]:
    """Errors raised in the block, translated as :func:`translate` does for ``target`` and
    chained; the library's own errors pass unchanged."""
    try:
        yield
    except ReplicationError:
        raise
    except Exception as error:
        raise translate(error, target=target) from error


__all__ = ["translate", "translated"]
