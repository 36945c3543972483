"""Blob Storage behind :mod:`replication.failover`: binding documents and consumer state.

One container (default ``replication-failover``) holds, per application:

- ``bindings/<app>.json``: the binding document (:mod:`replication.failover._bindings`). Clients
  read it with ``If-None-Match`` (an unchanged document costs a 304). A switch takes a **blob
  lease** on it for as long as it runs (60 s, renewed every 20 s), and writes only with that
  lease: a second switch of the same application is refused while the lease is held (Azure
  returns 409 ``LeaseAlreadyPresent``), and the lease of a command that died expires by itself
  within 60 s.
- ``state/<client>/snapshot.json`` and ``state/<client>/journal-<generation>``: a consumer's
  processed-message log and read positions (:mod:`replication.failover._state`). Each
  checkpoint *appends* the entries processed since the previous one to the journal (an append
  blob: one small write per batch, whatever the log's size); every few hundred appends
  (``replication.failover._state.COMPACT_AFTER``) the whole state is written as a new snapshot
  of the next generation and the old journal deleted. A reader takes the snapshot and the
  journal of its generation, so a compaction cut short by a crash loses nothing.

**Deadlines.** Each store call is bounded by ``timeout`` (default :data:`DEFAULT_STORE_TIMEOUT`,
10 s; ``from_connection_string(..., timeout=)``, the commands' ``--call-timeout``) with the storage
SDK's own options (:func:`blob_client_options`): two attempts (one retry, at once), each with a
connect and a read timeout of a quarter of it, so a store that does not answer (frozen, or its
packets dropped) fails the call with :class:`FailoverStoreError` after about ``timeout``; no
call hangs. The clients read the bindings off their hot path (see
:mod:`replication.failover._follower`), so a sick store costs them staleness, not time.

Settings (:func:`failover_store_from_settings`): ``REPLICATION_FAILOVER_STORAGE``, else
``AzureWebJobsStorage`` (connection string, ``UseDevelopmentStorage=true`` for Azurite, or the
identity-based ``__blobServiceUri`` / ``__accountName`` form); container
``REPLICATION_FAILOVER_CONTAINER``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Iterator, Mapping
from datetime import timedelta
from typing import Any

from azure.core import MatchConditions
from azure.core.exceptions import (
    AzureError,
    HttpResponseError,
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
    ResourceNotModifiedError,
)
from azure.storage.blob import BlobClient, BlobLeaseClient, ContainerClient

from replication.exceptions import (
    ConfigurationError,
    FailoverStoreError,
    SwitchInProgressError,
)
from replication.runtime import describe
from replication.settings import Connection

from ..connections import prefixed_credential
from ..deadlines import blob_timeouts, seconds
from ..eventhubs import API_VERSION, STORAGE_SETTING

logger = logging.getLogger(__name__)

STORAGE_SETTINGS = ("REPLICATION_FAILOVER_STORAGE", STORAGE_SETTING)
CONTAINER_SETTING = "REPLICATION_FAILOVER_CONTAINER"
DEFAULT_CONTAINER = "replication-failover"
LEASE_SECONDS = 60
RENEW_SECONDS = 20

DEFAULT_STORE_TIMEOUT = 10.0
"""Seconds one store call may take, its retry included (see the module docstring)."""


def blob_client_options(timeout: float = DEFAULT_STORE_TIMEOUT) -> dict[str, Any]:
    """The container client's options: each call bounded by ``timeout``
    (:func:`~replication.transport.deadlines.blob_timeouts`)."""
    return {**blob_timeouts(timeout), "api_version": API_VERSION}


class BlobFailoverStore:
    """The binding documents and consumer states of one container (see the module docstring)."""

    def __init__(
        self, container: ContainerClient, *, timeout: float = DEFAULT_STORE_TIMEOUT
    ) -> None:
        self._container = container
        self.timeout = timeout
        """Seconds one call may take (what the container client was made with)."""
        self._created = False
        self._lock = threading.Lock()

    @classmethod
    def from_connection_string(
        cls,
        connection_string: str,
        container: str = DEFAULT_CONTAINER,
        *,
        timeout: timedelta | float = DEFAULT_STORE_TIMEOUT,
    ) -> BlobFailoverStore:
        """The store in ``container`` of the storage account of ``connection_string``; each
        call bounded by ``timeout`` (see the module docstring)."""
        limit = seconds(timeout)
        try:
            client = ContainerClient.from_connection_string(
                connection_string, container, **blob_client_options(limit)
            )
        except ValueError as error:
            raise ConfigurationError(f"not a storage connection string: {error}") from None
        return cls(client, timeout=limit)

    @property
    def url(self) -> str:
        return str(self._container.url)

    def close(self) -> None:
        self._container.close()

    # -- binding documents -------------------------------------------------------------------

    def describe(self, app: str) -> str:
        return f"{self._container.container_name}/{_bindings_blob(app)}"

    def read_bindings(self, app: str, etag: str | None) -> tuple[bytes | None, str | None]:
        """The binding document of ``app`` and its ETag; ``(None, etag)`` when unchanged since
        ``etag``, ``(None, None)`` when there is none (or it is empty: created by a switch
        that has not written it yet)."""
        blob = self._container.get_blob_client(_bindings_blob(app))
        try:
            if etag is None:
                download = blob.download_blob()
            else:
                download = blob.download_blob(etag=etag, match_condition=MatchConditions.IfModified)
            data = download.readall()
            if not data:
                return None, None
            return data, download.properties.etag
        except ResourceNotModifiedError:
            return None, etag
        except ResourceModifiedError as error:
            # A 304 that carries the error code ConditionNotMet (Azurite answers so) is mapped
            # to ResourceModifiedError by the storage SDK; it still means "unchanged".
            if error.status_code == 304:
                return None, etag
            raise FailoverStoreError(f"{self.describe(app)}: {describe(error)}") from error
        except ResourceNotFoundError:
            return None, None
        except AzureError as error:
            raise FailoverStoreError(f"{self.describe(app)}: {describe(error)}") from error

    def binding_apps(self) -> list[str]:
        """The applications with a binding document, sorted (none when the container does
        not exist yet).

        Raises:
            FailoverStoreError: the store cannot be reached.
        """
        try:
            names = self._container.list_blobs(name_starts_with="bindings/")
            return sorted(
                name.name.removeprefix("bindings/").removesuffix(".json")
                for name in names
                if name.name.endswith(".json")
            )
        except ResourceNotFoundError:
            return []
        except AzureError as error:
            raise FailoverStoreError(f"{self.container}/bindings: {describe(error)}") from error

    @property
    def container(self) -> str:
        return str(self._container.container_name)

    @contextlib.contextmanager
    def switch_lease(self, app: str, *, holder: str) -> Iterator[BindingLease]:
        """Hold the lease of ``app``'s binding document for the block (renewed in the
        background); the document is created empty-handed first if missing.

        Raises:
            SwitchInProgressError: another switch holds the lease.
            FailoverStoreError: the store cannot be reached.
        """
        blob = self._container.get_blob_client(_bindings_blob(app))
        try:
            self._ensure_container()
            with contextlib.suppress(ResourceExistsError):
                blob.upload_blob(b"", overwrite=False)
            lease = blob.acquire_lease(lease_duration=LEASE_SECONDS)
        except HttpResponseError as error:
            code = str(getattr(error, "error_code", "") or "")
            if error.status_code == 409 and "lease" in code.lower():
                raise SwitchInProgressError(
                    f"another switch of application {app!r} is in progress "
                    f"({self.describe(app)} is leased); wait for it or until its lease expires "
                    f"(at most {LEASE_SECONDS} s after that command stopped)"
                ) from None
            raise FailoverStoreError(f"{self.describe(app)}: {describe(error)}") from error
        except AzureError as error:
            raise FailoverStoreError(f"{self.describe(app)}: {describe(error)}") from error
        held = BindingLease(blob, lease, holder)
        try:
            yield held
        finally:
            held.release()

    # -- consumer state ----------------------------------------------------------------------

    def load_state(self, client: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """The snapshot (None when there is none) and the journal records after it.

        Raises:
            FailoverStoreError: the store cannot be reached.
            ValueError: the stored state is not what :meth:`append_state` wrote.
        """
        try:
            snapshot_blob = self._container.get_blob_client(_state_blob(client, "snapshot.json"))
            try:
                snapshot = json.loads(snapshot_blob.download_blob().readall())
            except ResourceNotFoundError:
                snapshot = None
            generation = 0 if snapshot is None else int(snapshot.get("generation", 0))
            journal_blob = self._container.get_blob_client(_journal_name(client, generation))
            try:
                lines = journal_blob.download_blob().readall().splitlines()
            except ResourceNotFoundError:
                lines = []
        except AzureError as error:
            raise FailoverStoreError(f"state of {client}: {describe(error)}") from error
        return snapshot, [json.loads(line) for line in lines if line.strip()]

    def state_clients(self, prefix: str) -> list[str]:
        """The client keys with a stored state that start with ``prefix`` (``app/``: every
        consumer of the application).

        Raises:
            FailoverStoreError: the store cannot be reached.
        """
        try:
            names = self._container.list_blobs(name_starts_with=f"state/{prefix}")
            return sorted(
                {
                    name.name.removeprefix("state/").rpartition("/")[0]
                    for name in names
                    if name.name.endswith("/snapshot.json") or "/journal-" in name.name
                }
            )
        except ResourceNotFoundError:
            return []
        except AzureError as error:
            raise FailoverStoreError(f"states of {prefix}: {describe(error)}") from error

    def append_state(self, client: str, generation: int, record: Mapping[str, Any]) -> None:
        """Append one journal record to the journal of ``generation``.

        Raises:
            FailoverStoreError: the store cannot be reached.
        """
        blob = self._container.get_blob_client(_journal_name(client, generation))
        data = (json.dumps(record, separators=(",", ":")) + "\n").encode("utf-8")
        try:
            try:
                blob.append_block(data)
            except ResourceNotFoundError:
                self._ensure_container()
                with contextlib.suppress(ResourceExistsError):
                    blob.create_append_blob()
                blob.append_block(data)
        except AzureError as error:
            raise FailoverStoreError(f"state of {client}: {describe(error)}") from error

    def write_snapshot(self, client: str, snapshot: Mapping[str, Any]) -> None:
        """Write ``snapshot`` (its ``generation`` names the journal that follows it) and delete
        the previous generation's journal.

        Raises:
            FailoverStoreError: the store cannot be reached.
        """
        generation = int(snapshot["generation"])
        data = json.dumps(snapshot, separators=(",", ":")).encode("utf-8")
        try:
            self._ensure_container()
            self._container.get_blob_client(_state_blob(client, "snapshot.json")).upload_blob(
                data, overwrite=True
            )
            with contextlib.suppress(ResourceNotFoundError):
                self._container.delete_blob(_journal_name(client, generation - 1))
        except AzureError as error:
            raise FailoverStoreError(f"state of {client}: {describe(error)}") from error

    def _ensure_container(self) -> None:
        with self._lock:
            if self._created:
                return
            with contextlib.suppress(ResourceExistsError):
                self._container.create_container()
            self._created = True


class BindingLease:
    """A held lease on a binding document: write the document with it, renewed until released."""

    def __init__(self, blob: BlobClient, lease: BlobLeaseClient, holder: str) -> None:
        self._blob = blob
        self._lease = lease
        self.holder = holder
        self._stop = threading.Event()
        self._renewer = threading.Thread(target=self._renew, name="binding-lease", daemon=True)
        self._renewer.start()

    def read(self) -> bytes:
        """The document's bytes (empty when it was just created)."""
        try:
            return bytes(self._blob.download_blob().readall())
        except AzureError as error:
            raise FailoverStoreError(f"{self._blob.blob_name}: {describe(error)}") from error

    def write(self, data: bytes) -> None:
        """Replace the document (only the lease holder can).

        Raises:
            FailoverStoreError: the store cannot be reached or the lease was lost.
        """
        try:
            self._blob.upload_blob(data, overwrite=True, lease=self._lease)
        except AzureError as error:
            raise FailoverStoreError(f"{self._blob.blob_name}: {describe(error)}") from error

    def _renew(self) -> None:
        while not self._stop.wait(RENEW_SECONDS):
            try:
                self._lease.renew()
            except AzureError as error:
                logger.warning("lease of %s not renewed: %s", self._blob.blob_name, describe(error))

    def release(self) -> None:
        self._stop.set()
        self._renewer.join(timeout=5)
        try:
            self._lease.release()
        except AzureError as error:  # it expires by itself
            logger.warning("lease of %s not released: %s", self._blob.blob_name, describe(error))


def failover_store_from_settings(
    environ: Mapping[str, str], *, timeout: timedelta | float = DEFAULT_STORE_TIMEOUT
) -> BlobFailoverStore | None:
    """The store the settings name (see the module docstring), each call bounded by
    ``timeout``; None when none is set."""
    container = environ.get(CONTAINER_SETTING, DEFAULT_CONTAINER)
    limit = seconds(timeout)
    for setting in STORAGE_SETTINGS:
        connection = environ.get(setting)
        if connection:
            try:
                return BlobFailoverStore.from_connection_string(
                    connection, container, timeout=limit
                )
            except ConfigurationError as error:
                raise ConfigurationError(error.detail, source=setting) from None
    account_url = environ.get(f"{STORAGE_SETTING}__blobServiceUri")
    account_name = environ.get(f"{STORAGE_SETTING}__accountName")
    if not account_url and account_name:
        account_url = f"https://{account_name}.blob.core.windows.net"
    if not account_url:
        return None
    credential = prefixed_credential(Connection.read(STORAGE_SETTING, environ))
    return BlobFailoverStore(
        ContainerClient(
            account_url, container, credential=credential, **blob_client_options(limit)
        ),
        timeout=limit,
    )


def _bindings_blob(app: str) -> str:
    return f"bindings/{app}.json"


def _state_blob(client: str, name: str) -> str:
    return f"state/{client}/{name}"


def _journal_name(client: str, generation: int) -> str:
    return _state_blob(client, f"journal-{generation}")


__all__ = [
    "CONTAINER_SETTING",
    "DEFAULT_CONTAINER",
    "DEFAULT_STORE_TIMEOUT",
    "LEASE_SECONDS",
    "STORAGE_SETTINGS",
    "BindingLease",
    "BlobFailoverStore",
    "FailoverStoreError",
    "SwitchInProgressError",
    "blob_client_options",
    "failover_store_from_settings",
]
