"""The replication app settings of the Function app, rendered from the topology.

In Azure every namespace gets an identity-based connection under its ``connection`` prefix,
read by the Functions host for the triggers and by the replicator's senders for their clients:

- ``<connection>__fullyQualifiedNamespace``: the namespace's host name;
- ``<connection>__credential=managedidentity``: take the token from the app's managed identity.
  Microsoft's "Configure connections to remote services in Azure Functions" lists it as the
  property of a system-assigned identity connection as well, and it keeps the Azure SDK's
  ``AZURE_CLIENT_ID``-style environment variables from choosing the identity behind our back;
- ``<connection>__clientId``: only with a user-assigned identity, its client id (the same
  article: a user-assigned identity needs ``__credential`` *and* ``__clientId``).

A topology with a Service Bus capture (:func:`~replication.topology.capture_sources`) gets the
same identity settings under ``REPLICATION_CAPTURE_STORAGE`` (``replication.settings``), the
connection its capture tasks write blobs with: ``__credential=managedidentity``, and ``__clientId``
with a user-assigned identity. No connection string and no account setting: each capture names
its storage account in the topology's ``capture`` section.

Namespaces with ``keyVaultSecret`` (outside the Function's tenant) get instead a ``<connection>``
setting holding a Key Vault reference, which the platform resolves to the SAS connection string.

Two values are known only when the Bicep deployment runs and are written as placeholders the
template substitutes: the vault name (:data:`KEY_VAULT_PLACEHOLDER`) and the client id of the
user-assigned identity (:data:`IDENTITY_CLIENT_ID_PLACEHOLDER`). These settings are for Azure:
locally ``__credential`` should stay unset, so that the developer's own identity is used.
"""

from __future__ import annotations

from replication.settings import CAPTURE_STORAGE_SETTING
from replication.topology import TOPOLOGY_SETTING, Topology, capture_sources

KEY_VAULT_PLACEHOLDER = "{keyVaultName}"
IDENTITY_CLIENT_ID_PLACEHOLDER = "{identityClientId}"
MANAGED_IDENTITY = "managedidentity"


def _identity_connections(topology: Topology) -> list[str]:
    """The connection prefixes reached with the app's managed identity: each namespace's but
    those behind a Key Vault secret, and the capture storage when there is a Service Bus
    capture."""
    prefixes = [n.connection for n in topology.namespaces if not n.key_vault_secret]
    if capture_sources(topology):
        prefixes.append(CAPTURE_STORAGE_SETTING)
    return prefixes


def user_assigned_identity_settings(topology: Topology, client_id: str) -> dict[str, str]:
    """The ``<connection>__clientId`` settings that select a user-assigned identity."""
    return {f"{prefix}__clientId": client_id for prefix in _identity_connections(topology)}


def app_settings(
    topology: Topology,
    *,
    topology_path: str = "topology.json",
    identity_client_id: str | None = None,
) -> dict[str, str]:
    """Every replication setting of the app; ``identity_client_id`` for a user-assigned identity."""
    settings = {TOPOLOGY_SETTING: topology_path}
    for namespace in topology.namespaces:
        if namespace.key_vault_secret:
            settings[namespace.connection] = (
                f"@Microsoft.KeyVault(VaultName={KEY_VAULT_PLACEHOLDER};"
                f"SecretName={namespace.key_vault_secret})"
            )
        else:
            prefix = namespace.connection
            settings[f"{prefix}__fullyQualifiedNamespace"] = namespace.fully_qualified_namespace
            settings[f"{prefix}__credential"] = MANAGED_IDENTITY
    if capture_sources(topology):
        settings[f"{CAPTURE_STORAGE_SETTING}__credential"] = MANAGED_IDENTITY
    if identity_client_id:
        settings.update(user_assigned_identity_settings(topology, identity_client_id))
    return settings
