"""Service Bus semantics: queues, topics, subscriptions with rules, locks, DLQ, TTL, duplicates.

The broker model knows nothing about AMQP connections: the server hands it decoded proton
messages and asks it for messages to deliver. Time comes from a clock function so that lock
expiry and TTL are checked on every sweep of the server loop.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import time
import uuid
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, assert_never

from proton import Message, symbol

from replication.envelope import Envelope
from replication.sql import CorrelationFilter, SqlEvaluationError, SqlFilter, SqlRuleAction

from ._codec import text, with_header
from ._message import BrokerMessage
from ._sessions import MessageSession, SessionStore

DEAD_LETTER_REASON = "DeadLetterReason"
DEAD_LETTER_DESCRIPTION = "DeadLetterErrorDescription"
MISSING_SESSION_ID_REASON = "SessionIdIsMissing"
"""The emulator's dead-letter reason for a topic's copy (or a forwarded message) without
SessionId reaching an entity that requires sessions: Service Bus documents no outcome for it."""
_SEQUENCE = symbol("x-opt-sequence-number")
_ENQUEUED = symbol("x-opt-enqueued-time")
_LOCKED_UNTIL = symbol("x-opt-locked-until")
_PARTITION_KEY = symbol("x-opt-partition-key")
_SCHEDULED = symbol("x-opt-scheduled-enqueue-time")


@dataclasses.dataclass
class EntitySettings:
    """The properties of a queue or subscription (the emulator config's ``Properties``)."""

    max_delivery_count: int = 10
    lock_duration: float = 60.0
    default_ttl: float | None = None
    dead_lettering_on_expiration: bool = False
    requires_duplicate_detection: bool = False
    duplicate_window: float = 600.0
    forward_to: str | None = None
    forward_dead_lettered_to: str | None = None
    requires_session: bool = False


@dataclasses.dataclass
class Stored:
    """A message held by an entity, with the broker's facts about it."""

    message: Message
    sequence_number: int
    enqueued_time: float
    expires_at: float | None
    available_at: float
    delivery_count: int = 0
    lock_token: uuid.UUID | None = None
    locked_until: float = 0.0
    deferred: bool = False

    @property
    def session_id(self) -> str | None:
        """The message's SessionId (AMQP ``group-id``), None when it has none."""
        group = self.message.group_id
        return None if group is None else text(group)

    def outgoing(self) -> Message:
        """The message as a receiver gets it: broker annotations and delivery count added."""
        copy = BrokerMessage()
        copy.decode(self.message.encode())
        annotations = dict(copy.annotations or {})
        annotations[_SEQUENCE] = self.sequence_number
        annotations[_ENQUEUED] = _timestamp(self.enqueued_time)
        if self.lock_token is not None:
            annotations[_LOCKED_UNTIL] = _timestamp(self.locked_until)
        copy.annotations = annotations
        return copy

    def outgoing_bytes(self) -> bytes:
        """:meth:`outgoing`, encoded, with a header that states the delivery count."""
        message = self.outgoing()
        ttl = int(message.ttl * 1000) if message.ttl else None
        return with_header(message.encode(), ttl_ms=ttl, delivery_count=self.delivery_count)


def _timestamp(seconds: float) -> Any:
    from proton import timestamp

    return timestamp(int(seconds * 1000))


def envelope_of(message: Message) -> Envelope:
    """The Envelope view of a proton message, for rule evaluation."""
    annotations = message.annotations or {}
    # proton hands binary values out as memoryviews into a buffer it reuses for the next
    # decode: a rule action that writes the properties back must hold copies.
    properties = {
        str(k): bytes(v) if isinstance(v, memoryview) else v
        for k, v in (message.properties or {}).items()
    }
    ttl = timedelta(milliseconds=message.ttl * 1000) if message.ttl else None
    scheduled = annotations.get(_SCHEDULED)
    return Envelope(
        body=b"",
        message_id=None if message.id is None else str(message.id),
        correlation_id=None if message.correlation_id is None else str(message.correlation_id),
        content_type=str(message.content_type) if message.content_type else None,
        subject=message.subject,
        to=message.address,
        reply_to=message.reply_to,
        reply_to_session_id=message.reply_to_group_id,
        session_id=message.group_id,
        partition_key=str(annotations[_PARTITION_KEY]) if _PARTITION_KEY in annotations else None,
        time_to_live=ttl,
        scheduled_enqueue_time_utc=(
            datetime.fromtimestamp(int(scheduled) / 1000, UTC) if scheduled else None
        ),
        application_properties=properties,
    )


def apply_envelope(message: Message, before: Envelope, after: Envelope) -> Message:
    """A copy of ``message`` with what a rule action changed between ``before`` and ``after``."""
    copy = BrokerMessage()
    copy.decode(message.encode())
    if after.application_properties != before.application_properties:
        copy.properties = dict(after.application_properties)
    if after.time_to_live != before.time_to_live:
        copy.ttl = after.time_to_live.total_seconds() if after.time_to_live else 0
    fields = {
        "message_id": "id", "correlation_id": "correlation_id", "content_type": "content_type",
        "subject": "subject", "to": "address", "reply_to": "reply_to",
        "reply_to_session_id": "reply_to_group_id", "session_id": "group_id",
    }  # fmt: skip
    for envelope_field, message_field in fields.items():
        if getattr(after, envelope_field) != getattr(before, envelope_field):
            setattr(copy, message_field, getattr(after, envelope_field))
    return copy


class Settlement(enum.Enum):
    """What a receiver does with a locked message (AMQP outcome or management operation)."""

    COMPLETE = "complete"
    """Done: the message is removed (AMQP ``accepted``)."""
    ABANDON = "abandon"
    """Give it back, counting a delivery attempt (``modified`` with delivery-failed)."""
    RELEASE = "release"
    """Give it back without counting one (``released``: the client never looked at it)."""
    DEFER = "defer"
    """Set it aside until received by sequence number (``modified`` undeliverable-here)."""
    DEAD_LETTER = "dead-letter"
    """Move it to the dead-letter queue with a reason (``rejected``)."""


class Receivable:
    """A queue or subscription: what receivers read, with its dead-letter queue."""

    def __init__(
        self, path: str, settings: EntitySettings, broker: Broker, *, is_dlq: bool = False
    ):
        self.path = path
        self.settings = settings
        self.broker = broker
        self.is_dlq = is_dlq
        self.available: deque[Stored] = deque()
        self.locked: dict[uuid.UUID, Stored] = {}
        self.deferred: dict[int, Stored] = {}
        self._seen: dict[str, float] = {}
        # No message expires and no lock runs out before these: sweeps are O(1) until then
        # (lower bounds, tightened on every full pass).
        self._next_expiry = math.inf
        self._next_lock_expiry = math.inf
        # A session-enabled entity keeps its available messages per session, not in
        # ``available``; its dead-letter queue is read without sessions, as in Service Bus.
        self.sessions: SessionStore[Stored] | None = (
            SessionStore[Stored]() if settings.requires_session and not is_dlq else None
        )
        self.dead_letter: Receivable | None = None
        if not is_dlq:
            self.dead_letter = Receivable(f"{path}/$DeadLetterQueue", settings, broker, is_dlq=True)

    # -------------------------------------------------------------- enqueue
    def enqueue(self, message: Message, *, now: float) -> list[Placement]:
        """Store ``message``; where it landed (nothing for a duplicate, the target's placements
        when the entity forwards)."""
        if self.settings.forward_to and not self.is_dlq:
            return self.broker.place(self.settings.forward_to, message, now=now)
        if is_duplicate(message, self.settings, self._seen, now):
            return []
        ttl = message.ttl or self.settings.default_ttl
        annotations = message.annotations or {}
        scheduled = annotations.get(_SCHEDULED)
        available_at = max(now, int(scheduled) / 1000) if scheduled else now
        # A dead-lettered message does not expire again in the dead-letter queue.
        expires_at = None if self.is_dlq or not ttl else available_at + ttl
        if expires_at is not None:
            self._next_expiry = min(self._next_expiry, expires_at)
        stored = Stored(
            message=message,
            sequence_number=self.broker.next_sequence(),
            enqueued_time=now,
            expires_at=expires_at,
            available_at=available_at,
        )
        if self.sessions is not None and stored.session_id is None:
            # Only a topic's copy or a forwarded message gets here (a send to a session queue
            # without SessionId is refused, see Broker.refusal): the emulator dead-letters it
            # so that it stays visible instead of vanishing.
            self.dead_letter_message(
                stored,
                MISSING_SESSION_ID_REASON,
                "The message has no SessionId and this entity requires sessions.",
                now,
            )
            return []
        self._queue_of(stored).append(stored)
        return [(self, stored)]

    # -------------------------------------------------------------- sessions
    def _queue_of(self, stored: Stored) -> deque[Stored]:
        """Where ``stored`` waits while available: its session's queue, or the entity's."""
        if self.sessions is None:
            return self.available
        return self.sessions.get(stored.session_id or "").available

    def _queues(self) -> list[deque[Stored]]:
        if self.sessions is None:
            return [self.available]
        return [self.available, *self.sessions.queues()]

    def available_messages(self) -> list[Stored]:
        """Every available (or scheduled) message, sessions' included."""
        return [stored for queue in self._queues() for stored in queue]

    def _session_of(self, stored: Stored) -> MessageSession[Stored] | None:
        if self.sessions is None:
            return None
        return self.sessions.sessions.get(stored.session_id or "")

    def lock_session(
        self, session_id: str | None, holder: object, now: float
    ) -> MessageSession[Stored] | None:
        """Lock a session for a receiver (see :meth:`SessionStore.lock`)."""
        assert self.sessions is not None
        self.sweep(now)
        return self.sessions.lock(session_id, holder, now, self.settings.lock_duration)

    def renew_session(self, session: MessageSession[Stored], now: float) -> float:
        """Extend the session lock and, with it, the locks of the messages it delivered."""
        assert self.sessions is not None
        until = self.sessions.renew(session, now, self.settings.lock_duration)
        for token in session.locked_tokens:
            self.locked[token].locked_until = until
        return until

    def unlock_session(self, session: MessageSession[Stored], now: float) -> None:
        """End a session lock (it expired, or its receiver closed): the messages delivered in
        it and not settled come back, counted as a delivery attempt."""
        assert self.sessions is not None
        for token in list(session.locked_tokens):
            stored = self.locked.pop(token, None)
            if stored is not None:
                self._release(stored, counted=True, now=now)
        self.sessions.unlock(session)

    def restore(self, stored: Stored) -> None:
        """Put back a message saved by ``--data-dir`` (unlocked, see emulator._persistence)."""
        if stored.deferred:
            self.deferred[stored.sequence_number] = stored
            return
        if stored.expires_at is not None:
            self._next_expiry = min(self._next_expiry, stored.expires_at)
        self._queue_of(stored).append(stored)

    def cancel_scheduled(self, stored: Stored, now: float) -> None:
        """Drop ``stored`` if it is still waiting for its scheduled time."""
        queue = self._queue_of(stored)
        if stored.available_at > now and stored in queue:
            queue.remove(stored)

    def lock_deferred(
        self,
        sequence_numbers: list[int],
        now: float,
        *,
        lock: bool,
        session: MessageSession[Stored] | None = None,
    ) -> list[Stored]:
        """The deferred messages with these sequence numbers, locked (or removed when
        ``lock`` is False, receive-and-delete). Unknown numbers are skipped, and so are those
        of other sessions when ``session`` is given."""
        found = []
        for number in sequence_numbers:
            stored = self.deferred.get(number)
            if stored is None:
                continue
            if session is not None and stored.session_id != session.session_id:
                continue
            del self.deferred[number]
            if lock:
                self._lock(stored, now, session)
            found.append(stored)
        return found

    def dead_letter_message(
        self, stored: Stored, reason: str, description: str, now: float
    ) -> None:
        message = stored.message
        properties = dict(message.properties or {})
        properties[DEAD_LETTER_REASON] = reason
        properties[DEAD_LETTER_DESCRIPTION] = description
        message.properties = properties
        if self.settings.forward_dead_lettered_to:
            self.broker.send(self.settings.forward_dead_lettered_to, message, now=now)
            return
        assert self.dead_letter is not None
        self.dead_letter.available.append(
            dataclasses.replace(
                stored,
                expires_at=None,
                lock_token=None,
                deferred=False,
                sequence_number=self.broker.next_sequence(),
                enqueued_time=now,
            )
        )

    # -------------------------------------------------------------- receive
    def sweep(self, now: float) -> None:
        """End expired session locks, return expired locks, expire messages past their TTL."""
        if self.sessions is not None:
            for session in self.sessions.expired(now):
                self.unlock_session(session, now)
        if now >= self._next_lock_expiry:
            for token, stored in list(self.locked.items()):
                if stored.locked_until <= now:
                    del self.locked[token]
                    self._release(stored, counted=True, now=now)
            self._next_lock_expiry = min(
                (stored.locked_until for stored in self.locked.values()), default=math.inf
            )
        if now >= self._next_expiry:
            next_expiry = math.inf
            for queue in self._queues():
                keep: list[Stored] = []
                for stored in queue:
                    if stored.expires_at is not None and stored.expires_at <= now:
                        self._expire(stored, now)
                    else:
                        keep.append(stored)
                        if stored.expires_at is not None:
                            next_expiry = min(next_expiry, stored.expires_at)
                if len(keep) != len(queue):
                    queue.clear()
                    queue.extend(keep)
            self._next_expiry = next_expiry

    def _expire(self, stored: Stored, now: float) -> None:
        if self.settings.dead_lettering_on_expiration and self.dead_letter is not None:
            self.dead_letter_message(
                stored, "TTLExpiredException", "The message expired and was dead lettered.", now
            )

    def take(
        self, now: float, *, lock: bool, session: MessageSession[Stored] | None = None
    ) -> Stored | None:
        """The next deliverable message (of ``session``, for a session receiver), locked
        (peek-lock) or removed (receive-and-delete)."""
        self.sweep(now)
        queue = self.available if session is None else session.available
        for index, stored in enumerate(queue):
            if stored.available_at > now:
                continue
            del queue[index]
            if lock:
                self._lock(stored, now, session)
            return stored
        return None

    def _lock(
        self, stored: Stored, now: float, session: MessageSession[Stored] | None = None
    ) -> None:
        """Lock ``stored``; inside a session its lock is the session's (same expiry)."""
        stored.lock_token = uuid.uuid4()
        if session is None:
            stored.locked_until = now + self.settings.lock_duration
        else:
            stored.locked_until = session.locked_until
            session.locked_tokens.add(stored.lock_token)
        self._next_lock_expiry = min(self._next_lock_expiry, stored.locked_until)
        self.locked[stored.lock_token] = stored

    def _release(self, stored: Stored, *, counted: bool, now: float) -> None:
        stored.lock_token = None
        if counted:
            stored.delivery_count += 1
            if stored.delivery_count >= self.settings.max_delivery_count and self.dead_letter:
                self.dead_letter_message(
                    stored,
                    "MaxDeliveryCountExceeded",
                    f"Message could not be consumed after {self.settings.max_delivery_count} "
                    "delivery attempts.",
                    now,
                )
                return
        if stored.deferred:  # an abandoned or expired lock on a deferred message keeps it so
            self.deferred[stored.sequence_number] = stored
            return
        _requeue(self._queue_of(stored), stored)

    def settle(
        self,
        token: uuid.UUID,
        outcome: Settlement,
        now: float,
        *,
        reason: str = "",
        description: str = "",
    ) -> bool:
        """Apply a receiver's outcome to a locked message; False when the lock is gone.

        Dead-lettering a message of a dead-letter queue (which has none of its own) puts it
        back, uncounted, instead of dropping it.
        """
        stored = self.locked.pop(token, None)
        if stored is None:
            return False
        session = self._session_of(stored)
        if session is not None:
            session.locked_tokens.discard(token)
        match outcome:
            case Settlement.COMPLETE:
                pass
            case Settlement.ABANDON:
                self._release(stored, counted=True, now=now)
            case Settlement.RELEASE:
                self._release(stored, counted=False, now=now)
            case Settlement.DEFER:
                stored.deferred = True
                stored.lock_token = None
                self.deferred[stored.sequence_number] = stored
            case Settlement.DEAD_LETTER:
                if self.dead_letter is None:
                    self._release(stored, counted=False, now=now)
                else:
                    self.dead_letter_message(stored, reason, description, now)
            case _:
                assert_never(outcome)
        return True

    def renew(self, token: uuid.UUID, now: float) -> float | None:
        stored = self.locked.get(token)
        if stored is None:
            return None
        stored.locked_until = now + self.settings.lock_duration
        return stored.locked_until

    def peek(self, from_sequence: int, count: int, session_id: str | None = None) -> list[Stored]:
        """Up to ``count`` messages from ``from_sequence`` on, in order, locked and deferred
        ones included; only those of ``session_id`` when it is given."""
        everything = sorted(
            [*self.available_messages(), *self.locked.values(), *self.deferred.values()],
            key=lambda s: s.sequence_number,
        )
        return [
            s
            for s in everything
            if s.sequence_number >= from_sequence
            and (session_id is None or s.session_id == session_id)
        ][:count]


def _requeue(queue: deque[Stored], stored: Stored) -> None:
    """Put a message given back (released, abandoned, lock expired) in its place: before every
    newer message, so several given back one by one keep their order. The place is near the
    head, where the given-back messages were taken from."""
    for index, waiting in enumerate(queue):
        if waiting.sequence_number > stored.sequence_number:
            queue.insert(index, stored)
            return
    queue.append(stored)


def is_duplicate(
    message: Message, settings: EntitySettings, seen: dict[str, float], now: float
) -> bool:
    """Duplicate detection by MessageId within the entity's window; ``seen`` remembers ids."""
    if not settings.requires_duplicate_detection or message.id is None:
        return False
    key = str(message.id)
    last = seen.get(key)
    if last is not None and now - last < settings.duplicate_window:
        return True
    seen[key] = now
    return False


Placement = tuple["Receivable", Stored]
"""Where one copy of a sent message landed."""


@dataclasses.dataclass
class Rule:
    name: str
    matches: Callable[[Envelope], bool]
    action: SqlRuleAction | None


class Subscription(Receivable):
    def __init__(self, path: str, settings: EntitySettings, broker: Broker, rules: list[Rule]):
        super().__init__(path, settings, broker)
        self.rules = rules


class Topic:
    def __init__(self, name: str, settings: EntitySettings):
        self.name = name
        self.settings = settings
        self.subscriptions: dict[str, Subscription] = {}
        self._seen: dict[str, float] = {}

    def publish(self, message: Message, now: float) -> list[Placement]:
        if is_duplicate(message, self.settings, self._seen, now):
            return []
        envelope = envelope_of(message)
        placements: list[Placement] = []
        for subscription in self.subscriptions.values():
            copy = self._select(subscription, message, envelope, now)
            if copy is not None:
                placements += subscription.enqueue(copy, now=now)
        return placements

    @staticmethod
    def _select(
        subscription: Subscription, message: Message, envelope: Envelope, now: float
    ) -> Message | None:
        matched: list[Rule] = []
        try:
            matched = [rule for rule in subscription.rules if rule.matches(envelope)]
        except SqlEvaluationError as error:
            # Service Bus dead-letters on filter evaluation exceptions (the default setting).
            copy = BrokerMessage()
            copy.decode(message.encode())
            stored = Stored(copy, subscription.broker.next_sequence(), now, None, now)
            subscription.dead_letter_message(
                stored, "FilterEvaluationException", str(error)[:1024], now
            )
            return None
        if not matched:
            return None
        result = envelope
        for rule in matched:
            if rule.action is not None:
                result = rule.action.apply(result)
        return apply_envelope(message, envelope, result)


_CORRELATION_FIELDS = {
    "CorrelationId": "correlation_id", "MessageId": "message_id", "To": "to",
    "ReplyTo": "reply_to", "Label": "subject", "Subject": "subject", "SessionId": "session_id",
    "ReplyToSessionId": "reply_to_session_id", "ContentType": "content_type",
}  # fmt: skip
"""The emulator config's correlation filter keys and the envelope fields they name."""


def correlation_matcher(spec: dict[str, Any]) -> Callable[[Envelope], bool]:
    """A correlation filter from the emulator config's ``CorrelationFilter`` object."""
    fields = {_CORRELATION_FIELDS[k]: v for k, v in spec.items() if k in _CORRELATION_FIELDS}
    return CorrelationFilter(fields, dict(spec.get("Properties") or {})).matches


STANDARD_MAX_MESSAGE_SIZE = 256 * 1024
"""Service Bus Standard's message size limit; Premium namespaces raise it (1 MB by default)."""


class Broker:
    """One Service Bus namespace: its entities by lower-cased path."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.max_message_size = STANDARD_MAX_MESSAGE_SIZE
        self.last_sequence = 0
        self.queues: dict[str, Receivable] = {}
        self.topics: dict[str, Topic] = {}
        self._scheduled: dict[int, list[Placement]] = {}

    def next_sequence(self) -> int:
        """The namespace's next sequence number (one counter for all its entities)."""
        self.last_sequence += 1
        return self.last_sequence

    def add_queue(self, name: str, settings: EntitySettings) -> None:
        self.queues[name.lower()] = Receivable(name, settings, self)

    def add_topic(self, name: str, settings: EntitySettings) -> Topic:
        topic = self.topics[name.lower()] = Topic(name, settings)
        return topic

    def send(self, entity: str, message: Message, *, now: float | None = None) -> bool:
        """Enqueue into a queue or publish to a topic; False for an unknown entity."""
        if not self.is_sendable(entity):
            return False
        self.place(entity, message, now=now)
        return True

    def place(self, entity: str, message: Message, *, now: float | None = None) -> list[Placement]:
        """Send ``message`` and say where its copies landed (none for an unknown entity)."""
        now = self.clock() if now is None else now
        key = entity.strip("/").lower()
        if key in self.queues:
            return self.queues[key].enqueue(message, now=now)
        if key in self.topics:
            return self.topics[key].publish(message, now)
        return []

    def schedule(self, entity: str, message: Message) -> int:
        """Send a message that carries its scheduled enqueue time; the sequence number that
        :meth:`cancel` takes."""
        placements = self.place(entity, message)
        number = placements[0][1].sequence_number if placements else self.next_sequence()
        self._scheduled[number] = placements
        return number

    def cancel(self, sequence_number: int) -> None:
        """Cancel a scheduled message (and its copies in a topic's subscriptions)."""
        now = self.clock()
        for receivable, stored in self._scheduled.pop(sequence_number, []):
            receivable.cancel_scheduled(stored, now)

    def receivable(self, path: str) -> Receivable | None:
        """The queue, subscription or dead-letter queue at ``path`` (case-insensitive)."""
        parts = path.strip("/").lower().split("/")
        dlq = parts[-1] == "$deadletterqueue"
        if dlq:
            parts = parts[:-1]
        entity: Receivable | None = None
        if len(parts) == 1:
            entity = self.queues.get(parts[0])
        elif len(parts) == 3 and parts[1] == "subscriptions" and parts[0] in self.topics:
            subscriptions = {k.lower(): v for k, v in self.topics[parts[0]].subscriptions.items()}
            entity = subscriptions.get(parts[2])
        if entity is not None and dlq:
            return entity.dead_letter
        return entity

    def refusal(self, entity: str, message: Message) -> str | None:
        """Why a send of ``message`` to ``entity`` is refused, None when it is not.

        A session-enabled queue refuses a message without SessionId, as Service Bus does
        (InvalidOperationException: "The SessionId was not set on a message, and it cannot be
        sent to the entity. Entities that have session support enabled can only receive
        messages that have the SessionId set to a valid value."). A topic takes it; see
        :data:`MISSING_SESSION_ID_REASON` for its session-enabled subscriptions.
        """
        queue = self.queues.get(entity.strip("/").lower())
        if queue is not None and queue.sessions is not None and message.group_id is None:
            if queue.settings.forward_to:
                return None
            return (
                "The SessionId was not set on a message, and it cannot be sent to the entity. "
                "Entities that have session support enabled can only receive messages that "
                "have the SessionId set to a valid value."
            )
        return None

    def is_sendable(self, path: str) -> bool:
        key = path.strip("/").lower()
        return key in self.queues or key in self.topics

    def sweep(self) -> None:
        now = self.clock()
        for queue in self.queues.values():
            queue.sweep(now)
        for topic in self.topics.values():
            for subscription in topic.subscriptions.values():
                subscription.sweep(now)


def sql_rule(name: str, expression: str, action: str | None) -> Rule:
    compiled = SqlFilter(expression)
    return Rule(name, compiled.matches, SqlRuleAction(action) if action else None)
