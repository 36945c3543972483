"""Event Hubs checkpoints for local runs, in the blob storage the Function app already has.

In Azure the Functions host checkpoints Event Hubs triggers in the ``AzureWebJobsStorage``
account. The local host (``python -m replication run``) does the same when that setting is
present, so a restarted local run resumes where it stopped instead of replaying every
partition from the beginning. Locally the setting is usually ``UseDevelopmentStorage=true``
(Azurite on 127.0.0.1:10000) or a full Azurite connection string.

Accepted settings, as the Functions host reads them:

- ``AzureWebJobsStorage``: a storage connection string (``UseDevelopmentStorage=true`` too);
- ``AzureWebJobsStorage__blobServiceUri`` (or ``__accountName``), with the optional
  ``AzureWebJobsStorage__clientId`` of a user-assigned identity: identity-based access.

Checkpoints go to the container ``REPLICATION_CHECKPOINT_CONTAINER`` (default
``replication-checkpoints``, created when missing), not to the host's
``azure-webjobs-eventhub``: a local run must not move a deployed Function app's positions.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from azure.core.exceptions import AzureError, ResourceExistsError

from replication.exceptions import ConfigurationError
from replication.settings import CONTAINER_SETTING, DEFAULT_CONTAINER, STORAGE_SETTING, Settings
from replication.transport.connections import prefixed_credential
from replication.transport.deadlines import blob_timeouts

if TYPE_CHECKING:
    # Imported where a store is configured: the blob SDKs take about 0.2 s of CPU to import,
    # which every start of the local host would pay, Service Bus tasks and runs without
    # AzureWebJobsStorage too.
    from azure.eventhub.extensions.checkpointstoreblob import BlobCheckpointStore
    from azure.storage.blob import ContainerClient

logger = logging.getLogger(__name__)

# The Storage API version the checkpoint store speaks; Azurite and Azure both accept it, while
# the blob SDK's newest default can be ahead of the Azurite a user has installed.
API_VERSION = "2019-07-07"


def _container_client(
    settings: Settings, container: str, options: dict[str, Any]
) -> ContainerClient | None:
    storage = settings.storage
    connection = storage.secret()
    if connection:
        try:
            return _blob_sdk().from_connection_string(
                connection, container, api_version=API_VERSION, **options
            )
        except ValueError as error:
            raise ConfigurationError(
                f"not a storage connection string: {error}", source=STORAGE_SETTING
            ) from None
    account_url = storage.blob_service_uri
    account_name = storage.account_name
    if not account_url and account_name:
        account_url = f"https://{account_name}.blob.core.windows.net"
    if not account_url:
        return None
    credential = prefixed_credential(storage)
    return _blob_sdk()(
        account_url, container, credential=credential, api_version=API_VERSION, **options
    )


def _blob_sdk() -> type[ContainerClient]:
    """The blob SDK's ContainerClient, imported when a store is configured (see above)."""
    from azure.storage.blob import ContainerClient

    return ContainerClient


def checkpoint_store(
    settings: Settings, *, timeout: float | None = None
) -> BlobCheckpointStore | None:
    """The checkpoint store the settings describe, its container created; None without one.
    With ``timeout``, each of its calls is bounded by it
    (:func:`~replication.transport.deadlines.blob_timeouts`; the operator commands' reads);
    without, the storage SDK's defaults (the local host's checkpoint writes)."""
    container = settings.checkpoint_container
    client = _container_client(
        settings, container, {} if timeout is None else blob_timeouts(timeout)
    )
    if client is None:
        return None
    try:
        # One attempt: an unreachable storage (Azurite not started) fails the start at once
        # instead of after the storage SDK's 90 s of retries; checkpoint writes keep them.
        client.create_container(retry_total=0)
        logger.info("created checkpoint container %s", container)
    except ResourceExistsError:
        pass
    except AzureError as error:
        raise ConfigurationError(
            f"cannot create or reach the checkpoint container {container!r}: {error}",
            source=STORAGE_SETTING,
        ) from error
    from azure.eventhub.extensions.checkpointstoreblob import BlobCheckpointStore

    # The store takes any client with the container API (its URL argument is then unused);
    # sharing ours keeps one HTTP pipeline.
    return BlobCheckpointStore(client.url, container, container_client=client)


__all__ = ["CONTAINER_SETTING", "DEFAULT_CONTAINER", "STORAGE_SETTING", "checkpoint_store"]
