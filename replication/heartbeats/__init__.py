"""Heartbeats: what tells a silent replication path from an idle one, end to end.

Everything heartbeat lives here except two parts that belong to their layers: what the
topology loader adds for the ``heartbeats`` section (entities, tasks, paths:
:mod:`replication.topology`) and reading heartbeats with the Service Bus SDK
(:func:`~replication.transport.servicebus.run_heartbeat_reader`).

- ``_messages``: the heartbeat message, its parsing, the publisher loop
  (:func:`publish_forever`) and the ages per path (:class:`HeartbeatBook`);
- ``_metric``: the ``replication.heartbeat.age`` gauge (:func:`observe_heartbeat_age`), and
  :func:`watch_paths`, what both hosts do first: the topology's paths expected in a book that
  the gauge reports;
- :mod:`replication.heartbeats.functions`: the Function app's publishing timer and reading
  triggers (:func:`~replication.heartbeats.functions.register_heartbeats`);
- :mod:`replication.heartbeats.local`: the local host's publisher and reader threads
  (:func:`~replication.heartbeats.local.start_heartbeats`).

The two host wirings are imported by their host, not re-exported here: importing the feature's
core must import neither ``azure.functions`` nor an SDK, and the SDK reader in ``transport``
imports this core.
"""

from ._messages import (
    HEARTBEAT_SUBJECT,
    Heartbeat,
    HeartbeatBook,
    heartbeat_now,
    parse_heartbeat,
    publish_forever,
)
from ._metric import (
    GAUGE_NAME,
    METER_NAME,
    heartbeat_observations,
    observe_heartbeat_age,
    watch_paths,
)

__all__ = [
    "GAUGE_NAME",
    "HEARTBEAT_SUBJECT",
    "METER_NAME",
    "Heartbeat",
    "HeartbeatBook",
    "heartbeat_now",
    "heartbeat_observations",
    "observe_heartbeat_age",
    "parse_heartbeat",
    "publish_forever",
    "watch_paths",
]
