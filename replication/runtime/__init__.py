"""The replication runtime: a task's pattern run over a batch, independent of any SDK.

- :class:`TaskRunner` (``_runner``): plan a batch with the task's pattern, then send, park or
  skip; what every host calls per batch. Its parts:

  - ``_delivery``: sending the replicas per target, with retries and narrowing down to the
    message a target refuses; :class:`TargetSender`, the one-method seam every target
    implements (the SDK senders in :mod:`replication.transport.senders`; :class:`MemoryTarget`
    here, for dry runs and tests);
  - ``_parking``: the parked copy of each message that cannot be replicated, or a notice when
    it does not fit (:func:`parked_copy`, :func:`smaller_parked_copy`);
  - ``_ledger``: the source positions each target acknowledged, so that a redelivered batch
    sends only what is missing (:func:`position`);
  - ``_backoff``: the one backoff policy of the project (:class:`Backoff`) and an invocation's
    attempt budget (:class:`RetryPolicy`, :class:`Budget`).

- :func:`runner_for` (``_assembly``): a task's runner built from the topology and a source of
  senders, as the hosts and ``redrive`` use it; :func:`task_telemetry`, its instruments.
- :class:`TaskStatus` (``_task_status``): what a locally running task has done and whether it
  is making progress (the local host's per-task state, read by the live table), and
  :func:`supervise` (``_supervise``), which keeps a local loop running: restarted with the
  one backoff policy whenever it fails, never given up.

The runtime imports neither a transport nor a host (``tests/unit/test_architecture.py``).
"""

from ._assembly import LazySender, SenderSource, runner_for, task_telemetry
from ._backoff import MIN_SEND_TIMEOUT, Backoff, Budget, Retries, RetryPolicy
from ._delivery import TargetSender
from ._ledger import LEDGER_SIZE, Ledger, position, replica_position
from ._memory import MemoryTarget
from ._parking import parked_copy, smaller_parked_copy
from ._runner import BatchOutcome, BatchRunner, Named, TaskRunner
from ._supervise import (
    LOUD_AFTER_FAILURES,
    RECONNECT_MAX_SECONDS,
    RECONNECT_MIN_SECONDS,
    failure_level,
    supervise,
)
from ._task_status import TaskStatus, describe

__all__ = [
    "LEDGER_SIZE",
    "LOUD_AFTER_FAILURES",
    "MIN_SEND_TIMEOUT",
    "RECONNECT_MAX_SECONDS",
    "RECONNECT_MIN_SECONDS",
    "Backoff",
    "BatchOutcome",
    "BatchRunner",
    "Budget",
    "LazySender",
    "Ledger",
    "MemoryTarget",
    "Named",
    "Retries",
    "RetryPolicy",
    "SenderSource",
    "TargetSender",
    "TaskRunner",
    "TaskStatus",
    "describe",
    "failure_level",
    "parked_copy",
    "position",
    "replica_position",
    "runner_for",
    "smaller_parked_copy",
    "supervise",
    "task_telemetry",
]
