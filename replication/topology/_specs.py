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
    lock_duration: Annotated[Duration, Field(ge=timedelta(seconds=5), le=timedelta(minutes=5))] = (
        timedelta(minutes=1)
    )
    default_message_time_to_live: PositiveDuration | None = None
    dead_lettering_on_message_expiration: bool = False
    requires_session: bool = False
    forward_to: str | None = None
    forward_dead_lettered_messages_to: str | None = None


class QueueSpec(_EntitySettings):
    """A Service Bus queue."""

    name: EntityName
    requires_duplicate_detection: bool = False
    duplicate_detection_history_time_window: PositiveDuration = timedelta(minutes=10)


class SubscriptionSpec(_EntitySettings):
    """A topic subscription and its rules (``$Default`` with a TrueFilter when none is given)."""

    name: Annotated[str, Field(min_length=1, max_length=50)]
    rules: list[RuleSpec] = Field(default_factory=list)
    dead_lettering_on_filter_evaluation_exceptions: bool = True


class TopicSpec(SpecModel):
    """A Service Bus topic and its subscriptions."""

    name: EntityName
    requires_duplicate_detection: bool = False
    duplicate_detection_history_time_window: PositiveDuration = timedelta(minutes=10)
    default_message_time_to_live: PositiveDuration | None = None
    subscriptions: list[SubscriptionSpec] = Field(default_factory=list)


class EventHubSpec(SpecModel):
    """An event hub with its partitions and consumer groups (``$Default`` always exists)."""

    name: EntityName
    partition_count: Annotated[int, Field(ge=1, le=1024)] = 2
    message_retention_in_days: Annotated[int, Field(ge=1, le=90)] = 1
    consumer_groups: list[str] = Field(default_factory=list)


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
    region: Annotated[str, Field(min_length=1)]
    kind: NamespaceKind
    fully_qualified_namespace: Annotated[
        str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9.-]*[A-Za-z0-9](:\d+)?$")
    ]
    connection: Annotated[str, Field(pattern=_SETTING_NAME)]
    key_vault_secret: Annotated[str, Field(pattern=r"^[A-Za-z0-9-]{1,127}$")] | None = None
    sku: Literal["Basic", "Standard", "Premium"] = "Standard"
    queues: list[QueueSpec] = Field(default_factory=list)
    topics: list[TopicSpec] = Field(default_factory=list)
    event_hubs: list[EventHubSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _entities_match_kind(self) -> NamespaceSpec:
        if self.kind is NamespaceKind.SERVICEBUS and self.event_hubs:
            raise ValueError("a servicebus namespace cannot declare eventHubs")
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
    """The topology's optional ``heartbeats`` section (off unless ``enabled``).

    When enabled, every namespace that is the source of a task (Service Bus, or Event Hubs above
    Basic) publishes a small heartbeat every ``interval`` on its topic or event hub ``entity``,
    and generated all-active tasks replicate it to every namespace that namespace's tasks send
    to, so the receiving side can tell a silent path from an idle one (see :mod:`._heartbeats`).
    """

    enabled: bool = False
    interval: PositiveDuration = timedelta(minutes=1)
    entity: EntityName = DEFAULT_HEARTBEAT_ENTITY


class EntityRef(SpecModel):
    """A reference to an entity in a namespace, as a task's source or target.

    For a source, ``subscription`` names the topic subscription to read, ``consumerGroup`` the
    event hub consumer group, and ``deadLetterQueue`` reads the entity's dead-letter queue
    (spillover).
    """

    namespace: str
    entity: EntityName
    subscription: str | None = None
    consumer_group: str | None = None
    dead_letter_queue: bool = False

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
