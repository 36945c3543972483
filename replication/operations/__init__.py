"""Operator commands' logic: ``python -m replication status`` and ``redrive``.

- ``_redrive``: :class:`Redriver`, one task's parked or dead-lettered messages surveyed and
  driven back through the task's runner, never a notice sent as the message
  (:func:`redrive_source` says where they wait; the module docstring says what each message
  costs others in a shared parking queue);
- ``_status``: :func:`read_status`, per task the backlog, dead-lettered and parked counts (by
  peeking) or the event hub partitions' lag, and the newest unread heartbeat per path, with
  an unreachable namespace recorded instead of raised.

Operations decide what to read, what to do with it and how to report it; the reading and
settling with the SDKs is ``replication.transport``'s (:mod:`replication.transport.inspection`,
:class:`~replication.transport.servicebus.EntityReader`,
:class:`~replication.transport.eventhubs.EventReader`). They never import a
host (``tests/unit/test_architecture.py``).
"""

from replication.exceptions import RedriveStoppedError

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
from ._status import (
    PEEK_CAP,
    Count,
    HeartbeatReport,
    PartitionLag,
    StatusReport,
    TaskReport,
    read_status,
)

__all__ = [
    "PEEK_CAP",
    "Count",
    "EventPosition",
    "HeartbeatReport",
    "PartitionLag",
    "ProgressCallback",
    "RedriveOrigin",
    "RedriveReport",
    "RedriveSource",
    "RedriveStoppedError",
    "Redriver",
    "StatusReport",
    "Survey",
    "TaskReport",
    "read_status",
    "redrive_source",
]
