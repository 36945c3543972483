"""Capture files in Azure Blob Storage (or Azurite): the blob store of
:class:`replication.capture.CaptureWriter`.

One Put Blob per file (``upload_blob(overwrite=True)``): Blob Storage commits the whole blob or
nothing, so a reader never sees part of a file, and writing the same batch again replaces the
blob with the same bytes. The container is created on the first write when it does not exist
(the 409 of an existing one is ignored; with a role limited to Storage Blob Data Contributor on
the container, which is what the provisioning grants, the container must exist beforehand and a
403 to the creation is ignored too). Errors are the storage SDK's, raised to the caller,
which must then leave its batch unsettled.

:func:`capture_store` picks the store a capture section writes to from the app setting
``REPLICATION_CAPTURE_STORAGE`` (:mod:`replication.settings`): a storage connection string
(Azurite locally) for every capture; a folder (a value without ``=``: no connection string has
none), ``<folder>/<container>``; unset, the capture's own account
``https://<storageAccount>.blob.core.windows.net`` with the app's identity (the prefix's
``__credential`` / ``__clientId``, as the Functions host reads identity-based connections).
"""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path
from typing import Any

from azure.core.exceptions import HttpResponseError, ResourceExistsError
from azure.storage.blob import ContainerClient, LinearRetry

from replication.capture import CaptureStore, FolderStore
from replication.exceptions import ConfigurationError
from replication.settings import CAPTURE_STORAGE_SETTING, Connection
from replication.topology import CaptureSpec

from .connections import prefixed_credential

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

    @property
    def url(self) -> str:
        """The container's URL (no credentials in it)."""
        return str(self._container.url)

    def put(self, path: str, data: bytes) -> None:
        if not self._ready:
            try:
                self._container.create_container()
            except ResourceExistsError:
                pass
            except HttpResponseError as error:
                # A role on the container alone may not create it: then it must exist (the
                # provisioning references it as existing), and the upload says if it does not.
                if error.status_code != HTTPStatus.FORBIDDEN:
                    raise
            self._ready = True
        self._container.upload_blob(path, data, overwrite=True)

    def close(self) -> None:
        self._container.close()


def capture_store(spec: CaptureSpec, connection: Connection) -> CaptureStore:
    """The store ``spec``'s capture writes to, as ``connection`` (the
    ``REPLICATION_CAPTURE_STORAGE`` prefix) selects (see the module docstring).

    Raises:
        ConfigurationError: the setting holds neither a folder nor a connection string.
    """
    value = connection.secret()
    if value and "=" not in value:
        return FolderStore(Path(value) / spec.container)
    if value:
        try:
            return BlobCaptureStore.from_connection_string(value, spec.container)
        except ValueError as error:
            raise ConfigurationError(
                f"not a storage connection string: {error}", source=CAPTURE_STORAGE_SETTING
            ) from None
    account = f"https://{spec.storage_account}.blob.core.windows.net"
    return BlobCaptureStore(
        ContainerClient(
            account,
            spec.container,
            credential=prefixed_credential(connection),
            **CLIENT_OPTIONS,
        )
    )


__all__ = ["BlobCaptureStore", "capture_store"]
