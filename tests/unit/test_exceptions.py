"""The exception hierarchy: reasons arrive through constructors, class defaults stay."""

from __future__ import annotations

import importlib
import pkgutil

import patterns
import replication
from replication.exceptions import (
    MalformedReplicationPropertyError,
    MessageRejectedError,
    PermanentForwardError,
    ReplicationError,
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


def _library_modules() -> list[str]:
    names = []
    for package in (replication, patterns):
        names.append(package.__name__)
        names += [
            info.name
            for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
            if not info.name.endswith(".__main__")  # importing it runs the command line
        ]
    return names


def test_every_error_class_is_in_one_hierarchy_and_in_an_errors_module() -> None:
    """All error classes live in ``replication/exceptions.py`` or their package's errors module
    (``_errors``), and every one is a :class:`ReplicationError`: callers catch one root."""
    found = {}
    for name in _library_modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseException)
                and value.__module__ == name
            ):
                found[value.__qualname__] = name
    assert "ReplicationError" in found, "the walk found the hierarchy's root"
    assert {
        cls: module
        for cls, module in found.items()
        if not (module == "replication.exceptions" or module.rpartition(".")[2] == "_errors")
    } == {}
    outside = [
        cls
        for cls, module in found.items()
        if not issubclass(getattr(importlib.import_module(module), cls), ReplicationError)
    ]
    assert outside == []
