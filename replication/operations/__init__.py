"""Operator commands' logic: what ``python -m replication status`` reads and reports.

- ``_status``: :func:`read_status`, per task the backlog, dead-lettered and parked counts (by
  peeking) or the event hub partitions' lag, and the newest unread heartbeat per path, with
  an unreachable namespace recorded instead of raised.

Operations decide what to read and how to report it; the reading with the SDKs is
``replication.transport``'s (:mod:`replication.transport.inspection`). They never import a
host (``tests/unit/test_architecture.py``).
"""

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
    "HeartbeatReport",
    "PartitionLag",
    "StatusReport",
    "TaskReport",
    "read_status",
]
