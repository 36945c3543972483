"""An in-memory failover store: a real binding source and state store without Blob Storage.

For applications' own tests and for this package's unit tests (as ``transport/memory.py`` is
for targets): it keeps binding documents with ETags and consumer states in dictionaries, and
``unavailable`` makes every call fail the way an unreachable store does.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from replication.exceptions import MemoryStoreUnavailableError


class MemoryFailoverStore:
    """Binding documents by application and consumer states by client, in memory."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._documents: dict[str, tuple[bytes, int]] = {}
        self._states: dict[str, tuple[dict[str, Any] | None, dict[int, list[dict[str, Any]]]]] = {}
        self.unavailable = False
        self.reads = 0

    def _check(self) -> None:
        if self.unavailable:
            raise MemoryStoreUnavailableError("the store is unavailable")

    def put_bindings(self, app: str, data: bytes) -> None:
        """Replace the document of ``app`` (a new ETag)."""
        with self._lock:
            self._check()
            version = self._documents.get(app, (b"", 0))[1] + 1
            self._documents[app] = (data, version)

    def read_bindings(self, app: str, etag: str | None) -> tuple[bytes | None, str | None]:
        with self._lock:
            self.reads += 1
            self._check()
            if app not in self._documents:
                return None, None
            data, version = self._documents[app]
            if etag == str(version):
                return None, etag
            return data, str(version)

    def describe(self, app: str) -> str:
        return f"memory:bindings/{app}.json"

    def load_state(self, client: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        with self._lock:
            self._check()
            snapshot, journals = self._states.get(client, (None, {}))
            generation = 0 if snapshot is None else int(snapshot["generation"])
            return snapshot, list(journals.get(generation, []))

    def append_state(self, client: str, generation: int, record: Mapping[str, Any]) -> None:
        with self._lock:
            self._check()
            _, journals = self._states.setdefault(client, (None, {}))
            journals.setdefault(generation, []).append(dict(record))

    def write_snapshot(self, client: str, snapshot: Mapping[str, Any]) -> None:
        with self._lock:
            self._check()
            _, journals = self._states.get(client, (None, {}))
            generation = int(snapshot["generation"])
            journals.pop(generation - 1, None)
            self._states[client] = (dict(snapshot), journals)


__all__ = ["MemoryFailoverStore", "MemoryStoreUnavailableError"]
