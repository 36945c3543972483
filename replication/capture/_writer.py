"""Write a received batch as capture files, durable before :meth:`CaptureWriter.write` returns.

How it fails: a copy without an enqueue time (never one a broker delivered) is a
``ValueError`` before anything is written; a store that cannot write raises its own error
(``OSError`` for a folder, the storage SDK's for a blob container) and the batch must stay
unsettled, to be delivered and written again.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from replication.envelope import Envelope

from ._format import batch_name, capture_line, partition_path


class CaptureStore(Protocol):
    """Where capture files go. ``put`` returns once ``path`` holds ``data`` durably, replacing
    what it held; a reader never sees part of a file."""

    def put(self, path: str, data: bytes) -> None: ...


class FolderStore:
    """Capture files in a folder: each written to a temporary file beside its place, flushed to
    disk, then renamed into place (atomic on one filesystem) and the folder synced."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def put(self, path: str, data: bytes) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".", suffix=".part")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        directory = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


class CaptureWriter:
    """One region's capture: :meth:`write` puts a batch into ``store``, one file per hour of
    enqueue time (see the package docstring for names and retries)."""

    def __init__(self, store: CaptureStore, region: str) -> None:
        self.store = store
        self.region = region

    def write(self, copies: Sequence[Envelope]) -> list[str]:
        """Write ``copies`` (in their order within each file); the paths written. Returns once
        every file is durable: settle the batch after this, never before."""
        hours: dict[str, list[Envelope]] = {}
        for copy in copies:
            if copy.enqueued_time_utc is None:
                raise ValueError(
                    f"message {copy.message_id!r} has no enqueue time: it cannot be captured"
                )
            hours.setdefault(partition_path(self.region, copy.enqueued_time_utc), []).append(copy)
        written = []
        for folder, group in hours.items():
            path = f"{folder}/{batch_name(group)}"
            self.store.put(path, "".join(capture_line(copy) for copy in group).encode("utf-8"))
            written.append(path)
        return written


__all__ = ["CaptureStore", "CaptureWriter", "FolderStore"]
