"""``--data-dir``: keep each namespace's messages and events across emulator restarts.

Each namespace is one JSON snapshot, ``DIR/<namespace>.json``, replaced atomically (written
beside it, flushed to disk, renamed over it), so a crash leaves the previous snapshot or the
new one, never half of one.

When it is written decides what survives a crash (see :class:`Persistence`): a send is saved
before the emulator acknowledges it, so an acknowledged message or event is never lost; other
changes (completions, lock renewals, expiries) are saved at most a second later, so after a
crash a message completed in that last second can be delivered once more, which receivers
must tolerate anyway, since Service Bus redelivers whenever a lock is lost. A clean stop
(Ctrl-C, SIGTERM) saves everything.

Locks do not survive a restart: a message that was locked comes back available with its
delivery count raised, as if its lock had expired. Session locks do not either; session state
(and when it last changed) does, under ``"session_states"`` of the entity.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Protocol

from proton import Message

from replication.exceptions import ConfigurationError

from ._eventhubs import Event, EventHubsBroker
from ._message import BrokerMessage
from ._servicebus import Broker, Receivable, Stored

logger = logging.getLogger(__name__)

FORMAT = 1

SAVE_INTERVAL = 1.0


def _encode(message: Message) -> str:
    return base64.b64encode(message.encode()).decode("ascii")


def _decode(text: str) -> Message:
    message = BrokerMessage()
    message.decode(base64.b64decode(text))
    return message


def _stored(stored: Stored, *, lock_lost: bool) -> dict[str, Any]:
    return {
        "message": _encode(stored.message),
        "sequence": stored.sequence_number,
        "enqueued": stored.enqueued_time,
        "expires": stored.expires_at,
        "available": stored.available_at,
        "deliveries": stored.delivery_count + int(lock_lost),
        "deferred": stored.deferred,
    }


def _receivables(broker: Broker) -> list[Receivable]:
    entities: list[Receivable] = [*broker.queues.values()]
    for topic in broker.topics.values():
        entities += topic.subscriptions.values()
    return [*entities, *(e.dead_letter for e in entities if e.dead_letter is not None)]


def servicebus_state(broker: Broker) -> dict[str, Any]:
    """Everything a Service Bus namespace holds, as JSON-ready data."""
    entities = {}
    for entity in _receivables(broker):
        messages = [_stored(s, lock_lost=False) for s in entity.available_messages()]
        messages += [_stored(s, lock_lost=True) for s in entity.locked.values()]
        messages += [_stored(s, lock_lost=False) for s in entity.deferred.values()]
        entities[entity.path] = {"messages": messages, "seen": entity._seen}
        if entity.sessions is not None:
            entities[entity.path]["session_states"] = {
                session.session_id: [
                    base64.b64encode(session.state).decode("ascii"),
                    session.state_updated,
                ]
                for session in entity.sessions.sessions.values()
                if session.state is not None
            }
    topics = {topic.name: {"seen": topic._seen} for topic in broker.topics.values()}
    return {"entities": entities, "topics": topics, "next_sequence": broker.last_sequence + 1}


def restore_servicebus(broker: Broker, state: dict[str, Any], source: str) -> None:
    broker.last_sequence = int(state.get("next_sequence", 1)) - 1
    for path, entity_state in state.get("entities", {}).items():
        entity = broker.receivable(path)
        if entity is None:
            count = len(entity_state.get("messages", []))
            logger.warning(
                "%s: %s is no longer configured; %d messages dropped", source, path, count
            )
            continue
        entity._seen = {str(k): float(v) for k, v in entity_state.get("seen", {}).items()}
        for item in sorted(entity_state.get("messages", []), key=lambda i: i["sequence"]):
            stored = Stored(
                message=_decode(item["message"]),
                sequence_number=int(item["sequence"]),
                enqueued_time=float(item["enqueued"]),
                expires_at=item["expires"],
                available_at=float(item["available"]),
                delivery_count=int(item["deliveries"]),
                deferred=bool(item["deferred"]),
            )
            entity.restore(stored)
        if entity.sessions is not None:
            saved_states = entity_state.get("session_states", {})
            for session_id, (session_state, updated) in saved_states.items():
                session = entity.sessions.get(str(session_id))
                session.state = base64.b64decode(session_state)
                session.state_updated = float(updated)
    for name, topic_state in state.get("topics", {}).items():
        topic = broker.topics.get(name.lower())
        if topic is not None:
            topic._seen = {str(k): float(v) for k, v in topic_state.get("seen", {}).items()}


def eventhubs_state(broker: EventHubsBroker) -> dict[str, Any]:
    """Every event of every partition of an Event Hubs namespace."""
    hubs = {}
    for hub in broker.hubs.values():
        hubs[hub.name] = {
            "partitions": [
                {
                    "next_offset": partition.next_offset,
                    "events": [
                        [_encode(e.message), e.offset, e.enqueued_time, e.partition_key]
                        for e in partition.events
                    ],
                }
                for partition in hub.partitions
            ]
        }
    return {"hubs": hubs}


def restore_eventhubs(broker: EventHubsBroker, state: dict[str, Any], source: str) -> None:
    for name, hub_state in state.get("hubs", {}).items():
        hub = broker.hubs.get(name.lower())
        saved = hub_state.get("partitions", [])
        if hub is None or len(saved) > len(hub.partitions):
            logger.warning(
                "%s: event hub %s is gone or has fewer partitions; its events are dropped",
                source,
                name,
            )
            continue
        for partition, partition_state in zip(hub.partitions, saved, strict=False):
            partition.events = [
                Event(_decode(message), index, int(offset), float(enqueued), key)
                for index, (message, offset, enqueued, key) in enumerate(partition_state["events"])
            ]
            partition.next_offset = int(partition_state["next_offset"])


class Snapshots(Protocol):
    """What is saved and restored: a namespace's handler (``emulator._handler.BrokerHandler``),
    which writes its broker's state with the functions above."""

    def snapshot(self) -> dict[str, Any]: ...

    def restore(self, state: dict[str, Any], source: str) -> None: ...


class Persistence:
    """Saves one namespace's snapshot: at once after sends (:meth:`save_now`), else at most
    once per :data:`SAVE_INTERVAL` while anything changed (:meth:`touch` / :meth:`tick`)."""

    def __init__(self, directory: Path, namespace: str, snapshots: Snapshots) -> None:
        self.path = directory / f"{namespace}.json"
        self.snapshots = snapshots
        self._dirty = False
        self._saved_at = 0.0

    def load(self) -> bool:
        """Restore the snapshot if there is one; True when something was restored."""
        if not self.path.exists():
            return False
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise ConfigurationError(
                f"unreadable snapshot: {error}", source=str(self.path)
            ) from None
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise ConfigurationError(
                f"not a snapshot of format {FORMAT} (written by another version?)",
                source=str(self.path),
            )
        try:
            self.snapshots.restore(document["state"], str(self.path))
        except ConfigurationError:
            raise
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as error:
            # Missing keys, wrong types, bad base64 (binascii.Error is a ValueError).
            raise ConfigurationError(
                f"snapshot content is not valid ({type(error).__name__}: {error})",
                source=str(self.path),
            ) from None
        return True

    def touch(self) -> None:
        self._dirty = True

    def tick(self) -> None:
        if self._dirty and time.monotonic() - self._saved_at >= SAVE_INTERVAL:
            self.save_now()

    def save_now(self) -> None:
        state = self.snapshots.snapshot()
        temporary = self.path.with_suffix(".json.tmp")
        with temporary.open("w", encoding="utf-8") as file:
            json.dump({"format": FORMAT, "state": state}, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self.path)
        self._dirty = False
        self._saved_at = time.monotonic()
