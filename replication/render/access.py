"""Least-privilege role assignments of the Function app, derived from the tasks.

Each task's identity needs *Data Receiver* on its source entity and *Data Sender* on each target
and on its dead-letter target; nothing namespace-wide, no Owner, no keys. Service Bus roles are
scoped to the queue or topic (a subscription is read through its topic's scope), Event Hubs roles
to the event hub. Role definition ids are the built-in ones.
"""

from __future__ import annotations

import dataclasses

from replication.topology import EntityRef, NamespaceKind, Topology

from ._common import resource_name

SERVICEBUS_DATA_SENDER = "69a216fc-b8fb-44d8-bc22-1f3c2cd27a39"
SERVICEBUS_DATA_RECEIVER = "4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0"
EVENTHUBS_DATA_SENDER = "2b629674-e913-4c01-ae53-ef4638d8f975"
EVENTHUBS_DATA_RECEIVER = "a638d3c7-ab3a-418d-83e6-5f17a39d4fde"

ROLE_IDS = {
    ("servicebus", "receiver"): SERVICEBUS_DATA_RECEIVER,
    ("servicebus", "sender"): SERVICEBUS_DATA_SENDER,
    ("eventhubs", "receiver"): EVENTHUBS_DATA_RECEIVER,
    ("eventhubs", "sender"): EVENTHUBS_DATA_SENDER,
}


@dataclasses.dataclass(frozen=True, order=True)
class RoleAssignment:
    """One role on one entity: ``entityType`` is ``queue``, ``topic`` or ``eventhub``."""

    namespace: str
    entity_type: str
    entity: str
    role: str
    role_definition_id: str

    def as_parameter(self) -> dict[str, str]:
        return {
            "namespace": self.namespace,
            "entityType": self.entity_type,
            "entity": self.entity,
            "role": self.role,
            "roleDefinitionId": self.role_definition_id,
        }


def _assignment(topology: Topology, ref: EntityRef, role: str) -> RoleAssignment:
    namespace = topology.namespace(ref.namespace)
    if namespace.kind is NamespaceKind.EVENTHUBS:
        entity_type = "eventhub"
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
    )


def role_assignments(topology: Topology) -> list[RoleAssignment]:
    """Every role the Function app needs, once each, in a stable order."""
    assignments = set()
    for task in topology.tasks:
        assignments.add(_assignment(topology, task.source, "receiver"))
        senders = [*task.targets, *([task.dead_letter_target] if task.dead_letter_target else [])]
        for ref in senders:
            assignments.add(_assignment(topology, ref, "sender"))
    return sorted(assignments)
