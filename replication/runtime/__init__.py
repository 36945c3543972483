"""The replication runtime: a task's pattern run over a batch, independent of any SDK.

- :class:`TaskRunner` (``_runner``): plan a batch with the task's pattern, then send with
  retries inside the invocation's budget, park or skip; what every host calls per batch.
- :class:`TargetSender`: the one-method seam every target implements (the SDK senders in
  :mod:`replication.transport.senders`; :class:`MemoryTarget` here, for dry runs and tests).
- :class:`TaskStatus` (``_task_status``): what a locally running task has done and whether it
  is making progress (the local host's per-task state, read by the live table).

The runtime imports neither a transport nor a host (``tests/unit/test_architecture.py``).
"""

from ._memory import MemoryTarget
from ._runner import (
    LEDGER_SIZE,
    BatchOutcome,
    RetryPolicy,
    TargetSender,
    TaskRunner,
    parked_copy,
    position,
    smaller_parked_copy,
)
from ._task_status import TaskStatus, describe

__all__ = [
    "LEDGER_SIZE",
    "BatchOutcome",
    "MemoryTarget",
    "RetryPolicy",
    "TargetSender",
    "TaskRunner",
    "TaskStatus",
    "describe",
    "parked_copy",
    "position",
    "smaller_parked_copy",
]
