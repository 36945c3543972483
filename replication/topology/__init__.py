"""The topology file: namespaces, entities and replication tasks, validated with pydantic.

One JSON document (default ``topology.json``; the app setting ``REPLICATION_TOPOLOGY`` names
another path) is the single source of truth from which the Function triggers, the Bicep
parameters, the az CLI script and the emulator configuration are rendered, so they never
disagree. :func:`load_topology` reads and validates it; every problem names the file, the JSON
path and what is wrong.

Modules, in dependency order: ``_specs`` (namespaces and entities) and ``_tasks`` (tasks, and
tasks resolved with their pattern's typed options) -> ``_topology`` (the document) ->
``_errors`` / ``_checks`` (reporting and cross-references) -> ``_lanes`` (what each task runs
as: one lane per target for fan-out tasks, the default parking queue) -> ``_capture`` (the
capture subscriptions and tasks of Service Bus namespaces with a ``capture`` section) ->
``_heartbeats`` (the optional heartbeat entities, subscriptions, consumer groups and tasks) ->
``_load``;
``_outage`` (retry budgets and delivery counts), ``_materialize`` (the subscriptions, consumer
groups, delivery counts and parking queues tasks need) and ``_sql`` (every SQL expression, for
the linter) work on a loaded topology; ``_sessions`` says which entities require sessions and
refuses a session-enabled target fed by messages that may lack a SessionId. ``_names`` derives
bounded, stable names. ``_schema`` writes the file's JSON Schema from the same models
(``replication schema``).

A loaded topology's ``tasks`` are the tasks that run: a fan-out task with several targets
reading a subscription or consumer group is replaced by its lanes
(``ResolvedTask.lane_of`` names the file's task; ``Topology.lanes(name)`` lists them).
"""

from __future__ import annotations

from ._capture import CAPTURE_SUBSCRIPTION, CaptureSource, capture_everywhere, capture_sources
from ._errors import json_path
from ._heartbeats import (
    HEARTBEAT_PARTITIONS,
    HEARTBEAT_READER,
    HEARTBEAT_STATUS,
    HEARTBEAT_STATUS_GROUP,
    HeartbeatPath,
    heartbeat_lookback,
    heartbeat_origins,
    heartbeat_paths,
    heartbeat_receivers,
    heartbeat_schedule,
    heartbeat_time_to_live,
    takes_part,
)
from ._lanes import PARKING_QUEUE, lane_keys, splits
from ._load import DEFAULT_TOPOLOGY_PATH, TOPOLOGY_SETTING, load_topology, parse_topology
from ._materialize import materialize
from ._monitoring import ALERT_WINDOWS, MonitoringSpec
from ._names import bounded, slug
from ._outage import (
    attempt_budget,
    longest_outage_tolerance,
    required_delivery_count,
    tolerated_outage,
)
from ._schema import SCHEMA_DIALECT, topology_schema, topology_schema_text
from ._sessions import carries_session_ids, requires_session
from ._specs import (
    CAPTURE_NAME_FORMAT,
    DEFAULT_CONSUMER_GROUP,
    STORAGE_BLOB_DATA_CONTRIBUTOR,
    CaptureSpec,
    EntityRef,
    EventHubSpec,
    HeartbeatSpec,
    NamespaceKind,
    NamespaceSpec,
    QueueSpec,
    SubscriptionSpec,
    TopicSpec,
)
from ._sql import sql_texts
from ._tasks import ResolvedTask, RetrySpec, TaskSpec
from ._topology import Topology

__all__ = [
    "ALERT_WINDOWS",
    "CAPTURE_NAME_FORMAT",
    "CAPTURE_SUBSCRIPTION",
    "DEFAULT_CONSUMER_GROUP",
    "DEFAULT_TOPOLOGY_PATH",
    "HEARTBEAT_PARTITIONS",
    "HEARTBEAT_READER",
    "HEARTBEAT_STATUS",
    "HEARTBEAT_STATUS_GROUP",
    "PARKING_QUEUE",
    "SCHEMA_DIALECT",
    "STORAGE_BLOB_DATA_CONTRIBUTOR",
    "TOPOLOGY_SETTING",
    "CaptureSource",
    "CaptureSpec",
    "EntityRef",
    "EventHubSpec",
    "HeartbeatPath",
    "HeartbeatSpec",
    "MonitoringSpec",
    "NamespaceKind",
    "NamespaceSpec",
    "QueueSpec",
    "ResolvedTask",
    "RetrySpec",
    "SubscriptionSpec",
    "TaskSpec",
    "TopicSpec",
    "Topology",
    "attempt_budget",
    "bounded",
    "capture_everywhere",
    "capture_sources",
    "carries_session_ids",
    "heartbeat_lookback",
    "heartbeat_origins",
    "heartbeat_paths",
    "heartbeat_receivers",
    "heartbeat_schedule",
    "heartbeat_time_to_live",
    "json_path",
    "lane_keys",
    "load_topology",
    "longest_outage_tolerance",
    "materialize",
    "parse_topology",
    "required_delivery_count",
    "requires_session",
    "slug",
    "splits",
    "sql_texts",
    "takes_part",
    "tolerated_outage",
    "topology_schema",
    "topology_schema_text",
]
