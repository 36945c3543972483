"""The app settings: read once into one typed object, secrets never shown, errors name them."""

from __future__ import annotations

import pytest

from replication.exceptions import ConfigurationError
from replication.settings import DEFAULT_CONTAINER, DEFAULT_TOPOLOGY_PATH, Settings
from replication.topology import load_topology

KEY = "SharedAccessKey=c2VjcmV0"
ENVIRON = {
    "REPLICATION_TOPOLOGY": "deploy/topology.json",
    "REPLICATION_TELEMETRY": " Console ",
    "APPLICATIONINSIGHTS_CONNECTION_STRING": "InstrumentationKey=k",
    "REPLICATION_KEY_VAULT_URI": "https://vault.vault.azure.net/",
    "AzureWebJobsStorage__blobServiceUri": "https://account.blob.core.windows.net",
    "AzureWebJobsStorage__clientId": "storage-identity",
    "SB_WEU": f"Endpoint=sb://weu/;SharedAccessKeyName=root;{KEY}",
    "SB_NEU__fullyQualifiedNamespace": "neu.servicebus.windows.net",
    "SB_NEU__credential": "managedidentity",
    "UNRELATED": "x",
}


def test_every_setting_is_read_by_its_name() -> None:
    settings = Settings.from_environ(ENVIRON, connections=["SB_WEU", "SB_NEU"])
    assert settings.topology == "deploy/topology.json"
    assert settings.telemetry_enabled
    assert settings.telemetry_console
    assert settings.key_vault_uri == "https://vault.vault.azure.net/"
    assert settings.checkpoint_container == DEFAULT_CONTAINER
    assert settings.storage.blob_service_uri == "https://account.blob.core.windows.net"
    assert settings.storage.client_id == "storage-identity"
    assert settings.storage.secret() is None
    assert settings.connection("SB_WEU").secret() == ENVIRON["SB_WEU"]
    neu = settings.connection("SB_NEU")
    assert (neu.secret(), neu.fully_qualified_namespace, neu.credential) == (
        None,
        "neu.servicebus.windows.net",
        "managedidentity",
    )


def test_defaults_and_the_off_values() -> None:
    settings = Settings.from_environ({})
    assert settings.topology == DEFAULT_TOPOLOGY_PATH
    assert settings.telemetry_enabled
    assert not settings.telemetry_console
    assert settings.app_insights_connection_string is None
    for off in ("off", "FALSE", "0", "no", "none", "disabled"):
        assert not Settings.from_environ({"REPLICATION_TELEMETRY": off}).telemetry_enabled


def test_secrets_are_never_shown() -> None:
    settings = Settings.from_environ(ENVIRON, connections=["SB_WEU"])
    for shown in (repr(settings), str(settings), settings.model_dump_json()):
        assert KEY not in shown
        assert "InstrumentationKey=k" not in shown


def test_the_connections_come_from_the_topology_and_an_unknown_one_names_its_setting() -> None:
    topology = load_topology("examples/two-region-all-active.json")
    settings = Settings.from_environ(ENVIRON, connections=topology.connections)
    assert sorted(settings.connections) == ["SB_NEU", "SB_WEU"]
    with pytest.raises(ConfigurationError, match=r"^app setting SB_SEA: connection 'SB_SEA'"):
        settings.connection("SB_SEA")
