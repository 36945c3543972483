"""How a namespace of the topology is reached: connection string or Microsoft Entra identity.

For namespace ``N`` with ``connection: "SB_WEU"`` the app settings are read in this order:

1. ``SB_WEU``: a connection string (the local emulator, or a SAS connection string; in Azure a
   Key Vault reference ``@Microsoft.KeyVault(...)`` that the platform resolves to one).
2. ``keyVaultSecret`` of the namespace plus the setting ``REPLICATION_KEY_VAULT_URI``: the
   connection string is read from Key Vault with the app's identity (for local runs against a
   namespace outside the tenant, where no platform reference resolution happens).
3. ``SB_WEU__fullyQualifiedNamespace`` (default: the topology's ``fullyQualifiedNamespace``)
   with a token credential, by the same settings the Functions triggers read ("Configure
   connections to remote services in Azure Functions"): ``SB_WEU__credential=managedidentity``
   selects the app's managed identity, user-assigned when ``SB_WEU__clientId`` names one;
   without ``__credential`` a ``__clientId`` still selects that managed identity, and without
   either ``DefaultAzureCredential`` is used (a developer's own sign-in on local runs).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from azure.core.credentials import TokenCredential
from azure.servicebus import ServiceBusClient

from replication.exceptions import ConfigurationError
from replication.settings import KEY_VAULT_URI_SETTING, Connection, Settings
from replication.topology import NamespaceKind, NamespaceSpec

if TYPE_CHECKING:
    # azure-eventhub is imported where an event hub is used: a topology of Service Bus
    # namespaces only does not load it (about a tenth of a second of the local host's start).
    from azure.eventhub import EventHubConsumerClient, EventHubProducerClient

EventHubClient = TypeVar("EventHubClient", "EventHubProducerClient", "EventHubConsumerClient")


@dataclasses.dataclass(frozen=True)
class NamespaceAccess:
    """Either a connection string or a host name with a credential."""

    connection_string: str | None = None
    fully_qualified_namespace: str | None = None
    credential: TokenCredential | None = None

    def token_access(self) -> tuple[str, TokenCredential]:
        """Host name and credential, for access without a connection string."""
        if not self.fully_qualified_namespace or self.credential is None:
            raise ConfigurationError("no connection string and no identity-based access")
        return self.fully_qualified_namespace, self.credential


MANAGED_IDENTITY = "managedidentity"
"""The ``<prefix>__credential`` value that selects the app's managed identity."""


def token_credential(client_id: str | None, credential: str | None = None) -> TokenCredential:
    """The credential the ``<prefix>__clientId`` / ``<prefix>__credential`` settings select."""
    from azure.identity import DefaultAzureCredential, ManagedIdentityCredential

    if client_id:
        return ManagedIdentityCredential(client_id=client_id)
    if (credential or "").strip().lower() == MANAGED_IDENTITY:
        return ManagedIdentityCredential()
    return DefaultAzureCredential()


def prefixed_credential(connection: Connection) -> TokenCredential:
    """The token credential the ``__clientId`` / ``__credential`` settings of an
    identity-based connection select."""
    return token_credential(connection.client_id, connection.credential)


def _secret_from_key_vault(vault_uri: str, secret_name: str, source: str) -> str:
    from azure.core.exceptions import AzureError
    from azure.keyvault.secrets import SecretClient

    client = SecretClient(vault_url=vault_uri, credential=token_credential(None))
    try:
        value = client.get_secret(secret_name).value
    except AzureError as error:
        raise ConfigurationError(
            f"cannot read Key Vault secret '{secret_name}' from {vault_uri}: {error}",
            source=source,
        ) from error
    if not value:
        raise ConfigurationError(f"Key Vault secret '{secret_name}' is empty", source=source)
    return value


def resolve_access(namespace: NamespaceSpec, settings: Settings) -> NamespaceAccess:
    """How to connect to ``namespace`` given the app settings (see the module docstring)."""
    connection = settings.connection(namespace.connection)
    connection_string = connection.secret()
    if connection_string:
        return NamespaceAccess(connection_string=connection_string)
    vault_uri = settings.key_vault_uri
    if namespace.key_vault_secret and vault_uri:
        secret = _secret_from_key_vault(
            vault_uri, namespace.key_vault_secret, f"namespace {namespace.name}"
        )
        return NamespaceAccess(connection_string=secret)
    host = connection.fully_qualified_namespace or namespace.fully_qualified_namespace
    return NamespaceAccess(
        fully_qualified_namespace=host,
        credential=prefixed_credential(connection),
    )


def check_settings(namespaces: Iterable[NamespaceSpec], settings: Settings) -> None:
    """Fail at start, naming the setting, when a namespace's connection string cannot be parsed.

    The SDKs' own parsers judge the string (no connection is opened); the message never repeats
    the string, which holds a key. Identity-based connections need nothing here: a missing
    permission shows when the first receive or send is tried, and is retried like an outage.
    """
    for namespace in namespaces:
        connection_string = settings.connection(namespace.connection).secret()
        if not connection_string:
            continue
        try:
            if namespace.kind is NamespaceKind.EVENTHUBS:
                from azure.eventhub import EventHubProducerClient

                EventHubProducerClient.from_connection_string(
                    connection_string, eventhub_name="check"
                ).close()
            else:
                ServiceBusClient.from_connection_string(connection_string).close()
        except (ValueError, TypeError, KeyError) as error:
            raise ConfigurationError(
                f"not a valid {namespace.kind.value} connection string "
                f"for namespace '{namespace.name}': {error}",
                source=f"app setting {namespace.connection}",
            ) from None


def identity_fallbacks(namespaces: Iterable[NamespaceSpec], settings: Settings) -> list[str]:
    """One line per namespace for which nothing at all is set, naming the setting, before
    anything connects: such a namespace falls back to Microsoft Entra ID at the topology's host
    name (step 3 of the module docstring), which is right for a developer's own sign-in and
    wrong when the setting was forgotten, and the SDK's failure would then name only the host.
    """
    notes = []
    for namespace in namespaces:
        connection = settings.connection(namespace.connection)
        chosen = (
            connection.secret(),
            connection.fully_qualified_namespace,
            connection.credential,
            connection.client_id,
            namespace.key_vault_secret and settings.key_vault_uri,
        )
        if any(chosen):
            continue
        name = namespace.connection
        vault = (
            f" (its keyVaultSecret needs {KEY_VAULT_URI_SETTING})"
            if namespace.key_vault_secret
            else ""
        )
        notes.append(
            f"app setting {name} is not set (namespace '{namespace.name}'){vault}: connecting "
            f"to {namespace.fully_qualified_namespace} with Microsoft Entra ID "
            f"(DefaultAzureCredential); set {name} to a connection string, or "
            f"{name}__fullyQualifiedNamespace to use Entra ID on purpose"
        )
    return notes


def servicebus_client_from(access: NamespaceAccess, **options: Any) -> ServiceBusClient:
    """A Service Bus client from resolved access (a connection string or identity); ``options``
    are the SDK client's keyword options (retries, for instance)."""
    if access.connection_string:
        return ServiceBusClient.from_connection_string(access.connection_string, **options)
    host, credential = access.token_access()
    return ServiceBusClient(host, credential, **options)


def event_hub_client_from(
    client_class: type[EventHubClient], access: NamespaceAccess, event_hub: str, **options: Any
) -> EventHubClient:
    """A producer or consumer client of ``client_class`` (sync or async) for one event hub,
    from resolved access."""
    if access.connection_string:
        return client_class.from_connection_string(
            access.connection_string, eventhub_name=event_hub, **options
        )
    host, credential = access.token_access()
    return client_class(
        fully_qualified_namespace=host, eventhub_name=event_hub, credential=credential, **options
    )


def servicebus_client(
    namespace: NamespaceSpec, settings: Settings, **options: Any
) -> ServiceBusClient:
    """A Service Bus client for ``namespace`` (connection string or identity); ``options``
    are the SDK client's keyword options (retries, for instance)."""
    return servicebus_client_from(resolve_access(namespace, settings), **options)


def event_hub_client(
    client_class: type[EventHubClient],
    namespace: NamespaceSpec,
    event_hub: str,
    settings: Settings,
    **options: Any,
) -> EventHubClient:
    """A producer or consumer client of ``client_class`` for one event hub of ``namespace``."""
    return event_hub_client_from(
        client_class, resolve_access(namespace, settings), event_hub, **options
    )


__all__ = [
    "KEY_VAULT_URI_SETTING",
    "MANAGED_IDENTITY",
    "NamespaceAccess",
    "check_settings",
    "event_hub_client",
    "event_hub_client_from",
    "identity_fallbacks",
    "prefixed_credential",
    "resolve_access",
    "servicebus_client",
    "servicebus_client_from",
    "token_credential",
]
