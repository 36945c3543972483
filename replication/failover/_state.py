"""A consumer's durable state: its processed-message log and where it stands in each stream.

:class:`ConsumerState` wraps a :class:`~replication.failover._processed.ProcessedLog` and, for
Event Hubs, the last event handled per (namespace, partition) (:class:`PartitionPosition`: the
checkpoint translation needs the enqueue times, which checkpoint stores do not keep). It
persists both through a :class:`StateStore` (Blob Storage:
:class:`replication.transport.failover.BlobFailoverStore`), so that a consumer restarted
in the middle of a failover still skips what it processed before:

- :meth:`ConsumerState.checkpoint` appends what changed since the previous checkpoint as one
  journal record; consumers call it *before* they settle or checkpoint the messages, so a
  message is never settled without its log entry being durable first (a crash in between
  redelivers a message the log already knows, which is then skipped);
- every :data:`COMPACT_AFTER` records the whole state becomes a snapshot of the next
  generation, so loading stays proportional to the log's bounds, not to the consumer's age.

A store that cannot be written is logged at WARNING and tried again at the next checkpoint;
the entries stay in the journal to be written meanwhile (the in-memory log keeps working), and
:meth:`ConsumerState.checkpoint` returns False: the consumers then settle nothing and take no
new work until a checkpoint succeeds (:attr:`ConsumerState.pending` says whether anything
recorded is not durable yet). Each write is bounded by the store's own deadline
(``BlobFailoverStore.timeout``).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from replication.exceptions import ReplicationError

from ._processed import Entry, ProcessedLog, from_millis, to_millis

logger = logging.getLogger(__name__)

COMPACT_AFTER = 200
"""Journal records between two snapshots."""


class StateStore(Protocol):
    """Where consumer states live (one per client key)."""

    def load_state(self, client: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]: ...

    def append_state(self, client: str, generation: int, record: Mapping[str, Any]) -> None: ...

    def write_snapshot(self, client: str, snapshot: Mapping[str, Any]) -> None: ...


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionPosition:
    """The last event a consumer handled in one partition of one namespace."""

    namespace: str
    partition: str
    sequence: int
    offset: str
    enqueued_millis: int

    def as_list(self) -> list[Any]:
        return [self.namespace, self.partition, self.sequence, self.offset, self.enqueued_millis]

    @classmethod
    def from_list(cls, item: Any) -> PartitionPosition:
        if not isinstance(item, list) or len(item) != 5:
            raise ValueError(f"malformed partition position {item!r}")
        namespace, partition, sequence, offset, enqueued = item
        return cls(str(namespace), str(partition), int(sequence), str(offset), int(enqueued))


class ConsumerState:
    """The log and positions of one consumer, persisted in ``store`` under ``client``."""

    def __init__(self, log: ProcessedLog, store: StateStore | None, client: str) -> None:
        self.log = log
        self.store = store
        self.client = client
        self.positions: dict[tuple[str, str], PartitionPosition] = {}
        self.active: str | None = None
        """The namespace the consumer last read from (persisted: a consumer restarted in the
        middle of a switch finds out that it still has to translate its positions)."""
        self._active_changed = False
        self.starts: dict[str, datetime | None] = {}
        """Per namespace, the translated start of its partitions that have no checkpoint
        (None: the beginning), until the next switch replaces it."""
        self._changed_positions: dict[tuple[str, str], PartitionPosition] = {}
        self._unwritten: list[Entry] = []
        self._generation = 0
        self._records = 0
        self._lock = (
            threading.RLock()
        )  # Event Hubs consumers checkpoint from one thread per partition
        self.failed_writes = 0
        self._failing_since: float | None = None

    def load(self) -> None:
        """Read the persisted state (nothing to read without a store).

        Raises:
            ReplicationError: the store cannot be read (a consumer must not start without its
                log: it would process again what it processed before).
            ValueError: the stored state is malformed.
        """
        if self.store is None:
            return
        snapshot, records = self.store.load_state(self.client)
        snapshot = snapshot or {}
        self._generation = int(snapshot.get("generation", 0))
        self.log.restore(snapshot.get("log", {}), [record.get("entries", []) for record in records])
        self.positions = {}
        self.active = None
        self.starts = {}
        for source in [snapshot, *records]:
            for item in source.get("positions", []):
                position = PartitionPosition.from_list(item)
                self.positions[(position.namespace, position.partition)] = position
            if isinstance(source.get("active"), str):
                self.active = source["active"]
            for name, millis in (source.get("starts") or {}).items():
                self.starts[str(name)] = None if millis is None else from_millis(int(millis))
        self._records = len(records)

    def activate(self, namespace: str) -> None:
        """The consumer reads from ``namespace`` from now on."""
        with self._lock:
            self._activate(namespace)

    def _activate(self, namespace: str) -> None:
        if namespace != self.active:
            self.active = namespace
            self._active_changed = True

    def start_at(self, namespace: str, start: datetime | None) -> None:
        """Partitions of ``namespace`` without a checkpoint start at ``start``."""
        with self._lock:
            self.starts[namespace] = start
            self._active_changed = True  # written with the next record

    def advance(self, position: PartitionPosition) -> None:
        """The consumer handled events of a partition up to ``position``."""
        key = (position.namespace, position.partition)
        with self._lock:
            self.positions[key] = position
            self._changed_positions[key] = position

    def checkpoint(self) -> bool:
        """Persist what changed since the last checkpoint; False when the store failed (the
        changes are kept and written with the next checkpoint). True means everything recorded
        before the call is durable."""
        with self._lock:
            return self._checkpoint()

    @property
    def pending(self) -> bool:
        """True when something recorded is not durable yet (a checkpoint would write it)."""
        if self.store is None:
            return False
        return bool(
            self._unwritten
            or self.log.journal_length
            or self._changed_positions
            or self._active_changed
        )

    def _checkpoint(self) -> bool:
        entries = self._unwritten + self.log.take_journal()
        positions = list(self._changed_positions.values())
        if self.store is None or (not entries and not positions and not self._active_changed):
            self._unwritten = []
            self._changed_positions = {}
            return True
        try:
            if self._records >= COMPACT_AFTER:
                self.store.write_snapshot(self.client, self._snapshot(self._generation + 1))
                self._generation += 1
                self._records = 0
            else:
                record = {
                    "entries": [entry.as_list() for entry in entries],
                    "positions": [position.as_list() for position in positions],
                    "active": self.active,
                    "starts": self._starts_json(),
                }
                self.store.append_state(self.client, self._generation, record)
                self._records += 1
        except ReplicationError as error:
            self.failed_writes += 1
            if self._failing_since is None:
                self._failing_since = time.monotonic()
            if self.failed_writes in (1, 10) or self.failed_writes % 100 == 0:
                logger.warning(
                    "%s: processed-message log not persisted (%d times); kept in memory, "
                    "nothing settled and no new work taken until it is: %s",
                    self.client,
                    self.failed_writes,
                    error,
                )
            self._unwritten = entries
            return False
        if self._failing_since is not None:
            logger.info(
                "%s: processed-message log persisted again after %.1f s",
                self.client,
                time.monotonic() - self._failing_since,
            )
            self._failing_since = None
        self._unwritten = []
        self._changed_positions = {}
        self._active_changed = False
        return True

    def _snapshot(self, generation: int) -> dict[str, Any]:
        return {
            "schema": 1,
            "generation": generation,
            "log": self.log.snapshot(),
            "positions": [position.as_list() for position in self.positions.values()],
            "active": self.active,
            "starts": self._starts_json(),
        }

    def _starts_json(self) -> dict[str, int | None]:
        return {
            name: None if start is None else to_millis(start) for name, start in self.starts.items()
        }


__all__ = ["COMPACT_AFTER", "ConsumerState", "PartitionPosition", "StateStore"]
