"""Which entities require sessions, and the task combinations Service Bus would refuse.

A queue or subscription with ``requiresSession`` is read only by session receivers (the Function
trigger needs ``isSessionsEnabled``, the local host a session receiver), and Service Bus refuses a
message without ``SessionId`` sent to a session-enabled queue. So a task that sends to such a
queue must read messages that are sure to carry one:

- a session-enabled queue or subscription (every message in it has a SessionId), or the
  dead-letter queue of one (dead-lettering keeps the SessionId);
- an event hub: a replica's SessionId is the event's partition key (see
  :func:`replication.transport.servicebus.replica_ids`); an event sent without one is parked by
  the sender with reason ``SessionIdMissing`` rather than refused by the service.

A plain queue or subscription may hold messages without SessionId, so the loader refuses it as
the source of a task with a session-enabled target queue, or with a target topic that has a
session-enabled subscription (such a subscription does not take a message without SessionId:
its copy is dead-lettered there). Every pattern keeps the order of the
messages of a session (a pattern's decisions follow the batch's order, and the senders send
each SessionId's messages in that order), so no pattern is refused for a session source.
"""

from __future__ import annotations

from ._checks import Fail
from ._specs import EntityRef, NamespaceKind
from ._tasks import ResolvedTask
from ._topology import Topology


def requires_session(topology: Topology, ref: EntityRef) -> bool:
    """Whether the queue or subscription ``ref`` names requires sessions (its dead-letter queue
    never does; a topic or an event hub has no such setting)."""
    if ref.dead_letter_queue:
        return False
    return _entity_requires_session(topology, ref)


def _entity_requires_session(topology: Topology, ref: EntityRef) -> bool:
    namespace = topology.namespace(ref.namespace)
    if namespace.kind is NamespaceKind.EVENTHUBS:
        return False
    if ref.subscription is None:
        return any(q.name == ref.entity and q.requires_session for q in namespace.queues)
    return any(
        subscription.name == ref.subscription and subscription.requires_session
        for topic in namespace.topics
        if topic.name == ref.entity
        for subscription in topic.subscriptions
    )


def carries_session_ids(topology: Topology, source: EntityRef) -> bool:
    """Whether every message a task reads from ``source`` has a SessionId for its replicas: a
    session-enabled entity or its dead-letter queue, or an event hub (partition key)."""
    if topology.namespace(source.namespace).kind is NamespaceKind.EVENTHUBS:
        return True
    return _entity_requires_session(topology, source)


def check_sessions(topology: Topology, task: ResolvedTask, here: str, fail: Fail) -> None:
    """Refuse a session-enabled target queue fed by a source whose messages may lack a
    SessionId (see the module docstring)."""
    source = task.spec.source
    if carries_session_ids(topology, source):
        return
    for j, target in enumerate(task.spec.targets):
        if requires_session(topology, target):
            refused = f"queue '{target.entity}' requires sessions, and Service Bus refuses"
        elif subscriptions := _session_subscriptions(topology, target):
            refused = (
                f"topic '{target.entity}' has session-enabled subscription "
                f"'{subscriptions[0]}', which does not take"
            )
        else:
            continue
        fail(
            f"{here}.targets[{j}]",
            f"{refused} messages without SessionId; {source.describe()} does not require "
            "sessions, so its messages may have none (make the source session-enabled, or the "
            "target not)",
        )


def _session_subscriptions(topology: Topology, target: EntityRef) -> list[str]:
    """The session-enabled subscriptions of the topic ``target`` names (none for a queue)."""
    namespace = topology.namespace(target.namespace)
    if namespace.kind is NamespaceKind.EVENTHUBS:
        return []
    return [
        subscription.name
        for topic in namespace.topics
        if topic.name == target.entity
        for subscription in topic.subscriptions
        if subscription.requires_session
    ]


__all__ = ["carries_session_ids", "check_sessions", "requires_session"]
