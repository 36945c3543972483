"""Heartbeat messages and their ages: what tells a silent replication path from an idle one.

With the topology's ``heartbeats`` section enabled (see :mod:`replication.topology._heartbeats`
for the entities and tasks it adds), every Service Bus namespace that is a task source gets a
heartbeat every interval, published on its heartbeat topic by a timer (a Functions timer
trigger, :mod:`replication.heartbeats.functions`; a thread of the local host,
:func:`publish_forever`). The generated heartbeat tasks replicate it like any message; at each
receiving namespace a reader (:func:`~replication.transport.servicebus.run_heartbeat_reader`)
hands every heartbeat to a :class:`HeartbeatBook`, which keeps per path (origin, target) the
publish time of the latest one. A path's *age* is now minus that time: about one interval plus
the replication lag while the path works, growing without bound when anything on it (the
publisher, the replicator, the source or target namespace, the network between them) stops.

A heartbeat is an ordinary message:

- body: JSON ``{"origin": "weu", "publishedAt": "2026-11-23T22:40:01.123Z"}``;
- Subject ``replication-heartbeat``, ContentType ``application/json``;
- MessageId ``heartbeat/<origin>/<publishedAt>``: derived from origin and time, so two
  publishers of one namespace in the same millisecond (two Function app instances) collapse on
  duplicate-detecting entities;
- no time to live of its own: the heartbeat topic's default (ten intervals, at least an hour)
  expires heartbeats nobody reads.

A message on the heartbeat topic that is not a heartbeat is ignored by the reader (logged at
DEBUG), never an error: the topic is the project's, but a stray message must not stop it.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from replication.envelope import Envelope
from replication.runtime import TargetSender

logger = logging.getLogger(__name__)

HEARTBEAT_SUBJECT = "replication-heartbeat"
CONTENT_TYPE = "application/json"


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """One heartbeat: the namespace that published it and when (UTC)."""

    origin: str
    published: datetime

    @property
    def message_id(self) -> str:
        return f"heartbeat/{self.origin}/{_iso(self.published)}"

    def envelope(self) -> Envelope:
        """The message to publish on the origin's heartbeat topic."""
        body = json.dumps({"origin": self.origin, "publishedAt": _iso(self.published)})
        return Envelope(
            body=body.encode("utf-8"),
            message_id=self.message_id,
            subject=HEARTBEAT_SUBJECT,
            content_type=CONTENT_TYPE,
        )


def heartbeat_now(origin: str, now: datetime | None = None) -> Heartbeat:
    """A heartbeat of ``origin`` published now (milliseconds, as the message carries it)."""
    moment = now or datetime.now(UTC)
    return Heartbeat(origin, moment.replace(microsecond=moment.microsecond // 1000 * 1000))


def parse_heartbeat(body: bytes) -> Heartbeat | None:
    """The heartbeat in a message body, or None when the body is not one."""
    try:
        document = json.loads(body)
        origin = document["origin"]
        published = datetime.fromisoformat(document["publishedAt"])
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(origin, str) or published.tzinfo is None:
        return None
    return Heartbeat(origin, published.astimezone(UTC))


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class HeartbeatBook:
    """The latest heartbeat per path (origin, target), safe to share between threads."""

    def __init__(self, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._lock = threading.Lock()
        self._latest: dict[tuple[str, str], datetime] = {}
        self._clock = clock

    def expect(self, origin: str, target: str) -> None:
        """Declare a path, so that it is listed (without an age) before its first heartbeat."""
        with self._lock:
            self._latest.setdefault((origin, target), datetime.min.replace(tzinfo=UTC))

    def record(self, heartbeat: Heartbeat, target: str) -> bool:
        """A heartbeat of ``heartbeat.origin`` arrived at ``target``; False when it is the
        target's own (not a path) and was ignored."""
        if heartbeat.origin == target:
            return False
        with self._lock:
            key = (heartbeat.origin, target)
            known = self._latest.get(key)
            if known is None or heartbeat.published > known:
                self._latest[key] = heartbeat.published
        return True

    def receive(self, body: bytes, target: str) -> bool:
        """A message arrived at ``target``'s heartbeat reader: record it when it is a heartbeat
        of another namespace. Anything else is ignored (logged at DEBUG), never an error."""
        heartbeat = parse_heartbeat(body)
        if heartbeat is None:
            logger.debug("%s: not a heartbeat, ignored", target)
            return False
        return self.record(heartbeat, target)

    def ages(self) -> dict[tuple[str, str], float | None]:
        """Seconds since the latest heartbeat per path (None: none arrived yet)."""
        now = self._clock()
        with self._lock:
            latest = dict(self._latest)
        never = datetime.min.replace(tzinfo=UTC)
        return {
            path: None if published == never else max(0.0, (now - published).total_seconds())
            for path, published in latest.items()
        }

    def age_into(self, target: str) -> dict[str, float | None]:
        """Ages of the paths into ``target``, by origin."""
        return {origin: age for (origin, into), age in self.ages().items() if into == target}


def publish_forever(
    origin: str,
    sender: TargetSender,
    interval: timedelta,
    stop: threading.Event,
) -> None:
    """Publish a heartbeat of ``origin`` with ``sender`` every ``interval`` until ``stop``.

    A failed publish is logged at WARNING and tried again at the next tick (a heartbeat that
    could not be published is exactly what the receiving side's growing age reports).
    """
    period = interval.total_seconds()
    next_tick = time.monotonic()
    failures = 0
    while not stop.is_set():
        try:
            sender.send([heartbeat_now(origin).envelope()], timeout=period)
            failures = 0
        except Exception as error:
            failures += 1
            if failures in (1, 10) or failures % 100 == 0:
                logger.warning(
                    "%s: heartbeat not published (%d in a row): %s", origin, failures, error
                )
        next_tick += period
        stop.wait(max(0.0, next_tick - time.monotonic()))
        if time.monotonic() - next_tick > period:
            next_tick = time.monotonic()  # after a long hang, tick from now rather than burst


__all__ = [
    "HEARTBEAT_SUBJECT",
    "Heartbeat",
    "HeartbeatBook",
    "heartbeat_now",
    "parse_heartbeat",
    "publish_forever",
]
