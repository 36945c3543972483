"""The one place where Azure SDK exceptions become :mod:`replication.exceptions` errors.

Retryable SDK errors (throttling, timeouts, lost connections, busy servers) become
:class:`TransientForwardError`; everything else becomes :class:`PermanentForwardError`, whose
``reason`` is used when the message is dead-lettered. The original error is always chained.
"""

from __future__ import annotations

from azure.core.exceptions import AzureError, ClientAuthenticationError
from azure.eventhub.exceptions import (
    AuthenticationError as EventHubAuthenticationError,
)
from azure.eventhub.exceptions import (
    ConnectError as EventHubConnectError,
)
from azure.eventhub.exceptions import (
    EventDataSendError,
    EventHubError,
)
from azure.eventhub.exceptions import (
    OperationTimeoutError as EventHubTimeoutError,
)
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

from replication.exceptions import ForwardError, PermanentForwardError, TransientForwardError

_PERMANENT_REASONS: tuple[tuple[type[BaseException], str], ...] = (
    (MessageSizeExceededError, "MessageSizeExceeded"),
    (MessagingEntityNotFoundError, "TargetNotFound"),
    (MessagingEntityDisabledError, "TargetDisabled"),
    (ServiceBusAuthorizationError, "TargetUnauthorized"),
    (ClientAuthenticationError, "TargetUnauthorized"),
)

_TRANSIENT: tuple[type[BaseException], ...] = (
    ServiceBusServerBusyError,
    ServiceBusQuotaExceededError,
    OperationTimeoutError,
    ServiceBusConnectionError,
    ServiceBusAuthenticationError,
    EventHubTimeoutError,
    EventHubConnectError,
    EventHubAuthenticationError,
    TimeoutError,
    ConnectionError,
)


def translate(error: BaseException, *, target: str) -> ForwardError:
    """The library error for an exception raised while sending to ``target``.

    Callers write ``raise translate(error, target=...) from error``.
    ``ServiceBusAuthenticationError`` counts as transient: the service reports a missing entity
    at the token step with it, and token refreshes fail transiently too; repeated failures end in
    the dead-letter queue through MaxDeliveryCount rather than in silent loss.
    """
    for kind, reason in _PERMANENT_REASONS:
        if isinstance(error, kind):
            permanent = PermanentForwardError(f"{type(error).__name__}: {error}", target=target)
            permanent.reason = reason
            return permanent
    if isinstance(error, _TRANSIENT):
        return TransientForwardError(f"{type(error).__name__}: {error}", target=target)
    if isinstance(error, ServiceBusError | EventHubError | EventDataSendError | AzureError):
        retryable = bool(getattr(error, "retryable", False))
        kind_ = TransientForwardError if retryable else PermanentForwardError
        return kind_(f"{type(error).__name__}: {error}", target=target)
    return PermanentForwardError(f"{type(error).__name__}: {error}", target=target)


__all__ = ["translate"]
