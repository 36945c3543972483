"""The processed-message log: what a consumer already handled, so that it can skip the copies it
meets again after a switch of namespace.

Microsoft's active-passive guidance leaves this to the application: after a consumer moves to
the secondary it finds there the replicas of messages it already processed in the primary (for
the failover window), and again the other way round when it moves back; "the de-duplication
criterion should best be an application-supplied MessageId". :class:`ProcessedLog` is that
record: every message the application processed, by MessageId, with its origin (namespace and
enqueue time there, from :func:`~replication.failover._origin.origin_of`).

**The decision** (:meth:`ProcessedLog.decide`) is *skip* only when the MessageId is in the log.
A message is never skipped for any other reason (its time, its position), so a message that was
not processed is never dropped; MessageIds are the application's identity of a message (the
failover publisher gives one to every message that has none, and replication keeps it).

**Bounds.** The log keeps an entry for ``retention`` after the message was processed (local
clock) and at most ``max_entries`` entries, oldest processed first out. For each origin namespace
it remembers the *horizon*: the newest origin enqueue time of an entry it let go. Every processed
message of that origin enqueued after its horizon is still in the log, so a message not in the
log and enqueued after the horizon was certainly not processed. A message not in the log at or
before the horizon may have been processed and forgotten: it is processed (never dropped) and
counted as *unverified*, the only way a duplicate gets past the log. Keep ``retention`` longer
than the longest failover you expect to fail back from, and ``max_entries`` above the messages
of that period, and the count stays 0. The comparisons are between times of one origin's clock,
so clock skew between namespaces plays no part here (it does in the Event Hubs checkpoint
translation, :mod:`replication.failover._checkpoints`).

**Persistence**: :meth:`ProcessedLog.take_journal` hands out the entries recorded since the last
call (the consumer appends them to its blob before it settles the messages), :meth:`snapshot` and
:meth:`restore` the whole state; see :mod:`replication.transport.failover_state`.

The log is safe to share between threads.
"""

from __future__ import annotations

import dataclasses
import enum
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from ._origin import OriginPosition

DEFAULT_RETENTION = timedelta(days=1)
DEFAULT_MAX_ENTRIES = 100_000


def utc_now() -> datetime:
    return datetime.now(UTC)


def to_millis(moment: datetime) -> int:
    """Milliseconds since the epoch (what the log stores and the brokers stamp)."""
    return round(moment.timestamp() * 1000)


def from_millis(value: int) -> datetime:
    return datetime.fromtimestamp(value / 1000, UTC)


class Verdict(enum.StrEnum):
    PROCESS = "process"
    SKIP = "skip"


@dataclasses.dataclass(frozen=True, slots=True)
class Decision:
    """What to do with a received message. ``unverified``: process it, but the log cannot vouch
    that it was not processed before (see the module docstring)."""

    verdict: Verdict
    unverified: bool = False

    @property
    def skip(self) -> bool:
        return self.verdict is Verdict.SKIP


SKIP = Decision(Verdict.SKIP)
PROCESS = Decision(Verdict.PROCESS)
PROCESS_UNVERIFIED = Decision(Verdict.PROCESS, unverified=True)


@dataclasses.dataclass(frozen=True, slots=True)
class Entry:
    """One processed message: MessageId, origin namespace, origin enqueue time (ms since the
    epoch, None when unknown) and when it was processed (ms, local clock)."""

    message_id: str
    origin: str
    origin_millis: int | None
    processed_millis: int

    def as_list(self) -> list[Any]:
        return [self.message_id, self.origin, self.origin_millis, self.processed_millis]

    @classmethod
    def from_list(cls, item: Any) -> Entry:
        """Raises ValueError for anything but ``[str, str, int | None, int]``."""
        if not isinstance(item, list) or len(item) != 4:
            raise ValueError(
                f"a log entry is [messageId, origin, originMs, processedMs], got {item!r}"
            )
        message_id, origin, origin_millis, processed = item
        valid = (
            isinstance(message_id, str)
            and isinstance(origin, str)
            and (origin_millis is None or _is_int(origin_millis))
            and _is_int(processed)
        )
        if not valid:
            raise ValueError(f"malformed log entry {item!r}")
        return cls(message_id, origin, origin_millis, processed)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


UNBOUNDED = 2**62
"""The horizon of an origin after an entry without a known origin time was let go: every later
message of that origin not in the log counts as unverified."""


@dataclasses.dataclass(slots=True)
class LogCounters:
    """What the log decided: messages checked, skipped as already processed, processed although
    unverifiable, entries let go by the bounds."""

    checked: int = 0
    skipped: int = 0
    unverified: int = 0
    evicted: int = 0


class ProcessedLog:
    """MessageIds of processed messages, bounded in time and size (see the module docstring)."""

    def __init__(
        self,
        *,
        retention: timedelta = DEFAULT_RETENTION,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        if retention <= timedelta(0):
            raise ValueError(f"retention must be positive, got {retention}")
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries}")
        self.retention = retention
        self.max_entries = max_entries
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._horizons: dict[str, int] = {}
        self._journal: list[Entry] = []
        self.counters = LogCounters()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._entries

    def horizon(self, origin: str) -> datetime | None:
        """The newest origin enqueue time of an entry of ``origin`` the log let go (None: none)."""
        value = self._horizons.get(origin)
        if value is None:
            return None
        return datetime.max.replace(tzinfo=UTC) if value >= UNBOUNDED else from_millis(value)

    def decide(self, message_id: str | None, origin: OriginPosition) -> Decision:
        """Skip when ``message_id`` was processed; otherwise process (see the module docstring)."""
        with self._lock:
            self.counters.checked += 1
            if message_id is not None and message_id in self._entries:
                self.counters.skipped += 1
                return SKIP
            if message_id is None or not self._vouches_for(origin):
                self.counters.unverified += 1
                return PROCESS_UNVERIFIED
            return PROCESS

    def _vouches_for(self, origin: OriginPosition) -> bool:
        horizon = self._horizons.get(origin.namespace)
        if horizon is None:
            return True
        if origin.enqueued_time is None:
            return False
        return to_millis(origin.enqueued_time) > horizon

    def record(self, message_id: str | None, origin: OriginPosition) -> None:
        """``message_id`` was processed (a message without MessageId cannot be recorded)."""
        if message_id is None:
            return
        origin_millis = None if origin.enqueued_time is None else to_millis(origin.enqueued_time)
        entry = Entry(message_id, origin.namespace, origin_millis, to_millis(self._clock()))
        with self._lock:
            self._entries.pop(message_id, None)
            self._entries[message_id] = entry
            self._journal.append(entry)
            self._evict()

    def _evict(self) -> None:
        oldest_kept = to_millis(self._clock() - self.retention)
        while self._entries:
            first = next(iter(self._entries.values()))
            if len(self._entries) <= self.max_entries and first.processed_millis >= oldest_kept:
                return
            self._entries.popitem(last=False)
            self.counters.evicted += 1
            time = UNBOUNDED if first.origin_millis is None else first.origin_millis
            self._horizons[first.origin] = max(self._horizons.get(first.origin, time), time)

    @property
    def journal_length(self) -> int:
        """Entries recorded since the last :meth:`take_journal`."""
        return len(self._journal)

    def take_journal(self) -> list[Entry]:
        """The entries recorded since the previous call (to be appended to the persisted log)."""
        with self._lock:
            journal, self._journal = self._journal, []
            return journal

    def snapshot(self) -> dict[str, Any]:
        """The whole state as JSON-ready data (what :meth:`restore` reads back)."""
        with self._lock:
            return {
                "entries": [entry.as_list() for entry in self._entries.values()],
                "horizons": dict(self._horizons),
            }

    def restore(self, snapshot: Mapping[str, Any], journals: Iterable[Iterable[Any]] = ()) -> None:
        """Replace the state with a snapshot plus journal entries appended after it.

        Raises:
            ValueError: the data is not what :meth:`snapshot` and :meth:`take_journal` wrote.
        """
        entries = snapshot.get("entries", [])
        horizons = snapshot.get("horizons", {})
        if not isinstance(entries, list) or not isinstance(horizons, dict):
            raise ValueError("a log snapshot has an 'entries' list and a 'horizons' object")
        parsed = [Entry.from_list(item) for item in entries]
        for journal in journals:
            parsed += [Entry.from_list(item) for item in journal]
        for origin, value in horizons.items():
            if not isinstance(origin, str) or not _is_int(value):
                raise ValueError(f"malformed horizon {origin!r}: {value!r}")
        with self._lock:
            self._entries.clear()
            self._horizons = dict(horizons)
            for entry in parsed:
                self._entries.pop(entry.message_id, None)
                self._entries[entry.message_id] = entry
            self._journal = []
            self._evict()


__all__ = [
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_RETENTION",
    "Decision",
    "Entry",
    "LogCounters",
    "ProcessedLog",
    "Verdict",
    "from_millis",
    "to_millis",
    "utc_now",
]
