"""The local host: every task of a topology run on this machine with the SDKs.

- ``_host``: :class:`LocalHost`, behind ``python -m replication run`` and ``demo``: one
  supervised receive loop per task feeding the task's runner, heartbeats included;
- ``_stall_watch``: :class:`StallWatch`, which reports a task whose loops went silent (hung), with
  :func:`thread_stacks`;
- ``_emulator_process``: :func:`emulator_process`, the local AMQP emulator started as a child
  process the way a user starts it, with its connection settings read from its output;
  :class:`EmulatorProcess`, one that can be killed and restarted on the same ports.
"""

from typing import TYPE_CHECKING, Any

from ._host import LocalHost
from ._stall_watch import StallWatch, thread_stacks

if TYPE_CHECKING:
    from ._emulator_process import (
        EXPORT,
        SECTIONS,
        EmulatorProcess,
        EmulatorStartError,
        emulator_process,
    )

_EMULATOR_NAMES = frozenset(
    {"EXPORT", "SECTIONS", "EmulatorProcess", "EmulatorStartError", "emulator_process"}
)


def __getattr__(name: str) -> Any:
    """The emulator helpers, imported on first use: ``run`` needs none of them (nor the
    ``subprocess`` module they import), ``demo``, ``drill`` and the tests do."""
    if name in _EMULATOR_NAMES:
        from . import _emulator_process

        return getattr(_emulator_process, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EXPORT",
    "SECTIONS",
    "EmulatorProcess",
    "EmulatorStartError",
    "LocalHost",
    "StallWatch",
    "emulator_process",
    "thread_stacks",
]
