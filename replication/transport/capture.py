"""Capture files in Azure Blob Storage (or Azurite): the blob store of
:class:`replication.capture.CaptureWriter`.

One Put Blob per file (``upload_blob(overwrite=True)``): Blob Storage commits the whole blob or
nothing, so a reader never sees part of a file, and writing the same batch again replaces the
blob with the same bytes. The container is created on the first write when it does not exist
(with a role limited to Storage Blob Data Contributor on the container, create it beforehand;
the 409 of an existing one is ignored). Errors are the storage SDK's, raised to the caller,
which must then leave its batch unsettled.
"""

from __future__ import annotations

import contextlib
from typing import Any

from azure.core.exceptions import ResourceExistsError
from azure.storage.blob import ContainerClient, LinearRetry

CLIENT_OPTIONS: dict[str, Any] = {
    "retry_policy": LinearRetry(backoff=1, random_jitter_range=0, retry_total=2),
    "connection_timeout": 5,
    "read_timeout": 30,
}


class BlobCaptureStore:
    """A :class:`replication.capture.CaptureStore` over one blob container."""

    def __init__(self, container: ContainerClient) -> None:
        self._container = container
        self._ready = False

    @classmethod
    def from_connection_string(cls, connection_string: str, container: str) -> BlobCaptureStore:
        return cls(
            ContainerClient.from_connection_string(connection_string, container, **CLIENT_OPTIONS)
        )

    def put(self, path: str, data: bytes) -> None:
        if not self._ready:
            with contextlib.suppress(ResourceExistsError):
                self._container.create_container()
            self._ready = True
        self._container.upload_blob(path, data, overwrite=True)

    def close(self) -> None:
        self._container.close()


__all__ = ["BlobCaptureStore"]
