"""SDK errors raised while sending become the library's transient or permanent errors.

The Event Hubs SDK's error classes are looked up only once that SDK is loaded (so that a
Service Bus-only process never imports it); these cases pin that both SDKs' errors are sorted
as before, whichever was loaded first.
"""

from __future__ import annotations

import pytest
from azure.core.exceptions import AzureError
from azure.eventhub.exceptions import (
    AuthenticationError,
    ConnectError,
    EventDataSendError,
    EventHubError,
    OperationTimeoutError,
)
from azure.servicebus.exceptions import (
    MessageSizeExceededError,
    ServiceBusConnectionError,
    ServiceBusError,
)

from replication.exceptions import PermanentForwardError, TransientForwardError
from replication.transport.errors import translate


@pytest.mark.parametrize(
    ("error", "kind", "reason"),
    [
        (OperationTimeoutError("slow"), TransientForwardError, None),
        (ConnectError("gone"), TransientForwardError, None),
        (AuthenticationError("denied"), TransientForwardError, None),
        (EventHubError("odd"), PermanentForwardError, None),
        (EventDataSendError("refused"), PermanentForwardError, None),
        (ServiceBusConnectionError(message="gone"), TransientForwardError, None),
        (MessageSizeExceededError(message="big"), PermanentForwardError, "MessageSizeExceeded"),
        (ServiceBusError(message="odd"), PermanentForwardError, None),
        (AzureError("odd"), PermanentForwardError, None),
        (ConnectionResetError("reset"), TransientForwardError, None),
        (ValueError("bad"), PermanentForwardError, None),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else None,
)
def test_sdk_errors_are_transient_or_permanent(
    error: BaseException, kind: type[BaseException], reason: str | None
) -> None:
    translated = translate(error, target="neu/orders", acknowledged=frozenset({0}))
    assert type(translated) is kind
    assert translated.acknowledged == frozenset({0})
    if reason is not None:
        assert getattr(translated, "reason", None) == reason
