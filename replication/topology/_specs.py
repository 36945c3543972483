"""The topology file's schema for namespaces and their entities, as pydantic records.

Keys are camelCase so that Bicep can read the same file with ``loadJsonContent``. Field-level
rules (name patterns, ranges) live here; rules that relate records to each other are in
:mod:`._checks`. Tasks are in :mod:`._tasks`, the document as a whole in :mod:`._topology`.
"""

from __future__ import annotations

import enum
from datetime import timedelta
from typing import Annotated, Literal

from pydantic import Field, model_validator

from replication.durations import Duration
from replication.rules import RuleSpec, SpecModel

DEFAULT_CONSUMER_GROUP = "$Default"

_LOGICAL_NAME = r"^[a-z][a-z0-9-]{0,48}[a-z0-9]$"
_ENTITY_NAME = r"^[A-Za-z0-9][A-Za-z0-9._\-/~]{0,259}$"
_SETTING_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"


class NamespaceKind(enum.StrEnum):
    """Which messaging service a namespace belongs to."""

    SERVICEBUS = "servicebus"
    EVENTHUBS = "eventhubs"


PositiveDuration = Annotated[Duration, Field(gt=timedelta(0))]
EntityName = Annotated[str, Field(pattern=_ENTITY_NAME)]


class _EntitySettings(SpecModel):
    max_delivery_count: Annotated[int, Field(ge=1, le=2000)] = 10
    """deliveries before Service Bus dead-letters a message (a task's source needs enough for
    its `retry.outageTolerance`)"""
    lock_duration: Annotated[Duration, Field(ge=timedelta(seconds=5), le=timedelta(minutes=5))] = (
        timedelta(minutes=1)
    )
    """how long a received message stays locked to its receiver"""
    default_message_time_to_live: PositiveDuration | None = None
    """how long a message lives unless it says otherwise (none: the service's maximum)"""
    dead_lettering_on_message_expiration: bool = False
    """move expired messages to the dead-letter queue instead of dropping them"""
    requires_session: bool = False
    """session-enabled: read by session receivers only, in order per SessionId"""
    forward_to: str | None = None
    """an entity of the same namespace that Service Bus forwards every message to"""
    forward_dead_lettered_messages_to: str | None = None
    """an entity of the same namespace that receives this one's dead-lettered messages"""


class QueueSpec(_EntitySettings):
    """A Service Bus queue."""

    name: EntityName
    """the queue's name"""
    requires_duplicate_detection: bool = False
    """drop a message whose MessageId the entity saw within the history window"""
    duplicate_detection_history_time_window: PositiveDuration = timedelta(minutes=10)
    """how long MessageIds are remembered for duplicate detection"""


class SubscriptionSpec(_EntitySettings):
    """A topic subscription and its rules (``$Default`` with a TrueFilter when none is given)."""

    name: Annotated[str, Field(min_length=1, max_length=50)]
    """the subscription's name"""
    rules: list[RuleSpec] = Field(default_factory=list)
    """its rules; none: Service Bus's `$Default` rule, which takes every message"""
    dead_lettering_on_filter_evaluation_exceptions: bool = True
    """dead-letter a message whose filter evaluation fails"""


class TopicSpec(SpecModel):
    """A Service Bus topic and its subscriptions."""

    name: EntityName
    """the topic's name"""
    requires_duplicate_detection: bool = False
    """drop a message whose MessageId the topic saw within the history window"""
    duplicate_detection_history_time_window: PositiveDuration = timedelta(minutes=10)
    """how long MessageIds are remembered for duplicate detection"""
    default_message_time_to_live: PositiveDuration | None = None
    """how long a message lives unless it says otherwise (none: the service's maximum)"""
    subscriptions: list[SubscriptionSpec] = Field(default_factory=list)
    """the topic's subscriptions (replication subscriptions are added for the tasks)"""


class EventHubSpec(SpecModel):
    """An event hub with its partitions and consumer groups (``$Default`` always exists)."""

    name: EntityName
    """the event hub's name"""
    partition_count: Annotated[int, Field(ge=1, le=1024)] = 2
    """partitions (order is kept per partition, hence per partition key)"""
    message_retention_in_days: Annotated[int, Field(ge=1, le=90)] = 1
    """how long events are kept (Standard: 1 to 7 days)"""
    consumer_groups: list[str] = Field(default_factory=list)
    """consumer groups besides `$Default` (the tasks' own are added)"""


STORAGE_BLOB_DATA_CONTRIBUTOR = "ba92f5b4-2d11-453d-a403-e96b0029c9fe"
"""Built-in role Storage Blob Data Contributor: what a capture needs on its container only."""

CAPTURE_NAME_FORMAT = (
    "{Namespace}/{EventHub}/{PartitionId}/{Year}/{Month}/{Day}/{Hour}/{Minute}/{Second}"
)
"""Event Hubs Capture's default blob names, the ones the audit's ``--since`` / ``--until``
select by (spark/_window.py)."""


class CaptureSpec(SpecModel):
    """Where a namespace's traffic is captured for the duplicate audit (``replication audit``).

    On an Event Hubs namespace, every event hub gets native Event Hubs Capture (Avro, the audit's
    ``--format capture``) into ``container`` of the storage account ``storageAccount``, which
    must be in the deployment's resource group; the namespace's system-assigned identity writes
    there, with Storage Blob Data Contributor on that container only. ``interval`` (1 to 15
    minutes) and ``sizeLimitBytes`` (10 to 500 MiB) close a capture file, whichever comes first.

    A Service Bus namespace has no native capture: every topic of it gets the subscription
    ``replication-capture`` (Service Bus's ``$Default`` rule: it takes everything the topic
    holds, originals and replicas; heartbeats travel on a topic of their own and are never
    captured), and the replicator runs a capture task per topic (the Function app and
    ``replication run`` alike) that writes each batch it receives there as the audit's
    JSON-lines records (``--format json``) under ``{namespace}/{yyyy}/{MM}/{dd}/{HH}/``,
    and completes the batch only once the files are durable. The Function app's identity gets
    Storage Blob Data Contributor on that container only. A queue is not captured (reading it
    would take its messages from the application). ``interval`` and ``sizeLimitBytes`` are Event
    Hubs Capture's and are refused on a Service Bus namespace: one file per received batch and
    hour of enqueue time.
    """

    # The schema and the reference page publish the docstring above. For developers: the
    # audit is spark/ (spark/README.md), the Service Bus capture task replication.capture and
    # ._capture.

    storage_account: Annotated[str, Field(pattern=r"^[a-z0-9]{3,24}$")]
    """the storage account's name (in the deployment's resource group)"""
    container: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")] = "captures"
    """the blob container the capture files go to"""
    interval: Annotated[Duration, Field(ge=timedelta(minutes=1), le=timedelta(minutes=15))] = (
        timedelta(minutes=5)
    )
    """how long a capture file collects events before it is written"""
    size_limit_bytes: Annotated[int, Field(ge=10 * 1024 * 1024, le=500 * 1024 * 1024)] = (
        300 * 1024 * 1024
    )
    """how many bytes close a capture file before its interval ends"""


class NamespaceSpec(SpecModel):
    """One namespace in one region.

    ``name`` is the logical name written into ``repl-origin`` / ``repl-path``; ``connection`` is
    the app-setting prefix of its identity-based connection
    (``<connection>__fullyQualifiedNamespace``). For a namespace outside the Function app's
    tenant, where managed identity cannot be used, ``keyVaultSecret`` names the Key Vault secret
    holding its SAS connection string; the app setting ``<connection>`` then becomes a Key Vault
    reference and the connection-string path is used.
    """

    name: Annotated[str, Field(pattern=_LOGICAL_NAME)]
    """the logical name replicas carry in `repl-origin` and `repl-path`"""
    region: Annotated[str, Field(min_length=1)]
    """the Azure region (`westeurope`)"""
    kind: NamespaceKind
    """`servicebus` or `eventhubs`"""
    fully_qualified_namespace: Annotated[
        str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9.-]*[A-Za-z0-9](:\d+)?$")
    ]
    """the namespace's host name (`contoso-weu.servicebus.windows.net`)"""
    connection: Annotated[str, Field(pattern=_SETTING_NAME)]
    """the app-setting prefix of its connection (`SB_WEU`: `SB_WEU__fullyQualifiedNamespace`,
    or `SB_WEU` holding a connection string)"""
    key_vault_secret: Annotated[str, Field(pattern=r"^[A-Za-z0-9-]{1,127}$")] | None = None
    """for a namespace in another tenant: the Key Vault secret holding its connection string"""
    sku: Literal["Basic", "Standard", "Premium"] = "Standard"
    """the pricing tier (the capacity plan counts against its limits)"""
    queues: list[QueueSpec] = Field(default_factory=list)
    """Service Bus queues"""
    topics: list[TopicSpec] = Field(default_factory=list)
    """Service Bus topics with their subscriptions"""
    event_hubs: list[EventHubSpec] = Field(default_factory=list)
    """event hubs"""
    capture: CaptureSpec | None = None
    """what the namespace holds, written into a storage container for the duplicate audit:
    Event Hubs Capture of every event hub, or a capture task per Service Bus topic"""

    @model_validator(mode="after")
    def _entities_match_kind(self) -> NamespaceSpec:
        if self.kind is NamespaceKind.SERVICEBUS and self.event_hubs:
            raise ValueError("a servicebus namespace cannot declare eventHubs")
        if self.kind is NamespaceKind.SERVICEBUS and self.capture is not None:
            chosen = self.capture.model_fields_set & {"interval", "size_limit_bytes"}
            if chosen:
                raise ValueError(
                    "capture.interval and capture.sizeLimitBytes are Event Hubs Capture's; a "
                    "servicebus namespace's capture writes one file per received batch and hour"
                )
        if self.kind is NamespaceKind.EVENTHUBS and (self.queues or self.topics):
            raise ValueError("an eventhubs namespace cannot declare queues or topics")
        return self

    def entity_names(self) -> list[str]:
        """Queue, topic and event hub names, in declaration order."""
        names = [queue.name for queue in self.queues]
        names += [topic.name for topic in self.topics]
        names += [hub.name for hub in self.event_hubs]
        return names


DEFAULT_HEARTBEAT_ENTITY = "replication-heartbeat"


class HeartbeatSpec(SpecModel):
    """Heartbeats along every replication path (off unless ``enabled``).

    When enabled, every namespace that is the source of a task (Service Bus, or Event Hubs above
    Basic) publishes a small heartbeat every ``interval`` on its topic or event hub ``entity``,
    and all-active tasks added for them replicate it to every namespace that namespace's tasks
    send to, so the receiving side can tell a silent path from an idle one.
    """

    # The schema and the reference page publish the docstring above; ._heartbeats adds the
    # heartbeat entities and tasks when the topology is loaded.

    enabled: bool = False
    """publish heartbeats and replicate them along every replication path"""
    interval: PositiveDuration = timedelta(minutes=1)
    """one heartbeat per interval: whole seconds dividing a minute, minutes dividing an hour or
    hours dividing a day"""
    entity: EntityName = DEFAULT_HEARTBEAT_ENTITY
    """the topic or event hub heartbeats travel on (never a user entity)"""


class EntityRef(SpecModel):
    """A reference to an entity in a namespace, as a task's source or target.

    For a source, ``subscription`` names the topic subscription to read, ``consumerGroup`` the
    event hub consumer group, and ``deadLetterQueue`` reads the entity's dead-letter queue
    (spillover).
    """

    namespace: str
    """a namespace's logical `name`"""
    entity: EntityName
    """a queue, topic or event hub of that namespace"""
    subscription: str | None = None
    """a source topic's subscription to read"""
    consumer_group: str | None = None
    """a source event hub's consumer group (default `$Default`)"""
    dead_letter_queue: bool = False
    """read the source entity's dead-letter queue (spillover)"""

    @property
    def entity_path(self) -> str:
        """``namespace/entity``: the entity itself, whichever subscription or group is read
        (the ``source`` of the envelopes received from it)."""
        return f"{self.namespace}/{self.entity}"

    def describe(self) -> str:
        path = self.entity_path
        if self.subscription:
            path += f"/Subscriptions/{self.subscription}"
        if self.consumer_group:
            path += f"/ConsumerGroups/{self.consumer_group}"
        if self.dead_letter_queue:
            path += "/$DeadLetterQueue"
        return path


__all__ = [
    "DEFAULT_CONSUMER_GROUP",
    "DEFAULT_HEARTBEAT_ENTITY",
    "EntityName",
    "EntityRef",
    "EventHubSpec",
    "HeartbeatSpec",
    "NamespaceKind",
    "NamespaceSpec",
    "PositiveDuration",
    "QueueSpec",
    "SubscriptionSpec",
    "TopicSpec",
]
