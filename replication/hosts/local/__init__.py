"""The local host: every task of a topology run on this machine with the SDKs.

- ``_host``: :class:`LocalHost`, behind ``python -m replication run`` and ``demo``: one
  supervised receive loop per task feeding the task's runner, heartbeats included;
- ``_emulator_process``: :func:`emulator_process`, the local AMQP emulator started as a child
  process the way a user starts it, with its connection settings read from its output;
  :class:`EmulatorProcess`, one that can be killed and restarted on the same ports.
"""

from ._emulator_process import (
    EXPORT,
    SECTIONS,
    EmulatorProcess,
    EmulatorStartError,
    emulator_process,
)
from ._host import LocalHost

__all__ = [
    "EXPORT",
    "SECTIONS",
    "EmulatorProcess",
    "EmulatorStartError",
    "LocalHost",
    "emulator_process",
]
