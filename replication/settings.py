"""The app settings, read once at start into one typed object.

Every setting the library reads, by the name it has in the Function app's configuration (and in
the environment of a local run); the first nine are read into :class:`Settings`, the others
by the feature that needs them:

========================================  ===================================================
``REPLICATION_TOPOLOGY``                  the topology file (default ``topology.json``)
``REPLICATION_TELEMETRY``                 ``off`` (``false``, ``0``, ``no``, ``none``,
                                          ``disabled``) switches metrics and traces off;
                                          ``console`` prints them in local runs
``REPLICATION_TELEMETRY_LAG``             ``per-send`` (the default: one ``replication.lag``
                                          observation per send call, its oldest replica's)
                                          or ``per-replica`` (one per replica)
``APPLICATIONINSIGHTS_CONNECTION_STRING`` the Function app exports to Application Insights
``OTEL_EXPORTER_OTLP_ENDPOINT``           local runs export over OTLP/HTTP
``REPLICATION_KEY_VAULT_URI``             a vault for the namespaces' ``keyVaultSecret``
``REPLICATION_CHECKPOINT_CONTAINER``      the blob container of local Event Hubs checkpoints
``AzureWebJobsStorage``                   the storage account of those checkpoints (a
                                          connection string, or ``__blobServiceUri`` /
                                          ``__accountName`` with ``__credential`` /
                                          ``__clientId``)
``<connection>`` and ``<connection>__*``  one namespace's access, per ``connection`` prefix of
                                          the topology (see :mod:`replication.transport.
                                          connections`)
``OTEL_METRIC_EXPORT_INTERVAL``           local runs: milliseconds between metric exports
                                          (default 15 s; read by ``replication.telemetry``)
``OTEL_TRACES_SAMPLER``                   which batch spans are recorded (the OpenTelemetry
                                          SDK's names); unset: ``parentbased_traceidratio``
                                          (read by ``replication.telemetry`` and the SDK)
``OTEL_TRACES_SAMPLER_ARG``               the sampler's argument; unset with the default
                                          sampler: ``0.1``, a tenth of the traces that start
                                          at the replicator
``REPLICATION_FAILOVER_STORAGE``          the failover clients' binding store and logs (a
                                          storage connection string; else
                                          ``AzureWebJobsStorage``), read by
                                          ``replication.failover``
``REPLICATION_FAILOVER_CONTAINER``        their blob container (default
                                          ``replication-failover``)
``REPLICATION_CAPTURE_STORAGE``           Service Bus captures (:mod:`replication.capture`):
                                          a storage connection string for every capture
                                          (local runs: Azurite); unset, each capture writes
                                          to ``https://<storageAccount>.blob.core.windows.
                                          net`` of its ``capture`` section with the app's
                                          identity (``__credential`` / ``__clientId``)
``PYDANTIC_DISABLE_PLUGINS``              pydantic's: the command line sets it to ``__all__``
                                          when it is not set (no plugin scan at start);
                                          empty: pydantic loads its plugins
``REPLICATION_AZURITE``                   ``drill``: the Azurite command to start (default:
                                          ``node_modules/.bin/azurite-blob``, then ``PATH``)
========================================  ===================================================

The connection prefixes come from the topology: :meth:`Settings.from_environ` reads the ones it
is given (``Topology.connections``). A value is never logged or repeated in an error (the
secrets are :class:`~pydantic.SecretStr`); an error names the setting. Hosts read the settings
once when they start (the Function app when the host indexes it, the local host when it is
built) and hand this object down; nothing below them reads the environment.

Pydantic (already the topology's validator) rather than ``pydantic-settings``: the sources are
one mapping, and the per-namespace names come from the topology, not from the model.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, SecretStr

from replication.exceptions import ConfigurationError

TOPOLOGY_SETTING = "REPLICATION_TOPOLOGY"
DEFAULT_TOPOLOGY_PATH = "topology.json"
TELEMETRY_SETTING = "REPLICATION_TELEMETRY"
TELEMETRY_LAG_SETTING = "REPLICATION_TELEMETRY_LAG"
LAG_PER_SEND = "per-send"
LAG_PER_REPLICA = "per-replica"
CONNECTION_STRING_SETTING = "APPLICATIONINSIGHTS_CONNECTION_STRING"
OTLP_ENDPOINT_SETTING = "OTEL_EXPORTER_OTLP_ENDPOINT"
KEY_VAULT_URI_SETTING = "REPLICATION_KEY_VAULT_URI"
STORAGE_SETTING = "AzureWebJobsStorage"
CONTAINER_SETTING = "REPLICATION_CHECKPOINT_CONTAINER"
DEFAULT_CONTAINER = "replication-checkpoints"
CAPTURE_STORAGE_SETTING = "REPLICATION_CAPTURE_STORAGE"

LOCAL_SETTINGS_NAME = "local.settings.json"
"""The Functions Core Tools' file of app settings for local runs (its ``Values``)."""

OFF_VALUES = frozenset({"off", "false", "0", "no", "none", "disabled"})
CONSOLE = "console"


def load_local_settings(path: Path) -> dict[str, Any]:
    """The document of the ``local.settings.json`` at ``path``, its ``Values`` an object (added
    empty when the file has none): what ``replication emulator --local-settings`` merges its
    settings into, and where the commands that connect find them.

    Raises:
        ConfigurationError: the file is not JSON, or not an object with an object ``Values``
            (naming the file and the JSON path).
    """
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ConfigurationError(
            f"not JSON: {error.msg} (line {error.lineno}, column {error.colno})",
            source=str(path),
        ) from None
    except UnicodeDecodeError as error:
        raise ConfigurationError(f"not UTF-8 text: {error.reason}", source=str(path)) from None
    if not isinstance(document, dict):
        raise ConfigurationError("must be an object", source=str(path), location="$")
    if not isinstance(document.setdefault("Values", {}), dict):
        raise ConfigurationError("must be an object", source=str(path), location="$.Values")
    return document


def telemetry_on(value: str) -> bool:
    """Whether a ``REPLICATION_TELEMETRY`` value leaves telemetry on (the default)."""
    return value.strip().lower() not in OFF_VALUES


def _lag_per_replica(value: str) -> bool:
    """Whether a ``REPLICATION_TELEMETRY_LAG`` value asks for one lag observation per replica
    (empty or ``per-send``: one per send call)."""
    chosen = value.strip().lower()
    if chosen in ("", LAG_PER_SEND):
        return False
    if chosen == LAG_PER_REPLICA:
        return True
    raise ConfigurationError(
        f"'{value}' is not one of {LAG_PER_SEND}, {LAG_PER_REPLICA}",
        source=f"app setting {TELEMETRY_LAG_SETTING}",
    )


class Connection(BaseModel):
    """The settings of one connection prefix (``SB_WEU``, ``AzureWebJobsStorage``): a
    connection string, or identity-based access by the Functions host's own setting names
    ("Configure connections to remote services in Azure Functions")."""

    model_config = ConfigDict(frozen=True)

    name: str
    """The prefix itself: the setting that holds a connection string."""
    connection_string: SecretStr | None = None
    fully_qualified_namespace: str | None = None
    """``<prefix>__fullyQualifiedNamespace``"""
    credential: str | None = None
    """``<prefix>__credential`` (``managedidentity``)"""
    client_id: str | None = None
    """``<prefix>__clientId``: a user-assigned managed identity"""
    blob_service_uri: str | None = None
    """``<prefix>__blobServiceUri`` (storage)"""
    account_name: str | None = None
    """``<prefix>__accountName`` (storage)"""

    @classmethod
    def read(cls, name: str, environ: Mapping[str, str]) -> Connection:
        def value(suffix: str) -> str | None:
            return environ.get(f"{name}__{suffix}") or None

        secret = environ.get(name) or None
        return cls(
            name=name,
            connection_string=SecretStr(secret) if secret else None,
            fully_qualified_namespace=value("fullyQualifiedNamespace"),
            credential=value("credential"),
            client_id=value("clientId"),
            blob_service_uri=value("blobServiceUri"),
            account_name=value("accountName"),
        )

    def secret(self) -> str | None:
        """The connection string (never log it: it holds a key)."""
        return self.connection_string.get_secret_value() if self.connection_string else None


class Settings(BaseModel):
    """The library's app settings (see the module docstring); build with :meth:`from_environ`."""

    model_config = ConfigDict(frozen=True)

    topology: str = DEFAULT_TOPOLOGY_PATH
    telemetry: str = ""
    """``REPLICATION_TELEMETRY`` as set (see :attr:`telemetry_enabled`)."""
    lag_per_replica: bool = False
    """``REPLICATION_TELEMETRY_LAG=per-replica``: one lag observation per replica."""
    app_insights_connection_string: SecretStr | None = None
    otlp_endpoint: str | None = None
    key_vault_uri: str | None = None
    checkpoint_container: str = DEFAULT_CONTAINER
    storage: Connection = Connection(name=STORAGE_SETTING)
    capture_storage: Connection = Connection(name=CAPTURE_STORAGE_SETTING)
    """Where Service Bus captures write (:mod:`replication.capture`)."""
    connections: Mapping[str, Connection] = {}

    @classmethod
    def from_environ(
        cls, environ: Mapping[str, str] | None = None, *, connections: Iterable[str] = ()
    ) -> Settings:
        """The settings in ``environ`` (default: the process environment), with the
        ``connections`` prefixes (``Topology.connections``) read too."""
        source = os.environ if environ is None else environ
        connection_string = source.get(CONNECTION_STRING_SETTING) or None
        return cls(
            topology=source.get(TOPOLOGY_SETTING, DEFAULT_TOPOLOGY_PATH),
            telemetry=source.get(TELEMETRY_SETTING, ""),
            lag_per_replica=_lag_per_replica(source.get(TELEMETRY_LAG_SETTING, "")),
            app_insights_connection_string=(
                SecretStr(connection_string) if connection_string else None
            ),
            otlp_endpoint=source.get(OTLP_ENDPOINT_SETTING) or None,
            key_vault_uri=source.get(KEY_VAULT_URI_SETTING) or None,
            checkpoint_container=source.get(CONTAINER_SETTING, DEFAULT_CONTAINER),
            storage=Connection.read(STORAGE_SETTING, source),
            capture_storage=Connection.read(CAPTURE_STORAGE_SETTING, source),
            connections={name: Connection.read(name, source) for name in connections},
        )

    @property
    def telemetry_enabled(self) -> bool:
        """False when ``REPLICATION_TELEMETRY`` says off; on by default."""
        return telemetry_on(self.telemetry)

    @property
    def telemetry_console(self) -> bool:
        """``REPLICATION_TELEMETRY=console``: local runs print metrics and spans."""
        return self.telemetry.strip().lower() == CONSOLE

    def connection(self, name: str) -> Connection:
        """The settings of connection prefix ``name``, as read at start.

        Raises:
            ConfigurationError: ``name`` was not among the prefixes read (a namespace that is
                not in the topology the settings were read for).
        """
        try:
            return self.connections[name]
        except KeyError:
            raise ConfigurationError(
                f"connection '{name}' was not read at start (known: "
                f"{', '.join(sorted(self.connections)) or 'none'})",
                source=f"app setting {name}",
            ) from None


__all__ = [
    "CAPTURE_STORAGE_SETTING",
    "CONNECTION_STRING_SETTING",
    "CONTAINER_SETTING",
    "DEFAULT_CONTAINER",
    "DEFAULT_TOPOLOGY_PATH",
    "KEY_VAULT_URI_SETTING",
    "LAG_PER_REPLICA",
    "LAG_PER_SEND",
    "OFF_VALUES",
    "OTLP_ENDPOINT_SETTING",
    "STORAGE_SETTING",
    "TELEMETRY_LAG_SETTING",
    "TELEMETRY_SETTING",
    "TOPOLOGY_SETTING",
    "Connection",
    "Settings",
    "telemetry_on",
]
