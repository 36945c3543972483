"""Least-privilege role assignments of the Function app, derived from the tasks.

Each task's identity needs *Data Receiver* on what it reads and *Data Sender* on each target and
on its dead-letter target; nothing namespace-wide, no Owner, no keys. Each role is scoped as
narrowly as the service allows ("Authenticate a managed identity with Microsoft Entra ID to
access Azure Service Bus resources", *Resource scope*: queue, topic or subscription):

- a task reading a topic subscription gets *Data Receiver* on that subscription only, not on
  the topic, so it cannot read the topic's other subscriptions. The Functions docs also require
  it: a Service Bus topic trigger's role assignment "must have effective scope over the Service
  Bus subscription resource". A subscription's dead-letter queue (spillover) is inside that
  scope;
- queues (and their dead-letter queues) at the queue; Service Bus targets at the queue or topic;
- Event Hubs roles at the event hub.

With heartbeats enabled, the publishing timer gets *Data Sender* on each origin's heartbeat
topic (or event hub) and the readers *Data Receiver* on each receiving namespace's
``heartbeat-reader`` subscription (or heartbeat event hub). ``status`` reads the
``heartbeat-status`` subscriptions with the operator's identity, not the app's.

A Service Bus namespace with a ``capture`` section: each capture task
(:func:`~replication.topology.capture_sources`) reads its topic's ``replication-capture``
subscription, so the app gets *Data Receiver* on that subscription, and writes the batches as
blobs, so it gets *Storage Blob Data Contributor* on each distinct capture container (entity type
``container``), not on the storage account, whose other containers it has no business with. The
account is in the deployment's resource group and the container exists, as for Event Hubs
Capture. Role definition ids are the built-in ones.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from replication.topology import (
    HEARTBEAT_READER,
    STORAGE_BLOB_DATA_CONTRIBUTOR,
    EntityRef,
    NamespaceKind,
    Topology,
    capture_sources,
    heartbeat_origins,
    heartbeat_receivers,
)

from ._common import provisioned, resource_name

SERVICEBUS_DATA_SENDER = "69a216fc-b8fb-44d8-bc22-1f3c2cd27a39"
SERVICEBUS_DATA_RECEIVER = "4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0"
EVENTHUBS_DATA_SENDER = "2b629674-e913-4c01-ae53-ef4638d8f975"
EVENTHUBS_DATA_RECEIVER = "a638d3c7-ab3a-418d-83e6-5f17a39d4fde"

ROLE_IDS = {
    ("servicebus", "receiver"): SERVICEBUS_DATA_RECEIVER,
    ("servicebus", "sender"): SERVICEBUS_DATA_SENDER,
    ("eventhubs", "receiver"): EVENTHUBS_DATA_RECEIVER,
    ("eventhubs", "sender"): EVENTHUBS_DATA_SENDER,
    ("storage", "contributor"): STORAGE_BLOB_DATA_CONTRIBUTOR,
}

ENTITY_TYPES = ("queue", "topic", "subscription", "eventhub", "container")
"""The scopes ``infra/modules/roles.bicep`` assigns roles at."""


@dataclasses.dataclass(frozen=True, order=True)
class RoleAssignment:
    """One role on one entity.

    ``entity_type`` is one of :data:`ENTITY_TYPES`; for ``subscription``, ``entity`` is the
    topic and ``subscription`` the subscription's name; for ``container`` (a blob container),
    ``namespace`` is the resource that holds it, the storage account, and ``entity`` the
    container's name.
    """

    namespace: str
    entity_type: str
    entity: str
    role: str
    role_definition_id: str
    subscription: str | None = None

    def as_parameter(self) -> dict[str, Any]:
        parameter = {
            "namespace": self.namespace,
            "entityType": self.entity_type,
            "entity": self.entity,
            "role": self.role,
            "roleDefinitionId": self.role_definition_id,
        }
        if self.subscription is not None:
            parameter["subscription"] = self.subscription
        return parameter


def _assignment(topology: Topology, ref: EntityRef, role: str) -> RoleAssignment:
    namespace = topology.namespace(ref.namespace)
    subscription = None
    if namespace.kind is NamespaceKind.EVENTHUBS:
        entity_type = "eventhub"
    elif ref.subscription is not None:
        entity_type, subscription = "subscription", ref.subscription
    elif any(topic.name == ref.entity for topic in namespace.topics):
        entity_type = "topic"
    else:
        entity_type = "queue"
    return RoleAssignment(
        namespace=resource_name(namespace),
        entity_type=entity_type,
        entity=ref.entity,
        role=role,
        role_definition_id=ROLE_IDS[(namespace.kind.value, role)],
        subscription=subscription,
    )


def role_assignments(topology: Topology) -> list[RoleAssignment]:
    """Every role the Function app needs, once each, in a stable order.

    None in a namespace of another tenant (``keyVaultSecret``): the app reaches it with a SAS
    connection string, and this tenant's identity cannot be granted roles there."""
    assignments = set()
    for task in topology.tasks:
        assignments.add(_assignment(topology, task.source, "receiver"))
        senders = [*task.targets, *([task.dead_letter_target] if task.dead_letter_target else [])]
        for ref in senders:
            assignments.add(_assignment(topology, ref, "sender"))
    # Heartbeats (replication.heartbeats.functions): the timer publishes on each origin's
    # heartbeat topic or event hub, the readers read each receiving namespace's reader
    # subscription or event hub.
    entity = topology.heartbeats.entity
    for origin in heartbeat_origins(topology):
        ref = EntityRef(namespace=origin, entity=entity)
        assignments.add(_assignment(topology, ref, "sender"))
    for target in heartbeat_receivers(topology):
        ref = EntityRef(namespace=target, entity=entity, subscription=HEARTBEAT_READER)
        assignments.add(_assignment(topology, ref, "receiver"))
    captures = capture_sources(topology)
    for capture in captures:
        assignments.add(_assignment(topology, capture.source, "receiver"))
    owned = {resource_name(namespace) for namespace in provisioned(topology)}
    entities = sorted(a for a in assignments if a.namespace in owned)
    # The capture storage is this deployment's even when the captured namespace is another
    # tenant's (read with its SAS connection string): the app writes the blobs as itself.
    containers = {
        RoleAssignment(
            namespace=capture.spec.storage_account,
            entity_type="container",
            entity=capture.spec.container,
            role="contributor",
            role_definition_id=ROLE_IDS[("storage", "contributor")],
        )
        for capture in captures
    }
    return entities + sorted(containers)
