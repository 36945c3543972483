"""The exception hierarchy: reasons arrive through constructors, class defaults stay."""

from __future__ import annotations

from replication.exceptions import (
    MalformedReplicationPropertyError,
    MessageRejectedError,
    PermanentForwardError,
    TransientForwardError,
)


def test_a_permanent_error_carries_the_reason_it_was_built_with() -> None:
    error = PermanentForwardError("too big", target="neu/orders", culprit=2, reason="TooBig")
    assert (error.reason, error.culprit, error.target) == ("TooBig", 2, "neu/orders")
    assert str(error) == "neu/orders: too big"
    assert PermanentForwardError("x").reason == "ForwardFailed"
    assert PermanentForwardError.reason == "ForwardFailed", "the class default is not touched"


def test_a_rejection_carries_its_reason_or_its_class_default() -> None:
    assert MessageRejectedError("x", reason="NoRouteMatched").reason == "NoRouteMatched"
    assert MessageRejectedError("x").reason == "MessageRejected"
    assert MalformedReplicationPropertyError("x").reason == "MalformedReplicationProperty"
    assert MessageRejectedError.reason == "MessageRejected"
    assert str(MessageRejectedError("bad body", reason="R")) == "bad body"


def test_a_transient_error_is_retryable_and_a_permanent_one_is_not() -> None:
    assert TransientForwardError("x").retryable
    assert not PermanentForwardError("x").retryable
