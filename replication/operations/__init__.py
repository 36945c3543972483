"""Operator commands' logic: ``python -m replication status``, ``redrive``, and the figures
``failover|failback`` read.

- ``_figures``: :class:`FiguresReader`, per task the backlog, the age of the oldest
  unreplicated message, the dead-lettered and parked counts and the newest heartbeat of each of
  its paths, read one way for ``status`` and the failover commands, with an unreachable
  namespace recorded instead of raised;
- ``_states``: :func:`decide`, a task's state (replicating, lagging, stalled, failing,
  unknown) and its RPO if you failed over now, from those figures and the topology's
  ``monitoring`` thresholds (no I/O);
- ``_status``: :func:`read_status`, the figures of every task and heartbeat path as one report
  (text or JSON);
- ``_redrive``: :class:`Redriver`, one task's parked or dead-lettered messages surveyed and
  driven back through the task's runner, never a notice sent as the message
  (:func:`redrive_source` says where they wait; the module docstring says what each message
  costs others in a shared parking queue).

Operations decide what to read, what to do with it and how to report it; the reading and
settling with the SDKs is ``replication.transport``'s (:mod:`replication.transport.inspection`,
:class:`~replication.transport.servicebus.EntityReader`,
:class:`~replication.transport.eventhubs.EventReader`). They never import a
host (``tests/unit/test_architecture.py``).
"""

from replication.exceptions import RedriveStoppedError

from ._figures import (
    PEEK_CAP,
    Backlog,
    CaptureReport,
    Count,
    FiguresReader,
    PartitionLag,
    TaskReport,
)
from ._redrive import (
    EventPosition,
    ProgressCallback,
    RedriveOrigin,
    Redriver,
    RedriveReport,
    RedriveSource,
    Survey,
    redrive_source,
)
from ._states import Decision, Observed, PathHeartbeat, Rpo, TaskState, Thresholds, decide
from ._status import (
    HeartbeatReport,
    StatusReport,
    capture_line,
    heartbeat_text,
    read_status,
    task_lines,
)

__all__ = [
    "PEEK_CAP",
    "Backlog",
    "CaptureReport",
    "Count",
    "Decision",
    "EventPosition",
    "FiguresReader",
    "HeartbeatReport",
    "Observed",
    "PartitionLag",
    "PathHeartbeat",
    "ProgressCallback",
    "RedriveOrigin",
    "RedriveReport",
    "RedriveSource",
    "RedriveStoppedError",
    "Redriver",
    "Rpo",
    "StatusReport",
    "Survey",
    "TaskReport",
    "TaskState",
    "Thresholds",
    "capture_line",
    "decide",
    "heartbeat_text",
    "read_status",
    "redrive_source",
    "task_lines",
]
