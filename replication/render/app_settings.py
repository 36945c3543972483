"""The replication app settings of the Function app, rendered from the topology.

In Azure every namespace gets an identity-based connection
(``<connection>__fullyQualifiedNamespace``), except namespaces with ``keyVaultSecret`` (outside
the Function's tenant), whose ``<connection>`` setting is a Key Vault reference the platform
resolves to the SAS connection string (the vault name comes from the Bicep deployment).
"""

from __future__ import annotations

from replication.topology import TOPOLOGY_SETTING, Topology

KEY_VAULT_PLACEHOLDER = "{keyVaultName}"


def app_settings(topology: Topology, *, topology_path: str = "topology.json") -> dict[str, str]:
    settings = {TOPOLOGY_SETTING: topology_path}
    for namespace in topology.namespaces:
        if namespace.key_vault_secret:
            settings[namespace.connection] = (
                f"@Microsoft.KeyVault(VaultName={KEY_VAULT_PLACEHOLDER};"
                f"SecretName={namespace.key_vault_secret})"
            )
        else:
            settings[f"{namespace.connection}__fullyQualifiedNamespace"] = (
                namespace.fully_qualified_namespace
            )
    return settings
