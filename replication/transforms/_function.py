"""A user transform as the runtime calls it: the function, whether it is ``async``, its time limit.

:meth:`Transform.of` checks the function once, when the topology loads (or when it is
registered in code), so that a function the runtime could not call fails indexing with the
file and JSON path instead of parking every message: it must be a function or a callable
object (not a class), and take exactly one argument without a default, the message.
Whatever its annotations say, it receives an :class:`~replication.envelope.Envelope`.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import cast

from replication.exceptions import TransformSignatureError

from ._results import TransformFunction

DEFAULT_TIMEOUT = 10.0
"""Seconds one call may take before its message is parked as ``TransformFailed`` (the
topology's ``transform.timeout`` changes it); the batch's budget bounds all calls together."""


@dataclasses.dataclass(frozen=True, slots=True)
class Transform:
    """A checked transform: ``name`` (its reference or registered name, for logs and errors),
    the ``function``, whether it is a coroutine function, and ``timeout`` per call (seconds)."""

    name: str
    function: TransformFunction
    is_async: bool
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def of(cls, function: object, *, name: str, timeout: float = DEFAULT_TIMEOUT) -> Transform:
        """Check ``function`` and wrap it.

        Raises:
            TransformSignatureError: not callable, a class, or not callable with exactly one
                positional argument.
        """
        check_signature(function, name)
        return cls(name, cast(TransformFunction, function), _is_async(function), timeout)


def check_signature(function: object, name: str) -> None:
    """Raise :class:`TransformSignatureError` unless ``function(message)`` is a valid call."""
    if inspect.isclass(function):
        raise TransformSignatureError(
            f"'{name}' is a class; a transform is a function that takes the message"
        )
    if not callable(function):
        raise TransformSignatureError(
            f"'{name}' is a {type(function).__name__}, not a function; a transform is a "
            "function that takes the message"
        )
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return  # a builtin without introspectable parameters: the first call will tell
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    parameters = list(signature.parameters.values())
    required = [p for p in parameters if p.kind in positional and p.default is p.empty]
    takes_any = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)
    keyword_only = [
        p.name
        for p in parameters
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is p.empty
    ]
    if keyword_only:
        raise TransformSignatureError(
            f"'{name}' requires keyword argument(s) {', '.join(keyword_only)}; a transform is "
            "called with one argument, the message"
        )
    if len(required) == 1 or (not required and takes_any):
        return
    if not required and any(p.kind in positional for p in parameters):
        return  # one optional positional parameter: the message fills it
    names = ", ".join(p.name for p in required) or "none"
    raise TransformSignatureError(
        f"'{name}' takes {len(required)} required argument(s) ({names}); a transform takes "
        "exactly one, the message"
    )


def _is_async(function: object) -> bool:
    if inspect.iscoroutinefunction(function):
        return True
    # A callable object: its class's __call__ decides.
    return not inspect.isfunction(function) and inspect.iscoroutinefunction(type(function).__call__)


__all__ = ["DEFAULT_TIMEOUT", "Transform", "TransformSignatureError", "check_signature"]
